"""Evaluation protocols on a hand-made table with per-run values: mean, random, random_run (the ReMAADE paper's)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.engine.runner import make_search
from nas.experiment.config import ConfigError, build_benchmark, validate_config
from nas.searchers import make_searcher
from spaces.base import CategoricalSpace
from spaces.benchmarks.protocols import ProtocolError
from spaces.benchmarks.tabular import TabularBenchmark
from tests.conftest import shared_file

SPACE = CategoricalSpace("runs", {"a": [0, 1, 2], "b": [0, 1]})
# three entries with 3, 2 and 1 training runs: (validation, test) of each run, the same run in the same place
RUNS = {
    (0, 0): ([70.0, 80.0, 90.0], [60.0, 75.0, 95.0]),
    (1, 1): ([50.0, 52.0], [40.0, 44.0]),
    (2, 0): ([10.0], [11.0]),
}
STRINGS = np.asarray(list(RUNS), np.int32)


def table(protocol, per_run_test=True):
    rows = {k: {"valid": v, "test": t if per_run_test else float(np.mean(t))} for k, (v, t) in RUNS.items()}
    return TabularBenchmark.from_dict(name="runs", space=SPACE, table=rows, protocol=protocol)


def draws(bench, n=300):
    """valid[n, 3], test[n, 3]: ``n`` queries of the three strings, each with its own key."""
    res = jax.jit(jax.vmap(lambda k: bench.query(k, jnp.asarray(STRINGS))))(jax.random.split(jax.random.PRNGKey(0), n))
    return np.asarray(res["valid"]), np.asarray(res["test"])


def test_mean_averages_both_splits():
    valid, test = draws(table("mean"), n=4)
    np.testing.assert_allclose(valid, np.broadcast_to([80.0, 51.0, 10.0], valid.shape))
    np.testing.assert_allclose(test, np.broadcast_to([230 / 3, 42.0, 11.0], test.shape), rtol=1e-6)


def test_random_draws_a_run_and_reports_the_seed_mean_test():
    valid, test = draws(table("random"))
    for i, (runs, _) in enumerate(RUNS.values()):
        assert set(valid[:, i].tolist()) == set(runs)  # every run is drawn, nothing else
    np.testing.assert_allclose(test, np.broadcast_to([230 / 3, 42.0, 11.0], test.shape), rtol=1e-6)


def test_random_run_reports_the_same_runs_test():
    valid, test = draws(table("random_run"))
    for i, (runs, tests) in enumerate(RUNS.values()):
        pairs = set(zip(valid[:, i].tolist(), test[:, i].tolist()))
        assert pairs == set(zip(runs, tests))  # each query's test is the test of its own run, every run drawn
    # the draws of random and random_run are the same runs (one key, one draw)
    np.testing.assert_array_equal(valid, draws(table("random"))[0])


def test_random_run_needs_per_run_test_scores():
    with pytest.raises(ProtocolError, match="seed means"):
        table("random_run", per_run_test=False)
    with pytest.raises(ProtocolError, match="'random' \\(a random run's validation"):
        table("mean", per_run_test=False).with_protocol("random_run")
    with pytest.raises(ValueError, match="protocol must be one of"):
        table("mean").with_protocol("paper")


def test_random_run_without_test_split_reports_the_drawn_validation():
    rows = {k: v for k, (v, _) in RUNS.items()}
    bench = TabularBenchmark.from_dict(name="runs", space=SPACE, table=rows, protocol="random_run")
    valid, test = draws(bench)
    np.testing.assert_array_equal(test, valid)


def test_a_search_under_random_run_reports_its_incumbents_own_run():
    bench = table("random_run")
    searcher = make_searcher("random_search", SPACE, batch_size=1, max_queries=3)
    hist = jax.jit(jax.vmap(make_search(searcher), in_axes=(0, None)))(
        jax.random.split(jax.random.PRNGKey(1), 32), bench
    )
    score, report = np.asarray(hist.score).ravel(), np.asarray(hist.report_score).ravel()
    found = np.isfinite(score)  # the other three strings of the space are not in the table
    pairs = set(zip(score[found].tolist(), report[found].tolist()))
    assert pairs <= {p for runs, tests in RUNS.values() for p in zip(runs, tests)}
    assert len(pairs) == 6  # every run of every entry was drawn somewhere


def test_config_protocols():
    from configs import table3

    config = table3.get_config("hpolib/naval_propulsion")
    config.protocol = "random_run"
    validate_config(config)
    config.protocol = "paper"
    with pytest.raises(ConfigError, match="config.protocol must be one of"):
        validate_config(config)
    assert table3.get_config("nb101").protocol == "random_run"  # the ReMAADE paper's protocol on NAS-Bench-101


def test_nb201_test_csv_refuses_random_run():
    config = {
        "benchmark": "nb201/cifar10",
        "protocol": "random_run",
        "test_data": shared_file("nb201/nats_bench_test_acc.csv"),
    }
    with pytest.raises(ConfigError, match="config.protocol='random_run'.*seed means"):
        build_benchmark(config)
