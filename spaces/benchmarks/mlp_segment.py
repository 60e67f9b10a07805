"""Training one segment of MLP configurations (``spaces.benchmarks.mlp_training``), in three pure steps.

``start`` initializes ``m`` configurations padded to one hidden width, ``advance`` runs optimizer steps
``[start, stop)`` of each, and ``scores`` evaluates them; ``train_segment`` is the three in a row from step
0. The state between steps, ``SegmentState`` (parameters, optimizer state, the no-divergence flag), is what
a training that continues needs: advancing a saved state from ``b1`` to ``b2`` gives exactly what advancing
from 0 to ``b2`` gives, because nothing in a step depends on where the training stops:

- the step size is constant (``learning_rate_init``; no schedule over the total budget);
- the batch of step ``s`` is drawn from ``fold_in(data key, s // chunk_steps)`` (row ``s % chunk_steps`` of
  its chunk), a function of the step index only;
- a step outside ``[start, stop)`` or past a configuration's own budget leaves its state unchanged (masked).

This is what makes ``mlp/<task>`` with training iterations as the fidelity a ``continues`` objective
(docs/reference/benchmarks.md, "Fidelities").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import struct

from spaces.benchmarks.padded_mlp import ACTIVATIONS, PaddedMLP, solver


@struct.dataclass
class SegmentState:
    params: dict  # PaddedMLP parameters, a leading axis of m configurations
    opt_state: tuple  # the solver's state (count, first moment, second moment)
    ok: jax.Array  # bool[m]: no non-finite training loss so far
    mask: jax.Array  # bool[m, width]: the units each configuration really has


def _where_tree(c, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(c, x, y), a, b)


def init_params(objective, module: PaddedMLP, key, hp):
    mask = jnp.arange(module.max_width) < hp["hidden_layer_size"]
    factor = jnp.where(hp["activation"] == ACTIVATIONS.index("logistic"), 2.0, 6.0)
    x0 = jnp.zeros((1, objective.x_train.shape[1]), jnp.float32)
    return module.init(key, x0, mask, hp["activation"], hp["hidden_layer_size"], factor)["params"], mask


def loss(module, params, x, y, weight, mask, hp):
    """scikit-learn's squared error with L1 and L2 penalties on the weights that exist."""
    pred = module.apply({"params": params}, x, mask, hp["activation"])[:, 0]
    w1, w2 = PaddedMLP.masked_weights(params, mask)
    l2 = jnp.sum(w1**2) + jnp.sum(w2**2)
    l1 = jnp.sum(jnp.abs(w1)) + jnp.sum(jnp.abs(w2))
    pen = (0.5 * hp["alpha"] * l2 + hp["l1"] * l1) / hp["batch_size"]
    return 0.5 * jnp.sum(weight * (pred - y) ** 2) + pen


def sample_rows(objective, key, chunk):
    """Row indices of the ``chunk_steps`` steps of chunk ``chunk``: i32[chunk_steps, max_batch], uniform with
    replacement, one threefry call per chunk (``(bits * n) >> 32``: bias below n / 2^32)."""
    bits = jax.random.bits(jax.random.fold_in(key, chunk), (objective.chunk_steps, objective.max_batch), jnp.uint32)
    n = jnp.uint32(objective.x_train.shape[0])  # < 2^16 (build checks): (bits * n) >> 32 exactly, in 32-bit halves
    hi, lo = bits >> 16, bits & 0xFFFF
    return ((hi * n + ((lo * n) >> 16)) >> 16).astype(jnp.int32)


def _split(keys):
    """(init keys, data keys) of the configurations' training keys."""
    return jax.vmap(jax.random.split)(keys).swapaxes(0, 1)


def start(objective, width: int, keys, hp) -> SegmentState:
    """Initial state of ``m`` configurations (``keys[m]``, ``hp[m]``) padded to ``width`` units."""
    module = PaddedMLP(width)
    params, mask = jax.vmap(lambda k, h: init_params(objective, module, k, h))(_split(keys)[0], hp)
    return SegmentState(params, jax.vmap(solver().init)(params), jnp.ones(keys.shape[:1], bool), mask)


def advance(objective, width: int, state: SegmentState, keys, hp, stop, begin=0) -> SegmentState:
    """Optimizer steps ``[begin, min(stop, max_iter))`` of each configuration (``stop``: a scalar, the segment's
    longest budget); steps before ``begin`` (done earlier, in ``state``) or past a configuration's own
    ``max_iter`` are masked."""
    module = PaddedMLP(width)
    k_data = _split(keys)[1]
    opt = solver()
    live_steps = hp["max_iter"].astype(jnp.int32)
    weight = (jnp.arange(objective.max_batch) < hp["batch_size"][:, None]) / hp["batch_size"][:, None]
    grad = jax.value_and_grad(lambda *a: loss(module, *a), argnums=0)
    fresh = isinstance(begin, int) and begin == 0  # every step is past the start: no mask for it in the program

    def step_one(params, opt_state, ok, idx, weight, mask, hp, live_steps, s):
        value, g = grad(params, objective.x_train[idx], objective.y_train[idx], weight, mask, hp)
        upd, new_state = opt.update(g, opt_state, params, hp=hp)
        live = s < live_steps if fresh else (s >= begin) & (s < live_steps)
        return (
            _where_tree(live, optax.apply_updates(params, upd), params),
            _where_tree(live, new_state, opt_state),
            ok & (~live | jnp.isfinite(value)),
        )

    step = jax.vmap(step_one, in_axes=(0, 0, 0, 0, 0, 0, 0, 0, None))

    def chunk(c):
        i, (params, opt_state, ok) = c
        idx = jax.vmap(sample_rows, in_axes=(None, 0, None))(objective, k_data, i).swapaxes(0, 1)

        def body(carry, xs):
            s, idx_s = xs
            return step(*carry, idx_s, weight, state.mask, hp, live_steps, s), None

        s = i * objective.chunk_steps + jnp.arange(objective.chunk_steps)
        carry, _ = jax.lax.scan(body, (params, opt_state, ok), (s, idx))
        return i + 1, carry

    num_chunks = (stop + objective.chunk_steps - 1) // objective.chunk_steps
    first = jnp.int32(0) if fresh else jnp.asarray(begin, jnp.int32) // objective.chunk_steps
    init = (first, (state.params, state.opt_state, state.ok))
    _, (params, opt_state, ok) = jax.lax.while_loop(lambda c: c[0] < num_chunks, chunk, init)
    return state.replace(params=params, opt_state=opt_state, ok=ok)


def scores(objective, width: int, state: SegmentState, hp):
    """(validation RMSE, test RMSE, ok) of each configuration, RMSE in the target's original units."""
    module = PaddedMLP(width)

    def rmse(p, m, h, x, y):
        pred = module.apply({"params": p}, x, m, h["activation"])[:, 0]
        return jnp.sqrt(jnp.mean((pred - y) ** 2)) * objective.y_std

    each = jax.vmap(rmse, in_axes=(0, 0, 0, None, None))
    v = each(state.params, state.mask, hp, objective.x_valid, objective.y_valid)
    t = each(state.params, state.mask, hp, objective.x_test, objective.y_test)
    return v, t, state.ok & jnp.isfinite(v) & jnp.isfinite(t)


def train_segment(objective, width: int, keys, hp, steps):
    """``start``, ``advance`` from step 0 to ``steps`` and ``scores``: a fresh training of the segment."""
    state = advance(objective, width, start(objective, width, keys, hp), keys, hp, steps)
    return scores(objective, width, state, hp)
