"""A Study mirrored live into an Optuna storage (nas.adapters.optuna_mirror), and copied by study.to_optuna()."""

import math
import subprocess
import sys
import warnings

import pytest

optuna = pytest.importorskip("optuna")

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from nas.adapters.optuna_distributions import distributions  # noqa: E402
from nas.adapters.optuna_mirror import NUMBER, OptunaMirror  # noqa: E402
from nas.host.storage import StorageError  # noqa: E402
from nas.host.study import Study  # noqa: E402
from nas.host.trials import TrialPruned  # noqa: E402
from spaces.declaration import declaration  # noqa: E402
from spaces.params import Float, Int  # noqa: E402

SPACE = {"lr": Float(1e-4, 1e-1, log=True), "width": Int(8, 64, step=8), "act": ["relu", "tanh"]}
STATES = {"complete": TrialState.COMPLETE, "pruned": TrialState.PRUNED, "failed": TrialState.FAIL,
          "pending": TrialState.RUNNING}  # fmt: skip


def objective(trial):
    """A training that reports at epochs 1, 3, 9 and stops when pruned; width 8 fails."""
    p = trial.params
    trial.set_user_attr("width_read", p["width"])  # the objective's own attribute: mirrored with the result
    for epoch in (1, 3, 9):
        value = 100 * (p["lr"] - 0.01) ** 2 + 1 / p["width"] + 0.1 * (p["act"] == "tanh") + 1 / epoch
        trial.report(value, epoch)
        if trial.should_prune():
            raise TrialPruned()
    return None if p["width"] == 8 else value


def pruned_study(storage, **kwargs):
    return Study(SPACE, "random_search", direction="minimize", seed=3, max_queries=14, pruner="asha",
                 fidelities=[1, 3, 9], storage=storage, **kwargs)  # fmt: skip


def assert_mirrored(study, optuna_trials):
    """Every trial of ``study`` is one Optuna trial with its number, params, reports, state, value and attrs."""
    assert [t.user_attrs[NUMBER] for t in optuna_trials] == [t.number for t in study.trials]
    for t, o in zip(study.trials, optuna_trials):
        assert o.number == t.number and o.state == STATES[t.state], (t, o)
        assert o.params == t.params
        assert o.intermediate_values == {int(s): v for s, v in t.intermediate_values.items()}
        if t.state == "complete":
            assert o.values == ([t.value] if t.values is None else list(t.values))
        elif t.state == "pruned":
            assert o.values == [t.value]
        else:
            assert o.values is None
        assert o.user_attrs.get("checkpoint_dir") == t.checkpoint_dir
        assert o.user_attrs.get("cost") == t.cost
        for key in ("fidelity", "budget", "parent"):
            assert o.user_attrs.get(key) == getattr(t, key), key
        for key, value in t.user_attrs.items():  # set_user_attr's, once the trial is told
            assert t.state != "pending" and o.user_attrs[key] == value, (key, t, o)


def test_the_space_declaration_gives_optunas_distributions():
    d = distributions(declaration({**SPACE, "mom": Float(0.0, 0.9, step=0.1), "n": Int(1, 1000, log=True),
                                   "pair": [(1, 2), (3, 4)]}))  # fmt: skip
    assert d["lr"] == FloatDistribution(1e-4, 1e-1, log=True)
    assert d["width"] == IntDistribution(8, 64, step=8)
    assert d["act"] == CategoricalDistribution(["relu", "tanh"])
    assert d["mom"] == FloatDistribution(0.0, 0.9, step=0.1)
    assert d["n"] == IntDistribution(1, 1000, log=True)
    assert d["pair"] == CategoricalDistribution(["(1, 2)", "(3, 4)"])  # Optuna's choices are plain values
    ordinal = {"type": "HPOSpace", "hyperparameters": [
        {"name": "lr", "values": [1e-3, 1e-2, 1e-1], "ordinal": True},
        {"name": "depth", "values": [1, 2, 3], "ordinal": True},
        {"name": "opt", "values": ["sgd", "adam"], "ordinal": False}]}  # fmt: skip
    d = distributions(ordinal)
    assert d == {"lr": FloatDistribution(1e-3, 1e-1, log=True), "depth": IntDistribution(1, 3),
                 "opt": CategoricalDistribution(["sgd", "adam"])}  # fmt: skip


