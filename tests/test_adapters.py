"""Registered searchers inside Optuna (SearcherSampler) and Ray Tune (SearcherSearch) studies."""

import itertools
import math
import pickle

import pytest

from nas.host.study import Study
from spaces.params import Float, Int

VALUES = {"lr": [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2], "width": [16, 32, 64, 128, 256], "act": ["relu", "tanh", "gelu"]}
EVO = dict(population_size=8, tournament_size=3)


def loss(p):
    # a bowl over log(lr) and log(width) plus a categorical effect: 90 configurations
    return (
        (math.log10(p["lr"]) + 2.5) ** 2
        + (math.log2(p["width"]) - 6) ** 2 / 4
        + {"relu": 0.0, "tanh": 0.3, "gelu": 0.1}[p["act"]]
    )


def _key(p):
    return tuple(sorted(p.items()))


# -- Optuna ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def optuna():
    optuna = pytest.importorskip("optuna", reason="Optuna is not installed (pip install optuna)")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _suggest_all(trial):
    return {k: trial.suggest_categorical(k, v) for k, v in VALUES.items()}


def test_optuna_sampler_proposes_what_the_study_proposes(optuna):
    from nas.adapters.optuna_sampler import SearcherSampler

    sampler = SearcherSampler("regularized_evolution", VALUES, max_queries=20, seed=0, **EVO)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.optimize(lambda t: loss(_suggest_all(t)), n_trials=20)
    ref = Study(VALUES, "regularized_evolution", "minimize", seed=0, max_queries=20, **EVO).optimize(loss)
    assert [t.params for t in study.trials] == [t.params for t in ref.trials]  # same searcher, same numbers
    assert len({_key(t.params) for t in study.trials}) == 20
    assert study.best_value == ref.best_value
    ranked = sorted(loss(dict(zip(VALUES, c))) for c in itertools.product(*VALUES.values()))
    assert study.best_value <= ranked[4]  # top 5 of 90 in 20 trials
    with pytest.raises(RuntimeError, match="max_queries=20 trials is spent"):
        study.optimize(lambda t: loss(_suggest_all(t)), n_trials=1)


def test_optuna_one_line_switch_learns_space_failed_and_pruned(optuna):
    from nas.adapters.optuna_sampler import SearcherSampler

    def objective(trial):
        p = _suggest_all(trial)
        if p["act"] == "tanh":
            raise ValueError("diverged")  # a failed trial
        if p["width"] == 256:
            trial.report(loss(p) + 1.0, step=0)
            raise optuna.TrialPruned()
        return loss(p)

    # the one line (was TPESampler()); the searcher's budget 21 - 1 startup trial = 20 runs the program
    # compiled for the test above (the persistent compilation cache; "remaade" or "bananas" work the same)
    sampler = SearcherSampler("regularized_evolution", max_queries=21, seed=1, **EVO)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.optimize(objective, n_trials=21, catch=(ValueError,))
    assert len(study.trials) == 21
    inner = sampler.study  # the first trial is the uniform startup trial that taught the space
    assert list(inner.space.values) == list(VALUES) and len(inner.trials) == 20
    for ot, st in zip(study.trials[1:], inner.trials):
        assert ot.params == st.params
        if ot.state == optuna.trial.TrialState.FAIL:
            assert st.state == "failed"
        elif ot.state == optuna.trial.TrialState.PRUNED:
            assert st.state == "complete" and st.value == pytest.approx(loss(ot.params) + 1.0)
        else:
            assert st.value == pytest.approx(ot.value)
    states = {t.state for t in study.trials}
    assert {optuna.trial.TrialState.FAIL, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.COMPLETE} == states


