"""Uniform draws among the strings not queried yet.

``uniform_unseen`` draws ``n`` new strings, each uniform over the strings outside the queried set: exact
integer draws where a space allows them (``nas.core.seen_set.draw_unseen``: string ids are grid rows, or
the configurations' ids are known; its names are re-exported here), else rejection from uniform samples
(``nas.core.dedup.fill_unique``); the same distribution either way. ``draw_distinct_ids`` draws distinct
ids of a range at once, and ``decode`` maps a configuration's rank to its string. ``draw_new`` (and
``draw_candidate``, which does not record it) is one configuration never started before, for the
multi-fidelity searchers: every configuration they start is new, so no (configuration, fidelity) pair is
evaluated twice; ``ok`` is False once the space is exhausted.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nas.core.dedup import fill_unique
from nas.core.seen_set import (
    EMPTY,
    Seen,
    configuration_ranks,
    draw_unseen,
    exact,
    first_occurrence,
    kth_unseen,
    pack_slots,
    seen_contains,
    seen_insert,
)
from spaces.base import Space

__all__ = [
    "configuration_ranks",
    "decode",
    "draw_candidate",
    "draw_distinct_ids",
    "draw_new",
    "draw_unseen",
    "exact",
    "first_draws",
    "kth_unseen",
    "uniform_proposal",
    "uniform_unseen",
]


def decode(space: Space, rank: jax.Array) -> jax.Array:
    """int32[N]: the string of configuration ``rank`` (``configuration_ranks``; where ids are grid rows, the
    string whose grid row, ``space.mixed_radix``, is ``rank``)."""
    return space.tokens_at_grid_row(configuration_ranks(space)[2](rank))


def uniform_unseen(key: jax.Array, space: Space, seen: Seen, n: int, pool: int = 16, head: bool = True) -> jax.Array:
    """tokens[n, N]: ``n`` new valid strings, each uniform over the strings not queried yet: exact integer
    draws (``draw_unseen``) where string ids are grid rows, else rounds of ``pool`` uniform samples filtered
    against ``seen`` (``nas.core.dedup.fill_unique``); the same distribution either way. ``head``: a one-step
    program samples only the first ``n`` when they are new (``fill_unique``'s ``propose_head``); False keeps
    the program smaller (a copy of the sampling less to compile) where the draw runs rarely."""
    if exact(space):
        return draw_unseen(key, space, seen, n)[0]

    propose, first = uniform_proposal(space, pool, n)
    first = first if head else None
    return fill_unique(key, space, propose, seen, n, fallback_rounds=0, propose_head=first)[0]  # uniform already


def uniform_proposal(space: Space, pool: int, n: int) -> tuple:
    """``(propose, propose_head)`` for ``nas.core.dedup.fill_unique``: ``pool`` uniform samples from one key,
    and the first ``min(n, pool)`` of them alone (each sample reads its own key of the split)."""

    def propose(k):
        return jax.vmap(space.sample)(jax.random.split(k, pool))

    def head(k):
        return jax.vmap(space.sample)(jax.random.split(k, pool)[: min(n, pool)])

    return propose, (head if n <= pool else None)


def draw_distinct_ids(key: jax.Array, size: int, n: int, max_rounds: int = 64) -> jax.Array:
    """int32[n]: ``n`` distinct ids of ``[0, size)`` in a uniformly random order (each uniform over the ids
    not drawn before it), drawn at once: the sequential rejection sampler "draw uniformly, skip an id drawn
    before", run on rounds of iid draws (``first_occurrence`` keeps each id's first draw, in order). Rounds
    repeat only while ids are missing (a small ``size``); after ``max_rounds`` the missing slots hold uniform
    draws that may repeat (only when ``n`` comes close to ``size``; with ``n > size`` some must repeat)."""
    m = min(n, 512) + max(16, min(n, 512) // 8)  # draws per round: a few more than the ids needed
    max_rounds = max(int(max_rounds), 1)  # the first round always runs

    def cond(c):
        return (c[2] < n) & (c[3] < max_rounds)

    def body(c):
        k, out, filled, rounds, _ = c
        k, sub = jax.random.split(k)
        cand = jax.random.randint(sub, (m,), 0, size, dtype=jnp.int32)
        ok = first_draws(cand, size) & ~jnp.any(cand[:, None] == out[None, :], axis=1)
        out = out.at[pack_slots(ok, n, filled)].set(cand, mode="drop")
        return k, out, jnp.minimum(filled + jnp.sum(ok), n), rounds + 1, cand

    # every round in the loop, the first too (its compare with the EMPTY slots never matches an id): one
    # copy of a round to compile (a separate first round was 0.15 s of the random-search init's 0.38 s of XLA)
    out = jnp.full((n,), EMPTY, jnp.int32)
    init = (key, out, jnp.int32(0), jnp.int32(0), jnp.zeros((m,), jnp.int32))
    _, out, filled, _, cand = jax.lax.while_loop(cond, body, init)
    rest = jnp.resize(cand, (n,))  # the last round's iid draws: uniform, may repeat
    return jnp.where(jnp.arange(n) < filled, out, rest)


def first_draws(cand: jax.Array, size: int) -> jax.Array:
    """bool[m]: ``cand[i]`` (ids in ``[0, size)``) does not occur at any ``j < i``
    (``nas.core.dedup.first_occurrence``).

    Sorting ``cand * 2^b + i`` (one int32 key) puts equal ids next to each other, the earliest first; that
    costs O(m log m) where the pairwise compare costs O(m^2). Ids too large for the packed key use the compare.
    """
    m = cand.shape[0]
    bits = max(1, (m - 1).bit_length())
    if size << bits >= 2**31:
        return first_occurrence(cand)
    key = jnp.sort(cand * (1 << bits) + jnp.arange(m, dtype=jnp.int32))
    value = key >> bits
    first = jnp.concatenate([jnp.ones((1,), bool), value[1:] != value[:-1]])
    return jnp.zeros((m,), bool).at[key & ((1 << bits) - 1)].set(first, unique_indices=True)


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
