"""Policy networks: exact sampling/log-prob agreement, masks, validity, Table II."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from policies import available_policies, make_policy
from policies.base import num_params, value_families
from policies.orderings import make_orderings, rank_of
from spaces import nb101, nb201
from spaces.benchmarks import hpolib

POLICIES = ["factorized", "lstm", "maade", "made"]
SMALL = {"maade": {"d": 8}, "made": {"d": 4}, "lstm": {"d": 8}, "factorized": {}}


def _noisy_params(pol, seed=0):
    """Non-uniform parameters (heads start at zero, which would make every test trivial)."""
    params = pol.init(jax.random.PRNGKey(seed))
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), len(leaves))
    return jax.tree_util.tree_unflatten(tree, [x + 0.5 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)])


def test_registry():
    assert available_policies() == POLICIES
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("maad", nb201.SPACE)


def test_the_registry_names_once_in_policies_base_still_import_with_a_warning():
    import policies.base
    from policies import registry

    for name in ("make_policy", "available_policies", "register_policy", "POLICIES"):
        with pytest.warns(DeprecationWarning, match=f"policies.base.{name} moved to policies.registry"):
            assert getattr(policies.base, name) is getattr(registry, name)
    with pytest.raises(AttributeError, match="no attribute 'make_polcy'"):
        policies.base.make_polcy  # noqa: B018


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("space", [nb201.SPACE, nb101.SPACE], ids=["nb201", "nb101"])
def test_log_prob_equals_sampling_log_probs_and_samples_are_valid(name, space):
    pol = make_policy(name, space, **SMALL[name])
    params = _noisy_params(pol)
    order = make_orderings(jax.random.PRNGKey(5), space.num_tokens, 2)[1]  # a non-identity order
    keys = jax.random.split(jax.random.PRNGKey(7), 32)

    @jax.jit
    def go(params, keys):
        toks, lp = jax.vmap(pol.sample, in_axes=(None, 0, None))(params, keys, order)
        return toks, lp, jax.vmap(pol.log_prob, in_axes=(None, 0, None))(params, toks, order)

    toks, lp_sample, lp_teacher = go(params, keys)
    np.testing.assert_allclose(np.asarray(lp_teacher), np.asarray(lp_sample), atol=2e-5)
    assert np.all(np.asarray(jax.vmap(space.is_valid)(toks)))
    assert np.all(np.isfinite(np.asarray(lp_sample)))
    # the policy is not uniform: strings differ in probability
    assert np.std(np.asarray(lp_sample.sum(-1))) > 0.1


@pytest.mark.parametrize("name", POLICIES)
def test_later_tokens_do_not_change_earlier_conditionals(name):
    space = hpolib.SPACE  # mixed cardinalities: several value families
    pol = make_policy(name, space, **SMALL[name])
    params = _noisy_params(pol, seed=3)
    order = make_orderings(jax.random.PRNGKey(1), space.num_tokens, 2)[1]
    rank = rank_of(order)
    a = space.sample(jax.random.PRNGKey(2))
    b = (a + 1) % jnp.asarray(space.cardinalities)  # differs from a at every position

    @jax.jit
    def rows(tokens):
        return pol.logits(params, tokens, order)

    base = np.asarray(rows(a))
    for c in range(space.num_tokens):
        mixed = jnp.where(rank <= c, a, b)  # same tokens up to step c, different afterwards
        got = np.asarray(rows(mixed))
        earlier = np.asarray(order[: c + 1])
        np.testing.assert_allclose(got[earlier], base[earlier], atol=1e-5)
    # and later conditionals do see earlier tokens (except in the factorized policy)
    later_differs = not np.allclose(np.asarray(rows(b))[np.asarray(order[1:])], base[np.asarray(order[1:])])
    assert later_differs == (name != "factorized")


def test_complete_keeps_prefix():
    pol = make_policy("maade", nb201.SPACE, d=8)
    params = _noisy_params(pol)
    order = jnp.asarray([3, 0, 5, 1, 4, 2])
    a = jnp.asarray([1, 2, 3, 4, 0, 1])
    outs = jax.vmap(lambda k: pol.complete(params, k, a, order, 3)[0])(jax.random.split(jax.random.PRNGKey(0), 64))
    kept = np.asarray(order[:3])
    assert np.all(np.asarray(outs)[:, kept] == np.asarray(a)[kept])
    assert len({tuple(r) for r in np.asarray(outs)[:, np.asarray(order[3:])]}) > 1


def test_initial_policy_is_uniform():
    for name in POLICIES:
        pol = make_policy(name, nb201.SPACE, **SMALL[name])
        lp = jax.jit(pol.log_prob)(pol.init(jax.random.PRNGKey(0)), jnp.asarray([0, 1, 2, 3, 4, 0]), jnp.arange(6))
        np.testing.assert_allclose(np.asarray(lp), -np.log(5.0), rtol=1e-5)


def test_context_layer_size_does_not_grow_with_n():
    """Table II: MAADE's and the LSTM's context layers are O(d^2); MADE's grows with N."""
    small, large = nb201.SPACE, nb101.SPACE  # N = 6 and N = 26
    for name in ("maade", "lstm"):
        p_small = make_policy(name, small).init(jax.random.PRNGKey(0))
        p_large = make_policy(name, large).init(jax.random.PRNGKey(0))
        assert num_params(p_small["context"]) == num_params(p_large["context"]) > 0
        assert num_params(p_small) < num_params(p_large)  # queries and heads are per hyperparameter
    d = 36
    p = make_policy("maade", small, d=d).init(jax.random.PRNGKey(0))
    # additive attention (W_q, W_k, W_v, b, v) + PosFF (W1, b1, W2, b2), one block
    assert num_params(p["context"]) == 3 * d * d + 2 * d + 2 * d * 4 * d + 4 * d + d
    made_small = make_policy("made", small).init(jax.random.PRNGKey(0))
    made_large = make_policy("made", large).init(jax.random.PRNGKey(0))
    assert num_params(made_large["hidden"]) > 10 * num_params(made_small["hidden"])


def test_value_families_and_orderings():
    offset, fam, rows = value_families(hpolib.SPACE)  # cardinalities (2,2,4,3,3,6,2,6,6)
    assert rows == 2 + 3 + 4 + 6
    assert offset[0] == offset[1] == offset[6] and offset[7] == offset[8] == offset[5]
    z = np.asarray(make_orderings(jax.random.PRNGKey(0), 6, 256))
    assert z.shape == (256, 6) and (z[0] == np.arange(6)).all()
    assert len({tuple(r) for r in z}) == 256 and all(sorted(r) == list(range(6)) for r in z)
    z = np.asarray(make_orderings(jax.random.PRNGKey(0), 26, 4))
    assert all(sorted(r) == list(range(26)) for r in z)
    with pytest.raises(ValueError, match="only 6"):
        make_orderings(jax.random.PRNGKey(0), 3, 7)
