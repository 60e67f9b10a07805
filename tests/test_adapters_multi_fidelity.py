"""Multi-fidelity adapters: our ASHA/Hyperband as Optuna pruners (nas/adapters/optuna_pruner.py), a multi-fidelity
searcher as an Optuna sampler + pruner (optuna_multi_fidelity.py) and as a Ray Tune searcher + scheduler
(ray_multi_fidelity.py), each driving a small real study or tuner."""

import json
import math
import os
import pickle

import pytest

from nas.host import pruning
from nas.host.study import Study
from tests.mf_tables import BUDGETS, score

SPACE = {"a": list(range(5)), "b": list(range(5)), "c": list(range(5))}  # the shape of tests/mf_tables' SPACE


@pytest.fixture(scope="module")
def optuna():
    optuna = pytest.importorskip("optuna", reason="Optuna is not installed (pip install optuna)")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def curve(x: int, y: int, step: int) -> float:
    """A learning curve: configuration (x, y) reaches 1 - x / 10 + y / 100 at the top."""
    return (1.0 - x / 10 + 0.01 * y) * (1 - 0.5**step)


def _pruned_objective(optuna, sign):
    def objective(trial):
        x, y = trial.suggest_int("x", 0, 9), trial.suggest_categorical("y", [0, 1])
        for step in range(1, 28):
            trial.report(sign * curve(x, y, step), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return sign * curve(x, y, 27)

    return objective


def test_optuna_asha_pruner_decides_as_the_study_pruner(optuna):
    from nas.adapters.optuna_pruner import ASHAPruner

    pruner = ASHAPruner([1, 3, 9, 27], eta=3)
    assert pruner.rungs == [1, 3, 9]
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0), pruner=pruner)
    study.optimize(_pruned_objective(optuna, 1.0), n_trials=16)
    # the host decider fed the same reports in the same order (each trial's steps until it stops)
    core, stopped_at = pruning.ASHAPruner((1, 3, 9, 27), eta=3), {}
    for t in study.trials:
        for step in range(1, 28):
            if core.report(t.number, step, curve(t.params["x"], t.params["y"], step)):
                stopped_at[t.number] = step
                break
    got = {t.number: max(t.intermediate_values) for t in study.trials if t.state.name == "PRUNED"}
    assert got == stopped_at and set(got.values()) <= {1, 3, 9} and len(got) >= 8
    for t in study.trials:
        assert t.state.name in ("PRUNED", "COMPLETE") and (t.state.name == "COMPLETE") == (t.number not in got)
    assert study.best_value == max(t.value for t in study.trials if t.state.name == "COMPLETE")


def test_optuna_hyperband_pruner_with_tpe_and_threads_minimizing(optuna):
    from nas.adapters.optuna_pruner import HyperbandPruner

    pruner = HyperbandPruner([1, 3, 9, 27], eta=3)  # brackets s = 3, 2, 1, 0 start 27, 12, 6, 4 trials
    sampler = optuna.samplers.TPESampler(seed=0, n_startup_trials=4)
    study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)
    study.optimize(_pruned_objective(optuna, -1.0), n_trials=40, n_jobs=2)
    assert len(study.trials) == 40 and all(t.state.name in ("PRUNED", "COMPLETE") for t in study.trials)
    rungs = {0: {1, 3, 9}, 1: {3, 9}, 2: {9}, 3: set()}  # each bracket's rungs below the top
    for t in study.trials:
        if t.state.name == "PRUNED":
            assert max(t.intermediate_values) in rungs[pruner.bracket(t.number)], t.number
        else:
            assert max(t.intermediate_values) == 27
    assert all(t.state.name == "COMPLETE" for t in study.trials if pruner.bracket(t.number) == 3)
    assert sum(t.state.name == "PRUNED" for t in study.trials) >= 15
    best = min(-curve(t.params["x"], t.params["y"], 27) for t in study.trials if t.state.name == "COMPLETE")
    assert study.best_value == pytest.approx(best)
    with pytest.raises(RuntimeError, match="create a new pruner"):
        optuna.create_study(pruner=pruner).optimize(_pruned_objective(optuna, 1.0), n_trials=1)


