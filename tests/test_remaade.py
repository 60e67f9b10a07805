"""ReMAADE: PPO/REINFORCE objectives, the switches to the paper's text, metrics, a real NAS-Bench-201 run.

Validity of policy samples on NAS-Bench-101's space is tested per policy in
test_policies.py; the registry-wide test (test_searchers.py) runs ReMAADE and
ReACTS in a Python loop and in lax.scan and checks valid, never-repeated queries.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.engine.runner import init_state, run_steps
from nas.searchers import make_searcher
from nas.searchers.policy_gradient import pg_objective
from policies.orderings import make_orderings
from spaces import nb201
from spaces.benchmarks.registry import make_benchmark

pytestmark = pytest.mark.slow  # ReMAADE trains its policy at every step


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


def test_literal_eq11_equals_schulman_where_the_advantage_is_positive():
    """Eq. 11 as printed, A min(r, clip(r)), against Schulman's min(r A, clip(r) A), eps = 0.1, by hand."""
    ratio = jnp.asarray([1.2, 0.8, 1.05, 1.2, 0.8, 0.95])
    adv = jnp.asarray([2.0, 2.0, 2.0, -1.0, -1.0, -1.0])
    # Schulman: min(2.4, 2.2), min(1.6, 1.8), 2.1 | min(-1.2, -1.1), min(-0.8, -0.9), -0.95
    schulman = [2.2, 1.6, 2.1, -1.2, -0.9, -0.95]
    # printed: 2 min(1.2, 1.1), 2 min(0.8, 0.9), 2.1 | -min(1.2, 1.1), -min(0.8, 0.9), -0.95
    literal = [2.2, 1.6, 2.1, -1.1, -0.8, -0.95]

    def per_string(form):  # B = 1 per call: the objective of one string, its gradient in log r
        f = lambda lr, a: pg_objective(lr[None], jnp.zeros(1), a[None], jnp.ones(1), True, 0.1, form)  # noqa: E731
        return jax.vmap(jax.value_and_grad(f))(jnp.log(ratio), adv)

    for form, want, want_grad in (
        ("schulman", schulman, [0.0, 1.6, 2.1, -1.2, 0.0, -0.95]),  # d(r A)/d log r = r A where not clipped
        ("literal", literal, [0.0, 1.6, 2.1, 0.0, -0.8, -0.95]),
    ):
        value, grad = per_string(form)
        np.testing.assert_allclose(np.asarray(value), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(grad), want_grad, rtol=1e-5, atol=1e-7)
    # REINFORCE and the ratio-1 point are untouched by the switch
    one = pg_objective(jnp.zeros(6), jnp.zeros(6), adv, jnp.ones(6), True, 0.1, "literal")
    np.testing.assert_allclose(float(one), float(jnp.mean(adv)), rtol=1e-6)


def test_a_string_outside_the_gradient_cannot_make_it_nan():
    """A fallback string (weight 0) whose log-probability rose by 200 nats over the PPO epochs (exp overflows):
    the value and the gradient stay those of the weighted strings."""
    logp, old = jnp.asarray([-1.0, -40.0]), jnp.asarray([-1.0, -240.0])
    adv, weight = jnp.asarray([2.0, 0.0]), jnp.asarray([1.0, 0.0])
    for form in ("schulman", "literal"):
        f = lambda lp, form=form: pg_objective(lp, old, adv, weight, True, 0.1, form)  # noqa: E731
        value, grad = jax.value_and_grad(f)(logp)
        np.testing.assert_allclose(float(value), 2.0)
        np.testing.assert_allclose(np.asarray(grad), [2.0, 0.0])


def _perturbed_state(s, seed=0):
    """A ReMAADE state whose policy is not uniform (the heads start at zero), three orders in Z_S."""
    state = s.init(jax.random.PRNGKey(seed))
    leaves, tree = jax.tree_util.tree_flatten(state.params)
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), len(leaves))
    params = jax.tree_util.tree_unflatten(tree, [x + 0.3 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)])
    return state.replace(params=params, orders=make_orderings(jax.random.PRNGKey(2), s.space.num_tokens, 3))


