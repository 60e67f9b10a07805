"""TNAS meta-training (leave-one-task-out, resumable) and the ``tnas`` searcher with a meta-learned file.

The searcher's loop == scan contract runs in tests/test_searchers.py (every registered searcher).
"""

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.engine.runner import make_search
from nas.searchers import make_searcher
from spaces import hpo, nb101
from spaces.benchmarks.registry import make_benchmark
from spaces.files import DataError
from spaces.nb201 import SPACE
from surrogates.deep_kernel import DeepKernelConfig
from surrogates.meta_params import load_params
from surrogates.meta_training import build_meta_data, meta_strings, meta_train, source_tasks
from surrogates.reptile import ReptileConfig, sample_task_batch
from surrogates.task_data import data_pool

SUITE = ("nb201/cifar10", "nb201/cifar100", "nb201/imagenet16")
MODEL = DeepKernelConfig(hidden=8, arch_dim=4, set_dim=8, set_inducing=2, set_heads=2, set_blocks=1, xi_hidden=(8,))
REP = ReptileConfig(inner_steps=2, batch_size=16, set_min=3, set_max=8)


@functools.cache
def table(name):
    return make_benchmark(name)


def train(path, steps, tables=None, target="nb201/cifar10"):
    tables = tables or {s: table(s) for s in source_tasks(SUITE, target)}
    return meta_train(str(path), SPACE, tables, target, SUITE, MODEL, REP, steps, 2, seed=3, progress=False)


def test_the_target_never_enters_meta_training(tmp_path):
    assert source_tasks(SUITE, "nb201/cifar100") == ["nb201/cifar10", "nb201/imagenet16"]
    with pytest.raises(ValueError, match="not a task"):
        source_tasks(SUITE, "nb201/other")
    leak = {s: None for s in SUITE}  # the target among the tables: refused before anything is read
    with pytest.raises(ValueError, match="never the target"):
        train(tmp_path / "p.npz", 2, tables=leak)
    assert not (tmp_path / "p.npz").exists()


@pytest.fixture(scope="module")
def params(tmp_path_factory):
    path = tmp_path_factory.mktemp("meta") / "tnas_params.npz"
    train(path, 4)
    return path


@pytest.mark.slow
def test_meta_training_resumes_bit_for_bit_and_records_the_sources(params, tmp_path):
    w, model, meta, design, step = load_params(str(params))
    assert step == 4 and model == MODEL and meta["target"] == "nb201/cifar10"
    assert meta["sources"] == ["nb201/cifar100", "nb201/imagenet16"]
    part = tmp_path / "part.npz"
    train(part, 2)
    assert load_params(str(part))[4] == 2
    train(part, 4)  # continues from step 2
    with pytest.raises(ValueError, match="other settings"):
        meta_train(str(part), SPACE, {s: table(s) for s in SUITE[1:]}, "nb201/cifar10", SUITE, MODEL, REP, 4, 2,
                   seed=4, progress=False)  # fmt: skip
    w2 = load_params(str(part))[0]
    for a, b in zip(jax.tree.leaves(w), jax.tree.leaves(w2)):
        np.testing.assert_array_equal(a, b)
    # the design: distinct strings, the best on average over the sources (all score well above the median)
    ids = [int(x) for x in jax.vmap(table("nb201/cifar100").space.string_id)(design)]
    assert design.shape == (5, 6) and len(set(ids)) == 5
    for s in meta["sources"]:
        mv = np.asarray(table(s).mean_valid())
        assert np.all(mv[ids] > np.quantile(mv, 0.99))
    json.dumps(meta)


@pytest.mark.slow
def test_tnas_searcher_queries_the_source_design_first_and_runs_many_seeds(params):
    bench = table("nb201/cifar10")
    s = make_searcher("tnas", bench.space, params_file=str(params), max_queries=8, finetune_steps=2)
    hist = jax.jit(jax.vmap(make_search(s), in_axes=(0, None)))(jax.random.split(jax.random.PRNGKey(0), 2), bench)
    design = load_params(str(params))[3]
    for seed in range(2):
        np.testing.assert_array_equal(hist.tokens[seed, :5], design)
        ids = np.asarray(jax.vmap(bench.space.string_id)(hist.tokens[seed]))
        assert len(set(ids.tolist())) == 8 and np.all(np.isfinite(hist.score[seed]))
    with pytest.raises(ValueError, match="initial_design 'top' needs"):
        make_searcher("tnas", bench.space, initial_design="top")
    with pytest.raises(ValueError, match="acquisition"):
        make_searcher("tnas", bench.space, acquisition="its")
    with pytest.raises(ValueError, match="acq_opt"):
        make_searcher("tnas", bench.space, acq_opt="exhaustive_please")


@pytest.mark.slow
def test_meta_training_samples_the_strings_of_a_large_space():
    space = nb101.NB101Space()
    toks = meta_strings(space, limit=1000, num_sampled=40)
    ids = np.asarray(jax.vmap(space.string_id)(jnp.asarray(toks)))
    assert toks.shape == (40, space.num_tokens) and np.all(ids >= 0) and len(set(ids.tolist())) == 40
    np.testing.assert_array_equal(meta_strings(space, limit=1000, num_sampled=20), toks[:20])  # a fixed draw
    assert len(meta_strings(SPACE)) == 15625  # NB201: every string


class LinearTask:
    """A synthetic task of a related family: score = sum over edges of an op effect (no table, no data)."""

    def __init__(self, effects):
        self.effects = jax.numpy.asarray(effects, jax.numpy.float32)

    def query(self, key, tokens):
        del key
        return {"valid": jax.numpy.sum(self.effects[jax.numpy.arange(len(self.effects)), tokens], axis=1)}


