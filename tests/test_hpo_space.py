"""The HPO space builder (spaces/hpo.py): grids, conditions, the Space contract, specs, the Section VIII space."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.searchers import make_searcher
from spaces.hpo import HPOSpace, categorical, floating, grid, integer, mlp_space
from tests.searcher_settings import searcher_params


def toy() -> HPOSpace:
    return HPOSpace(
        "toy",
        [
            categorical("solver", ["sgd", "adam"]),
            floating("lr", 1e-4, 1e-1, 4, log=True),
            grid("momentum", [0.0, 0.9, 0.99], when={"solver": ["sgd"]}),
            grid("nesterov_gap", [1, 2], when={"momentum": [0.9, 0.99]}),  # a grandchild: sgd and momentum > 0
            integer("width", 8, 64, num=4, log=True),
        ],
    )


def test_grids_linear_log_zero_and_errors():
    assert integer("n", 1, 4).values == (1, 2, 3, 4)
    assert integer("w", 8, 64, num=4, log=True).values == (8, 16, 32, 64)
    assert integer("k", 0, 100, num=5).values == (0, 25, 50, 75, 100)
    assert floating("lr", 1e-3, 1e-1, 3, log=True).values == (0.001, 0.01, 0.1)
    assert floating("a", 1e-2, 1e-1, 2, log=True, zero=True).values == (0.0, 0.01, 0.1)
    assert floating("f", 0.0, 1.0, 3).values == (0.0, 0.5, 1.0)
    assert grid("g", [1, 2, 5]).ordinal and not categorical("c", ["a", "b"]).ordinal
    for bad in (
        lambda: integer("w", 1, 3, num=5, log=True),  # rounds to duplicates
        lambda: integer("w", 0, 8, num=3, log=True),  # log grid from 0
        lambda: floating("lr", 0.0, 1.0, 3, log=True),
        lambda: grid("g", [1, 1, 2]),
        lambda: grid("g", ["a"]),
        lambda: categorical("c", ["a", "a"]),
    ):
        with pytest.raises(ValueError, match="hyperparameter"):
            bad()
    with pytest.raises(ValueError, match="must come before it"):
        HPOSpace("s", [grid("m", [0.0, 0.9], when={"solver": ["sgd"]}), categorical("solver", ["sgd", "adam"])])
    with pytest.raises(ValueError, match="not one of"):
        HPOSpace("s", [categorical("solver", ["sgd", "adam"]), grid("m", [0.0], when={"solver": ["lbfgs"]})])


def test_active_canonical_and_ids():
    s = toy()
    adam = jnp.asarray([1, 2, 2, 1, 3])  # adam: momentum and its child inactive
    sgd0 = jnp.asarray([0, 2, 0, 1, 3])  # sgd, momentum 0: nesterov_gap inactive
    sgd9 = jnp.asarray([0, 2, 1, 1, 3])
    np.testing.assert_array_equal(s.active(adam), [1, 1, 0, 0, 1])
    np.testing.assert_array_equal(s.active(sgd0), [1, 1, 1, 0, 1])
    np.testing.assert_array_equal(s.active(sgd9), [1, 1, 1, 1, 1])
    np.testing.assert_array_equal(s.active_host(np.asarray(adam)), np.asarray(s.active(adam)))
    np.testing.assert_array_equal(s.canonical(adam), [1, 2, 0, 0, 3])
    # strings that differ only in inactive tokens are one configuration
    assert int(s.string_id(adam)) == int(s.string_id(jnp.asarray([1, 2, 0, 0, 3])))
    assert int(s.string_id(sgd0)) != int(s.string_id(sgd9))
    assert int(s.string_id(jnp.asarray([0, 4, 0, 0, 0]))) == -1  # lr out of range
    # inactive tokens contribute no one-hot features
    f = np.asarray(s.features(adam))
    assert f.sum() == 3 and f.shape == (sum(s.cardinalities),)


def test_sample_mutate_neighbors_stay_canonical():
    s = toy()
    keys = jax.random.split(jax.random.PRNGKey(0), 400)
    x = jax.jit(jax.vmap(s.sample))(keys)
    np.testing.assert_array_equal(x, jax.vmap(s.canonical)(x))
    assert set(np.asarray(x[:, 0]).tolist()) == {0, 1}
    m = jax.jit(jax.vmap(s.mutate))(keys, x)
    np.testing.assert_array_equal(m, jax.vmap(s.canonical)(m))
    sid = jax.jit(jax.vmap(s.string_id))
    ids, mids = np.asarray(sid(x)), np.asarray(sid(m))
    assert np.all(ids != mids) and np.all(mids >= 0)
    # a mutation of solver sgd -> adam drops momentum; adam -> sgd wakes momentum with a drawn value
    woke = (np.asarray(x[:, 0]) == 1) & (np.asarray(m[:, 0]) == 0)
    assert woke.any() and len(set(np.asarray(m[woke, 2]).tolist())) > 1
    nbrs, ok = jax.jit(s.neighbors)(jnp.asarray([1, 2, 0, 0, 3]))
    nb = np.asarray(nbrs)[np.asarray(ok)]
    # adam: edits of lr (3), width (3) and solver (1) only; every neighbour canonical and distinct
    assert len(nb) == 7 and len({tuple(r) for r in nb}) == 7
    np.testing.assert_array_equal(nb, np.asarray(jax.vmap(s.canonical)(jnp.asarray(nb))))


def test_step_mask_gives_canonical_strings_in_order():
    s = toy()
    tokens = jnp.asarray([1, 0, 0, 0, 0])
    assigned = jnp.asarray([True, False, False, False, False])
    np.testing.assert_array_equal(s.step_mask(tokens, assigned, 2), [True, False, False, False])  # adam decided
    np.testing.assert_array_equal(s.step_mask(tokens, assigned, 3), [True, False, False, False])  # via its parent
    np.testing.assert_array_equal(s.step_mask(tokens, ~assigned, 2), [True, True, True, False])  # solver unknown
    np.testing.assert_array_equal(s.step_mask(tokens.at[0].set(0), assigned, 2), [True, True, True, False])


def test_spec_roundtrip_and_errors():
    s = toy()
    spec = {"solver": "sgd", "lr": 0.01, "momentum": 0.9, "nesterov_gap": 2, "width": 32}
    t = s.from_spec(spec)
    np.testing.assert_array_equal(t, [0, 2, 1, 1, 2])
    assert s.to_spec(t) == spec
    assert s.to_spec([1, 0, 2, 1, 0]) == {"solver": "adam", "lr": 0.0001, "width": 8}
    with pytest.raises(ValueError, match="inactive here"):
        s.from_spec({"solver": "adam", "lr": 0.01, "momentum": 0.9, "width": 8})
    with pytest.raises(ValueError, match="lacks active hyperparameter 'momentum'"):
        s.from_spec({"solver": "sgd", "lr": 0.01, "width": 8})
    with pytest.raises(ValueError, match="unknown hyperparameter"):
        s.from_spec({"solver": "adam", "lr": 0.01, "width": 8, "depth": 2})
    with pytest.raises(ValueError, match="not one of"):
        s.from_spec({"solver": "adam", "lr": 0.02, "width": 8})


def test_mlp_space_has_the_papers_ten_documented_hyperparameters():
    s = mlp_space()
    assert s.num_tokens == 10
    for name in ("learning_rate_init", "alpha", "l1", "hidden_layer_size", "max_iter", "activation"):
        assert name in s.token_names  # the ones Section VIII names
    assert all(h.doc for h in s.hyperparameters)
    assert len(s.describe().splitlines()) == 10
    assert s.hyperparameters[s.index("learning_rate_init")].values[2] == 0.001
    keys = jax.random.split(jax.random.PRNGKey(1), 64)
    for t in np.asarray(jax.jit(jax.vmap(s.sample))(keys)):
        np.testing.assert_array_equal(s.from_spec(s.to_spec(t)), t)
        assert ("momentum" in s.to_spec(t)) == (s.to_spec(t)["solver"] == "sgd")


@pytest.mark.parametrize("name", searcher_params(["regularized_evolution", "remaade"]))  # mutation, masked sampling
def test_searchers_run_on_a_conditional_space(name):
    """A synthetic objective (no training): searchers only ever query distinct configurations."""
    from nas.engine.runner import make_run

    s = toy()

    class Quadratic:
        space, has_test = s, False

        def query(self, key, tokens):
            del key
            tokens = jax.vmap(s.canonical)(tokens)
            v = -jnp.sum((tokens - jnp.asarray([0, 2, 1, 1, 2])) ** 2, -1).astype(jnp.float32)
            return {"valid": v, "test": v, "cost": jnp.ones_like(v)}

    searcher = make_searcher(name, s, max_queries=20)
    h = jax.jit(make_run(searcher, Quadratic()))(jax.random.PRNGKey(3))
    ids = np.asarray(jax.vmap(s.string_id)(h.tokens))
    assert len(set(ids.tolist())) == 20 and np.all(ids >= 0)
