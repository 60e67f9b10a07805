"""``python -m scripts.accelerator_check --small``: its parts run at tiny sizes and land in the JSON and
Markdown reports (on the CPU here; the same script measures the speed table on a GPU)."""

import json
import os
import subprocess
import sys

import jax
import pytest

from spaces.benchmarks.mlp_training import auto_segment_size
from tests.conftest import SHARED_DATA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_small_check_writes_every_part(tmp_path):
    """Every part at tiny sizes; of the searchers, one of each path (one call, multi-fidelity, chunked)."""
    fidelity = SHARED_DATA / "nb201" / "mini_nb201_12epoch.pd"
    cmd = [sys.executable, "-m", "scripts.accelerator_check", "--small", f"--out={tmp_path}",
           f"--fidelity_data={fidelity}", "--only=random_search,asha,bananas,mlp,job", "--job_threads=1"]  # fmt: skip
    r = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads((tmp_path / "accelerator_check.json").read_text())
    env = report["environment"]
    assert env["backend"] == jax.default_backend() and env["jax"] and env["date"] and env["rss_mb"]
    rows = {row["searcher"]: row for row in report["searchers"]}
    assert list(rows) == ["random_search", "asha", "bananas"]
    for name, row in rows.items():
        if "skipped" in row:  # ASHA without the 12-epoch table
            assert name == "asha" and not fidelity.exists()
            continue
        assert row["compile_s"] > 0 and row["run_s"] > 0 and row["peak_rss_mb"] > 100, row
        if name != "bananas":  # BANANAS' row: its compiled chunks (below)
            assert 80 < row["final_best_valid"] < 92  # NB201 cifar10 validation accuracy (%)
    assert rows["bananas"]["compilations"] >= 2  # BANANAS: its random first step and its model steps
    mlp = report["mlp"]
    assert [v["batch"] for v in mlp["vmapped"]] == [4] and mlp["alone"]["per_s"] > 0
    assert mlp["vmapped"][0]["speedup"] > 0 and mlp["vmapped"][0]["segment_size"] == auto_segment_size(4)
    job = report["default_job"]
    assert len(job["runs"]) == 1 and job["runs"][0]["cpu_s"] > 0 and job["import_cpu_s"] > 0
    assert set(job["runs"][0]["compile_s"]) == {"random_search"}
    assert job["same_table"] and "| random_search |" in job["table"] and job["compile_threads"] == "default"
    (one,) = report["default_job_threads"]  # one program at a time against the CPU's default (side by side)
    assert one["compile_threads"] == "1" and one["same_table"] and len(one["runs"]) == 1 and "import_cpu_s" not in one
    text = (tmp_path / "accelerator_check.md").read_text()
    assert "| random_search, 4 seeds x 12 queries |" in text and "| bananas, 2 seeds x 14 queries |" in text
    assert "Default job cold" in text and "vmapped / one at a time" in text
    assert "- with NASJAX_COMPILE_THREADS=1: median" in text and "the same table" in text


def test_fast_tests_stopped_at_their_limit_keep_their_log(tmp_path):
    """``--tests`` under a time limit (a lent machine): the pytest process tree is stopped, the log stays.
    In a subprocess: the script's module defines absl flags that other entry points define too."""
    code = ("import json, os, sys; from scripts.accelerator_check import fast_tests; "
            "print(json.dumps(fast_tests(dict(os.environ), sys.argv[1], timeout=1.0, workers=2)))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["exit"] == "stopped after 1 s" and result["workers"] == 2 and result["failed"] == []
    assert set(result["counts"]) == {"passed", "failed", "skipped", "error"}  # counted from the verbose lines
    assert (tmp_path / "tests.log").exists() and 1.0 <= result["wall_s"] < 30


def test_a_bad_job_threads_setting_is_refused_before_any_part_runs(tmp_path):
    cmd = [sys.executable, "-m", "scripts.accelerator_check", "--small", f"--out={tmp_path}", "--job_threads=1,0"]
    r = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True)
    assert r.returncode == 2 and "--job_threads: ['0'] are not whole numbers >= 1" in r.stderr, r.stderr[-2000:]
    assert not os.listdir(tmp_path)  # nothing measured, nothing written
