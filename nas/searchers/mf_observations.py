"""What the multi-fidelity searchers share: fresh configurations, their observations, and work done
only on the steps that need it.

- ``draw_new`` (``draw_candidate``: without recording it): a configuration never started before,
  uniform over the rest of the space (``nas.core.unseen_draw``); ``ok`` False once the space is
  exhausted. Every configuration a multi-fidelity searcher starts is new, so no (configuration,
  fidelity) pair is evaluated twice.
- ``Observations``: every result told, in order (tokens, fidelity index, score), at a fixed capacity:
  the data of BOHB's KDEs and of the multi-fidelity BANANAS ensemble.
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
from flax import struct

from nas.core.dedup import EMPTY, Seen, seen_contains, seen_insert
from nas.core.multi_fidelity import Job
from nas.core.unseen_draw import uniform_unseen


def draw_candidate(key: jax.Array, space, seen: Seen) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(tokens[N], string id, ok)``: a uniform configuration outside ``seen`` (not added to it); ``ok``
    False when none is left. ``seen_insert(seen, jnp.where(take, id, EMPTY))`` records it where it is taken."""
    tokens = uniform_unseen(key, space, seen, 1)[0]
    sid = space.string_id(tokens)
    ok = (sid >= 0) & ~seen_contains(seen, sid) & (seen.count < seen.ids.shape[0])
    return tokens, sid, ok


def draw_new(key: jax.Array, space, seen: Seen) -> tuple[jax.Array, jax.Array, Seen]:
    """``(tokens[N], ok, seen)``: a uniform configuration outside ``seen`` (added to it); ``ok`` False and
    ``seen`` unchanged when none is left."""
    tokens, sid, ok = draw_candidate(key, space, seen)
    return tokens, ok, seen_insert(seen, jnp.where(ok, sid, EMPTY))  # EMPTY: skipped


@struct.dataclass
class Observations:
    """Results in the order told: rows ``[:count]`` filled (``fidelity`` -1 and ``score`` -inf after them)."""

    tokens: jax.Array  # int32[E, N]
    fidelity: jax.Array  # int32[E]
    score: jax.Array  # f32[E]
    count: jax.Array  # int32[]


def observations_init(capacity: int, num_tokens: int) -> Observations:
    return Observations(
        tokens=jnp.zeros((capacity, num_tokens), jnp.int32),
        fidelity=jnp.full((capacity,), -1, jnp.int32),
        score=jnp.full((capacity,), -jnp.inf, jnp.float32),
        count=jnp.int32(0),
    )


def observe(obs: Observations, job: Job, score: jax.Array) -> Observations:
    """``obs`` with the result of ``job`` appended (dropped past the capacity)."""
    i = obs.count
    fits = i < obs.score.shape[0]
    return Observations(
        tokens=obs.tokens.at[i].set(job.tokens, mode="drop"),
        fidelity=obs.fidelity.at[i].set(job.fidelity, mode="drop"),
        score=obs.score.at[i].set(jnp.where(jnp.isnan(score), -jnp.inf, score), mode="drop"),
        count=i + fits.astype(jnp.int32),
    )


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
