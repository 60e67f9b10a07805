"""Work done only on the steps that need it, and argmax as plain reductions, for programs vmapped over seeds.

- ``run_if(pred, fn, operand, fallback)``: ``fn(operand)`` where ``pred`` holds, else ``fallback``.
  Under ``vmap`` a ``lax.cond`` with a batched predicate runs both branches for every seed, so a
  model refit that one step in fifty needs would run every step; a ``while_loop`` of at most one trip
  runs its body only while some seed needs it (none: no work). The operand is threaded through the
  loop counter so that XLA cannot hoist the body out of the loop as loop-invariant.
- ``first_true``, ``first_max``: ``jnp.argmax`` of a mask or of scores (the first index wins ties) as
  plain min/max reductions: XLA's argmax is a variadic reduction, several times slower on CPU, and a
  searcher's per-step scans over its slots pay it at every step.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp


def _touch(x, zero):
    """``x`` unchanged, but computed from the loop counter (``zero`` is 0 at run time)."""
    if x.dtype == jnp.bool_:
        return x | (zero != 0)
    return x + zero.astype(x.dtype)


def run_if(pred: jax.Array, fn: Callable, operand, fallback):
    """``fn(operand)`` if ``pred`` else ``fallback`` (same pytree structure), skipping the work when no
    seed of a ``vmap`` needs it (module docstring)."""

    def body(carry):
        i, x, _ = carry
        zero = i >> 31  # 0 at run time, unknown to the compiler
        x = jax.tree.map(lambda a: _touch(a, zero), x)
        return i + 1, x, fn(x)

    trips = jnp.asarray(pred, bool).astype(jnp.int32)
    return jax.lax.while_loop(lambda c: c[0] < trips, body, (jnp.int32(0), operand, fallback))[2]


def first_true(mask: jax.Array) -> jax.Array:
    """``jnp.argmax(mask)`` (the first True index, 0 when none) as a min-reduction (module docstring)."""
    n = mask.shape[-1]
    i = jnp.min(jnp.where(mask, jnp.arange(n, dtype=jnp.int32), n), axis=-1)
    return jnp.where(i == n, 0, i)


def first_max(values: jax.Array) -> jax.Array:
    """``jnp.argmax(values)`` for values without NaN (the first index of the largest) as two reductions."""
    return first_true(values == jnp.max(values, axis=-1, keepdims=True))
