"""TNAS on the suites beyond NB201: flat spaces (HPOLib FCNet: MLP psi, 62,208 configurations; HPOBench),
NAS-Bench-Graph (a DAG per link structure, one string per table row), and the searcher's identity, which
keys on the parameters file's contents."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import hpobench_tnas, hpolib_tnas, mlp_tnas, nasbench_graph_tnas
from nas.engine.runner import make_search
from nas.experiment import cli
from nas.experiment.tnas_settings import settings
from nas.searchers import make_searcher
from spaces.base import CategoricalSpace
from spaces.benchmarks import nasbench_graph
from spaces.benchmarks.hpobench import SPACE as HPOBENCH_SPACE
from spaces.benchmarks.hpolib import SPACE
from spaces.benchmarks.registry import make_benchmark
from surrogates import deep_kernel as dk
from surrogates.deep_kernel import DeepKernelConfig
from surrogates.meta_params import load_params
from surrogates.meta_training import meta_train, source_tasks
from surrogates.reptile import ReptileConfig

REP = ReptileConfig(inner_steps=2, batch_size=16, set_min=3, set_max=8)


def tiny(num_features, arch_encoder="mlp", dag="nb201"):
    return DeepKernelConfig(
        arch_encoder=arch_encoder, dag=dag, num_features=num_features, hidden=8, arch_dim=4, set_dim=8,
        set_inducing=2, set_heads=2, set_blocks=1, xi_hidden=(8,),
    )  # fmt: skip


def test_hpolib_config_leaves_the_target_out_and_uses_the_mlp_encoder():
    target, suite, _, model, meta = settings(hpolib_tnas.get_config("naval_propulsion"))
    assert model.arch_encoder == "mlp" and model.num_features == SPACE.feature_dim("onehot") == 34
    assert target == "hpolib/naval_propulsion" and len(suite) == 4
    assert "hpolib/naval_propulsion" not in source_tasks(suite, target)
    with pytest.raises(ValueError, match="choose one of"):
        hpolib_tnas.get_config("naval")


def test_hpobench_and_nasbench_graph_configs_leave_the_target_out():
    target, suite, _, model, _ = settings(hpobench_tnas.get_config("kc1"))
    assert model.arch_encoder == "mlp" and model.num_features == HPOBENCH_SPACE.feature_dim("onehot")
    assert len(suite) == 8 and target == "hpobench/kc1" and target not in source_tasks(suite, target)
    target, suite, _, model, _ = settings(nasbench_graph_tnas.get_config("pubmed"))
    assert (model.arch_encoder, model.dag) == ("dag", "nasbench_graph") and len(suite) == 8
    assert model.num_features == nasbench_graph.space("cora").feature_dim("onehot")
    assert "nasbench_graph/proteins" not in suite and target not in source_tasks(suite, target)
    with pytest.raises(ValueError, match="choose one of"):
        nasbench_graph_tnas.get_config("proteins")


def test_mlp_config_reads_raw_data_and_leaves_the_target_out():
    from spaces.hpo import mlp_space

    config = mlp_tnas.get_config("naval")
    target, suite, _, model, meta = settings(config)
    assert target == "mlp/naval" and suite == ["mlp/diabetes", "mlp/boston", "mlp/naval"]
    assert (model.arch_encoder, model.dataset_input) == ("mlp", "data")
    assert model.num_features == mlp_space().feature_dim("onehot") and meta["failed_scores"] == "worst"
    assert config.searchers.tnas.task_data == config.searchers.tnas_random_init.task_data == "mlp/naval"
    assert settings(mlp_tnas.get_config("naval,observations"))[3].dataset_input == "observations"
    assert not settings(mlp_tnas.get_config("naval,no_phi"))[3].use_dataset_encoder
    with pytest.raises(ValueError, match="choose one of"):
        mlp_tnas.get_config("naval,images")
    for field, value in (("failed_scores", "ignore"), ("num_strings", 1)):
        bad = mlp_tnas.get_config("naval")
        bad.meta[field] = value
        with pytest.raises(cli.ConfigError, match=f"config.meta.{field}"):
            settings(bad)


@pytest.mark.slow
def test_nasbench_graph_meta_training_and_search_over_every_architecture(tmp_path):
    space = nasbench_graph.space("cora")
    target, suite = "nasbench_graph/cora", ["nasbench_graph/cora", "nasbench_graph/citeseer"]
    tables = {s: make_benchmark(s) for s in source_tasks(suite, target)}
    path = str(tmp_path / "p.npz")
    cfg = tiny(45, "dag", "nasbench_graph")
    meta_train(path, space, tables, target, suite, cfg, REP, 2, 2, seed=0, progress=False)
    # strings of one table row (isomorphic cells) get one psi input: the row's canonical string's DAG
    a = space.from_spec({"link": [0, 0, 0, 1], "ops": ["gcn", "gat", "sage", "fc"]})
    b = space.from_spec({"link": [0, 0, 0, 1], "ops": ["gcn", "sage", "gat", "fc"]})  # nodes 2, 3: both read the input
    assert space.string_id(jnp.asarray(a)) == space.string_id(jnp.asarray(b))
    inputs = [dk.arch_inputs(cfg, space, jnp.asarray(s)) for s in (a, b)]
    np.testing.assert_array_equal(*inputs)
    with pytest.raises(ValueError, match="DAG encoder reads"):
        dk.arch_inputs(cfg, SPACE, jnp.zeros(9, jnp.int32))
    # fine-tuning is tested in test_deep_kernel.py and test_searchers.py; its gradient program is left out here
    s = make_searcher("tnas", space, params_file=path, max_queries=7, finetune_steps=0)
    assert s.all_z.shape == (space.num_rows, 4)  # one string per row: 26,206, not 59,049
    hist = jax.jit(make_search(s))(jax.random.PRNGKey(0), make_benchmark(target))
    ids = np.asarray(jax.vmap(space.string_id)(hist.tokens))
    assert len(set(ids.tolist())) == 7 and np.all(ids >= 0) and np.all(np.isfinite(hist.score))


@pytest.mark.slow
def test_hpolib_meta_training_and_search_over_every_configuration(tmp_path):
    target, suite = "hpolib/naval_propulsion", ["hpolib/naval_propulsion", "hpolib/protein_structure"]
    tables = {s: make_benchmark(s) for s in source_tasks(suite, target)}  # one source keeps the test fast
    path = str(tmp_path / "p.npz")
    meta_train(path, SPACE, tables, target, suite, tiny(34), REP, 2, 2, seed=0, progress=False)
    _, model, meta, design, step = load_params(path)
    assert step == 2 and meta["space"] == "hpolib" and target not in meta["sources"] and design.shape == (5, 9)
    # the design: the best of the source (every one in its top 1%)
    ids = np.asarray(jax.vmap(SPACE.string_id)(jnp.asarray(design)))
    for t in tables.values():
        mv = np.asarray(t.mean_valid())
        assert np.all(mv[ids] > np.quantile(mv, 0.99))
    bench = make_benchmark(target)
    s = make_searcher("tnas", SPACE, params_file=path, max_queries=7, finetune_steps=0)  # as on NAS-Bench-Graph
    assert s.all_z.shape == (62208, 4)
    hist = jax.jit(make_search(s))(jax.random.PRNGKey(0), bench)
    np.testing.assert_array_equal(hist.tokens[:5], design)
    assert len(set(np.asarray(jax.vmap(SPACE.string_id)(hist.tokens)).tolist())) == 7
    assert np.all(np.isfinite(hist.score))


TINY = CategoricalSpace("tiny", {"a": [0, 1, 2], "b": [0, 1, 2, 3], "c": [0, 1]})


class SumTask:
    def __init__(self, seed):
        self.effects = jnp.asarray(np.random.default_rng(seed).normal(size=(3, 4)), jnp.float32)

    def query(self, key, tokens):
        del key
        return {"valid": jnp.sum(self.effects[jnp.arange(3), tokens], axis=1)}


@pytest.mark.slow
def test_searcher_identity_keys_on_the_parameter_files_contents(tmp_path):
    path = str(tmp_path / "p.npz")
    suite = ("a", "b", "c")

    def write(seed):
        meta_train(path, TINY, {"b": SumTask(1), "c": SumTask(2)}, "a", suite, tiny(9), REP, 0, 1, seed=seed,
                   progress=False)  # fmt: skip

    write(0)
    first = make_searcher("tnas", TINY, params_file=path, max_queries=10)
    again = make_searcher("tnas", TINY, params_file=path, max_queries=10)
    assert first == again and hash(first) == hash(again) and first.identity == again.identity
    (tmp_path / "p.npz").unlink()
    write(1)  # another model at the same path
    other = make_searcher("tnas", TINY, params_file=path, max_queries=10)
    assert other != first and other.identity != first.identity
    assert len(first.params_sha256) == 64
    assert make_searcher("tnas", TINY, max_queries=10).params_sha256 == ""


def test_tnas_figures_errors_follow_the_validation_incumbent_and_rank_over_targets():
    from scripts.figures.tnas_figures import incumbent_error, mean_ranks, queries_to_reach

    score = np.asarray([[0.5, 0.9, 0.7]])  # validation: the incumbent changes at query 2 only
    report = np.asarray([[0.6, 0.8, 0.99]])
    np.testing.assert_allclose(incumbent_error(score, report, "error_frac"), [[40.0, 20.0, 20.0]])
    np.testing.assert_allclose(incumbent_error(score * 100, report * 100, "error"), [[40.0, 20.0, 20.0]])
    np.testing.assert_allclose(incumbent_error(score, -np.log(np.asarray([[1e-2, 1e-3, 1e-4]])), "log_mse"),
                               [[-2.0, -3.0, -3.0]])  # fmt: skip
    np.testing.assert_allclose(incumbent_error(-score, -report, "rmse"), [[0.6, 0.6, 0.6]])  # -RMSE: higher is better
    np.testing.assert_allclose(incumbent_error(-score, -report, "valid_rmse"), [[0.5, 0.5, 0.5]])
    runs = {"t1": {"a": np.asarray([[1.0, 1.0]]), "b": np.asarray([[2.0, 0.5]])},
            "t2": {"a": np.asarray([[1.0, 1.0]]), "b": np.asarray([[3.0, 2.0]]), "c": np.zeros((1, 2))}}  # fmt: skip
    methods, ranks = mean_ranks(runs)
    assert methods == ["a", "b"]  # c is not on every target
    np.testing.assert_allclose(ranks, [[1.0, 1.5], [2.0, 1.5]])
    curves = {"ref": np.asarray([[3.0, 2.5, 2.0], [3.0, 2.5, 2.0]]), "fast": np.asarray([[2.0, 2.0, 1.0]] * 2)}
    assert queries_to_reach(curves, "ref", 2) == {"ref": "2", "fast": "1"}
    assert queries_to_reach({"ref": curves["ref"], "slow": np.full((1, 3), 9.0)}, "ref", 3)["slow"] == "> 3"
