"""TNAS's deep-kernel GP: encoders, the marginal likelihood (eq. 3) against float64 numpy, REPTILE's update."""

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import optax
import pytest

from spaces.nasbench_graph import LINKS
from spaces.nb101 import NB101Space
from spaces.nb201 import SPACE
from surrogates import deep_kernel as dk
from surrogates.arch_encoders import (
    NB201_NUM_TYPES,
    NBGRAPH_NUM_TYPES,
    DAGEncoder,
    check_topological_dag,
    nasbench_graph_adjacencies,
    nasbench_graph_op_graph,
    nb201_adjacency,
    nb201_node_types,
    nb201_op_graph,
)
from surrogates.reptile import ReptileConfig, reptile_update
from surrogates.set_encoder import DataSetEncoder, SetEncoder
from surrogates.task_data import draw_rows

pytestmark = pytest.mark.slow  # deep-kernel GP fits and encoders (TNAS's meta-learned surrogate)

TOKENS = jnp.asarray(np.random.default_rng(0).integers(0, 5, (12, 6)), jnp.int32)


def test_nb201_op_graph_is_the_cell():
    g = nb201_op_graph()
    adj = check_topological_dag(g)
    # input feeds the 3 edges leaving cell node 0; op (2<-1) reads op (1<-0); the output reads the 3 edges into node 3
    assert sorted(g.successors(0)) == [1, 2, 4]
    assert sorted(g.successors(1)) == [3, 5] and sorted(g.predecessors(6)) == [2, 3]
    assert sorted(g.predecessors(7)) == [4, 5, 6] and adj.sum() == 10
    bad = g.copy()
    bad.add_edge(7, 0)
    with pytest.raises(ValueError, match="cycle"):
        check_topological_dag(bad)


def test_dag_encoder_ignores_the_node_numbering_and_sees_the_ops():
    enc = DAGEncoder(nb201_adjacency(), NB201_NUM_TYPES, hidden=16, out_dim=8)
    types = jax.vmap(nb201_node_types)(TOKENS)
    params = enc.init(jax.random.PRNGKey(0), types)
    apply = jax.jit(enc.apply)  # one compile: the adjacency is an argument
    base = apply(params, types)
    adj = np.asarray(nb201_adjacency())
    orders = list(nx.all_topological_sorts(nb201_op_graph()))
    assert len(orders) > 10
    for order in orders:
        order = np.asarray(order)  # new node i is old node order[i]: another topological numbering
        out = apply(params, types[:, order], adjacency=jnp.asarray(adj[np.ix_(order, order)]))
        np.testing.assert_allclose(out, base, atol=2e-5)
    # a different op on one edge changes the encoding; rows are different strings
    other = types.at[:, 3].set(2 + (types[:, 3] - 1) % 5)
    assert np.min(np.abs(np.asarray(apply(params, other) - base)).max(axis=1)) > 1e-4


def test_nasbench_graph_dags_follow_the_link_structures():
    adjs = np.asarray(nasbench_graph_adjacencies())
    assert adjs.shape == (9, 6, 6)
    # [0,0,0,0]: four branches off the input, all leaves; [0,1,2,3]: a chain, only node 4 feeds the output
    assert adjs[0, 0, 1:5].tolist() == [1, 1, 1, 1] and adjs[0, 1:5, 5].tolist() == [1, 1, 1, 1]
    assert adjs[8, :, 5].tolist() == [0, 0, 0, 0, 1, 0] and adjs[8].sum() == 5
    g = nasbench_graph_op_graph((0, 0, 1, 3))  # node 3 reads node 1, node 4 reads node 3: leaves 2 and 4
    assert sorted(g.predecessors(5)) == [2, 4] and sorted(g.successors(1)) == [3]


