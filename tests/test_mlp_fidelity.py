"""Training iterations as the fidelity of ``mlp/<task>`` (spaces/benchmarks/mlp_training.py, mlp_segment.py).

The objective says it ``continues``: a configuration trained for b1 steps and then continued from its saved
parameters and optimizer state to b2 must equal the same configuration trained for b2 steps from scratch,
and equal what the objective's query returns at b2. Real training on scikit-learn's bundled diabetes data.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces.benchmarks import mlp_segment, uci
from spaces.benchmarks.mlp_training import MLPTraining, decode
from spaces.benchmarks.registry import make_benchmark
from spaces.hpo import HPOSpace, categorical, mlp_space

pytest.importorskip("sklearn", reason="mlp/diabetes reads scikit-learn's bundled data (pip install scikit-learn)")

B1, B2 = 40, 90  # not multiples of the 50-step chunks: the continuation starts inside a chunk
# one hidden width (one compiled branch keeps the test fast); Adam with tanh, Nesterov SGD with relu
SPACE = HPOSpace("mf_mlp", [categorical("activation", ["tanh", "relu"]), categorical("solver", ["adam", "sgd"])])
TOKENS = jnp.asarray([[0, 1], [1, 0]], jnp.int32)


@pytest.fixture(scope="module")
def objective() -> MLPTraining:
    data = uci.load_diabetes()
    return MLPTraining.build(data, SPACE, "mf_mlp", fidelities=(B1, B2), hidden_layer_size=16, learning_rate_init=0.01)


@pytest.fixture(scope="module")
def query(objective):
    return jax.jit(objective.query)


def test_the_space_leaves_max_iter_to_the_fidelity():
    objective = make_benchmark("mlp/diabetes", fidelities=(50, 100, 200, 400, 800))
    assert "max_iter" not in objective.space.token_names and objective.space.num_tokens == 9
    assert objective.fidelities == (50, 100, 200, 400, 800) and objective.fidelity_unit == "iterations"
    assert objective.continues
    data = uci.load_diabetes()
    with pytest.raises(ValueError, match="max_iter cannot also be searched"):
        MLPTraining.build(data, mlp_space(), "x", fidelities=(10, 20))
    with pytest.raises(ValueError, match="whole numbers"):
        MLPTraining.build(data, mlp_space(max_iter=False), "x", fidelities=(10.5, 20))
    plain = make_benchmark("mlp/diabetes")  # without fidelities: max_iter searched, as before
    assert plain.space.token_names[-1] == "max_iter" and not plain.fidelities and not plain.continues
    with pytest.raises(ValueError, match="no fidelities"):
        plain.query(jax.random.PRNGKey(0), jnp.zeros((1, plain.space.num_tokens), jnp.int32), jnp.zeros(1, jnp.int32))


def test_a_promotion_continues_the_same_training_exactly(objective, query):
    space, key, tokens = objective.space, jax.random.PRNGKey(3), TOKENS
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jax.vmap(space.string_id)(tokens))  # the query's seeds
    hp = decode(space, tokens, objective.fixed)

    def budget(b):
        return {**hp, "max_iter": jnp.full(2, b, jnp.float32)}

    @jax.jit
    def train(state, begin, stop):  # one program for every (begin, stop): the comparisons are exact
        return mlp_segment.advance(objective, 16, state, keys, budget(stop), stop, begin)

    @jax.jit
    def scores(state):
        return mlp_segment.scores(objective, 16, state, hp)

    fresh = jax.jit(lambda: mlp_segment.start(objective, 16, keys, hp))()
    short = train(fresh, jnp.int32(0), jnp.int32(B1))
    saved = jax.tree.map(np.asarray, short)  # parameters and optimizer state leave the device ...
    continued = train(jax.tree.map(jnp.asarray, saved), jnp.int32(B1), jnp.int32(B2))  # ... and come back
    scratch = train(fresh, jnp.int32(0), jnp.int32(B2))
    for a, b in zip(jax.tree.leaves(continued), jax.tree.leaves(scratch)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(continued.opt_state[0][0]) == B2  # Adam's step count went on from B1, not from 0
    assert not np.array_equal(np.asarray(short.params["w1"]), np.asarray(scratch.params["w1"]))
    # the objective's query trains from scratch, in another compiled program: the continued training's numbers
    for f, state in ((0, short), (1, continued)):
        res = query(key, tokens, jnp.full(2, f, jnp.int32))
        v, t, ok = scores(state)
        assert np.all(np.asarray(ok))
        np.testing.assert_array_equal(np.asarray(res["valid"]), -np.asarray(v))
        np.testing.assert_array_equal(np.asarray(res["test"]), -np.asarray(t))
        np.testing.assert_array_equal(np.asarray(res["cost"]), [(B1, B2)[f]] * 2)


def test_an_idle_row_trains_nothing_and_costs_nothing(objective, query):
    tokens = TOKENS
    steps, live = objective.steps_at(tokens, jnp.asarray([-1, 5]))
    np.testing.assert_array_equal(np.asarray(steps), [0, 0])  # no optimizer step (the segment loop runs 0 chunks)
    assert not np.any(np.asarray(live))
    res = query(jax.random.PRNGKey(0), tokens, jnp.asarray([-1, 0], jnp.int32))
    assert float(res["valid"][0]) == -np.inf and float(res["cost"][0]) == 0.0
    assert np.isfinite(float(res["valid"][1])) and float(res["cost"][1]) == B1
    np.testing.assert_array_equal(np.asarray(objective.steps_at(tokens, None)[0]), [B2, B2])  # None: the top one


def test_the_engine_charges_a_promotion_its_added_steps(objective, query):
    """Two workers, two seeds (vmap): a configuration promoted from B1 to B2 pays B2 - B1 steps and scores what
    the objective scores at B2 with the run's training seed."""
    from nas.engine.multi_fidelity_runner import QUERY_FOLD, make_mf_search
    from tests.test_host_multi_fidelity import LongScript, ScriptedTokens

    script = ((0, 1, 0, -1), (1, 0, 0, -1), (0, 1, 1, 0))
    s = ScriptedTokens(SPACE, LongScript(fidelities=(B1, B2), workers=2, max_queries=2, script=script))
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    h = jax.jit(jax.vmap(make_mf_search(s), in_axes=(0, None)))(keys, objective)
    np.testing.assert_array_equal(np.asarray(h.fidelity[:, :3]), [[0, 0, 1]] * 2)
    np.testing.assert_array_equal(np.asarray(h.resource[:, :3]), [[B1, B1, B2 - B1]] * 2)
    np.testing.assert_allclose(np.asarray(h.cost[:, 2]), [B2 - B1] * 2, rtol=1e-6)  # simulated time: steps
    promoted = jnp.asarray([[0, 1], [0, 1]], jnp.int32)
    for i, key in enumerate(keys):  # (0, 1) at B1 and at B2, trained with the run's one seed
        want = query(jax.random.fold_in(key, QUERY_FOLD), promoted, jnp.asarray([0, 1], jnp.int32))
        np.testing.assert_allclose(np.asarray(h.score[i, ::2][:2]), np.asarray(want["valid"]), rtol=1e-6)