def _mf_objective(optuna, resumed: dict):
    """Trains towards 9 steps, resuming the parent's checkpoint (a JSON file with the step reached)."""

    def objective(trial):
        p = {k: trial.suggest_categorical(k, v) for k, v in SPACE.items()}
        start, parent = 0, trial.user_attrs["parent_checkpoint_dir"]
        if parent is not None:
            with open(os.path.join(parent, "state.json")) as f:
                start = json.load(f)["step"]
        resumed[trial.number] = start
        for step in range(start + 1, 10):
            with open(os.path.join(trial.user_attrs["checkpoint_dir"], "state.json"), "w") as f:
                json.dump({"step": step}, f)
            trial.report(score((p["a"], p["b"], p["c"]), step), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return score((p["a"], p["b"], p["c"]), 9)

    return objective


def test_optuna_multi_fidelity_sampler_proposes_what_the_study_proposes(optuna, tmp_path):
    from nas.adapters.optuna_multi_fidelity import MultiFidelitySampler

    opts = dict(seed=1, max_queries=4, fidelities=BUDGETS)  # the study of test_tuner_study's one-worker test
    sampler = MultiFidelitySampler("asha", SPACE, directory=str(tmp_path), **opts)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=sampler.pruner)
    resumed: dict = {}
    study.optimize(_mf_objective(optuna, resumed))  # no n_trials: the sampler stops the study
    ref = Study(SPACE, "asha", direction="maximize", **opts)
    ref.optimize(lambda t: score(tuple(t.params[k] for k in "abc"), t.budget))
    assert len(study.trials) == len(ref.trials) and any(t.parent is not None for t in ref.trials)
    for ot, rt in zip(study.trials, ref.trials):  # the same evaluations, budgets and promotions
        assert ot.params == rt.params and ot.user_attrs["budget"] == rt.budget
        assert ot.user_attrs["parent"] == rt.parent  # Optuna numbers equal the study's here (one thread)
        assert resumed[ot.number] == (0 if rt.parent is None else ref.trials[rt.parent].budget)  # continued
        top = rt.budget == BUDGETS[-1]
        assert ot.state.name == ("COMPLETE" if top else "PRUNED") and max(ot.intermediate_values) == rt.budget
        assert ot.intermediate_values[rt.budget] == pytest.approx(rt.value)
    assert sampler.study.spent == ref.spent and study.best_params == ref.best_params
    assert study.best_value == pytest.approx(ref.best_value)
    assert os.path.basename(study.trials[-1].user_attrs["checkpoint_dir"]) == f"trial_{len(study.trials) - 1:05d}"


def test_optuna_multi_fidelity_sampler_with_threads_waits_and_stops(optuna, tmp_path):
    from nas.adapters.optuna_multi_fidelity import MultiFidelitySampler

    sampler = MultiFidelitySampler(
        "hyperband", SPACE, fidelities=BUDGETS, max_queries=6, seed=2, workers=3, directory=str(tmp_path)
    )  # the options of test_tuner_study's replay test
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=sampler.pruner)
    study.optimize(_mf_objective(optuna, {}), n_jobs=3)
    mf = sampler.study
    ours = [t for t in study.trials if sampler.job(t.number) is not None]
    extra = [t for t in study.trials if sampler.job(t.number) is None]  # started after the budget was spent
    assert len(ours) == len(mf.trials) and not mf.pending() and mf.spent >= 6 * BUDGETS[-1]
    assert all(t.state.name == "PRUNED" and not t.params and not t.intermediate_values for t in extra)
    for t in ours:
        job = sampler.job(t.number)
        assert t.params == job.params and job.state == "complete" and t.user_attrs["budget"] == job.budget
        if job.parent is not None:  # a promotion continues a trial of the same configuration at a lower budget
            parent = study.trials[t.user_attrs["parent"]]
            assert parent.params == t.params and parent.user_attrs["budget"] < job.budget
            assert min(t.intermediate_values) == parent.user_attrs["budget"] + 1
    assert {t.user_attrs["budget"] for t in ours if t.state.name == "COMPLETE"} == {BUDGETS[-1]}
    assert study.best_value == pytest.approx(mf.best_value)
    with pytest.raises(ValueError, match="search_space must be a non-empty dict"):
        MultiFidelitySampler("asha", {}, fidelities=BUDGETS)
    with pytest.raises(ValueError, match="not a multi-fidelity searcher"):
        MultiFidelitySampler("random_search", SPACE, fidelities=BUDGETS)