def test_optuna_batches_threads_and_ask_tell(optuna):
    from nas.adapters.optuna_sampler import SearcherSampler

    sampler = SearcherSampler("random_search", VALUES, max_queries=6, seed=2, batch_size=3)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: loss(_suggest_all(t)), n_trials=6, n_jobs=3)
    assert [t.state for t in sampler.study.trials] == ["complete"] * 6
    assert len({_key(t.params) for t in study.trials}) == 6

    sampler = SearcherSampler("random_search", VALUES, max_queries=6, seed=2)
    study = optuna.create_study(sampler=sampler)
    first, second = study.ask(), study.ask()
    _suggest_all(first)
    with pytest.raises(RuntimeError, match="tell them first"):
        _suggest_all(second)  # one thread, batch of 1 out: it would wait for itself
    study.tell(first, 1.0)
    assert _suggest_all(second) == sampler.study.trials[1].params


def test_optuna_unmappable_distributions_are_clear_errors(optuna):
    from nas.adapters.optuna_sampler import SearcherSampler

    with pytest.raises(ValueError, match="no log range with a step"):
        SearcherSampler("random_search", {"lr": Float(1e-4, 1e-1, log=True, step=1e-4)})
    with pytest.raises(ValueError, match="no option"):
        SearcherSampler("regularized_evolution", VALUES, populaton_size=4)
    for seed in (0, 3):  # the searcher's value outside the suggested range (0.95), or inside it (0.42): both refused
        study = optuna.create_study(
            sampler=SearcherSampler("random_search", {"lr": Float(0, 1)}, max_queries=6, seed=seed)
        )
        with pytest.raises(ValueError, match="'lr' suggested as .*high=0.5.* the sampler's search space has"):
            study.optimize(lambda t: t.suggest_float("lr", 0.0, 0.5), n_trials=1)
    study = optuna.create_study(sampler=SearcherSampler("random_search", VALUES, max_queries=6))
    with pytest.raises(ValueError, match="'b' is not in the sampler's search space"):
        study.optimize(lambda t: loss(_suggest_all(t)) + t.suggest_categorical("b", [1, 2]), n_trials=1)


def _suggest_mixed(t):
    return {
        "lr": t.suggest_float("lr", 1e-5, 1e-1, log=True),
        "drop": t.suggest_float("drop", 0.0, 0.5, step=0.05),
        "width": t.suggest_int("width", 16, 1024, log=True),
        "layers": t.suggest_int("layers", 1, 8),
        "act": t.suggest_categorical("act", ["relu", "tanh"]),
    }


def _mixed_loss(p):
    return (math.log10(p["lr"]) + 3) ** 2 + (p["drop"] - 0.2) ** 2 + (math.log2(p["width"]) - 7) ** 2 / 8 + p["layers"]


def test_optuna_suggest_float_log_step_and_int_through_the_sampler(optuna):
    """``suggest_float(log=True)``, ``step=``, ``suggest_int(log=True)``: learned or given, the searcher's grid
    values are the trials' values (Optuna accepts them: it would sample a value of its own otherwise)."""
    from optuna.distributions import FloatDistribution, IntDistribution

    from nas.adapters.optuna_sampler import SearcherSampler

    given = {
        "lr": Float(1e-5, 1e-1, log=True, num=33),  # a declaration sets the grid's resolution
        "drop": FloatDistribution(0.0, 0.5, step=0.05),
        "width": IntDistribution(16, 1024, log=True),
        "layers": Int(1, 8),
        "act": ["relu", "tanh"],
    }
    for space in (None, given):
        sampler = SearcherSampler("random_search", space, max_queries=9, seed=0)
        study = optuna.create_study(sampler=sampler)
        study.optimize(lambda t: _mixed_loss(_suggest_mixed(t)), n_trials=9)
        ours = sampler.study.trials
        theirs = study.trials[len(study.trials) - len(ours) :]
        assert [t.params for t in theirs] == [o.params for o in ours] and len(ours) == 9 - (space is None)
        for t in theirs:
            assert all(d._contains(d.to_internal_repr(t.params[k])) for k, d in t.distributions.items())
            assert type(t.params["width"]) is int and type(t.params["lr"]) is float
    assert {t.params["lr"] for t in theirs} <= set(given["lr"].values())

    def conditional(t):
        opt = t.suggest_categorical("opt", ["sgd", "adam"])
        lr = t.suggest_float("lr", 1e-4, 1e-1, log=True)
        return lr * (t.suggest_float("momentum", 0.0, 0.99) if opt == "sgd" else 1.0)

    space = {"opt": ["sgd", "adam"], "lr": Float(1e-4, 1e-1, log=True), "momentum": Float(0, 0.99, when={"opt": "sgd"})}
    sampler = SearcherSampler("random_search", space, max_queries=6, seed=3)
    study = optuna.create_study(sampler=sampler)
    study.optimize(conditional, n_trials=6)
    assert [t.params for t in study.trials] == [t.params for t in sampler.study.trials]
    assert {t.params["opt"] for t in study.trials} == {"sgd", "adam"}
    study = optuna.create_study(sampler=SearcherSampler("random_search", space, max_queries=6, seed=3))
    with pytest.raises(ValueError, match="'momentum' is inactive in trial .* only when opt in \\['sgd'\\]"):
        study.optimize(lambda t: conditional(t) + t.suggest_float("momentum", 0.0, 0.99), n_trials=6)


