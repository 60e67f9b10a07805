"""Ask/tell (nas.host.study.Study, the batch driver) with objectives written in Python."""

import itertools
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np
import pytest

from nas.engine.runner import make_search
from nas.host.study import Study
from nas.searchers import make_searcher
from spaces.benchmarks.registry import make_benchmark

VALUES = {"lr": [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2], "width": [16, 32, 64, 128, 256], "act": ["relu", "tanh", "gelu"]}


def objective(p):
    # a function the user writes: a smooth bowl over log(lr) and log(width), plus a categorical effect
    return (
        (np.log10(p["lr"]) + 2.5) ** 2
        + (np.log2(p["width"]) - 6) ** 2 / 4
        + {"relu": 0.0, "tanh": 0.3, "gelu": 0.1}[p["act"]]
    )


def test_study_minimizes_a_python_function_without_repeats():
    study = Study(
        VALUES,
        searcher="regularized_evolution",
        direction="minimize",
        seed=0,
        max_queries=40,
        population_size=10,
        tournament_size=3,
    )
    study.optimize(objective, n_trials=40)
    assert len(study.trials) == 40 and all(t.state == "complete" for t in study.trials)
    keys = [tuple(sorted(t.params.items())) for t in study.trials]
    assert len(set(keys)) == 40  # never the same configuration twice
    assert study.best_value == min(t.value for t in study.trials)
    assert study.best_value == pytest.approx(objective(study.best_params))
    # better than the random start: 90 configurations, the optimum scores 0.25 (lr 3e-3 or 1e-3, width 64, relu)
    all_vals = sorted(objective(dict(zip(VALUES, c))) for c in itertools.product(*VALUES.values()))
    assert study.best_value <= all_vals[4]
    with pytest.raises(RuntimeError, match="budget"):
        study.ask()


def test_maximize_batches_executor_and_bad_values():
    study = Study(
        VALUES, searcher="local_search", direction="maximize", seed=1, max_queries=24, batch_size=4, num_init=4
    )
    trials = study.ask(4)
    assert len(trials) == 4 and len({tuple(t.tokens) for t in trials}) == 4
    with pytest.raises(RuntimeError, match="handed out"):
        study.ask()
    with pytest.warns(UserWarning, match="nan; recorded as a failed evaluation"):
        study.tell(trials[0], float("nan"))  # the one rule of tell: NaN is a failed evaluation, with a warning
    for t in trials[1:]:
        study.tell(t, -objective(t.params))
    with ThreadPoolExecutor(2) as ex:
        study.optimize(lambda p: -objective(p), n_trials=20, executor=ex)
    assert study.trials[0].state == "failed" and len(study.trials) == 24
    assert study.best_value == max(t.value for t in study.trials if t.state == "complete")
    with pytest.raises(ValueError, match="exceeds"):
        Study({"a": [1, 2], "b": [1, 2]}, max_queries=5)
    with pytest.raises(ValueError, match="no option"):
        Study(VALUES, searcher="random_search", max_queries=10, populaton_size=3)


@pytest.mark.parametrize(
    "name,options",
    [
        ("local_search", {"num_init": 5}),
        ("regularized_evolution", {"population_size": 8, "tournament_size": 3}),
        ("random_search", {}),
    ],
)
def test_study_with_a_table_objective_reproduces_the_compiled_runner(name, options):
    """Same seed, same searcher: the host loop proposes exactly the runner's strings (the Study's programs
    compile with other XLA options than the runner's: ``nas.host.programs``)."""
    bench = make_benchmark("nb201/cifar10")
    table = np.asarray(bench.mean_valid())
    radix = 5 ** np.arange(5, -1, -1)
    study = Study(bench.space, searcher=name, direction="maximize", seed=3, max_queries=40, **options)
    study.optimize(lambda trial: float(table[int(bench.space.from_spec(trial.params) @ radix)]))
    s = make_searcher(name, bench.space, max_queries=40, **options)
    hist = jax.jit(make_search(s))(jax.random.PRNGKey(3), bench)
    np.testing.assert_array_equal(np.stack([t.tokens for t in study.trials]), np.asarray(hist.tokens))