@pytest.mark.slow
def test_meta_learning_helps_on_a_related_synthetic_task(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.normal(size=(6, 5))
    tasks = {f"t{i}": LinearTask(base + 0.3 * rng.normal(size=(6, 5))) for i in range(4)}
    suite = tuple(tasks)
    path = tmp_path / "syn.npz"
    sources = {k: tasks[k] for k in suite[1:]}
    meta_train(str(path), SPACE, sources, "t0", suite, MODEL, REP, 60, 60, seed=0, progress=False)
    meta = make_searcher("tnas", SPACE, params_file=str(path), finetune_steps=0, max_queries=20)
    scratch = make_searcher("tnas", SPACE, params_file=str(path), meta_learned=False, finetune_steps=0, max_queries=20)
    all_t = jax.numpy.asarray(meta.all_tokens)
    truth = np.asarray(tasks["t0"].query(None, all_t)["valid"])
    obs = rng.choice(len(truth), 15, replace=False)

    def corr(s):
        from surrogates import deep_kernel as dk

        f = jax.vmap(lambda t: SPACE.features(t, "onehot"))(all_t[obs])
        y, m = jax.numpy.asarray(truth[obs]), jax.numpy.ones(15, bool)
        mean, _ = dk.posterior(s.w, s.cfg, jax.numpy.asarray(s.all_z[obs]), y, m, jax.numpy.asarray(s.all_z),
                               f, y, m, psi_given=True)  # fmt: skip
        return np.corrcoef(np.asarray(mean), truth)[0, 1]

    assert corr(meta) > corr(scratch) + 0.1, (corr(meta), corr(scratch))


class DataTask(LinearTask):
    """A synthetic task with raw data samples (what the data-based dataset encoder reads); ``fail`` scores
    the strings whose first token is 0 -inf (a diverged training)."""

    def __init__(self, effects, x, y, fail=False):
        super().__init__(effects)
        self.x_train, self.y_train, self.fail = x, y, fail

    def query(self, key, tokens):
        valid = super().query(key, tokens)["valid"]
        return {"valid": jax.numpy.where(self.fail & (tokens[:, 0] == 0), -jax.numpy.inf, valid)}


@pytest.mark.slow
def test_raw_data_dataset_encoder_reads_each_tasks_rows_and_drives_a_search_step(tmp_path):
    space = hpo.HPOSpace("tiny", [hpo.categorical(f"h{i}", list(range(5))) for i in range(3)])  # 125 strings
    rng = np.random.default_rng(1)
    tasks = {
        f"t{i}": DataTask(rng.normal(size=(3, 5)), rng.normal(size=(40 + i, 3 + i)), rng.normal(size=40 + i), i == 2)
        for i in range(3)
    }
    model = dataclasses.replace(MODEL, arch_encoder="mlp", num_features=15, dataset_input="data", data_rows=16,
                                data_columns=12)  # fmt: skip
    sources = [tasks["t1"], tasks["t2"]]
    with pytest.raises(DataError, match="failed_scores='worst'"):
        build_meta_data(space, sources, model)
    data, tokens = build_meta_data(space, sources, model, failed="worst")
    scores = np.asarray(data.scores)
    assert np.all(np.isfinite(scores)) and np.all(scores[1, tokens[:, 0] == 0] == scores[1].min())
    cells = np.asarray(data.data_mask).sum(axis=(1, 2)).tolist()
    assert data.data_x.shape == (2, 512, 12) and cells == [41 * 4, 42 * 5]  # every row, each task's columns
    with pytest.raises(ValueError, match="no raw data"):
        data_pool(table("nb201/cifar10"), 12)
    with pytest.raises(ValueError, match="raise model.data_columns"):
        data_pool(tasks["t2"], 4)
    # a REPTILE task batch: phi's set is data_rows rows of the sampled task's pool
    q, batch = sample_task_batch(jax.random.PRNGKey(2), data, REP, model)
    set_x, set_mask = np.asarray(batch[3]), np.asarray(batch[5])
    pool = {tuple(r) for r in np.asarray(data.data_x[q])}
    assert set_x.shape == (16, 12) and all(tuple(r) in pool for r in set_x) and set_mask[:, : 3 + int(q) + 1].all()
    path = tmp_path / "data.npz"  # (REPTILE's compiled steps are tested with the observation set above)
    meta_train(str(path), space, {"t1": tasks["t1"], "t2": tasks["t2"]}, "t0", tuple(tasks), model, REP, 0, 2, seed=0,
               failed_scores="worst", progress=False)  # fmt: skip
    assert load_params(str(path))[2]["failed_scores"] == "worst"
    with pytest.raises(ValueError, match="set task_data"):
        make_searcher("tnas", space, params_file=str(path), max_queries=8)
    # the target's data: scikit-learn's diabetes (10 features), a fixed draw of 16 of its training rows
    s = make_searcher("tnas", space, params_file=str(path), task_data="mlp/diabetes", max_queries=8, finetune_steps=0)
    x, y, mask = s.task_set
    assert x.shape == (16, 12) and mask[:, :10].all() and not mask[:, 10:].any()
    state = s.init(jax.random.PRNGKey(0))
    design = jnp.asarray(s.design)
    state, _ = s.tell(None, design, tasks["t0"].query(None, design)["valid"], state)
    tokens, _ = jax.jit(s.ask)(jax.random.PRNGKey(1), state)  # a model step: phi reads the diabetes rows
    new = int(space.string_id(tokens[0]))
    assert new >= 0 and new not in np.asarray(jax.vmap(space.string_id)(design)).tolist()