def test_a_mirrored_study_is_in_optuna_storage_as_it_runs_and_resumes_without_duplicates(tmp_path):
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = pruned_study(OptunaMirror(str(tmp_path / "study.jsonl"), url))
    study.optimize(objective, n_trials=6)
    mirrored = optuna.load_study(study_name="study", storage=url)
    assert mirrored.directions == [optuna.study.StudyDirection.MINIMIZE]
    assert mirrored.user_attrs["searcher"] == "random_search"
    assert_mirrored(study, mirrored.trials)
    assert mirrored.trials[0].distributions == distributions(declaration(SPACE))
    assert {t.state for t in study.trials} >= {"complete", "pruned", "failed"}
    pending = study.ask()  # handed out when the process stops: RUNNING in Optuna
    assert optuna.load_study(study_name="study", storage=url).trials[-1].state == TrialState.RUNNING
    study.close()

    resumed = Study.load(OptunaMirror(str(tmp_path / "study.jsonl"), url))
    assert resumed.pending()[0].number == pending.number
    resumed.optimize(objective, n_trials=4)  # the pending trial first, then new ones
    assert_mirrored(resumed, optuna.load_study(study_name="study", storage=url).trials)  # none twice
    resumed.close()


KILLED = """
import os, signal, sys
sys.path.insert(0, {root!r})
from tests.test_optuna_mirror import OptunaMirror, objective, pruned_study

def killed_in_trial_3(trial):
    if trial.number == 3:
        trial.report(0.5, 1)
        os.kill(os.getpid(), signal.SIGKILL)  # mid-training, as kill -9
    return objective(trial)

pruned_study(OptunaMirror({journal!r}, {url!r})).optimize(killed_in_trial_3, n_trials=6)
"""


def test_a_study_killed_mid_trial_resumes_into_the_same_optuna_study(tmp_path):
    import os
    import signal

    url, journal = f"sqlite:///{tmp_path / 'optuna.db'}", str(tmp_path / "study.jsonl")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", KILLED.format(root=root, journal=journal, url=url)], timeout=600,
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == -signal.SIGKILL, run.stderr[-2000:]
    left = optuna.load_study(study_name="study", storage=url).trials
    assert [t.state for t in left][-1] == TrialState.RUNNING and len(left) == 4
    resumed = Study.load(OptunaMirror(journal, url))
    resumed.optimize(objective, n_trials=3)  # trial 3 again, then two new ones
    assert_mirrored(resumed, optuna.load_study(study_name="study", storage=url).trials)
    assert all(t.state != TrialState.RUNNING for t in optuna.load_study(study_name="study", storage=url).trials)
    resumed.close()


class FlakyStorage(optuna.storages.InMemoryStorage):
    """An Optuna storage whose first write of an intermediate value fails (a locked database)."""

    failed = False

    def set_trial_intermediate_value(self, trial_id, step, value):
        if not self.failed:
            self.failed = True
            raise RuntimeError("database is locked")
        super().set_trial_intermediate_value(trial_id, step, value)


def test_a_failed_write_warns_once_and_the_mirror_catches_up(tmp_path):
    flaky = FlakyStorage()
    study = pruned_study(OptunaMirror(str(tmp_path / "study.jsonl"), flaky, study_name="s"))
    with pytest.warns(UserWarning, match="writing to the Optuna storage failed .*database is locked.*catches up"):
        study.optimize(objective, n_trials=5)
    assert flaky.failed
    assert_mirrored(study, optuna.load_study(study_name="s", storage=flaky).trials)
    study.close()


