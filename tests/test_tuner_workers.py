"""Workers for study.optimize (nas/host/workers.py, process_workers.py, ray_workers.py): W evaluations at once in
processes or Ray tasks; reports and pruning across processes; a worker that dies loses only its trial."""

import numpy as np
import pytest

from nas.host.pruning import ASHAPruner
from nas.host.study import Study
from tests.mf_tables import BUDGETS, SPACE
from tests.tuner_objectives import mf_training, pruned_training

SF_SPACE = {"lr": [0.1, 0.03, 0.01, 0.003], "depth": [1, 2, 3]}


@pytest.mark.slow
def test_process_workers_prune_across_processes_and_survive_killed_workers(tmp_path):
    study = Study(SF_SPACE, "random_search", direction="maximize", seed=0, max_trials=8, batch_size=2,
                  pruner=ASHAPruner([1, 2, 4, 8], eta=2), directory=str(tmp_path))  # fmt: skip
    with pytest.warns(UserWarning, match="its worker died"):
        study.optimize(pruned_training, n_workers=2, retries=1)
    states = {t.number: t.state for t in study.trials}
    assert len(states) == 8 and states[3] == "failed"  # its worker died twice
    assert states[1] in ("complete", "pruned") and study.trials[1].intermediate_values  # killed once, then ran
    assert "pruned" in states.values() and not study.pending()
    for t in study.trials:  # every report crossed the process boundary and was decided here
        if t.state in ("complete", "pruned"):
            assert t.intermediate_values and (t.state == "pruned") == study.should_prune(t.number)
            assert (max(t.intermediate_values) == 8) == (t.state == "complete") and t.cost > 0
    assert study.best_value == max(t.value for t in study.trials if t.state == "complete")


@pytest.mark.slow
def test_ray_workers_run_a_multi_fidelity_study(tmp_path):
    ray = pytest.importorskip("ray", reason='the Ray backend needs Ray: pip install "ray[default]"')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        study = Study(SPACE, "asha", direction="maximize", seed=0, max_resource=3 * BUDGETS[-1], fidelities=BUDGETS,
                      directory=str(tmp_path))  # fmt: skip
        with pytest.warns(UserWarning, match="running it again"):
            study.optimize(mf_training, n_workers=2, backend="ray", retries=1)
        assert study.workers == 2 and not study.pending()
        assert all(t.state == "complete" for t in study.trials) and study.spent >= 3 * BUDGETS[-1]
        assert all(t.intermediate_values == {t.budget: 0.0} for t in study.trials)
        assert any(t.parent is not None for t in study.trials)
        assert np.isfinite(study.best_value)
    finally:
        ray.shutdown()


def test_threads_tell_and_report_by_number_while_the_study_runs():
    study = Study(SPACE, "asha", direction="maximize", seed=0, max_resource=6 * BUDGETS[-1], fidelities=BUDGETS,
                  continues=False)

    def training(trial):  # runs in the workers' threads; reports and tells go through the study's lock
        trial.report(0.5, step=trial.budget / 2)
        return float(sum(trial.tokens)) + trial.budget / 10

    study.optimize(training, n_workers=3, backend="thread")
    assert study.workers == 3 and not study.pending() and study.spent >= 6 * BUDGETS[-1]
    assert all(t.state == "complete" and t.intermediate_values == {t.budget / 2: 0.5} for t in study.trials)
    seen = []
    plain = Study(SF_SPACE, "random_search", direction="maximize", seed=0, max_trials=6, batch_size=3)
    plain.optimize(lambda t: seen.append(dict(t.params)) or t.params["lr"] * t.params["depth"], n_workers=3,
                   backend="thread")  # fmt: skip
    key = lambda p: (p["lr"], p["depth"])  # noqa: E731
    assert sorted(map(key, seen)) == sorted(key(t.params) for t in plain.trials)  # no pruner: it gets the trial too
    assert plain.best_value == max(p["lr"] * p["depth"] for p in seen)


def sleep_if_deep(trial):
    import time

    if trial.params["depth"] == 3:
        time.sleep(60)
    return trial.params["lr"]


@pytest.mark.slow
def test_ray_workers_kill_a_trial_past_its_time_limit():
    ray = pytest.importorskip("ray", reason='the Ray backend needs Ray: pip install "ray[default]"')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        study = Study(SF_SPACE, "random_search", direction="maximize", seed=0, max_trials=4, batch_size=2)
        with pytest.warns(UserWarning, match=r"trial_timeout=3 s and its Ray worker process was killed"):
            study.optimize(sleep_if_deep, n_workers=2, backend="ray", trial_timeout=3)
        deep = [t for t in study.trials if t.params["depth"] == 3]
        assert deep and all(t.state == "failed" for t in deep) and not study.pending()
        assert all(t.state == "complete" for t in study.trials if t.params["depth"] != 3)
    finally:
        ray.shutdown()
