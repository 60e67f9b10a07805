"""Tuner-style parameters (spaces.params) and the order-aware operators (spaces.ordinal)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.host.study import Study, make_space
from nas.searchers import make_searcher
from spaces.hpo import HPOSpace, categorical, floating, grid
from spaces.ordinal import step_probabilities
from spaces.params import LINEAR_INTERVALS, LOG_INTERVALS_PER_DECADE, Categorical, Float, Int, declared_space

PARAMS = {
    "lr": Float(1e-5, 1e-1, log=True),
    "layers": Int(1, 8),
    "width": Int(16, 4096, log=True),
    "opt": ["sgd", "adam"],
    "momentum": Float(0.0, 0.99, when={"opt": ["sgd"]}),
    "act": Categorical(["relu", "tanh"], when={"opt": ["adam"]}),
    "drop": Float(0.0, 0.5, step=0.05),
}


def test_grids_resolution_endpoints_log_and_int_ranges():
    lr = Float(1e-5, 1e-1, log=True).values()
    assert len(lr) == 4 * LOG_INTERVALS_PER_DECADE + 1 == 65 and (lr[0], lr[-1]) == (1e-5, 1e-1)  # exact ends
    np.testing.assert_allclose(np.diff(np.log10(lr)), 1 / 16, rtol=1e-4)  # a factor 10**(1/16) = 1.155 per step
    assert {1e-4, 1e-3, 1e-2} <= set(lr)  # the decades are grid values
    assert len(Float(3e-5, 0.2, log=True).values()) == 16 * 4 + 1  # 3.8 decades, rounded up
    u = Float(0, 1).values()
    assert len(u) == LINEAR_INTERVALS + 1 == 101 and u[:3] == (0.0, 0.01, 0.02) and u[-1] == 1.0
    assert Float(0, 1, num=5).values() == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert Float(0.0, 0.5, step=0.1).values() == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)  # on the step, readable
    thinned = Float(0, 1000, step=0.5).values()  # 2001 values on the step: 101 of them, on the step
    assert len(thinned) == 101 and thinned[-1] == 1000.0 and all(v * 2 == int(v * 2) for v in thinned)
    assert Int(1, 8).values() == tuple(range(1, 9))  # small int range: exact
    assert Int(1, 101).values() == tuple(range(1, 102))
    big = Int(0, 10_000).values()
    assert len(big) == 101 and big[:3] == (0, 100, 200) and big[-1] == 10_000
    assert Int(0, 90, step=5).values() == tuple(range(0, 95, 5))
    w = Int(16, 4096, log=True).values()
    assert (w[0], w[-1]) == (16, 4096) and len(w) <= 49 and all(np.diff(w) > 0)
    assert np.all(np.diff(np.log10(w))[-10:] < 0.06)  # the upper end stays geometric (3 decades x 16)
    assert Int(1, 8, log=True).values() == tuple(range(1, 9))  # every integer where the log grid is dense
    assert Float(1e-4, 1e-1, log=True, step=5e-5).values()[:3] == (1e-4, 1.5e-4, 2e-4)  # Ray's qloguniform
    assert len(Float(0, 1, num=200).values()) == 200  # the resolution is per parameter
    assert all(type(v) is float for v in lr + u) and all(type(v) is int for v in big + w)


def test_round_trip_declaration_tokens_params_tokens():
    space = make_space(PARAMS)
    assert isinstance(space, HPOSpace) and space.order_aware
    assert space.ordinal == (True, True, True, False, True, False, True)
    keys = jax.random.split(jax.random.PRNGKey(0), 300)
    toks = np.asarray(jax.jit(jax.vmap(space.sample))(keys))
    seen_opt = set()
    for t in toks:
        p = space.to_spec(t)
        np.testing.assert_array_equal(space.from_spec(p), t)  # tokens -> params -> tokens
        assert space.to_spec(space.from_spec(p)) == p
        assert ("momentum" in p) == (p["opt"] == "sgd") and ("act" in p) == (p["opt"] == "adam")
        assert type(p["lr"]) is float and 1e-5 <= p["lr"] <= 1e-1 and p["lr"] in PARAMS["lr"].values()
        assert type(p["layers"]) is int and type(p["width"]) is int and type(p["drop"]) is float
        seen_opt.add(p["opt"])
    assert seen_opt == {"sgd", "adam"}
    spec = {"lr": 1e-3, "layers": 3, "width": 16, "opt": "sgd", "momentum": 0.99, "drop": 0.25}
    assert space.to_spec(space.from_spec(spec)) == spec  # a grid value given by hand
    with pytest.raises(ValueError, match="unknown hyperparameter"):
        space.from_spec({**spec, "depth": 2})
    with pytest.raises(ValueError, match="not one of"):
        space.from_spec({**spec, "lr": 2e-3})  # between two grid values


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Float(1.0, 1.0), "low must be below high"),
        (lambda: Float(2.0, 1.0), "low must be below high"),
        (lambda: Int(5, 5), "low must be below high"),
        (lambda: Float(0.0, 1.0, log=True), r"log range needs low > 0"),
        (lambda: Int(0, 8, log=True), r"log range needs low > 0"),
        (lambda: Float(float("nan"), 1.0), "finite numbers"),
        (lambda: Float(0.0, float("inf")), "finite numbers"),
        (lambda: Float(0.0, 1.0, step=0.3), "step must divide high - low"),
        (lambda: Int(0, 10, step=3), "step must divide high - low"),
        (lambda: Float(1e-4, 1e-1, log=True, step=3e-4), "multiples of step"),
        (lambda: Int(1.5, 4), "must be integers"),
        (lambda: Float(0, 1, num=1), "num"),
        (lambda: Float(0, 1, when=["opt"]), "when= must be a dict"),
        (
            lambda: make_space({"lr": Float(0, 1), "m": Float(0, 1, when={"opt": ["sgd"]})}),
            "on 'opt': the parent is not a",
        ),
        (lambda: make_space({"lr": Float(0, 1), "act": "relu"}), "give Float"),
        (lambda: declared_space({"a": Float(0, 1)}, mutation_scale=0.0), "mutation_scale"),
    ],
)
def test_bad_declarations_are_one_clear_line(make, match):
    with pytest.raises(ValueError, match=match) as e:
        make()
    assert "\n" not in str(e.value)


def _one_token_space(order_aware: bool, num: int = 9) -> HPOSpace:
    return HPOSpace("one", [floating("x", 0.0, 1.0, num)], order_aware=order_aware)


def test_order_aware_mutation_is_a_discretized_gaussian_step():
    n, cur = 20_000, 2
    keys = jax.random.split(jax.random.PRNGKey(7), n)
    start = jnp.full((n, 1), cur, jnp.int32)
    want = step_probabilities(cur, 9)  # exp(-(u_v - u_cur)^2 / (2 0.2^2)), v != cur, renormalized
    assert want[cur] == 0 and want[cur + 1] > want[cur + 3] > want[8] > 0
    for aware, expected in ((True, want), (False, np.where(np.arange(9) == cur, 0, 1 / 8))):
        new = np.asarray(jax.jit(jax.vmap(_one_token_space(aware).mutate))(keys, start))[:, 0]
        freq = np.bincount(new, minlength=9) / n
        se = np.sqrt(expected * (1 - expected) / n)
        np.testing.assert_array_less(np.abs(freq - expected), 5 * se + 1e-12)  # within 5 s.e. per value
    # a categorical token of an order-aware space keeps the uniform draw over its other values
    mixed = HPOSpace("m", [categorical("c", list("abcde"))], order_aware=True)
    new = np.asarray(jax.jit(jax.vmap(mixed.mutate))(keys, jnp.zeros((n, 1), jnp.int32)))[:, 0]
    np.testing.assert_allclose(np.bincount(new, minlength=5)[1:] / n, 0.25, atol=0.02)


def test_neighbours_are_adjacent_values_and_a_doubling_ladder():
    space = declared_space({"x": Float(0, 1), "c": ["a", "b", "c"], "m": Float(0, 1, num=4, when={"c": ["a"]})})
    nbrs, ok = jax.jit(space.neighbors)(jnp.asarray([10, 1, 0]))
    rows = np.asarray(nbrs)[np.asarray(ok)]
    x_moves = sorted(int(r[0]) for r in rows if r[0] != 10)
    assert x_moves == [2, 6, 8, 9, 11, 12, 14, 18, 26, 42, 74]  # 10 +- 1, 2, 4, 8, 16, 32, 64 inside 0..100
    assert sorted(int(r[1]) for r in rows if r[1] != 1) == [0, 2]  # categorical: every other value
    assert len(rows) == 13 and all(r[2] == 0 for r in rows if r[1] != 0)  # m inactive unless c == "a" (canonical)
    plain = HPOSpace("p", space.hyperparameters)  # the default operators: every other value
    assert int(jnp.sum(plain.neighbors(jnp.asarray([10, 0, 1]))[1])) == 100 + 2 + 3


def test_ordinal_encoding_puts_order_on_a_numeric_axis():
    space = declared_space({"c": ["a", "b"], "x": Float(0, 1, num=11), "m": Float(0, 1, num=5, when={"c": ["a"]})})
    assert space.feature_kinds == ("ordinal", "onehot") and space.feature_dim("ordinal") == 2 + 1 + 2
    feats = jax.vmap(lambda t: space.features(t, "ordinal"))
    x = np.asarray(feats(jnp.asarray([[0, i, 2] for i in range(11)])))
    np.testing.assert_allclose(x[:, 2], np.arange(11) / 10)  # the grid index on the unit axis
    d = np.abs(x - x[0]).sum(axis=1)
    assert np.all(np.diff(d) > 0)  # farther grid values are farther apart (one-hot: all at distance 2)
    np.testing.assert_allclose(np.asarray(space.features(jnp.asarray([1, 3, 0]), "ordinal")), [0, 1, 0.3, 0, 0])
    np.testing.assert_allclose(np.asarray(space.features(jnp.asarray([0, 3, 0]), "ordinal")), [1, 0, 0.3, 0, 1])
    for name in ("bananas", "gp_bo"):  # their surrogates read it where the space offers it
        assert make_searcher(name, space, max_queries=20).encoding == "ordinal"
        assert make_searcher(name, HPOSpace("p", space.hyperparameters), max_queries=20).encoding == "onehot"
    with pytest.raises(ValueError, match="unknown feature kind 'ordinal'"):
        HPOSpace("p", space.hyperparameters).features(jnp.asarray([0, 0, 0]), "ordinal")


def test_fine_grids_of_many_parameters_get_hashed_ids():
    space = declared_space(
        {f"p{i}": Float(0, 1) for i in range(6)} | {"on": [0, 1], "g": Float(0, 1, when={"on": [1]})}
    )
    assert space.size == 101**7 * 2 > 2**31
    keys = jax.random.split(jax.random.PRNGKey(3), 500)
    ids = np.asarray(jax.jit(jax.vmap(lambda k: space.string_id(space.sample(k))))(keys))
    assert np.all(ids >= 0) and len(set(ids.tolist())) == 500
    off = jnp.asarray([1, 2, 3, 4, 5, 6, 0, 0])
    assert int(space.string_id(off)) == int(space.string_id(off.at[7].set(9)))  # an inactive token is ignored


def test_study_takes_declarations_and_shares_programs_across_one_shape():
    from nas.engine.compiler_memory import BACKEND_COMPILE_EVENT

    def loss(p):
        extra = (p["momentum"] - 0.9) ** 2 if p["opt"] == "sgd" else 0.2
        return (math.log10(p["lr"]) + 3) ** 2 + (p["layers"] - 3) ** 2 / 10 + extra

    space = {k: PARAMS[k] for k in ("lr", "layers", "opt", "momentum")}
    options = dict(searcher="regularized_evolution", seed=1, max_queries=16, population_size=6, tournament_size=3)
    study = Study(space, **options).optimize(loss)
    assert len({tuple(t.tokens) for t in study.trials}) == 16
    for t in study.trials:
        np.testing.assert_array_equal(study.space.from_spec(t.params), t.tokens)
        assert ("momentum" in t.params) == (t.params["opt"] == "sgd")
    assert study.best_value <= sorted(t.value for t in study.trials[:6])[0]  # evolution kept the best start
    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **_: compiles.append(secs) if event == BACKEND_COMPILE_EVENT else None
    )
    other = {"wd": Float(1e-6, 1e-2, log=True), "depth": Int(2, 9), "solver": ["a", "b"],
             "beta": Float(0.5, 0.9, when={"solver": ["a"]})}  # fmt: skip
    second = Study(other, **options).optimize(lambda p: p["depth"] * p["wd"])
    assert compiles == []  # the same shape: the programs of the first Study
    np.testing.assert_array_equal([t.tokens for t in study.trials[:6]], [t.tokens for t in second.trials[:6]])


def test_benchmark_spaces_keep_their_operators():
    """The HPO benchmark spaces are not order-aware unless asked: their documented numbers stay as they are."""
    from spaces.hpo import mlp_space

    s = mlp_space()
    assert not s.order_aware and s.feature_kinds == ("onehot",)
    toy = HPOSpace("toy", [grid("g", [1, 2, 4, 8]), categorical("c", ["a", "b"])])
    key, t = jax.random.PRNGKey(5), jnp.asarray([1, 0])
    from spaces.base import Space

    np.testing.assert_array_equal(toy.mutate(key, t), toy.canonical(Space.mutate(toy, jax.random.split(key)[0], t)))
