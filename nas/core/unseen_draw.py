"""Exact uniform draws over the configurations not yet queried, for spaces whose string ids are grid rows.

Where every token string is valid and ``space.string_id`` is its row in the
product grid (``Space.ids_are_grid_rows``: NAS-Bench-201, HPOLib, any plain
product of categoricals), the strings are the integers ``0 .. size-1``, and a
uniform draw over the ``size - c`` strings outside the ``c`` queried ids is one
uniform integer ``r`` in ``[0, size - c)`` mapped to the ``r``-th unqueried id
(0-based). ``nas.core.dedup.Seen`` keeps the queried ids sorted, ``s_0 < s_1 < ...``;
the number of unqueried ids below ``s_j`` is ``s_j - j``, so

    x = r + #{j : s_j - j <= r}

is that id: one compare over the queried set, no rejection loop and no
candidate strings. This is sampling without replacement as in random search
"without repeated queries" (Li & Talwalkar, 2019); the draw is uniform over the
unseen strings, the distribution ``nas.core.dedup.fill_unique`` reaches by
rejection from uniform proposals.

Spaces whose equivalent strings share an id (``CategoricalSpace(canonical=...)``, a table of your own
whose rows are networks with commuting layers) draw the same way over the ranks ``0 .. K-1`` of their
``K`` configurations (``Space.configuration_ids``, sorted): ranks keep the order of the queried ids, and
a drawn rank maps back to its id. Their programs are then as small as a plain grid's (the rejection
loops of ``fill_unique`` compile to about 1.6x the CPU time).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from nas.core.dedup import PAD, Seen, fill_unique, seen_insert
from spaces.base import Space


def exact(space: Space) -> bool:
    """Unqueried configurations can be drawn as integers: string ids are grid rows, or the configurations'
    ids are known (``Space.configuration_ids``)."""
    return space.ids_are_grid_rows or space.configuration_ids is not None


def configuration_ranks(space: Space):
    """``(K, to_rank, from_rank)``: the number of configurations and the maps between string ids and their
    ranks ``0 .. K-1`` (the identity where ids are grid rows; -1 and ``PAD`` are kept as they are)."""
    if space.ids_are_grid_rows:
        return space.size, (lambda ids: ids), (lambda ranks: ranks)
    ids = space.configuration_ids
    rank_of = np.full(space.size, -1, np.int32)
    rank_of[ids] = np.arange(len(ids), dtype=np.int32)

    def to_rank(x):
        return jnp.where((x >= 0) & (x != PAD), jnp.asarray(rank_of)[jnp.clip(x, 0, space.size - 1)], x)

    return len(ids), to_rank, lambda ranks: jnp.asarray(ids)[ranks]


def kth_unseen(seen: Seen, r: jax.Array) -> jax.Array:
    """The ``r``-th (0-based) non-negative id outside ``seen``."""
    invalid = (seen.ids[0] < 0).astype(jnp.int32)  # an invalid string's -1 sorts first
    rank = jnp.arange(seen.ids.shape[0], dtype=jnp.int32) - invalid
    member = (seen.ids >= 0) & (seen.ids != PAD)
    return r + jnp.sum(member & (seen.ids - rank <= r)).astype(jnp.int32)


def decode(space: Space, rank: jax.Array) -> jax.Array:
    """int32[N]: the string of configuration ``rank`` (``configuration_ranks``; where ids are grid rows, the
    string whose grid row, ``space.mixed_radix``, is ``rank``)."""
    return space.tokens_at_grid_row(configuration_ranks(space)[2](rank))


def draw_unseen(key: jax.Array, space: Space, seen: Seen, n: int) -> tuple[jax.Array, jax.Array]:
    """``(tokens[n, N], ids[n])``: ``n`` new strings, each uniform over the strings outside ``seen`` and the
    ones drawn before it. Once the space is exhausted a draw is uniform over all strings (a repeat, which
    reports count, as ``nas.core.dedup.fill_unique``'s last resort)."""
    if not exact(space):
        raise ValueError(f"{space.name}: string ids are not grid rows (constraints or equivalent strings)")
    size, to_rank, from_rank = configuration_ranks(space)
    seen = Seen(ids=to_rank(seen.ids), count=seen.count)  # ranks keep the order of the ids
    if n > 1:
        seen = Seen(ids=jnp.concatenate([seen.ids, jnp.full((n - 1,), PAD, jnp.int32)]), count=seen.count)
    out = []
    for i, k in enumerate(jax.random.split(key, n) if n > 1 else [key]):
        unseen = size - seen.count + (seen.ids[0] < 0).astype(jnp.int32)
        r = jax.random.randint(k, (), 0, jnp.maximum(unseen, 1))
        x = jnp.where(unseen > 0, kth_unseen(seen, r), r)
        out.append(x)
        if i < n - 1:
            seen = seen_insert(seen, x)
    ids = from_rank(jnp.stack(out))
    return jax.vmap(space.tokens_at_grid_row)(ids), ids


def uniform_unseen(key: jax.Array, space: Space, seen: Seen, n: int, pool: int = 16) -> jax.Array:
    """tokens[n, N]: ``n`` new valid strings, each uniform over the strings not queried yet: exact integer
    draws (``draw_unseen``) where string ids are grid rows, else rounds of ``pool`` uniform samples filtered
    against ``seen`` (``nas.core.dedup.fill_unique``); the same distribution either way."""
    if exact(space):
        return draw_unseen(key, space, seen, n)[0]

    def propose(k):
        return jax.vmap(space.sample)(jax.random.split(k, pool))

    return fill_unique(key, space, propose, seen, n, fallback_rounds=0)[0]  # the proposal is uniform already


def draw_distinct_ids(key: jax.Array, size: int, n: int, max_rounds: int = 64) -> jax.Array:
    """int32[n]: ``n`` distinct ids of ``[0, size)`` in a uniformly random order (each uniform over the ids
    not drawn before it), drawn at once: the sequential rejection sampler "draw uniformly, skip an id drawn
    before", run on rounds of iid draws (``first_occurrence`` keeps each id's first draw, in order). Rounds
    repeat only while ids are missing (a small ``size``); after ``max_rounds`` the missing slots hold uniform
    draws that may repeat (only when ``n`` comes close to ``size``; with ``n > size`` some must repeat)."""
    from nas.core.dedup import EMPTY, pack_slots

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
    from nas.core.dedup import first_occurrence

    m = cand.shape[0]
    bits = max(1, (m - 1).bit_length())
    if size << bits >= 2**31:
        return first_occurrence(cand)
    key = jnp.sort(cand * (1 << bits) + jnp.arange(m, dtype=jnp.int32))
    value = key >> bits
    first = jnp.concatenate([jnp.ones((1,), bool), value[1:] != value[:-1]])
    return jnp.zeros((m,), bool).at[key & ((1 << bits) - 1)].set(first, unique_indices=True)