# -- Ray Tune ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tune():
    return pytest.importorskip("ray.tune", reason='Ray Tune is not installed (pip install "ray[tune]")')


def test_ray_searcher_batches_failures_budget_and_checkpoint(tune):
    from nas.adapters.ray_tune import SearcherSearch

    space = {"opt": {"lr": tune.choice(VALUES["lr"])}, "width": VALUES["width"], "act": VALUES["act"]}
    search = SearcherSearch("random_search", space, metric="loss", mode="min", max_queries=6, batch_size=3)
    configs = {f"t{i}": search.suggest(f"t{i}") for i in range(3)}
    assert search.suggest("t3") is None  # the batch is out: Tune asks again later
    flat = {k: {"lr": c["opt"]["lr"], "width": c["width"], "act": c["act"]} for k, c in configs.items()}
    search.on_trial_complete("t0", {"loss": loss(flat["t0"])})
    search.on_trial_complete("t1", None, error=True)
    copy = pickle.loads(pickle.dumps(search))  # mid-batch: replayed from the log
    assert copy.suggest("t3") is None
    for s in (search, copy):
        with pytest.warns(UserWarning, match="no metric 'loss'"):
            s.on_trial_complete("t2", {"other": 1.0})
    assert [t.state for t in search.study.trials] == ["complete", "failed", "failed"]
    nxt = [search.suggest(f"n{i}") for i in range(3)]
    assert nxt == [copy.suggest(f"n{i}") for i in range(3)]  # the restored searcher continues identically
    assert search.suggest("n3") == "FINISHED"  # the budget is out: Tune waits for the running trials
    for i in range(3):
        search.on_trial_complete(f"n{i}", {"loss": float("nan") if i == 0 else 1.0 + i})
    assert [t.state for t in search.study.trials[3:]] == ["failed", "complete", "complete"]
    assert search.suggest("n4") == "FINISHED"