def test_dag_encoder_with_one_dag_per_string_ignores_the_numbering():
    rng = np.random.default_rng(4)
    links = rng.integers(0, 9, 16)
    types = np.concatenate([np.zeros((16, 1)), 2 + rng.integers(0, 9, (16, 4)), np.ones((16, 1))], 1).astype(int)
    adjs = np.asarray(nasbench_graph_adjacencies())[links]
    enc = DAGEncoder(None, NBGRAPH_NUM_TYPES, hidden=16, out_dim=8)
    params = enc.init(jax.random.PRNGKey(0), jnp.asarray(types), adjacency=jnp.asarray(adjs))
    apply = jax.jit(enc.apply)
    base = np.asarray(apply(params, jnp.asarray(types), adjacency=jnp.asarray(adjs)))
    # every string renumbered by a random topological order of its own DAG: the same encodings
    perm_types, perm_adjs = types.copy(), adjs.copy()
    for i, link in enumerate(links):
        orders = list(nx.all_topological_sorts(nasbench_graph_op_graph(tuple(int(x) for x in LINKS[link]))))
        order = np.asarray(orders[rng.integers(len(orders))])
        perm_types[i], perm_adjs[i] = types[i, order], adjs[i][np.ix_(order, order)]
    out = apply(params, jnp.asarray(perm_types), adjacency=jnp.asarray(perm_adjs))
    np.testing.assert_allclose(out, base, atol=2e-5)
    # the same ops under another link structure are another network
    other = np.asarray(nasbench_graph_adjacencies())[(links + 1) % 9]
    moved = np.asarray(apply(params, jnp.asarray(types), adjacency=jnp.asarray(other)))
    assert np.min(np.abs(moved - base).max(1)) > 1e-4
    with pytest.raises(ValueError, match="needs the adjacency"):
        enc.apply(params, jnp.asarray(types))


def _nb101_cell(edges, ops):
    """NB101 tokens: the 21 upper-triangular edge bits (row-major), then the ops of vertices 1..5."""
    adj = np.zeros((7, 7), np.int32)
    for i, j in edges:
        adj[i, j] = 1
    return np.concatenate([adj[np.triu_indices(7, 1)], ops]).astype(np.int32)


def test_nb101_dag_encoder_reads_the_pruned_cell_up_to_relabelling():
    space = NB101Space()
    chain = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 6)]
    cells = np.stack([
        _nb101_cell(chain, [0, 1, 2, 0, 0]),  # vertices 4, 5 unused
        _nb101_cell(chain, [1, 0, 2, 1, 2]),  # 1 and 2 swapped (an isomorphic cell); the unused ops changed
        _nb101_cell(chain + [(0, 4), (4, 5)], [0, 1, 2, 2, 1]),  # a dangling branch, pruned
        _nb101_cell(chain, [0, 1, 0, 0, 0]),  # another op on vertex 3: another network
        _nb101_cell([(0, 1), (1, 3), (2, 3), (3, 6)], [0, 1, 2, 0, 0]),  # vertex 2 loses its input: pruned
    ])  # fmt: skip
    ids = np.asarray(jax.vmap(space.string_id)(jnp.asarray(cells)))
    assert ids[0] == ids[1] == ids[2] and len({ids[0], ids[3], ids[4]}) == 3
    assert (dk.default_config(space).arch_encoder, dk.default_config(space).dag) == ("dag", "nb101")
    cfg = dk.DeepKernelConfig(dag="nb101", hidden=8, arch_dim=4, use_dataset_encoder=False, xi_hidden=(8,))
    arch_x = jax.vmap(lambda t: dk.arch_inputs(cfg, space, t))(jnp.asarray(cells))
    w = jax.jit(dk.init_params, static_argnums=1)(jax.random.PRNGKey(0), cfg, arch_x, jnp.zeros((5, 4)))  # phi is off
    z = np.asarray(jax.jit(dk.arch_embeddings, static_argnums=1)(w, cfg, arch_x))
    np.testing.assert_allclose(z[1], z[0], atol=2e-5)
    np.testing.assert_allclose(z[2], z[0], atol=2e-5)
    assert np.abs(z[3] - z[0]).max() > 1e-4 and np.abs(z[4] - z[0]).max() > 1e-4


def test_set_encoder_invariant_to_order_and_padding():
    enc = SetEncoder(dim=16, num_inducing=4, heads=2, out_dim=8)
    feats = jax.vmap(lambda t: SPACE.features(t, "onehot"))(TOKENS)
    scores = jnp.linspace(70.0, 90.0, 12)
    mask = jnp.arange(12) < 9
    params = enc.init(jax.random.PRNGKey(1), feats, scores, mask)
    apply = jax.jit(enc.apply)
    base = apply(params, feats, scores, mask)
    perm = np.r_[np.random.default_rng(1).permutation(9), 9, 10, 11]
    np.testing.assert_allclose(apply(params, feats[perm], scores[perm], mask[perm]), base, atol=1e-5)
    junk = feats.at[9:].set(1.0), scores.at[9:].set(-1e3)  # padding content never matters
    np.testing.assert_allclose(apply(params, *junk, mask), base, atol=1e-5)
    np.testing.assert_allclose(apply(params, feats[:9], scores[:9], mask[:9]), base, atol=1e-5)
    assert np.all(np.isfinite(apply(params, feats, scores, jnp.zeros(12, bool))))
    assert np.abs(np.asarray(apply(params, feats, scores[::-1], mask) - base)).max() > 1e-4


