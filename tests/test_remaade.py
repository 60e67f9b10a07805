"""ReMAADE: PPO/REINFORCE objectives and a real NAS-Bench-201 run.

Validity of policy samples on NAS-Bench-101's space is tested per policy in
test_policies.py; the registry-wide test (test_searchers.py) runs ReMAADE and
ReACTS in a Python loop and in lax.scan and checks valid, never-repeated queries.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core.searcher import make_searcher
from nas.engine.runner import init_state, run_steps
from nas.searchers.policy_gradient import pg_objective
from spaces import nb201
from spaces.benchmarks.registry import make_benchmark


def test_ppo_ratio_is_one_and_equals_reinforce_at_old_params():
    s = make_searcher("remaade", nb201.SPACE, batch_size=10, max_queries=40, d=8, num_orders=3)
    state = s.init(jax.random.PRNGKey(0))
    # non-uniform policy: perturb the (zero-initialized) heads
    heads = state.params["heads"]
    state = state.replace(params={**state.params, "heads": jax.tree_util.tree_map(lambda x: x + 0.3, heads)})
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(1), s.batch_size))
    orders = state.orders[jnp.arange(s.batch_size) % 3]  # all three orders of Z_S
    adv = jnp.linspace(-2.0, 3.0, s.batch_size)
    weight = jnp.ones(s.batch_size)

    def objective(params, ppo, per_token):
        lp = s.batch_log_prob(params, tokens, orders)
        old = jax.lax.stop_gradient(s.batch_log_prob(state.params, tokens, orders))
        a = jnp.broadcast_to(adv[:, None], lp.shape) if per_token else adv
        if not per_token:
            lp, old = lp.sum(1), old.sum(1)
        return pg_objective(lp, old, a, weight, ppo, 0.1)

    vg = jax.jit(jax.value_and_grad(objective), static_argnums=(1, 2))
    for per_token in (False, True):
        v_ppo, g_ppo = vg(state.params, True, per_token)
        v_rf, g_rf = vg(state.params, False, per_token)
        # the ratio is 1, so the clipped objective's value is mean(A) (summed over tokens if per token)
        want = float(jnp.mean(adv) * (s.space.num_tokens if per_token else 1))
        np.testing.assert_allclose(float(v_ppo), want, rtol=1e-5, atol=1e-6)
        for a, b in zip(jax.tree_util.tree_leaves(g_ppo), jax.tree_util.tree_leaves(g_rf)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
        assert max(float(jnp.abs(x).max()) for x in jax.tree_util.tree_leaves(g_rf)) > 1e-3


def test_clipping_stops_the_gradient_outside_the_trust_region():
    lp_old = jnp.zeros(2)
    adv = jnp.asarray([1.0, -1.0])

    def f(lp):
        return pg_objective(lp, lp_old, adv, jnp.ones(2), True, 0.1)

    # ratio 1.2 > 1 + eps with A > 0 and ratio 0.8 < 1 - eps with A < 0: both clipped, no gradient
    np.testing.assert_allclose(np.asarray(jax.grad(f)(jnp.log(jnp.asarray([1.2, 0.8])))), 0.0)
    # inside the region the gradient is r * A / B
    np.testing.assert_allclose(np.asarray(jax.grad(f)(jnp.log(jnp.asarray([1.05, 0.95])))), [0.525, -0.475], rtol=1e-5)


SEEDS = 64  # the 256-seed comparison with random search is scripts/search_quality.py


@pytest.fixture(scope="module")
def nb201_runs():
    """ReMAADE (paper defaults) and random search, 150 queries, many seeds, NAS-Bench-201 cifar10."""
    bench = make_benchmark("nb201/cifar10")
    out = {}
    for name in ("remaade",):
        s = make_searcher(name, bench.space, max_queries=150)

        def run(key, bench, s=s):
            state, metrics = run_steps(s, bench, key, init_state(s, key), s.num_steps)
            return state.history, metrics

        keys = jax.random.split(jax.random.PRNGKey(42), SEEDS)
        out[name] = jax.jit(jax.vmap(run, in_axes=(0, None)))(keys, bench)
    return out


@pytest.mark.slow
def test_remaade_improves_its_samples_on_nb201(nb201_runs):
    hist, metrics = nb201_runs["remaade"]
    batch_mean = np.asarray(hist.score).reshape(SEEDS, 5, 30).mean(axis=(0, 2))
    assert np.all(np.diff(batch_mean[:4]) > 0), batch_mean
    assert batch_mean[-1] > batch_mean[0] + 3.0, batch_mean  # accuracy points
    np.testing.assert_allclose(np.asarray(metrics["fresh_frac"]), 1.0)
    ids = np.asarray(jax.vmap(jax.vmap(make_benchmark("nb201/cifar10").space.string_id))(hist.tokens))
    assert all(len(set(r)) == 150 for r in ids)