def test_ray_domains_map_to_grids_and_clear_errors(tune):
    from nas.adapters.ray_tune import SearcherSearch, declared_params

    param_space = {
        "lr": tune.loguniform(1e-5, 1e-1),
        "u": tune.uniform(0, 1),
        "q": tune.quniform(0.1, 1.0, 0.1),
        "ql": tune.qloguniform(1e-4, 1e-1, 5e-5),
        "n": {"layers": tune.randint(1, 9)},  # upper bound excluded
        "w": tune.lograndint(16, 1025),
        "k": tune.qrandint(0, 10, 2),  # upper bound included
        "act": tune.choice(["relu", "tanh"]),
        "epochs": 20,  # a constant passes through
    }
    assert declared_params(param_space) == {
        "lr": Float(1e-5, 1e-1, log=True),
        "u": Float(0, 1),
        "q": Float(0.1, 1.0, step=0.1),
        "ql": Float(1e-4, 1e-1, log=True, step=5e-5),
        "n/layers": Int(1, 8),
        "w": Int(16, 1024, log=True),
        "k": Int(0, 10, step=2),
        "act": ["relu", "tanh"],
    }
    space = {k: v for k, v in param_space.items() if k != "epochs"}  # space= holds parameters only
    search = SearcherSearch("random_search", space, metric="loss", mode="min", max_queries=4, batch_size=2)
    for c in (search.suggest("a"), search.suggest("b")):
        # random search takes ranges continuously: a value of the fine grid (spaces.params.FINE_POINTS)
        assert 1e-5 <= c["lr"] <= 1e-1 and c["lr"] in Float(1e-5, 1e-1, log=True).fine_values()
        assert (
            c["n"]["layers"] in range(1, 9)
            and c["k"] in range(0, 11, 2)
            and abs(c["q"] * 10 - round(c["q"] * 10)) < 1e-9
        )
    for bad, match in (
        ({"g": tune.grid_search([1, 2])}, "tune.grid_search evaluates every value"),
        ({"x": tune.randn(0, 1)}, "'x'.*tune.randn has no bounds"),
        ({"f": tune.sample_from(lambda c: 1)}, "'f'.*cannot choose its value"),
    ):
        with pytest.raises(ValueError, match=match):
            declared_params(bad)
    cond = {"opt": ["sgd", "adam"], "momentum": Float(0.0, 0.99, when={"opt": ["sgd"]}), "lr": tune.loguniform(1e-4, 1)}
    search = SearcherSearch("random_search", cond, metric="loss", mode="min", max_queries=6, batch_size=6)
    configs = [search.suggest(str(i)) for i in range(3)]
    copy = pickle.loads(pickle.dumps(search))  # Tune's checkpoint: the declarations travel with the log
    configs += [search.suggest(str(i)) for i in range(3, 6)]
    assert configs[3:] == [copy.suggest(str(i)) for i in range(3, 6)]
    assert all(("momentum" in c) == (c["opt"] == "sgd") for c in configs) and len({c["opt"] for c in configs}) == 2


@pytest.mark.slow
def test_ray_tuner_drives_a_study_to_completion(tune, tmp_path):
    import ray

    from nas.adapters.ray_tune import SearcherSearch

    def train(config):
        if config["act"] == "gelu" and config["width"] == 16:
            raise RuntimeError("diverged")
        tune.report({"loss": loss(config)})

    search = SearcherSearch("random_search", max_queries=6, seed=0, batch_size=3)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        results = tune.Tuner(
            train,
            param_space={
                **{k: tune.choice(v) for k, v in VALUES.items()},
                "const": 7,
                "wd": tune.loguniform(1e-5, 1e-1),
            },
            tune_config=tune.TuneConfig(
                search_alg=search, metric="loss", mode="min", num_samples=10, reuse_actors=True
            ),
            run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0),
        ).fit()
    finally:
        ray.shutdown()
    assert len(results) == 6  # the searcher's budget ends the run
    trials = search.study.trials
    assert [t.state for t in trials].count("complete") == sum(r.error is None for r in results)
    done = {_key({k: r.config[k] for k in [*VALUES, "wd"]}): r.metrics["loss"] for r in results if r.error is None}
    assert {_key(t.params): t.value for t in trials if t.state == "complete"} == pytest.approx(done)
    # random search takes tune.loguniform continuously: a value of its fine grid (spaces.params.FINE_POINTS)
    assert all(r.config["wd"] in Float(1e-5, 1e-1, log=True).fine_values() for r in results)
    assert all(r.config["const"] == 7 for r in results)