def test_data_set_encoder_invariant_to_rows_columns_and_padding():
    """phi over raw data: the same encoding for shuffled rows, shuffled columns and any padding."""
    rng = np.random.default_rng(2)
    x = np.zeros((10, 6), np.float32)
    x[:8, :4] = rng.normal(size=(8, 4))
    y = np.r_[rng.normal(size=8), 0.0, 0.0].astype(np.float32)
    mask = np.zeros((10, 6), bool)
    mask[:8, :4] = True
    enc = DataSetEncoder(dim=16, num_inducing=4, heads=2, num_blocks=1, out_dim=8)
    params = jax.jit(enc.init)(jax.random.PRNGKey(1), x, y, mask)
    apply = jax.jit(enc.apply)
    base = np.asarray(apply(params, x, y, mask))
    rows, cols = np.r_[rng.permutation(8), 8, 9], np.r_[rng.permutation(4), 4, 5]
    np.testing.assert_allclose(apply(params, x[rows], y[rows], mask[rows]), base, atol=1e-5)
    np.testing.assert_allclose(apply(params, x[:, cols], y, mask[:, cols]), base, atol=1e-5)
    junk = np.where(mask, x, 7.0), np.r_[y[:8], 9.0, -9.0].astype(np.float32)  # padding content never matters
    np.testing.assert_allclose(apply(params, *junk, mask), base, atol=1e-5)
    assert np.abs(np.asarray(apply(params, x, -y, mask)) - base).max() > 1e-4  # reads the (x, y) relation
    # draws are real rows, without replacement
    dx, dy, dm = draw_rows(jax.random.PRNGKey(0), jnp.asarray(x), jnp.asarray(y), jnp.asarray(mask), 6)
    assert np.all(np.asarray(dm)[:, :4]) and len({tuple(r) for r in np.asarray(dx)}) == 6


def _setup(arch_encoder):
    cfg = dk.DeepKernelConfig(arch_encoder=arch_encoder, hidden=16, arch_dim=8, set_dim=16, xi_hidden=(32,), out_dim=8)
    ax = jax.vmap(lambda t: dk.arch_inputs(cfg, SPACE, t))(TOKENS)
    fx = jax.vmap(lambda t: SPACE.features(t, "onehot"))(TOKENS)
    w = dk.init_params(jax.random.PRNGKey(2), cfg, ax, fx)
    w["kernel"] = {"log_ls": jnp.float32(0.3), "log_amp": jnp.float32(-0.2), "log_noise": jnp.float32(-2.0)}
    y = jnp.asarray(np.random.default_rng(3).normal(80.0, 5.0, 12), jnp.float32)
    return cfg, ax, fx, w, y


def numpy_nll(z, y, amp, ls, noise):
    z, y = np.asarray(z, np.float64), np.asarray(y, np.float64)
    y = (y - y.mean()) / y.std()
    r = np.sqrt(((z[:, None] - z[None]) ** 2).sum(-1)) / ls
    k = amp * (1 + np.sqrt(5) * r + 5 / 3 * r**2) * np.exp(-np.sqrt(5) * r) + noise * np.eye(len(y))
    _, logdet = np.linalg.slogdet(k)
    return 0.5 * y @ np.linalg.solve(k, y) + 0.5 * logdet + 0.5 * len(y) * np.log(2 * np.pi)