@pytest.mark.slow
def test_ray_multi_fidelity_search_pauses_and_resumes_promotions(tmp_path):
    tune = pytest.importorskip("ray.tune", reason='Ray Tune is not installed (pip install "ray[tune]"')
    import ray

    from nas.adapters.ray_multi_fidelity import MultiFidelitySearch

    def train(config):  # a Tune function trainable that checkpoints each step and resumes the last checkpoint
        start, ckpt = 0, tune.get_checkpoint()
        if ckpt is not None:
            with ckpt.as_directory() as d, open(os.path.join(d, "state.json")) as f:
                start = json.load(f)["step"]
        for step in range(start + 1, 10):
            d = os.path.join(config["root"], f"{config['a']}{config['b']}{config['c']}_{step}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "state.json"), "w") as f:
                json.dump({"step": step}, f)
            value = math.nan if config["a"] == 4 else score((config["a"], config["b"], config["c"]), step)
            checkpoint = tune.Checkpoint.from_directory(d)
            tune.report({"score": value, "step": step, "resumed_at": start}, checkpoint=checkpoint)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        # hyperband's first bracket promotes 3 of 9 configurations once all 9 are told: whatever the order of
        # arrival, at most one of them (the last told) trains on, the others resume from their checkpoints
        search = MultiFidelitySearch("hyperband", fidelities=(1, 3, 9), time_attr="step", max_queries=2, workers=2)
        space = {k: tune.choice(v) for k, v in SPACE.items()}
        tuner = tune.Tuner(train, param_space={**space, "root": str(tmp_path / "ckpt")},
                           tune_config=tune.TuneConfig(search_alg=search, scheduler=search.scheduler, metric="score",
                                                       mode="max", num_samples=-1, reuse_actors=True),
                           run_config=tune.RunConfig(storage_path=str(tmp_path / "ray"), verbose=0))  # fmt: skip
        results = tuner.fit()
    finally:
        ray.shutdown()
    study = search.study
    assert not study.pending() and study.spent >= 2 * 9 and len(results) == sum(t.parent is None for t in study.trials)
    promoted = [t for t in study.trials if t.parent is not None]
    assert promoted
    for t in promoted:  # resumed from its trial's checkpoint (or trained on): no step trained twice
        assert min(t.intermediate_values) == study.trials[t.parent].budget + 1 and t.state == "complete"
    for t in study.trials:
        a_is_4 = t.params["a"] == 4
        assert (t.state == "failed") == a_is_4 and (a_is_4 or t.value == pytest.approx(score(
            tuple(t.params[k] for k in "abc"), t.budget)))  # fmt: skip
    assert all(r.metrics["step"] <= 9 for r in results)
    assert sum(r.metrics["resumed_at"] > 0 for r in results) >= 2  # paused trials resumed from their checkpoints
    again = pickle.loads(pickle.dumps(search))  # Tune pickles its searcher: the log replays the same study
    assert [(t.tokens.tolist(), t.budget, t.parent, t.value) for t in again.study.trials] == [
        (t.tokens.tolist(), t.budget, t.parent, t.value) for t in study.trials]  # fmt: skip
