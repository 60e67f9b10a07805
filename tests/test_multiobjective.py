"""Multi-objective and constrained search: objectives' metrics, NSGA-II's selection, ParEGO's scalarization,
constraints (infeasible everywhere, feasible only at the end), the true front of a small table, the reports,
and runs that name no metric computing exactly what they did before."""

import itertools
import json
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from configs import default
from nas.core.hypervolume import hypervolume
from nas.core.pareto import nondominated_mask
from nas.engine.incumbent import incumbent_scores
from nas.engine.multi_fidelity_runner import make_mf_search
from nas.engine.runner import empty_history, make_search
from nas.experiment import pareto_report as pr
from nas.experiment.config import ConfigError, searcher_configs
from nas.experiment.report import clean
from nas.experiment.run import run_experiment
from nas.searchers import make_searcher
from nas.searchers.nsga2 import environmental_selection
from nas.searchers.scalarized import chebyshev_score, parego_weights
from spaces.base import CategoricalSpace
from spaces.benchmarks.constrained import constrain, parse_constraints
from spaces.benchmarks.metrics import objective_vector
from spaces.benchmarks.registry import make_benchmark
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.files import MissingPackageError
from tests.mf_tables import toy_table

SPACE = CategoricalSpace("toy_mo", {"a": list(range(4)), "b": list(range(4))})


def toy() -> TabularBenchmark:
    """16 networks: accuracy rises with a and b, latency with a (more) and b; a few trade-offs."""
    rows = {
        (a, b): {"valid": 50.0 + 10 * a + 4 * b - (a * b) % 3, "latency": 1.0 + 2.0 * a + b}
        for a, b in itertools.product(range(4), repeat=2)
    }
    return TabularBenchmark.from_dict(name="toy/mo", space=SPACE, table=rows, report_kind="acc_pct",
                                      metrics=[("latency", "ms")])  # fmt: skip


def test_metrics_of_a_table_and_the_vector_a_searcher_is_told():
    bench = toy()
    res = bench.query(jax.random.PRNGKey(0), jnp.asarray([[1, 2], [0, 7]], jnp.int32))  # the second is invalid
    assert float(res["latency"][0]) == 5.0 and np.isnan(float(res["latency"][1]))
    vec = np.asarray(objective_vector(res, bench, ("latency",)))
    assert vec[0].tolist() == [float(res["valid"][0]), -5.0] and np.all(np.isneginf(vec[1]))
    with pytest.raises(ValueError, match="needs 'valid', 'latency'"):
        TabularBenchmark.from_dict(name="x", space=SPACE, table={(0, 0): {"valid": 1.0}}, metrics=[("latency", "ms")])
    with pytest.raises(ValueError, match=r"has no metric 'params'; its metrics: \['latency'\]"):
        objective_vector(res, bench, ("params",))
    nb = make_benchmark("nb201/cifar10")
    assert [m.name for m in nb.metric_info] == ["latency", "model_size", "train_time"]


def test_nsga2_selection_on_a_hand_made_population():
    # R = P u Q (maximized scores): front 0 = {0, 1, 2, 3} (3 a copy of 1), front 1 = {4, 5}, 6 failed
    scores = jnp.asarray([[9.0, 1.0], [5.0, 5.0], [1.0, 9.0], [5.0, 5.0], [4.0, 4.0], [0.0, 8.0], [-jnp.inf] * 2])
    tokens = jnp.arange(7, dtype=jnp.int32)[:, None]
    mask = jnp.ones((7,), bool)
    tok, _, rank, crowd = environmental_selection(tokens, scores, mask, 3)
    # the whole front does not fit: its boundary rows (infinite crowding) first, then the copies of (5, 5),
    # whose neighbours are each other on one side: ties to the lower index
    assert np.asarray(tok[:, 0]).tolist() == [0, 2, 1] and np.asarray(rank).tolist() == [0, 0, 0]
    tok, _, rank, _ = environmental_selection(tokens, scores, mask, 6)
    assert sorted(np.asarray(tok[:4, 0]).tolist()) == [0, 1, 2, 3] and np.asarray(rank).tolist() == [0] * 4 + [1, 1]
    # a generation: after population_size results the parents are R's selection
    s = make_searcher("nsga2", SPACE, population_size=4, batch_size=2, max_queries=12)
    st = s.init(jax.random.PRNGKey(0))
    for half in (scores[:2], scores[2:4]):
        st, m = s.tell(jax.random.PRNGKey(1), jnp.asarray([[0, 1], [1, 1]], jnp.int32), half, st)
    assert int(st.generation) == 1 and int(st.pop_count) == 4 and float(m["front_size"]) == 4