@pytest.mark.parametrize("arch_encoder", ["dag", "mlp"])
def test_marginal_likelihood_matches_float64_numpy_and_ignores_padding(arch_encoder):
    cfg, ax, fx, w, y = _setup(arch_encoder)
    n = 9
    mask = jnp.arange(12) < n
    set_args = (fx, y, mask)
    nll_fn = jax.jit(dk.neg_log_marginal_likelihood, static_argnums=(1, 8))
    nll = nll_fn(w, cfg, ax, y, mask, *set_args, False)
    z = jax.jit(dk.embed, static_argnums=1)(w, cfg, ax, *set_args)[:n]
    noise = cfg.min_noise + np.exp(-2.0) + cfg.jitter
    want = numpy_nll(z, y[:n], np.exp(-0.2), np.exp(0.3), noise)
    np.testing.assert_allclose(float(nll), want, rtol=2e-4)
    # padded rows with arbitrary content change nothing; psi given = psi applied inside
    ax_junk = ax.at[n:].set(ax[0]) if arch_encoder == "dag" else ax.at[n:].set(0.5)
    np.testing.assert_allclose(nll_fn(w, cfg, ax_junk, y.at[n:].set(1e4), mask, *set_args, False), nll, rtol=1e-5)
    za = dk.arch_embeddings(w, cfg, ax)
    np.testing.assert_allclose(nll_fn(w, cfg, za, y, mask, *set_args, True), nll, rtol=1e-5)


def test_posterior_interpolates_and_finetuning_lowers_the_nll():
    cfg, ax, fx, w, y = _setup("dag")
    mask = jnp.arange(12) < 9
    w["kernel"]["log_noise"] = jnp.float32(-9.0)
    w["kernel"]["log_ls"] = jnp.float32(-4.0)  # short length scale: the training strings barely correlate
    mean, std = jax.jit(lambda p: dk.posterior(p, cfg, ax, y, mask, ax, fx, y, mask))(w)
    np.testing.assert_allclose(mean[:9], y[:9], atol=0.05)
    std = np.asarray(std)
    assert np.all(std[:9] < 0.1 * np.std(y[:9])) and np.all(std[9:] > 5 * std[:9].max()) and np.all(np.isfinite(mean))
    w["kernel"]["log_noise"], w["kernel"]["log_ls"] = jnp.float32(-2.0), jnp.float32(0.3)
    za = dk.arch_embeddings(w, cfg, ax)  # meta-test fine-tunes phi, xi and the kernel on fixed psi(x)
    nll = jax.jit(lambda p: dk.neg_log_marginal_likelihood(p, cfg, za, y, mask, fx, y, mask, psi_given=True))
    tuned = jax.jit(lambda p: dk.finetune(p, cfg, za, y, mask, fx, y, mask, 20, 1e-2, psi_given=True))(w)
    assert nll(tuned) < nll(w) - 0.5
    # scope "kernel": the GP hyperparameters move and lower the NLL, the networks stay exactly as they were
    hyper = jax.jit(lambda p: dk.finetune(p, cfg, za, y, mask, fx, y, mask, 20, 1e-2, True, "kernel"))(w)
    assert nll(hyper) < nll(w) and float(hyper["kernel"]["log_ls"]) != float(w["kernel"]["log_ls"])
    for a, b in zip(jax.tree.leaves(hyper["net"]), jax.tree.leaves(w["net"])):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="finetune scope"):
        dk.finetune(w, cfg, za, y, mask, fx, y, mask, 1, 1e-2, True, "psi")


def test_reptile_outer_update_matches_hand_computation():
    # L(w) = 1/2 ||w - c||^2, SGD with step a: w'_v = c + (1 - a)^v (w - c); w <- w - eta (w - w')
    c = {"a": jnp.array([1.0, -2.0]), "b": jnp.float32(3.0)}
    w = {"a": jnp.array([0.5, 0.5]), "b": jnp.float32(-1.0)}
    a, v, eta = 0.1, 4, 0.3

    def loss(p):
        return 0.5 * sum(jnp.sum((p[k] - c[k]) ** 2) for k in p)

    new, losses = reptile_update(w, loss, optax.sgd(a), v, eta)
    for k in w:
        w_inner = np.asarray(c[k]) + (1 - a) ** v * (np.asarray(w[k]) - np.asarray(c[k]))
        np.testing.assert_allclose(new[k], np.asarray(w[k]) - eta * (np.asarray(w[k]) - w_inner), rtol=1e-6)
    assert losses.shape == (v,) and float(losses[0]) == pytest.approx(float(loss(w)))
    with pytest.raises(ValueError, match="inner_optimizer"):
        ReptileConfig(inner_optimizer="rmsprop")
