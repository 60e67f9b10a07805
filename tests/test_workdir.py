"""The workdir: checks before anything is written, the lock, unreadable files named with a fix."""

import os

import numpy as np
import pytest

from configs import default
from nas.experiment.config import ConfigError, validate_config
from nas.experiment.run import run_experiment, write_reports
from nas.experiment.workdir import Workdir


def tiny_config(**over):
    config = default.get_config()
    config.num_trials, config.max_queries, config.report_every, config.chunk_steps = 2, 6, 3, 3
    config.only = "random_search"
    for k, v in over.items():
        setattr(config, k, v)
    return config


def test_bad_workdirs_are_refused_before_writing(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="--workdir is empty"):
        run_experiment(tiny_config(), "", progress=False)
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        run_experiment(tiny_config(), str(afile), progress=False)
    with pytest.raises(ConfigError, match="cannot create --workdir"):
        run_experiment(tiny_config(), str(afile / "under"), progress=False)
    # a read-only folder (simulated: root may write anywhere)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).endswith("ro") else real_access(p, mode))
    with pytest.raises(ConfigError, match="ro is not writable"):
        run_experiment(tiny_config(), str(tmp_path / "ro"), progress=False)


def test_a_bad_option_leaves_no_workdir_behind(tmp_path):
    c = tiny_config()
    c.searchers.random_search.pool = 0
    with pytest.raises(ConfigError, match="pool must be >= 1"):
        run_experiment(c, str(tmp_path / "wd"), progress=False)
    assert not (tmp_path / "wd").exists()


def test_labels_and_counts_are_checked():
    c = tiny_config()
    c.searchers["a/b"] = dict(c.searchers.random_search)
    with pytest.raises(ConfigError, match="label 'a/b'"):
        validate_config(c)
    for field, value in (("report_every", 0), ("chunk_steps", -1), ("num_trials", 0), ("max_queries", -3)):
        with pytest.raises(ConfigError, match=field):
            validate_config(tiny_config(**{field: value}))


def test_second_run_on_a_workdir_is_refused_while_the_first_holds_it(tmp_path):
    first = Workdir(str(tmp_path / "wd")).open()
    try:
        with pytest.raises(ConfigError, match=f"in use by another run \\(pid {os.getpid()}\\)"):
            run_experiment(tiny_config(), str(tmp_path / "wd"), progress=False)
    finally:
        first.close()
    assert run_experiment(tiny_config(), str(tmp_path / "wd"), progress=False) is not None  # free again


def test_unreadable_files_name_the_file_and_the_fix(tmp_path):
    wd = str(tmp_path / "wd")
    run_experiment(tiny_config(), wd, progress=False)
    with open(os.path.join(wd, "config.json"), "r+") as f:
        f.truncate(20)
    with pytest.raises(ConfigError, match=r"config.json is unreadable .*delete the workdir"):
        run_experiment(tiny_config(), wd, progress=False)
    os.remove(os.path.join(wd, "config.json"))
    with open(os.path.join(wd, "history", "random_search.npz"), "r+b") as f:
        f.truncate(100)
    with pytest.raises(ConfigError, match=r"random_search.npz is unreadable .*delete it to run searcher"):
        write_reports(tiny_config(), wd)
    assert not [f for f in os.listdir(wd) if f.endswith(".tmp")]


def test_metrics_lines_are_replaced_not_duplicated(tmp_path):
    wd = Workdir(str(tmp_path)).open()
    for step, v in ((1, 0.1), (2, 0.2), (1, 0.3)):  # step 1 again: a chunk rerun after a kill
        wd.record_metrics({"searcher": "a", "step": step, "v": v})
    wd.record_metrics({"searcher": "b", "step": 1, "v": np.float32(0.5)})
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert lines == ['{"searcher": "a", "step": 2, "v": 0.2}', '{"searcher": "a", "step": 1, "v": 0.3}',
                     '{"searcher": "b", "step": 1, "v": 0.5}']  # fmt: skip
    wd.close()


def test_files_follow_the_umask_and_the_lock_goes_with_the_run(tmp_path):
    old = os.umask(0o022)
    try:
        wd = tmp_path / "shared"
        run_experiment(tiny_config(), str(wd), progress=False)
        os.umask(0o077)
        write_reports(tiny_config(), str(wd))  # rewritten under a private umask
    finally:
        os.umask(old)
    files = [p for p in wd.rglob("*") if p.is_file()]
    names = ["config.json", "curves.png", "metrics.jsonl", "random_search.npz", "results.csv", "summary.json"]
    assert sorted(p.name for p in files) == names  # no .lock: removed on a clean exit
    for p in files:
        want = 0o600 if p.name in ("curves.png", "results.csv", "summary.json") else 0o644
        assert p.stat().st_mode & 0o777 == want, p


def test_a_killed_runs_lock_is_taken_over(tmp_path):
    import subprocess
    import sys

    wd = tmp_path / "wd"
    wd.mkdir()
    holder = (  # what a run does with .lock, then it is killed (no chance to clean up)
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'4242'); print('locked', flush=True); time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", holder, str(wd / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=r"in use by another run \(pid 4242\)"):
            run_experiment(tiny_config(), str(wd), progress=False)
    finally:
        p.kill()
        p.wait()
    assert (wd / ".lock").read_text() == "4242"  # stale: left by the dead run, its flock gone with it
    assert run_experiment(tiny_config(), str(wd), progress=False) is not None
    assert not (wd / ".lock").exists()