def test_study_failures_never_hang_and_bad_values_are_refused():
    space = {"a": [1, 2, 3], "b": ["x", "y", "z"]}
    calls = []

    def flaky(p):
        calls.append(p)
        if len(calls) == 2:
            raise RuntimeError("the training crashed")
        if len(calls) == 3:
            return float("nan")
        return p["a"] + len(p["b"])

    study = Study(space, searcher="random_search", max_queries=6, batch_size=2)
    with pytest.raises(RuntimeError, match="crashed"):
        study.optimize(flaky, n_trials=4)
    assert [t.state for t in study.trials] == ["complete", "pending"] and len(study.pending()) == 1
    with pytest.warns(UserWarning, match="recorded as a failed evaluation"):
        study.optimize(flaky)  # the crashed trial first (now NaN: failed), then the rest of the budget
    assert len(study.trials) == 6 and study.trials[1].state == "failed" and not study.pending()
    assert study.optimize(flaky, n_trials=0) is study  # nothing left, nothing asked
    with pytest.raises(ValueError, match="non-negative"):
        study.optimize(flaky, n_trials=-3)

    study = Study(space, searcher="random_search", max_queries=6, batch_size=2)
    with pytest.raises(ValueError, match=r"ask\(3\): only 2 can be handed out"):
        study.ask(3)
    assert not study.trials  # nothing handed out, nothing lost
    t0, t1 = study.ask(2)
    for bad in ("0.5", True, [1.0], 1j, np.array([1.0, 2.0])):
        with pytest.raises(TypeError, match="must be a real number"):
            study.tell(t0, bad)
    with pytest.raises(ValueError, match="not a trial of this study"):
        study.tell(-1, 1.0)
    study.tell(0, np.float32(2.0))
    t1.params["a"] = 99  # the user edits the params: the study's record is its tokens
    study.tell(t1, 1.0)
    assert study.best_value == 1.0 and study.best_params == study.space.to_spec(t1.tokens)  # minimized
    assert study.best_params["a"] != 99
    with pytest.raises(ValueError, match="listed twice"):
        Study({"a": [1, 1, 2]}, max_queries=2)
    with pytest.raises(ValueError, match="tournament_size"):
        Study(space, max_queries=5, population_size=3, tournament_size=5)


def test_studies_of_one_shape_share_their_compiled_programs():
    """A second Study with the same searcher options on a space of the same shape (other names and values)
    compiles nothing and proposes the same token strings as the first with the same seed."""
    from nas.engine.compiler_memory import BACKEND_COMPILE_EVENT

    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **_: compiles.append(secs) if event == BACKEND_COMPILE_EVENT else None
    )
    options = dict(searcher="regularized_evolution", seed=3, max_queries=12, population_size=4, tournament_size=2)
    first = Study({"a": [1, 2, 3], "b": ["x", "y"], "c": [0.1, 0.2, 0.3, 0.4]}, **options)
    first.optimize(lambda p: p["a"] * p["c"], n_trials=12, batch_size=2)
    compiles.clear()
    other = Study({"depth": [2, 4, 8], "act": ["relu", "gelu"], "lr": [1e-3, 1e-2, 1e-1, 1.0]}, **options)
    other.optimize(lambda p: p["depth"] * p["lr"], n_trials=12, batch_size=2)
    assert compiles == []
    np.testing.assert_array_equal([t.tokens for t in first.trials[:2]], [t.tokens for t in other.trials[:2]])


def test_a_searcher_object_and_a_prng_key_decide_as_the_registered_name_and_its_seed(tmp_path):
    from nas.host.storage import StorageError

    named = Study(VALUES, "random_search", seed=4, max_queries=6, batch_size=2)
    named.optimize(objective)
    searcher = make_searcher("random_search", named.space, max_queries=6, batch_size=2)
    built = Study(named.space, searcher, seed=jax.random.PRNGKey(4))
    built.optimize(objective)
    assert built.searcher is searcher and built.max_queries == 6 and built.seed is None
    np.testing.assert_array_equal([t.tokens for t in built.trials], [t.tokens for t in named.trials])
    with pytest.raises(ValueError, match="is a searcher object, built with its options: give the Study none"):
        Study(named.space, searcher, batch_size=3)
    with pytest.raises(StorageError, match="not a PRNG key or a searcher object"):
        Study(named.space, searcher, storage=str(tmp_path / "s.jsonl"))
    with pytest.raises(TypeError, match="seed must be an integer or a JAX PRNG key"):
        Study(VALUES, "random_search", seed="4", max_queries=6)
