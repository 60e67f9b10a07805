"""Storage of a Study (nas/host/storage.py, study_base.py): a journal or SQLite file replayed by ``Study.load``
rebuilds the searcher exactly; a study SIGKILLed mid-optimize resumes without losing or repeating a finished
evaluation; ``trials_dataframe`` as Optuna's."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from nas.host.storage import StorageError
from nas.host.study import Study
from nas.host.trials import NoTrialNow
from tests.mf_tables import BUDGETS, SPACE, score


def curve(trial):
    """A training that reports at each budget below its own and returns a value from its configuration."""
    value = score(tuple(int(x) for x in trial.tokens), trial.budget or 27.0)
    return value


def summary(study):
    return [(t.number, t.tokens.tolist(), t.state, t.value, t.fidelity, t.parent) for t in study.trials]


def test_a_journal_rebuilds_a_multi_fidelity_study_that_continues_identically(tmp_path):
    path = str(tmp_path / "study.jsonl")
    opts = dict(searcher="successive_halving", direction="maximize", seed=1, max_resource=4 * BUDGETS[-1],
                fidelities=BUDGETS, workers=2)  # fmt: skip
    study = Study(SPACE, storage=path, **opts)
    out = []
    for _ in range(14):  # asks and tells interleaved, with refusals (a synchronous rung waits: no_trial records)
        try:
            out.append(study.ask())
        except NoTrialNow:
            pass
        if len(out) >= 2 or not study.pending():
            t = out.pop(0)
            study.tell(t, None if t.number == 3 else curve(t), cost=0.5)
    assert study.pending()  # the journal ends with trials out
    study.report(study.pending()[0], 0.5, 1.25)
    assert (tmp_path / "study_trials" / "trial_00000").is_dir()  # checkpoint folders next to the journal
    with pytest.raises(StorageError, match="open in another Study"):
        Study.load(path)  # the journal is locked while the study lives
    study.close()
    events = [json.loads(line)["event"] for line in open(path)]
    assert events[0] == "study" and "no_trial" in events
    assert events.count("tell") == len(study.trials) - len(study.pending()) and events.count("report") == 1
    loaded = Study.load(path)
    assert summary(loaded) == summary(study)
    assert loaded.trials[0].intermediate_values == {} and loaded.pending()[0].intermediate_values == {0.5: 1.25}
    assert [t.datetime_complete for t in loaded.trials] == [t.datetime_complete for t in study.trials]
    assert (loaded._driver.schedule.step, loaded.spent) == (study._driver.schedule.step, study.spent)
    for s in (study, loaded):  # both go on the same way: the searcher's state was rebuilt exactly
        s.optimize(curve, n_workers=1)
    assert summary(loaded) == summary(study) and len(study.trials) > 14
    assert loaded.best_trial.number == study.best_trial.number
    loaded.close()
    with pytest.raises(StorageError, match="already holds a study"):
        Study(SPACE, storage=path, **opts)


def test_sqlite_keeps_a_pruned_single_fidelity_study_and_the_dataframe(tmp_path):
    url = f"sqlite:///{tmp_path}/db/study.db"
    space = {"lr": [0.1, 0.01, 0.001], "depth": [1, 2, 3, 4]}

    def objective(trial):
        for step in (1, 2, 4, 8):
            trial.report(step * trial.params["lr"] * trial.params["depth"], step)
            if trial.should_prune():
                return None  # after a prune decision: pruned
        return trial.params["lr"] * trial.params["depth"]

    opts = dict(searcher="random_search", direction="maximize", seed=3, max_trials=8, pruner="asha",
                fidelities=[1, 2, 4, 8], eta=2)  # fmt: skip
    with pytest.raises(ValueError, match="no option"):  # eta belongs to the pruner, not to random search
        Study(space, **opts)
    opts.pop("eta")
    study = Study(space, storage=url, **opts)
    study.optimize(objective, n_trials=5)
    study.close()
    loaded = Study.load(url)
    assert summary(loaded) == summary(study) and loaded.should_prune(1) == study.should_prune(1)
    loaded.optimize(objective)
    study.optimize(objective)
    assert summary(loaded) == summary(study) and len(study.trials) == 8
    df = loaded.trials_dataframe()
    assert list(df.columns[:4]) == ["number", "value", "state", "fidelity"] and len(df) == 8
    assert {"params_lr", "params_depth", "duration", "datetime_start", "budget", "parent"} <= set(df.columns)
    assert set(df["state"]) <= {"complete", "pruned"} and df["duration"].notna().all()
    loaded.close()


CHILD = """
import os, sys
from nas.host.study import Study
from tests.mf_tables import BUDGETS, SPACE
from tests.test_tuner_storage import logged

path, log, marker = sys.argv[1:4]
study = Study(SPACE, searcher="asha", direction="maximize", seed=5, max_resource=4 * BUDGETS[-1], fidelities=BUDGETS,
              storage=path)
study.optimize(lambda trial: logged(trial, log, marker))
"""


def logged(trial, log: str, marker: str = "") -> float:
    """``curve``, after appending the trial's number to ``log`` (fsync'd); trial 6 waits to be killed (once)."""
    with open(log, "a") as f:
        f.write(f"{trial.number}\n")
        f.flush()
        os.fsync(f.fileno())
    if trial.number == 6 and marker and not os.path.exists(marker):
        open(marker, "w").close()
        time.sleep(120)  # killed here
    return curve(trial)


@pytest.mark.slow
def test_a_study_killed_with_sigkill_resumes_from_its_journal(tmp_path):
    path, log, marker = (str(tmp_path / n) for n in ("study.jsonl", "evaluations.log", "marker"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD), path, log, marker], env=env)
    deadline = time.time() + 120
    while not os.path.exists(marker):
        assert child.poll() is None and time.time() < deadline, "the study never reached trial 6"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)  # mid-optimize: trial 6 is running, its result never told
    child.wait()
    resumed = Study.load(path)  # what a new process does
    assert [t.state for t in resumed.trials] == ["complete"] * 6 + ["pending"]
    resumed.optimize(lambda trial: logged(trial, log))
    reference = Study(SPACE, searcher="asha", direction="maximize", seed=5, max_resource=4 * BUDGETS[-1],
                      fidelities=BUDGETS)
    reference.optimize(curve)
    assert summary(resumed) == summary(reference)  # nothing lost, the searcher decided as without the kill
    runs = [int(x) for x in open(log).read().split()]
    assert sorted(runs) == sorted(list(range(len(reference.trials))) + [6])  # only the killed trial ran twice
    resumed.close()
    assert np.isfinite(resumed.best_value)
