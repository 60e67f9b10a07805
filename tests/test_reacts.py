"""ReACTS: covariate-shift weights (eq. 20), prefix values by rollouts (eq. 16), the simulator's refit
and the policy update (the library's defaults and the paper's Algorithms 2-3).

ReACTS end to end (Python loop == lax.scan, valid never-repeated queries) is
covered by the registry-wide tests/test_searchers.py with its TEST_KWARGS; its
search quality is measured in configs/table3.py (a real run here would cost
about a minute of compilation for the simulator's training loop).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from nas.searchers import make_searcher
from spaces import nb201
from surrogates.mlp_ensemble import fit_ensemble, init_ensemble

pytestmark = pytest.mark.slow  # ReACTS trains its policy and simulator at every step

TINY = {"batch_size": 6, "max_queries": 18, "d": 8, "rollouts": 3, "sim_epochs": 5, "sim_members": 2}


def _perturbed(params, seed, scale=0.5):
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree_util.tree_unflatten(tree, [x + scale * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)])


def test_covariate_shift_weights_match_eq20():
    """Two steps of the cached weights (new strings under earlier policies, all strings under the
    current one) equal eq. 20 computed by hand from every policy's marginal."""
    s = make_searcher("reacts", nb201.SPACE, num_orders=2, **TINY)
    state = s.init(jax.random.PRNGKey(0))
    thetas = [_perturbed(state.params, i) for i in range(s.num_steps)]
    history = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *thetas)
    b = s.batch_size
    batches = [jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(1 + t), b)) for t in range(2)]
    buf = state.extra["tokens"]
    cache = state.extra["log_marginals"]
    weights = jax.jit(s.shift_weights)
    buf = buf.at[:b].set(batches[0])
    w0, cache = weights(cache, history, thetas[0], batches[0], buf, 0, state.orders, 0)
    np.testing.assert_allclose(np.asarray(w0[:b]), 1.0, rtol=1e-5)  # one policy so far: no shift
    buf = buf.at[b : 2 * b].set(batches[1])
    w, cache = weights(cache, history, thetas[1], batches[1], buf, b, state.orders, 1)
    log_prob = jax.jit(s.policy.log_prob)

    def marginal(params, a):  # P(a) = (1/S) sum_z P(a | z), by hand
        return np.mean([np.exp(float(log_prob(params, a, z).sum())) for z in state.orders])

    for j, a in enumerate(np.concatenate(batches)):
        p0, p1 = marginal(thetas[0], a), marginal(thetas[1], a)
        np.testing.assert_allclose(w[j], 2 * p1 / (p0 + p1), rtol=1e-4)
    assert np.all(np.asarray(w[: 2 * b]) <= 2.0 + 1e-5) and np.std(np.asarray(w[: 2 * b])) > 1e-3


def test_prefix_values_use_rollouts_from_the_prefix():
    """With a simulator that returns the first edge's op, V(a_<i) is exact once edge 0 is in the prefix."""
    s = make_searcher("reacts", nb201.SPACE, **TINY)
    state = s.init(jax.random.PRNGKey(0))
    params = _perturbed(state.params, 3)

    class FirstToken:  # stands in for S_phi
        def __call__(self, sim, tokens):
            return tokens[:, 0].astype(jnp.float32)

    s.simulate = FirstToken()
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(1), 6))
    orders = jnp.broadcast_to(jnp.asarray([2, 0, 1, 3, 4, 5]), (6, 6))
    v = np.asarray(jax.jit(s.prefix_values)(jax.random.PRNGKey(2), params, None, tokens, orders))
    # positions decided after edge 0 (step 1 of the order) have edge 0 in their prefix
    for pos in (1, 3, 4, 5):
        np.testing.assert_allclose(v[:, pos], np.asarray(tokens[:, 0]))
    # before it (positions 2 and 0) the value is a rollout average, not the token itself
    assert not np.allclose(v[:, 0], np.asarray(tokens[:, 0]))


