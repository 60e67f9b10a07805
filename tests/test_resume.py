"""Kill and resume: every registered searcher, interrupted in one process and resumed in another,
ends with the same history, bit for bit, as an uninterrupted run."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nas.experiment import peers
from nas.searchers import available_searchers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.slow  # resume across processes: deselected by pytest -m "not slow"

_SCRIPT = """
import sys
from configs import default
from nas.experiment.run import run_experiment
from nas.experiment.config import searcher_configs
from nas.searchers import available_searchers
from tests.searcher_settings import cheap_options
from tests.test_resume import RESUME_OPTIONS, group_names

config = default.get_config()
# one step per chunk: every chunk of a BO searcher is then the same program (a mix of chunk lengths compiles
# one program per length and bucket); the interruption after 2 chunks still falls mid-run
config.num_trials, config.max_queries, config.chunk_steps, config.report_every = 2, 40, 1, 10
config.metrics = ("latency",)  # recorded by every searcher; the multi-objective ones search error vs latency
entries = {}
group = int(sys.argv[1])
for name in group_names(group):
    opts = {**cheap_options(name), **RESUME_OPTIONS.get(name, {})}
    opts.pop("max_queries", None)
    entries[name] = {"name": name, **opts}
config.searchers = searcher_configs(**entries)
for mode, workdir in zip(sys.argv[2::2], sys.argv[3::2]):  # one process may run several (shared programs)
    out = run_experiment(config, workdir, progress=False, max_chunks=2 if mode == "interrupt" else None)
    print("interrupted" if out is None else "finished")
"""
# TNAS fine-tunes afresh from the meta-learned w at every step (nothing of it is in the state to resume), and
# its gradient program is a third of this group's compile time: left out here (tests/test_searchers.py runs it)
RESUME_OPTIONS = {"tnas": {"finetune_steps": 0}}
# the registry split in groups of similar cost, so parallel test workers share the work
HEAVY = (("tnas",), ("bananas", "gp_bo", "parego_bananas"), ("reacts", "remaade"), ("nasbot",))
GROUPS = len(HEAVY) + 1


def group_names(group: int) -> list[str]:
    """Registered searchers of one group; the last group holds every searcher not named in HEAVY. A searcher
    whose name a peer shadows in configs (``tpe``: Optuna's TPE there) is not reachable from a config: its resume
    is tested in tests/test_tpe_searcher.py."""
    names = [n for n in available_searchers() if n not in peers.available_peers()]
    if group < len(HEAVY):
        return [n for n in HEAVY[group] if n in names]
    return [n for n in names if not any(n in h for h in HEAVY)]


def run(group, *mode_workdir):
    script = _SCRIPT
    r = subprocess.run(
        [sys.executable, "-c", script, str(group), *map(str, mode_workdir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-len(mode_workdir) // 2 :]


@pytest.mark.parametrize("group", range(GROUPS))
def test_every_searcher_resumes_in_a_new_process_bit_for_bit(tmp_path, group):
    names = group_names(group)
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert run(group, "whole", whole, "interrupt", part) == ["finished", "interrupted"]
    assert sorted(os.listdir(part / "ckpt")) == sorted(f"{n}.npz" for n in names)
    assert run(group, "resume", part) == ["finished"]  # a new process: fingerprints and compiled programs rebuilt
    assert not os.listdir(part / "ckpt")
    for name in names:
        a, b = np.load(whole / "history" / f"{name}.npz"), np.load(part / "history" / f"{name}.npz")
        for k in ("tokens", "score", "report_score", "cost", "metric.latency"):
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{name}: {k}")