def test_parego_weights_and_the_augmented_chebyshev_score():
    w = parego_weights(2)
    assert w.shape == (11, 2) and np.allclose(w.sum(1), 1.0) and parego_weights(3).shape == (21, 3)
    lo, hi = jnp.asarray([0.0, -10.0]), jnp.asarray([10.0, 0.0])
    # normalized losses (0.5, 0.2): max(0.25, 0.1) + 0.05 * 0.35
    got = chebyshev_score(jnp.asarray([5.0, -2.0]), jnp.asarray([0.5, 0.5]), lo, hi)
    assert float(got) == pytest.approx(-(0.25 + 0.05 * 0.35))
    assert float(chebyshev_score(jnp.asarray([-jnp.inf, 0.0]), jnp.asarray([0.5, 0.5]), lo, hi)) == -np.inf


def test_true_front_of_a_small_table_and_a_run_that_queries_it_all():
    bench = toy()
    problem = pr.table_problem(bench, ("latency",))
    valid, lat = np.asarray(bench.mean_valid()), np.asarray(bench.columns["latency"])
    pts = np.stack([-valid, lat], 1)
    want = pts[nondominated_mask(pts)]
    assert sorted(map(tuple, problem.front)) == sorted(map(tuple, want))
    assert problem.ideal.tolist() == [-valid.max(), lat.min()]
    accurate = want[want[:, 0] < np.median(-valid)]  # the reference: median error; costliest such front network + 10 %
    nadir = accurate[:, 1].max()
    np.testing.assert_allclose(problem.reference, [np.median(-valid), nadir + 0.1 * (nadir - lat.min())])
    box = (problem.reference - problem.ideal)
    brute = float(hypervolume(jnp.asarray((want - problem.ideal) / box), jnp.ones(2)))
    assert problem.hv_true == pytest.approx(brute)
    # every configuration queried (in any order): the gap is 0 exactly; nothing yet: 100 %
    h = {"score": valid[None, ::-1], "report_score": valid[None, ::-1], "metrics": {"latency": lat[None, ::-1]}}
    hv = pr.hypervolume_at(h, problem, np.asarray([[-1, 3, 15]]))
    assert pr.gap(hv, problem)[0, 0] == 100.0 and abs(pr.gap(hv, problem)[0, 2]) < 1e-4


def test_constraints_penalty_and_filter():
    bench = toy()
    assert parse_constraints("latency<=4, params<=1e6") == (("latency", 4.0), ("params", 1e6))
    with pytest.raises(ValueError, match="is not '<metric><=<number>'"):
        parse_constraints("latency<4")
    tokens = jnp.asarray([[0, 2], [1, 1], [3, 3]], jnp.int32)  # latency 3, 4, 10
    raw = bench.query(jax.random.PRNGKey(0), tokens)
    pen = constrain(bench, "latency<=4").query(jax.random.PRNGKey(0), tokens)
    fil = constrain(bench, "latency<=4", "filter").query(jax.random.PRNGKey(0), tokens)
    np.testing.assert_array_equal(np.asarray(pen["valid"][:2]), np.asarray(raw["valid"][:2]))
    floor = float(np.min(np.asarray(bench.valid))) - 1.0
    assert float(pen["valid"][2]) == pytest.approx(floor - 1.5)  # relative violation (10 - 4) / 4
    assert float(fil["valid"][2]) == -np.inf and float(pen["test"][2]) == -np.inf
    assert constrain(bench, "latency<=4").best_valid()["best_valid"] == 63.0  # (1, 1), the best with latency <= 4
    with pytest.raises(ValueError, match="has no metric 'params'"):
        constrain(bench, "params<=3")