def test_an_optuna_study_of_another_kind_is_refused_in_one_line(tmp_path):
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    optuna.create_study(study_name="study", storage=url, direction="maximize")
    with pytest.raises(StorageError, match=r"has the directions \['maximize'\], this study \['minimize'\]"):
        pruned_study(OptunaMirror(str(tmp_path / "study.jsonl"), url))
    first = pruned_study(OptunaMirror(str(tmp_path / "a.jsonl"), url, study_name="a"))
    first.optimize(objective, n_trials=1)
    first.close()
    with pytest.raises(StorageError, match="already holds the trials of another study"):
        pruned_study(OptunaMirror(str(tmp_path / "b.jsonl"), url, study_name="a"))
    with pytest.raises(ValueError, match="give the study's own storage too"):
        OptunaMirror(None, url)


def test_promotions_are_trials_with_their_parent_and_budget_in_optunas_journal(tmp_path):
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    journal = JournalStorage(JournalFileBackend(str(tmp_path / "optuna.log")))

    budgets = {}  # trial number -> the budget it trained to (a promotion resumes from its parent's)

    def objective(trial):
        budgets[trial.number] = trial.budget
        for epoch in range(int(budgets.get(trial.parent, 0)) + 1, int(trial.budget) + 1):
            trial.report(trial.params["lr"] * 100 + 1 / epoch, epoch)
        return trial.params["lr"] * 100 + 1 / trial.budget

    study = Study({"lr": Float(1e-4, 1e-1, log=True), "act": ["relu", "tanh"]}, "asha", direction="minimize",
                  seed=0, max_queries=6, fidelities=[1, 3, 9], workers=1,
                  storage=OptunaMirror(str(tmp_path / "mf.jsonl"), journal))  # fmt: skip
    study.optimize(objective)
    trials = optuna.load_study(study_name="mf", storage=journal).trials
    assert_mirrored(study, trials)
    promoted = [o for o in trials if "parent" in o.user_attrs]
    assert promoted, "ASHA promoted no trial"
    for o in promoted:
        parent = trials[o.user_attrs["parent"]]
        assert o.user_attrs["budget"] > parent.user_attrs["budget"] and o.params == parent.params
        assert min(o.intermediate_values) == parent.user_attrs["budget"] + 1  # it trained on from the parent's
    study.close()


def test_to_optuna_gives_a_study_that_optunas_plots_take(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from optuna.visualization import matplotlib as plots

    study = pruned_study(None)
    study.optimize(objective, n_trials=10)
    copy = study.to_optuna()
    assert_mirrored(study, copy.trials)
    assert copy.best_value == study.best_value and copy.best_params == study.best_params
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        assert plots.plot_optimization_history(copy) is not None
        assert plots.plot_intermediate_values(copy) is not None
        assert set(optuna.importance.get_param_importances(copy)) == set(SPACE)
        assert plots.plot_param_importances(copy) is not None

        memory = optuna.storages.InMemoryStorage()
        two = Study({"depth": [1, 2, 3, 4], "width": [8, 16, 32, 64]}, "nsga2", directions=["minimize", "minimize"],
                    seed=1, max_queries=8, population_size=4,
                    storage=OptunaMirror(str(tmp_path / "two.jsonl"), memory))  # fmt: skip
        two.optimize(lambda p: [1 / (p["depth"] * p["width"]), p["depth"] * p["width"]])
        live = optuna.load_study(study_name="two", storage=memory)
        assert live.directions == [optuna.study.StudyDirection.MINIMIZE] * 2
        assert_mirrored(two, live.trials)  # the values of both directions, mirrored as told
        pareto = two.to_optuna()
        assert [t.number for t in pareto.best_trials] == [t.number for t in two.best_trials]
        assert plots.plot_pareto_front(pareto) is not None
    assert all(math.isfinite(v) for t in copy.trials if t.values for v in t.values)


def test_without_optuna_the_mirror_says_how_to_install_it():
    code = ("import sys; sys.modules['optuna'] = None\n"
            "try:\n    import nas.adapters.optuna_mirror\nexcept ImportError as e:\n    print(e)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert "needs Optuna: pip install optuna" in out.stdout


def test_without_optuna_dashboard_the_dashboard_says_how_to_install_it(monkeypatch):
    import importlib.util

    from nas.adapters import optuna_dashboard
    from spaces.files import MissingPackageError

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingPackageError, match="pip install optuna-dashboard"):
        optuna_dashboard.Dashboard("sqlite:///never.db")
