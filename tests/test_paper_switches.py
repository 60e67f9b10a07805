"""The switches that give each paper's text (docs/research/fidelity.md): each changes what it says and nothing else.

BANANAS' continuous adjacency encoding on hand-made cells and Algorithm 1's candidates of the k best;
REPTILE's (task, architecture) pairs; TNAS without the graph encoder; baselines warm-started from an
initial design; plain Optuna TPE; the Table 1 spaces' size options.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core.dedup import seen_init
from nas.engine.runner import make_search
from nas.searchers import make_searcher
from nas.searchers.acquisition_candidates import acquisition_candidates
from nas.searchers.warm_start import warm_started
from spaces import nb101, nb201
from spaces.benchmarks.registry import make_benchmark
from spaces.nb101_encodings import continuous_adjacency_cell
from surrogates import deep_kernel as dk
from surrogates.meta_params import save_params
from surrogates.reptile import MetaData, ReptileConfig, sample_pair_batch


@functools.cache
def bench():
    return make_benchmark("nb201/cifar10")


# ---- BANANAS ---------------------------------------------------------------------------------------


def test_nb201_continuous_adjacency_of_a_hand_made_cell():
    # edges (1<-0) none, (2<-0) skip, (2<-1) conv3x3, (3<-0) avg_pool, (3<-1) conv1x1, (3<-2) none
    cell = jnp.asarray([0, 1, 3, 4, 2, 0])
    x = np.asarray(nb201.SPACE.features(cell, "continuous_adjacency"))
    assert x.shape == (31,) and nb201.SPACE.feature_dim("continuous_adjacency") == 31
    np.testing.assert_array_equal(x[:6], [0, 1, 1, 1, 1, 0])  # edge values: none is no edge
    ops = x[6:30].reshape(6, 4)  # skip, conv1x1, conv3x3, avg_pool
    want = np.zeros((6, 4))
    want[1, 0] = want[2, 2] = want[3, 3] = want[4, 1] = 1
    np.testing.assert_array_equal(ops, want)
    assert x[30] == 4  # K, the number of edges
    # the cell back from its own encoding, and from any real vector: the K largest values are the edges
    back = nb201.continuous_adjacency_cell(jnp.asarray(x[:6]), x[30], jnp.argmax(ops, 1))
    np.testing.assert_array_equal(back, cell)
    values = jnp.asarray([0.1, 0.9, 0.8, 0.3, 0.7, 0.2])
    got = nb201.continuous_adjacency_cell(values, 3, jnp.asarray([0, 1, 2, 3, 0, 1]))
    np.testing.assert_array_equal(got, [0, 2, 3, 0, 1, 0])
    # the other encodings are unchanged
    np.testing.assert_array_equal(nb201.SPACE.features(cell, "adjacency"), nb201.SPACE.features(cell, "onehot"))


def test_nb101_continuous_adjacency_of_a_hand_made_cell():
    # 0 -> 1 -> 6, 0 -> 6, and vertex 2 dangling (2 -> 6 without an input: pruned); ops of 1..5
    m = np.zeros((7, 7), int)
    m[0, 1] = m[1, 6] = m[0, 6] = m[2, 6] = 1
    ops = ["input", "conv1x1-bn-relu", "maxpool3x3", "conv3x3-bn-relu", "conv3x3-bn-relu", "conv3x3-bn-relu", "output"]
    cell = nb101.SPACE.from_spec({"matrix": m.tolist(), "ops": ops})
    x = np.asarray(nb101.SPACE.features(jnp.asarray(cell), "continuous_adjacency"))
    assert x.shape == (37,) == (nb101.SPACE.feature_dim("continuous_adjacency"),)
    edges = np.zeros(21)
    edges[[0, 5, 10]] = 1  # (0,1), (0,6), (1,6) in row-major order (6 + 4 = 10); (2,6) pruned
    np.testing.assert_array_equal(x[:21], edges)
    onehot = np.zeros((5, 3))
    onehot[0, 1] = 1  # vertex 1: conv1x1; vertices 2..5 pruned: zeros
    np.testing.assert_array_equal(x[21:36], onehot.reshape(-1))
    assert x[36] == 3
    np.testing.assert_array_equal(x[:36], nb101.SPACE.features(jnp.asarray(cell), "adjacency"))
    back = continuous_adjacency_cell(jnp.asarray(x[:21]) * 0.9 + 0.05, 3, jnp.asarray(cell[21:]))
    assert nb101.SPACE.string_id(back) == nb101.SPACE.string_id(jnp.asarray(cell))


def _parents_of(cands, ok, parents):
    d = np.asarray((np.asarray(cands)[:, None, :] != np.asarray(parents)[None, :, :]).sum(-1))
    return d[np.asarray(ok)]


def test_candidates_from_the_k_best_parents_algorithm_1():
    space = nb201.SPACE
    tokens = np.asarray(jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(0), 12)))
    scores = jnp.arange(12.0)  # the best is the last row
    seen = seen_init(16)
    kw = dict(acq_opt="mutation", num_candidates=20, patience=1, max_edits=1, num_random=1, count=jnp.int32(12))
    cand, ok = acquisition_candidates(jax.random.PRNGKey(1), space, tokens, scores, seen=seen, **kw)
    dist = _parents_of(cand, ok, tokens[[11]])
    assert ok.sum() > 10 and np.all(dist == 1)  # the released code: mutations of the best only
    cand4, ok4 = acquisition_candidates(jax.random.PRNGKey(1), space, tokens, scores, seen=seen, num_parents=4, **kw)
    dist4 = _parents_of(cand4, ok4, tokens[[11, 10, 9, 8]])
    assert np.all(dist4.min(1) == 1)  # one edit from one of the 4 best
    assert set(np.argmin(dist4, 1).tolist()) == {0, 1, 2, 3}  # 5 mutations of each parent


# ---- TNAS -------------------------------------------------------------------------------------------

SMALL = dict(hidden=8, arch_dim=4, set_dim=8, set_inducing=2, set_heads=2, set_blocks=1, xi_hidden=(8,))


def _meta_data(cfg, num_tasks=2, rows=40):
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(2), rows))
    arch_x = jax.vmap(lambda t: dk.arch_inputs(cfg, nb201.SPACE, t))(tokens)
    feats = jax.vmap(lambda t: nb201.SPACE.features(t, "onehot"))(tokens)
    scores = jax.random.normal(jax.random.PRNGKey(3), (num_tasks, rows))
    return MetaData(arch_x=arch_x, features=feats, scores=scores)


@pytest.mark.slow
def test_pair_sampling_mixes_tasks_and_one_task_gives_the_task_loss():
    cfg = dk.DeepKernelConfig(arch_encoder="mlp", **SMALL)  # the sampling does not depend on psi: a cheap one
    data = _meta_data(cfg)
    rep = ReptileConfig(batch_size=24, set_min=3, set_max=8, task_sampling="pair")
    q0, (arch_x, y, mask, task, sf, ss, sm) = sample_pair_batch(jax.random.PRNGKey(0), data, rep, cfg)
    pairs = np.asarray(task) * 40 + np.asarray(jnp.argmax(jnp.all(arch_x[:, None] == data.arch_x[None], -1), 1))
    assert len(set(pairs.tolist())) == 24 and set(np.asarray(task).tolist()) == {0, 1} and np.array_equal(q0, task)
    np.testing.assert_array_equal(y, data.scores[task, pairs % 40])
    assert sf.shape[:2] == (2, 8) and ss.shape == sm.shape == (2, 8)
    # rows of one task: the pair loss is eq. 3 with that task's set
    w = dk.init_params(jax.random.PRNGKey(4), cfg, arch_x, sf[0])
    one = jnp.ones(24, jnp.int32)
    pair_nll = dk.neg_log_marginal_likelihood_pairs(w, cfg, arch_x, y, mask, one, sf, ss, sm)
    task_nll = dk.neg_log_marginal_likelihood(w, cfg, arch_x, y, mask, sf[1], ss[1], sm[1])
    np.testing.assert_allclose(pair_nll, task_nll, rtol=1e-5)
    with pytest.raises(ValueError, match="task_sampling"):
        ReptileConfig(task_sampling="pairs")


@pytest.mark.slow
def test_no_graph_encoder_kernel_reads_the_matrix_encoding_and_drives_tnas(tmp_path):
    cfg = dk.DeepKernelConfig(arch_encoder="matrix", **SMALL)
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(5), 6))
    arch_x = jax.vmap(lambda t: dk.arch_inputs(cfg, nb201.SPACE, t))(tokens)
    np.testing.assert_array_equal(arch_x, jax.vmap(lambda t: nb201.SPACE.features(t, "adjacency"))(tokens))
    feats = jax.vmap(lambda t: nb201.SPACE.features(t, "onehot"))(tokens)
    w = dk.init_params(jax.random.PRNGKey(6), cfg, arch_x, feats)
    assert "psi" not in w["net"]["params"] and dk.psi_dim(cfg, nb201.SPACE) == 30
    np.testing.assert_array_equal(dk.arch_embeddings(w, cfg, arch_x), arch_x)  # psi is the identity
    path = str(tmp_path / "matrix.npz")
    design = np.asarray(tokens[:4], np.int32)
    save_params(path, w, cfg, {"space": "nb201", "sources": []}, design, 0)
    s = make_searcher("tnas", nb201.SPACE, params_file=path, max_queries=6, num_init=4, batch_size=2, finetune_steps=1)
    hist = jax.jit(make_search(s))(jax.random.PRNGKey(0), bench())
    np.testing.assert_array_equal(hist.tokens[:4], design)  # the design first, then the GP on the matrix encoding
    ids = np.asarray(jax.vmap(nb201.SPACE.string_id)(hist.tokens))
    assert len(set(ids.tolist())) == 6 and np.all(np.isfinite(hist.score))


@pytest.mark.slow  # a warm_start run (tests/searcher_settings.py)
def test_warm_start_queries_the_design_first_and_never_repeats(tmp_path):
    design = "3,3,4,1,3,1;0,1,2,3,4,0;4,4,4,4,4,4"
    d = np.asarray([[3, 3, 4, 1, 3, 1], [0, 1, 2, 3, 4, 0], [4, 4, 4, 4, 4, 4]])
    # random search on NB201 draws its whole order at init (it never learns the design): the wrapper
    # replaces its draws that repeat a design string or an earlier query
    s = make_searcher("warm_start", nb201.SPACE, searcher="random_search", batch_size=2, design=design, num_design=3)
    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    hist = jax.jit(jax.vmap(make_search(s), in_axes=(0, None)))(keys, bench())
    np.testing.assert_array_equal(hist.tokens[:, :3], np.broadcast_to(d, (64, 3, 6)))
    ids = np.asarray(jax.vmap(jax.vmap(nb201.SPACE.string_id))(hist.tokens))
    assert all(len(set(r)) == ids.shape[1] for r in ids.tolist())
    # without the design (a plain searcher), the same seeds query other first strings
    plain = jax.jit(make_search(make_searcher("random_search", nb201.SPACE, batch_size=2)))(keys[0], bench())
    assert not np.array_equal(plain.tokens[:3], d)
    # a config entry of any searcher, warm-started; bad designs and options refused
    entry = warm_started({"name": "bananas", "acquisition": "ucb"}, design=design, num_design=3)
    assert entry["batch_size"] == 10 and entry["searcher_options"] == '{"acquisition": "ucb"}'
    with pytest.raises(ValueError, match="exactly one"):
        make_searcher("warm_start", nb201.SPACE, design=design, design_file="x.npz")
    with pytest.raises(ValueError, match="may not set"):
        make_searcher("warm_start", nb201.SPACE, design=design, searcher_options='{"batch_size": 3}')
    with pytest.raises(ValueError, match="distinct valid"):
        make_searcher("warm_start", nb201.SPACE, design="1,1,1,1,1,1;1,1,1,1,1,1", num_design=2)


# ---- TPE (peer) ---------------------------------------------------------------------------------


def test_pure_optuna_tpe_queries_its_repeats():
    pytest.importorskip("optuna", reason="the TPE peer needs Optuna: pip install optuna")
    from nas.experiment import peers
    from spaces.base import CategoricalSpace
    from tests.test_language_searchers import LinearObjective

    space = CategoricalSpace("tiny", {"a": [0, 1, 2], "b": [0, 1]})  # 6 configurations, 10 trials
    obj = LinearObjective(weights=jnp.arange(5.0), space=space)
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    peer = peers.make_peer("tpe", space, max_queries=10, repeats="requery", n_startup_trials=3)
    hist = peers.run_peer(peer, obj, keys, progress=False)
    ids = np.asarray(jax.vmap(jax.vmap(space.string_id))(hist.tokens))
    assert all(len(set(r)) < 10 for r in ids.tolist())  # more trials than configurations: repeats queried
    np.testing.assert_array_equal(hist.score, obj.query(None, hist.tokens.reshape(-1, 2))["valid"].reshape(2, 10))
    _, metrics = peers.run_group(peer, keys[:1], functools.partial(peers.vmapped_query, obj))
    assert metrics["repeats"] == 10 - len(set(ids[0].tolist())) and metrics["fallbacks"] == 0
    with pytest.raises(ValueError, match="repeats must be one of"):
        peers.make_peer_options("tpe", repeats="pure")


# ---- DeepArchitect ------------------------------------------------------------------------------


def test_table1_spaces_take_their_size_as_options():
    from spaces.language import table1
    from spaces.language.tasks import make_task

    assert table1.space_options("nasnet") == ["num_blocks", "stem", "channels"]
    two, five = table1.table1_space("nasnet"), table1.table1_space("nasnet", num_blocks=5)
    g2, a2 = two.sample(np.random.default_rng(0))
    g5, a5 = five.sample(np.random.default_rng(0))
    # per cell type and block: 2 inputs x (input, op); the input choices of block b range over 2 + b states
    assert len(a2.values) == 2 * 2 * 4 and len(a5.values) == 2 * 5 * 4
    assert five.name == "nasnet,num_blocks=5" and two.name == "nasnet"
    with pytest.raises(ValueError, match="no option"):
        table1.table1_space("nasnet", blocks=5)
    cifar = make_task("genetic", space={"nodes": [3, 4, 5], "channels": [8, 16, 32]})
    assert cifar.space.size == 2 ** (3 + 6 + 10)  # Xie & Yuille's 19-bit CIFAR-10 code
    assert make_task("genetic").space.size == make_task("genetic_digits").space.size == 2 ** (3 + 6)