@pytest.mark.parametrize("name", ["random_search", "regularized_evolution", "local_search"])
def test_infeasible_everywhere_and_feasible_only_at_the_end(name):
    bench = toy()
    opts = {"max_queries": 12, **({"population_size": 4, "tournament_size": 2} if "evol" in name else {}),
            **({"num_init": 3} if name == "local_search" else {})}  # fmt: skip
    run = jax.jit(make_search(make_searcher(name, SPACE, **opts), ("latency",)))
    key = jax.random.PRNGKey(4)
    nowhere = run(key, constrain(bench, "latency<=0.5"))  # no network is that fast
    inc = incumbent_scores(np.asarray(nowhere.score), np.asarray(nowhere.report_score))
    assert np.all(np.isneginf(inc)) and len({tuple(t) for t in np.asarray(nowhere.tokens).tolist()}) == 12
    if name != "random_search":
        return
    # random search's order does not depend on scores: make only its last query feasible
    last = tuple(np.asarray(nowhere.tokens[-1]).tolist())
    rows = {
        k: {"valid": 50.0 + k[0] + k[1], "latency": 1.0 if k == last else 9.0}
        for k in itertools.product(range(4), repeat=2)
    }
    late = TabularBenchmark.from_dict(name="toy/late", space=SPACE, table=rows, metrics=[("latency", "ms")])
    h = run(key, constrain(late, "latency<=2"))
    inc = incumbent_scores(np.asarray(h.score), np.asarray(h.report_score))
    assert np.all(np.isneginf(inc[:-1])) and inc[-1] == 50.0 + sum(last)


def test_runs_without_metrics_are_unchanged():
    bench = make_benchmark("nb201/cifar10")
    s = make_searcher("regularized_evolution", bench.space, max_queries=20, batch_size=3, population_size=6,
                      tournament_size=3)  # fmt: skip
    assert len(jax.tree.leaves(empty_history(s))) == 4  # no metric buffers: no extra memory
    plain = jax.jit(make_search(s))(jax.random.PRNGKey(2), bench)
    both = jax.jit(make_search(s, ("latency", "model_size")))(jax.random.PRNGKey(2), bench)
    assert plain.metrics == {} and set(both.metrics) == {"latency", "model_size"}
    for k in ("tokens", "score", "report_score", "cost"):
        np.testing.assert_array_equal(np.asarray(getattr(plain, k)), np.asarray(getattr(both, k)), err_msg=k)
    asha = make_searcher("asha", toy_table().space, max_queries=4, fidelities=toy_table().fidelities, workers=2)
    a = jax.jit(make_mf_search(asha))(jax.random.PRNGKey(2), toy_table())
    b = jax.jit(make_mf_search(asha, ("size",)))(jax.random.PRNGKey(2), toy_table())
    assert a.metrics == {} and b.metrics["size"].shape == a.score.shape
    np.testing.assert_array_equal(np.asarray(a.score), np.asarray(b.score))


def mo_config():
    config = ml_collections.ConfigDict(default.get_config().to_dict())
    config.benchmark = "test/toy_mf"
    config.metrics = ("size",)
    config.num_trials, config.max_queries, config.report_every, config.chunk_steps = 2, 6, 2, 5
    config.searchers = searcher_configs(
        nsga2={"name": "nsga2", "population_size": 2},
        mo_asha={"name": "mo_asha", "workers": 2},
        random_search={"name": "random_search"},
        random_small={"name": "random_search", "constraints": "size<=4"},
    )
    return config