def test_warm_started_simulator_runs_and_stays_valid():
    """``sim_warm_epochs``: the simulator is carried between steps (full fit first, then short fits)."""
    s = make_searcher("reacts", nb201.SPACE, sim_warm_epochs=2, **TINY)
    state = s.init(jax.random.PRNGKey(0))
    assert "sim" in state.extra
    tokens, state = s.ask(jax.random.PRNGKey(1), state)
    new, metrics = jax.jit(s.tell)(jax.random.PRNGKey(2), tokens, jnp.arange(6, dtype=jnp.float32), state)
    before = jax.tree_util.tree_leaves(state.extra["sim"]["layers"])
    after = jax.tree_util.tree_leaves(new.extra["sim"]["layers"])
    assert any(bool(jnp.any(a != b)) for a, b in zip(after, before))  # trained further
    assert np.isfinite(float(metrics["sim_mae"]))


def _flat(tree):
    return np.concatenate([np.ravel(x) for x in jax.tree_util.tree_leaves(tree)])


def test_simulator_refit_from_scratch_or_warm_started():
    """``sim_warm_epochs=0`` (Algorithm 2, line 6): phi^t is a fresh fit, whatever the last step's simulator
    was; E > 0: the last step's simulator trained for E more epochs."""
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(1), 12))
    scores = jnp.linspace(80.0, 92.0, 12)
    mask = jnp.arange(12) < 10
    weights = jnp.linspace(0.5, 1.5, 12)
    key = jax.random.PRNGKey(2)
    for warm in (0, 2):
        s = make_searcher("reacts", nb201.SPACE, sim_warm_epochs=warm, **TINY)
        x = jax.vmap(lambda a, s=s: s.space.features(a, s.features))(tokens)
        dim = s.space.feature_dim(s.features)
        before = [init_ensemble(jax.random.PRNGKey(i), dim, s.sim_cfg) for i in (10, 11)]
        fit = jax.jit(s.fit_simulator)
        after = [fit(key, x, scores, mask, weights, prev, 1) for prev in before]
        if warm == 0:
            want = fit_ensemble(key, x, scores, mask, s.sim_cfg, weights=weights)
            np.testing.assert_array_equal(_flat(after[0]), _flat(after[1]))
        else:
            want = fit_ensemble(key, x, scores, mask, s.sim_cfg, weights, before[0], 2)
            assert np.abs(_flat(after[0]) - _flat(after[1])).max() > 1e-3
        np.testing.assert_allclose(_flat(after[0]), _flat(want), rtol=1e-5, atol=1e-6)


def test_policy_update_without_ppo_is_one_adam_step_of_eq17():
    """Algorithm 3, line 8: one Adam step on eq. 17, (1/B) sum_k sum_i log P(a_i^k | a_<i^k) A_i^k, over the
    policy samples (weight 1), by hand. Per-token PPO with one epoch is the same step; with two it is not."""
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(1), 6))
    adv = jax.random.normal(jax.random.PRNGKey(4), (6, nb201.SPACE.num_tokens))
    weight = jnp.asarray([1.0, 1.0, 1.0, 1.0, 1.0, 0.0])  # the last string is a fallback
    lr = 0.05

    def update(**kw):
        s = make_searcher("reacts", nb201.SPACE, learning_rate=lr, **{**TINY, **kw})
        state = s.init(jax.random.PRNGKey(0))
        params = _perturbed(state.params, 3)
        state = state.replace(params=params, opt_state=s.optimizer.init(params))
        orders = state.orders[jnp.zeros(6, jnp.int32)]
        new, _, _ = jax.jit(s.optimize, static_argnums=5)(state, tokens, orders, adv, weight, True)
        return s, params, orders, _flat(new.params)

    s, params, orders, no_ppo = update(ppo=False)

    def eq17(p):
        lp = jnp.stack([s.policy.log_prob(p, tokens[k], orders[k]) for k in range(6)])  # [B, N] by position
        return jnp.sum(weight[:, None] * lp * adv) / jnp.sum(weight)

    adam = optax.adam(lr)
    step, _ = adam.update(jax.tree_util.tree_map(jnp.negative, jax.grad(eq17)(params)), adam.init(params), params)
    np.testing.assert_allclose(no_ppo, _flat(optax.apply_updates(params, step)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(update(ppo=True, ppo_epochs=1)[3], no_ppo, rtol=1e-4, atol=1e-6)
    assert np.abs(update(ppo=True, ppo_epochs=2)[3] - no_ppo).max() > 1e-3


def test_paper_config_validates():
    from configs.paper import reacts
    from nas.experiment.run import validate_config

    config = reacts.get_config()
    validate_config(config)
    paper = config.searchers.reacts_paper
    assert (paper.ppo, paper.sim_warm_epochs) == (False, 0)
