"""AlphaX: the tree statistics after hand-checked simulations (visits and values on the path, eq. 2 and 3),
rollouts from a node, and a small real search against random search."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.engine.runner import make_search
from nas.searchers import make_searcher
from nas.searchers.mcts import uct_values
from spaces.base import CategoricalSpace
from spaces.benchmarks.registry import make_benchmark
from surrogates import meta_dnn

pytestmark = pytest.mark.slow  # AlphaX trains its meta-DNN at every step


def constant_net(state):
    """The meta-DNN with every weight zero and its output bias b: it predicts ``b * y_scale + y_mean``."""
    params = jax.tree.map(jnp.zeros_like, state.net.params)
    params["params"][f"Dense_{len(params['params']) - 1}"]["bias"] = jnp.asarray([0.2])
    return state.net.replace(params=params, y_mean=jnp.float32(0.6), y_scale=jnp.float32(0.5))  # predicts 0.7


def test_alphax_tree_statistics_by_hand():
    """Two binary decisions, min_train = 2: the first two new nodes are valued by their evaluation, the third
    by (evaluation + mean prediction of k rollouts) / 2 (eq. 2); every node on the path and the root get a
    visit and the value (eq. 3)."""
    space = CategoricalSpace("toy", {"a": [0, 1], "b": [0, 1]})
    s = make_searcher("alphax", space, max_queries=8, min_train=2, num_rollouts=3, exploration=0.25)
    state = s.init(jax.random.PRNGKey(0))
    tell = jax.jit(s.tell)
    for toks, score, length in [([0, 0], 0.5, 1), ([1, 1], 0.9, 1), ([1, 0], 0.3, 2)]:
        state = state.replace(tree_len=jnp.asarray([length], jnp.int32), net=constant_net(state))
        state, _ = tell(jax.random.PRNGKey(1), jnp.asarray([toks], jnp.int32), jnp.asarray([score]), state)
    # values backed up: 0.5, 0.9, (0.3 + 0.7) / 2 = 0.5
    assert float(state.visits[0]) == 3 and float(state.sums[0]) == pytest.approx(1.9)
    n0, n1 = int(state.children[0, 0]), int(state.children[0, 1])
    assert (float(state.visits[n0]), float(state.sums[n0])) == (1.0, pytest.approx(0.5))
    assert (float(state.visits[n1]), float(state.sums[n1])) == (2.0, pytest.approx(1.4))
    n10 = int(state.children[n1, 0])
    assert (float(state.visits[n10]), float(state.sums[n10])) == (1.0, pytest.approx(0.5))
    assert int(state.num_nodes) == 4 and int(state.count) == 3
    # eq. 1 at the root: means scaled by the scores seen (0.3 .. 0.9), bonus 2c sqrt(2 ln N / n), c = 0.25
    mean0, mean1 = (0.5 - 0.3) / 0.6, (0.7 - 0.3) / 0.6
    want = [mean0 + 0.5 * np.sqrt(2 * np.log(3) / 1), mean1 + 0.5 * np.sqrt(2 * np.log(3) / 2)]
    np.testing.assert_allclose(np.asarray(uct_values(state, jnp.int32(0), s.uct_exploration(), True)), want, rtol=1e-5)


def test_alphax_rollouts_keep_the_node_and_complete_uniformly():
    space = CategoricalSpace("toy", {"a": [0, 1, 2], "b": [0, 1, 2]})
    s = make_searcher("alphax", space, max_queries=8)
    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    rolls = np.asarray(jax.vmap(lambda k: s.complete(k, jnp.asarray([2, 1], jnp.int32), 1))(keys))
    assert np.all(rolls[:, 0] == 2) and set(rolls[:, 1].tolist()) == {0, 1, 2}


def test_meta_dnn_learns_a_linear_function():
    x = jax.random.normal(jax.random.PRNGKey(0), (64, 5))
    y = x @ jnp.arange(1.0, 6.0)
    cfg = meta_dnn.MetaDNNConfig(num_layers=2, width=32, learning_rate=1e-2, steps=300)
    state = meta_dnn.init(jax.random.PRNGKey(1), 5, cfg)
    state, loss = jax.jit(lambda s: meta_dnn.train(jax.random.PRNGKey(2), s, x, y, jnp.arange(64) < 48, cfg))(state)
    err = np.asarray(meta_dnn.predict(state, x, cfg) - y)
    assert float(loss) < 0.05 and np.abs(err[:48]).mean() < 0.2 * np.abs(np.asarray(y)).mean()


def best_scores(name, seeds, **options):
    """The best validation score of each of ``seeds`` runs of ``name`` on NB201 cifar10."""
    b = make_benchmark("nb201/cifar10")
    s = make_searcher(name, b.space, **options)
    run = jax.jit(jax.vmap(make_search(s), in_axes=(0, None)))
    h = run(jax.random.split(jax.random.PRNGKey(11), seeds), b)
    return np.asarray(h.score).max(axis=1)


def test_alphax_beats_random_search_on_nb201():
    alphax = best_scores("alphax", 8, max_queries=60, num_layers=2, width=32)
    rand = best_scores("random_search", 8, max_queries=60)
    assert alphax.mean() > rand.mean() + 0.1, (alphax.mean(), rand.mean())