@pytest.mark.slow
def test_a_multi_objective_run_resumes_bit_for_bit_and_reports_fronts(tmp_path):
    config = mo_config()
    summary = run_experiment(config, str(tmp_path / "whole"), progress=False)
    assert run_experiment(config, str(tmp_path / "part"), progress=False, max_chunks=1) is None
    resumed = run_experiment(config, str(tmp_path / "part"), progress=False)
    assert json.dumps(clean(resumed)) == json.dumps(clean(summary))
    assert os.path.exists(tmp_path / "whole" / "pareto.png")
    p = summary["pareto"]
    assert p["reference_source"] == "table" and set(p["searchers"]) == {"nsga2", "mo_asha", "random_search"}
    finals = []
    for s in p["searchers"].values():
        gaps = np.asarray(s["gap"]["mean"])
        assert np.all(np.diff(gaps) <= 1e-9) and 0.0 <= gaps[-1] <= 100.0  # a front only grows
        finals.append(gaps[-1])
    # 6 queries of 25 cells: a searcher may find nothing inside the reference box (gap 100), not every one
    assert min(finals) < 100.0
    c = summary["constraints"]["size<=4"]
    assert c["feasible_share"] == pytest.approx(10 / 25) and c["table_best"] is not None
    assert c["searchers"]["random_small"]["trials_with_incumbent"][-1] == 2


def test_config_checks_of_metrics_and_constraints():
    config = mo_config()
    config.searchers.nsga2.num_objectives = 3
    with pytest.raises(ConfigError, match=r"nsga2.num_objectives=3, but config.metrics names 1 metric"):
        run_experiment(config, "/tmp/never-written", progress=False)
    config = mo_config()
    config.metrics = ("latency",)
    with pytest.raises(ConfigError, match="has no metric 'latency'; its metrics: \\['size'\\]"):
        run_experiment(config, "/tmp/never-written", progress=False)
    config = mo_config()
    config.searchers.random_small.constraints = "size<4"
    with pytest.raises(ConfigError, match="random_small.constraints"):
        run_experiment(config, "/tmp/never-written", progress=False)


@pytest.mark.parametrize("name,options", [("optuna_mo", {"sampler": "nsga2", "population_size": 4}),
                                          ("optuna_mo", {"sampler": "tpe"}), ("syne_tune_morea", {})])  # fmt: skip
def test_multi_objective_peers_search_fronts_and_resume(tmp_path, name, options):
    from nas.experiment import peers

    bench = toy()
    keys = jax.random.split(jax.random.PRNGKey(5), 2)
    try:
        peer = peers.make_peer(name, SPACE, max_queries=10, seeds_per_group=1, **options)
    except MissingPackageError as e:  # an optional package (requirements-dev.txt) that is not installed here
        pytest.skip(str(e))
    h = peers.run_peer(peer, bench, keys, progress=False, metrics=("latency",))
    assert set(h.metrics) == {"latency"} and h.metrics["latency"].shape == (2, 10)
    for row in np.asarray(h.tokens):
        assert len({tuple(t) for t in row.tolist()}) == 10  # never re-query
    lat = np.asarray(jax.vmap(lambda t: bench.query(jax.random.PRNGKey(0), t)["latency"])(h.tokens))
    np.testing.assert_array_equal(lat, np.asarray(h.metrics["latency"]))
    ckpt = str(tmp_path / "peer.npz")
    assert peers.run_peer(peer, bench, keys, progress=False, metrics=("latency",), ckpt_path=ckpt, max_chunks=1) is None
    again = peers.run_peer(peer, bench, keys, progress=False, metrics=("latency",), ckpt_path=ckpt)
    np.testing.assert_array_equal(np.asarray(again.tokens), np.asarray(h.tokens))
    with pytest.raises(ValueError, match="optimizes 2 objectives; the run names 0 metrics"):
        peers.run_peer(peer, bench, keys, progress=False)


def test_every_multiobjective_config_validates():
    from configs import multiobjective
    from nas.experiment.config import validate_config

    expected = {
        "nb201/cifar100,model_size": "model_size", "hpolib/naval_propulsion": "train_time", "mlp/naval": "params",
        "nb201/imagenet16,latency,peer": "latency", "nb201/cifar10,latency,constrained": "latency",
    }  # fmt: skip
    for arg, metric in expected.items():
        config = multiobjective.get_config(arg)
        validate_config(config)
        assert config.metrics == (metric,)
    with pytest.raises(ValueError, match="the argument is"):
        multiobjective.get_config("nb101/data1k")
