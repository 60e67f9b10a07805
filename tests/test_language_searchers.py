"""Searchers on flattened language spaces: every registered searcher (Python loop and lax.scan) on
a cheap synthetic objective, MCTS's UCT statistics by hand, SMBO's linear surrogate."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from nas.engine.runner import make_search
from nas.host.objectives import is_multi_objective
from nas.searchers import available_searchers, make_searcher
from spaces.base import CategoricalSpace, Space
from spaces.benchmarks.objective import Objective
from spaces.language import LanguageSpace
from spaces.language.examples import figure4
from spaces.language.flatten import FlatLanguageSpace
from surrogates.ridge import cholesky, fit_ridge, predict_ridge
from tests.searcher_settings import cheap_options, searcher_params

QUERIES = 20


@struct.dataclass
class LinearObjective(Objective):
    """A cheap synthetic objective: a fixed random linear function of the active one-hot features."""

    weights: jax.Array
    space: Space = struct.field(pytree_node=False)
    name: str = struct.field(pytree_node=False, default="synthetic")
    has_test: bool = struct.field(pytree_node=False, default=False)

    def query(self, key, tokens):
        del key
        f = jax.vmap(lambda t: self.space.features(t, "onehot"))(tokens)
        v = jnp.where(jax.vmap(self.space.is_valid)(tokens), f @ self.weights, -jnp.inf)
        return {"valid": v, "test": v, "cost": jnp.ones_like(v)}


@functools.lru_cache(maxsize=1)
def objective():
    space = FlatLanguageSpace(LanguageSpace(figure4, "figure4"))
    w = jax.random.uniform(jax.random.PRNGKey(0), (space.feature_dim("onehot"),))
    return LinearObjective(weights=w, space=space)


@pytest.mark.parametrize("name", searcher_params([n for n in available_searchers() if not is_multi_objective(n)]))
def test_every_searcher_runs_on_a_flattened_language_space(name):  # multi-objective ones need metrics
    obj = objective()
    kwargs = {"max_queries": QUERIES, **cheap_options(name)}
    if name == "warm_start":  # a design of this space: 4 distinct strings
        strings = jax.vmap(obj.space.sample)(jax.random.split(jax.random.PRNGKey(9), 4))
        kwargs["design"] = ";".join(",".join(map(str, row)) for row in np.asarray(strings).tolist())
    if name == "nasbot":  # OTMANN reads cells and MLPs, not language graphs: a clear refusal
        with pytest.raises(ValueError, match="not one it can read"):
            make_searcher(name, obj.space, **kwargs)
        return
    if name == "tnas":  # fine-tuning (a gradient program as large as the rest) is tested in test_searchers.py
        kwargs["finetune_steps"] = 0
    searcher = make_searcher(name, obj.space, **kwargs)
    if name == "tnas":  # a 50M-string space: mutation and random candidates, not every string
        assert searcher.acq_opt == "mutation_random"
        with pytest.raises(ValueError, match="exhaustive acquisition lists at most"):
            make_searcher(name, obj.space, **{**kwargs, "acq_opt": "exhaustive"})
    # the compiled runner only: Python loop == scan is tested for every searcher in test_searchers.py
    hist = jax.jit(make_search(searcher))(jax.random.PRNGKey(3), obj)
    q = searcher.max_queries
    ids = np.asarray(jax.vmap(obj.space.string_id)(hist.tokens))
    assert np.all(ids >= 0) and len(set(ids.tolist())) == q, f"{name}: invalid or repeated architectures"
    assert np.all(np.isfinite(np.asarray(hist.score)))


def test_mcts_visits_and_uct_by_hand():
    """Two binary decisions; three backups, then UCT at the root with c = 0.33 (Browne et al. 2012)."""
    from nas.searchers.mcts import uct_values

    space = CategoricalSpace("toy", {"a": [0, 1], "b": [0, 1]})
    s = make_searcher("mcts", space, max_queries=8)
    state = s.init(jax.random.PRNGKey(0))
    for toks, score, length in [([0, 0], 0.5, 1), ([1, 1], 0.9, 1), ([1, 0], 0.3, 2)]:
        state = state.replace(tree_len=jnp.asarray([length], jnp.int32))
        state, _ = jax.jit(s.tell)(None, jnp.asarray([toks], jnp.int32), jnp.asarray([score]), state)
    assert float(state.visits[0]) == 3 and float(state.sums[0]) == pytest.approx(1.7)
    n0, n1 = int(state.children[0, 0]), int(state.children[0, 1])
    assert (float(state.visits[n0]), float(state.sums[n0])) == (1.0, pytest.approx(0.5))
    assert (float(state.visits[n1]), float(state.sums[n1])) == (2.0, pytest.approx(1.2))
    n10 = int(state.children[n1, 0])
    assert float(state.visits[n10]) == 1 and int(state.num_nodes) == 4 and int(state.children[n0, 0]) == -1
    uct = np.asarray(uct_values(state, jnp.int32(0), 0.33, False))
    want = [0.5 + 0.33 * np.sqrt(2 * np.log(3) / 1), 0.6 + 0.33 * np.sqrt(2 * np.log(3) / 2)]
    np.testing.assert_allclose(uct, want, rtol=1e-6)
    # child 0 has the larger UCT value (0.989 > 0.946): the next simulation selects a=0, then expands b
    tokens, state = jax.jit(s.ask)(jax.random.PRNGKey(1), state)
    assert np.asarray(tokens).tolist() == [[0, 1]] and int(state.tree_len[0]) == 2  # [0, 0] was queried


def test_ridge_surrogate_recovers_a_linear_function():
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(k1, (64, 12))
    w_true = jax.random.normal(k2, (12,))
    exact = np.asarray(x, np.float64) @ np.asarray(w_true, np.float64) + 0.7  # numpy: no TF32 products on GPUs
    mask = jnp.arange(64) < 50  # padded rows are ignored
    y = jnp.where(mask, jnp.asarray(exact, jnp.float32), 1e6)
    for rows, l2 in ((64, 1e-6), (8, 1e-4)):  # primal (features < rows); dual (features > rows): interpolates
        m = mask & (jnp.arange(64) < rows)
        w, b = fit_ridge(x, y, m, l2)
        np.testing.assert_allclose(predict_ridge(w, b, x[:rows]), exact[:rows], atol=1e-2)
        if rows == 64:
            np.testing.assert_allclose(w, w_true, atol=1e-3)
            assert float(b) == pytest.approx(0.7, abs=1e-3)
    a = jnp.asarray(np.asarray(x).T @ np.asarray(x) + np.eye(12, dtype=np.float32))
    np.testing.assert_allclose(cholesky(a), np.linalg.cholesky(np.asarray(a)), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_smbo_returns_the_best_predicted_candidate():
    """With random_prob 0 an ask is the argmax of the fitted surrogate over the candidate pool."""
    obj = objective()
    s = make_searcher("smbo_linear", obj.space, max_queries=40, num_candidates=64, random_prob=0.0)
    state = s.init(jax.random.PRNGKey(0))
    toks = jax.vmap(obj.space.sample)(jax.random.split(jax.random.PRNGKey(1), 30))
    state, _ = jax.jit(s.tell)(None, toks, obj.query(None, toks)["valid"], state)
    tokens, _ = jax.jit(s.ask)(jax.random.PRNGKey(2), state)
    w, b = jax.jit(s.surrogate)(state)
    pool = jax.vmap(obj.space.sample)(jax.random.split(jax.random.split(jax.random.PRNGKey(2), 3)[0], 64))
    pred = predict_ridge(w, b, s.features(pool))
    assert np.array_equal(np.asarray(tokens[0]), np.asarray(pool[jnp.argmax(pred)]))
    # on this linear objective the surrogate's pick beats the median random architecture
    assert float(obj.query(None, tokens)["valid"][0]) > float(jnp.median(obj.query(None, pool)["valid"]))
