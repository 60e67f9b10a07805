"""TNAS on a flat space (HPOLib FCNet: MLP psi, 62,208 configurations) and the searcher's identity, which
keys on the parameters file's contents."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import hpolib_tnas
from nas.runner import make_search
from nas.searcher import make_searcher
from scripts.tnas_settings import settings
from spaces.base import CategoricalSpace
from spaces.benchmarks.hpolib import SPACE
from spaces.benchmarks.registry import make_benchmark
from surrogates.deep_kernel import DeepKernelConfig
from surrogates.meta_params import load_params
from surrogates.meta_training import meta_train, source_tasks
from surrogates.reptile import ReptileConfig

REP = ReptileConfig(inner_steps=2, batch_size=16, set_min=3, set_max=8)


def tiny(num_features):
    return DeepKernelConfig(
        arch_encoder="mlp", num_features=num_features, hidden=8, arch_dim=4, set_dim=8, set_inducing=2,
        set_heads=2, set_blocks=1, xi_hidden=(8,),
    )  # fmt: skip


def test_hpolib_config_leaves_the_target_out_and_uses_the_mlp_encoder():
    target, suite, _, model, meta = settings(hpolib_tnas.get_config("naval_propulsion"))
    assert model.arch_encoder == "mlp" and model.num_features == SPACE.feature_dim("onehot") == 34
    assert target == "hpolib/naval_propulsion" and len(suite) == 4
    assert "hpolib/naval_propulsion" not in source_tasks(suite, target)
    with pytest.raises(ValueError, match="choose one of"):
        hpolib_tnas.get_config("naval")


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
    s = make_searcher("tnas", SPACE, params_file=path, max_queries=7, finetune_steps=1)
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
