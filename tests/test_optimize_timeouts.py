"""Time limits and stopping of ``Study.optimize`` (nas/host/optimize.py, nas/host/workers/process_workers.py):
``timeout`` as Optuna's, ``trial_timeout`` that kills and replaces a process worker, SIGTERM that stops the
workers as SIGINT does, orphaned workers that exit quietly, and optimize's arguments checked in one line."""

import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from nas.host.study import Study

SPACE = {"lr": [0.1, 0.03, 0.01, 0.003], "depth": [1, 2, 3]}


def study(max_queries=8, **kw):
    return Study(SPACE, "random_search", direction="minimize", seed=0, max_queries=max_queries, **kw)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie (exited, not yet reaped by its new parent) is gone too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pids, seconds: float) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not all(gone(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if not gone(p)]


def test_timeout_starts_no_trial_after_it_and_lets_the_running_one_finish():
    s = study(max_queries=12)
    s.optimize(lambda p: p["lr"], n_trials=1)  # the searcher's ask and tell compile (the timeout counts them)
    start = time.monotonic()
    s.optimize(lambda p: time.sleep(0.25) or p["lr"], timeout=0.6)
    took = time.monotonic() - start
    assert 1 + 2 <= len(s.trials) <= 1 + 4 and not s.pending(), len(s.trials)  # started at 0, 0.25, 0.5 s
    assert all(t.state == "complete" for t in s.trials)
    assert took < 0.6 + 0.25 + 1.0  # the last one started before the timeout and finished
    n = len(s.trials)
    s.optimize(lambda p: p["lr"], timeout=0)  # 0: no trial starts
    assert len(s.trials) == n


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_workers=0), "n_workers must be a positive integer"),
        (dict(n_workers=1.5), "n_workers must be a positive integer"),
        (dict(n_workers=True), "n_workers must be a positive integer"),
        (dict(retries=-1), "retries must be a non-negative integer"),
        (dict(retries=0.5), "retries must be a non-negative integer"),
        (dict(timeout=-1), "timeout must be a non-negative number of seconds"),
        (dict(timeout=math.nan), "timeout must be a non-negative number of seconds"),
        (dict(timeout="60"), "timeout must be a non-negative number of seconds"),
        (dict(trial_timeout=0), "trial_timeout must be a positive number of seconds"),
        (dict(trial_timeout=math.nan), "trial_timeout must be a positive number of seconds"),
        (dict(catch="ValueError"), "catch must be an exception class"),
        (dict(catch=ValueError("x")), "catch must be an exception class"),
        (dict(catch=(ValueError, int)), "catch must be an exception class"),
        (dict(catch=KeyboardInterrupt), "catch must be an exception class"),
        (dict(trial_timeout=5), "trial_timeout= stops a trial by killing its worker process"),
        (dict(trial_timeout=5, backend="thread", n_workers=2), "backend='thread' runs trials where"),
    ],
)
def test_optimize_refuses_a_bad_argument_in_one_line_before_anything_runs(kwargs, match):
    s = study()
    with pytest.raises((TypeError, ValueError), match=match) as e:
        s.optimize(lambda p: 1.0, n_trials=2, **kwargs)
    assert "\n" not in str(e.value) and not s.trials


def test_catch_takes_one_exception_class_as_optuna():
    def objective(p):
        if p["depth"] == 3:
            raise ZeroDivisionError("depth 3")
        return p["lr"]

    s = study(max_queries=8)
    s.optimize(objective, catch=ZeroDivisionError)
    assert not s.pending() and {t.state for t in s.trials} <= {"complete", "failed"}
    assert all((t.state == "failed") == (t.params["depth"] == 3) for t in s.trials)


def hang_if_deep(p):
    import os
    import time

    if p["depth"] == 3:
        print(os.getpid(), flush=True, file=open(os.environ["PIDS_FILE"], "a"))
        time.sleep(60)
    return p["lr"]


@pytest.mark.slow
def test_trial_timeout_kills_a_hanging_process_worker_and_records_the_trial_failed(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("PIDS_FILE", str(pids))
    s = study(max_queries=6, batch_size=2)
    start = time.monotonic()
    with pytest.warns(UserWarning, match=r"ran longer than trial_timeout=1\.5 s and its worker process was killed"):
        s.optimize(hang_if_deep, n_workers=2, backend="process", trial_timeout=1.5)
    assert time.monotonic() - start < 30
    deep = [t for t in s.trials if t.params["depth"] == 3]
    assert deep and all(t.state == "failed" and t.cost >= 1.5 for t in deep)
    assert all(t.state == "complete" for t in s.trials if t.params["depth"] != 3) and not s.pending()
    killed = [int(x) for x in pids.read_text().split()]
    assert len(killed) == len(deep) and not wait_gone(killed, 5)


STUDY_SCRIPT = """
import os, sys, time
from nas.host.study import Study

pids = sys.argv[1]

def objective(p):
    import os, time
    with open(pids, "a") as f:
        print(os.getpid(), file=f, flush=True)
    time.sleep(120)  # a hanging training
    return 0.0

study = Study({"x": [1, 2, 3, 4]}, "random_search", seed=0, max_queries=4, batch_size=2)
study.optimize(objective, n_workers=2, backend="process")
"""


def start_study(tmp_path):
    """A study process with two process workers, both running a hanging trial; its pid, its workers' pids and
    the file its stderr (and its workers') goes to."""
    script, pids, err = tmp_path / "study.py", tmp_path / "pids", tmp_path / "stderr"
    script.write_text(textwrap.dedent(STUDY_SCRIPT))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, str(script), str(pids)], stderr=open(err, "w"), env=env)
    end = time.monotonic() + 120
    while time.monotonic() < end and (not pids.exists() or len(pids.read_text().split()) < 2):
        assert proc.poll() is None, err.read_text()
        time.sleep(0.2)
    workers = [int(x) for x in pids.read_text().split()]
    assert len(workers) == 2, err.read_text()
    return proc, workers, err


@pytest.mark.slow
def test_sigterm_to_the_study_stops_its_workers_as_sigint_does(tmp_path):
    proc, workers, err = start_study(tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 128 + signal.SIGTERM
    assert not wait_gone(workers, 5), f"workers {workers} outlived their study"
    assert "Traceback" not in err.read_text(), err.read_text()


@pytest.mark.slow
def test_orphaned_workers_of_a_killed_study_exit_quietly(tmp_path):
    proc, workers, err = start_study(tmp_path)
    proc.kill()
    proc.wait(timeout=15)
    assert not wait_gone(workers, 5), f"workers {workers} outlived their killed study"
    text = err.read_text()
    assert "Traceback" not in text and "ConnectionResetError" not in text, text