def test_one_ppo_epoch_is_one_reinforce_step():
    """``ppo_epochs=1`` (Algorithm 1, line 8: one update per batch) gives REINFORCE's update with either
    clipped objective; more epochs move further and the two objectives then differ."""
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(3), 8))
    adv = jnp.linspace(-2.0, 2.0, 8)

    def updated(**kw):
        s = make_searcher("remaade", nb201.SPACE, batch_size=8, max_queries=16, d=8, learning_rate=0.05, **kw)
        state = _perturbed_state(s)
        orders = state.orders[jnp.arange(8) % 3]
        new, _, _ = jax.jit(s.optimize, static_argnums=5)(state, tokens, orders, adv, jnp.ones(8), False)
        return np.concatenate([np.ravel(x) for x in jax.tree_util.tree_leaves(new.params)])

    reinforce = updated(ppo=False)
    for form in ("schulman", "literal"):
        np.testing.assert_allclose(updated(ppo_epochs=1, ppo_objective=form), reinforce, rtol=1e-4, atol=1e-6)
    four = {form: updated(ppo_epochs=4, ppo_objective=form) for form in ("schulman", "literal")}
    assert np.abs(four["schulman"] - reinforce).max() > 1e-3
    assert np.abs(four["schulman"] - four["literal"]).max() > 1e-4  # the clip binds for A < 0


@pytest.mark.parametrize("decay", [0.0, 0.9])
def test_baseline_is_the_batch_mean_or_its_moving_average(decay):
    """b over policy samples with a finite score (a fallback string and a failed query are left out):
    decay 0 = the batch's mean reward; decay 0.9 = 0.9 b + 0.1 mean, starting at the first batch's mean."""
    s = make_searcher("remaade", nb201.SPACE, batch_size=4, max_queries=8, d=8, baseline_decay=decay)
    state = s.init(jax.random.PRNGKey(0))
    tokens, state = s.ask(jax.random.PRNGKey(1), state)
    tell = jax.jit(s.tell)
    fresh = jnp.asarray([True, True, True, False])
    state, m1 = tell(jax.random.PRNGKey(2), tokens, jnp.asarray([1.0, 2.0, 6.0, 100.0]), state.replace(fresh=fresh))
    np.testing.assert_allclose(float(m1["baseline"]), 3.0)  # (1 + 2 + 6) / 3: no fallback string
    np.testing.assert_allclose(float(m1["fallback_frac"]), 0.25)
    state, m2 = tell(jax.random.PRNGKey(3), tokens, jnp.asarray([5.0, -jnp.inf, 7.0, 0.0]), state.replace(fresh=fresh))
    np.testing.assert_allclose(float(m2["baseline"]), 6.0 if decay == 0 else 0.9 * 3.0 + 0.1 * 6.0, rtol=1e-6)
    np.testing.assert_allclose(float(m2["fresh_frac"]), 0.5)  # two policy samples with a score


def test_step_entropy_is_over_policy_samples_else_the_fallback_strings():
    s = make_searcher("remaade", nb201.SPACE, batch_size=4, max_queries=8, d=8)
    state = _perturbed_state(s)
    tokens = jax.vmap(nb201.SPACE.sample)(jax.random.split(jax.random.PRNGKey(4), 4))
    per_string = np.asarray(s.batch_entropy(state.params, tokens, state.orders[state.order_idx]))
    assert np.std(per_string) > 1e-3
    tell = jax.jit(s.tell)
    for fresh, want in (([True, False, True, False], per_string[[0, 2]].mean()), ([False] * 4, per_string.mean())):
        _, m = tell(jax.random.PRNGKey(5), tokens, jnp.arange(4.0), state.replace(fresh=jnp.asarray(fresh)))
        np.testing.assert_allclose(float(m["entropy"]), want, rtol=1e-5)
        np.testing.assert_allclose(float(m["fallback_frac"]), 1.0 - np.mean(fresh))


def test_paper_config_validates():
    from configs.paper import remaade
    from nas.experiment.run import validate_config

    config = remaade.get_config()
    validate_config(config)
    paper = config.searchers.remaade_paper
    assert (paper.ppo_epochs, paper.ppo_objective, paper.entropy_coef) == (1, "literal", 0.0)


SEEDS = 64  # the 256-seed comparison with random search is scripts/experiments/search_quality.py


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


def test_remaade_improves_its_samples_on_nb201(nb201_runs):
    hist, metrics = nb201_runs["remaade"]
    batch_mean = np.asarray(hist.score).reshape(SEEDS, 5, 30).mean(axis=(0, 2))
    assert np.all(np.diff(batch_mean[:4]) > 0), batch_mean
    assert batch_mean[-1] > batch_mean[0] + 3.0, batch_mean  # accuracy points
    np.testing.assert_allclose(np.asarray(metrics["fresh_frac"]), 1.0)
    np.testing.assert_allclose(np.asarray(metrics["fallback_frac"]), 0.0)
    ids = np.asarray(jax.vmap(jax.vmap(make_benchmark("nb201/cifar10").space.string_id))(hist.tokens))
    assert all(len(set(r)) == 150 for r in ids)
