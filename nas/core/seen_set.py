"""The set of queried string ids (``Seen``, sorted, fixed capacity) and exact uniform draws outside it.

``space.string_id`` maps equivalent strings (isomorphic NAS-Bench-101 cells, strings that differ only in
inactive tokens) to one int32 id. ``Seen`` stores the ids queried so far, sorted, in a fixed-size array
(capacity = the query budget), so membership is a vectorized compare that compiles once, and packing
helpers (``pack_slots``, ``pack_first``; ``first_occurrence`` and ``first_in_order`` keep a value's first
row) place accepted rows in a fixed buffer.

Where every token string is valid and ``space.string_id`` is its row in the product grid
(``Space.ids_are_grid_rows``: NAS-Bench-201, HPOLib, any plain product of categoricals), the strings are
the integers ``0 .. size-1``, and a uniform draw over the ``size - c`` strings outside the ``c`` queried
ids is one uniform integer ``r`` in ``[0, size - c)`` mapped to the ``r``-th unqueried id (0-based). With
the queried ids sorted, ``s_0 < s_1 < ...``, the number of unqueried ids below ``s_j`` is ``s_j - j``, so

    x = r + #{j : s_j - j <= r}

is that id (``kth_unseen``, ``draw_unseen``): one compare over the queried set, no rejection loop and no
candidate strings. This is sampling without replacement as in random search "without repeated queries"
(Li & Talwalkar, 2019); the draw is uniform over the unseen strings, the distribution
``nas.core.dedup.fill_unique`` reaches by rejection from uniform proposals.

Spaces whose equivalent strings share an id (``CategoricalSpace(canonical=...)``, a table of your own
whose rows are networks with commuting layers) draw the same way over the ranks ``0 .. K-1`` of their
``K`` configurations (``Space.configuration_ids``, sorted): ranks keep the order of the queried ids, and
a drawn rank maps back to its id. Their programs are then as small as a plain grid's (the rejection
loops of ``fill_unique`` compile to about 1.6x the CPU time).

This module is the base of ``nas.core.dedup`` (rejection from any proposal) and ``nas.core.unseen_draw``
(uniform draws of new strings); it imports neither.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from spaces.base import Space

EMPTY = -2  # never a string id (invalid strings are -1); seen_add skips it. A plain int: importing starts no backend
PAD = int(np.iinfo(np.int32).max)  # the unused tail of Seen.ids (sorts after every id)


@struct.dataclass
class Seen:
    """The queried ids, kept sorted: ``ids[:count]`` ascending and distinct (``-1``, an invalid string, first
    when present), ``PAD`` after them. Sorted ids let ``draw_unseen`` map a uniform integer to the
    ``r``-th unqueried id with one compare."""

    ids: jax.Array  # int32[C]
    count: jax.Array  # int32[]


def seen_init(capacity: int) -> Seen:
    return Seen(ids=jnp.full((capacity,), PAD, jnp.int32), count=jnp.int32(0))


def seen_contains(seen: Seen, ids: jax.Array) -> jax.Array:
    """bool[...] for each id in ``ids``."""
    return jnp.any(ids[..., None] == seen.ids, axis=-1)


def seen_insert(seen: Seen, new_id: jax.Array) -> Seen:
    """``seen`` with one id inserted in order (elementwise: a shift, no gather or scatter); ``EMPTY``, an id
    already present, or an id past the capacity is skipped."""
    new_id = new_id.astype(jnp.int32)
    less = seen.ids < new_id
    keep = (new_id != EMPTY) & ~jnp.any(seen.ids == new_id) & (seen.count < seen.ids.shape[0])
    at_or_after = jnp.concatenate([jnp.ones((1,), bool), less[:-1]])  # slot j follows every smaller id
    shifted = jnp.concatenate([new_id[None], seen.ids[:-1]])
    ids = jnp.where(less, seen.ids, jnp.where(at_or_after, new_id, shifted))
    return Seen(ids=jnp.where(keep, ids, seen.ids), count=seen.count + keep.astype(jnp.int32))


def seen_add(seen: Seen, ids: jax.Array) -> Seen:
    """Inserts each id of int32[B] (``seen_insert``): ``EMPTY`` and repeats are skipped, ids past the capacity
    dropped."""
    if ids.shape[0] > 4:  # a loop keeps the program small for large batches
        seen, _ = jax.lax.scan(lambda c, x: (seen_insert(c, x), None), seen, ids)
        return seen
    for i in range(ids.shape[0]):
        seen = seen_insert(seen, ids[i])
    return seen


def rank_among(mask: jax.Array) -> jax.Array:
    """int32[M]: how many rows before row ``i`` have ``mask`` (the rank of a masked row among them)."""
    return jnp.cumsum(mask.astype(jnp.int32)) - 1


def pack_slots(ok: jax.Array, n: int, start: jax.Array | int = 0) -> jax.Array:
    """Slot of each row when the rows with ``ok`` are packed, in order, into slots ``start, start+1, ...``
    of an ``n``-row buffer; rows without ``ok`` or past the end get slot ``n`` (``.at[...].set(mode="drop")``
    drops them)."""
    slot = start + rank_among(ok)
    return jnp.where(ok & (slot < n), slot, n)


def pack_first(ok: jax.Array, n: int, *arrays: jax.Array, fill=0) -> tuple[list[jax.Array], jax.Array]:
    """The first ``n`` rows with ``ok`` of each array (in order; ``fill`` after them) and bool[n] "filled"."""
    slot = pack_slots(ok, n)
    out = [jnp.full((n,) + a.shape[1:], fill, a.dtype).at[slot].set(a, mode="drop") for a in arrays]
    return out, jnp.arange(n) < jnp.sum(ok)


def first_occurrence(ids: jax.Array) -> jax.Array:
    """bool[M]: ``ids[i]`` does not occur at any ``j < i``."""
    m = ids.shape[0]
    earlier = jnp.tril(jnp.ones((m, m), bool), k=-1)
    return ~jnp.any((ids[:, None] == ids[None, :]) & earlier, axis=1)


def first_in_order(ids: jax.Array, among: jax.Array | None = None) -> jax.Array:
    """bool[M]: ``ids[i]`` is the first occurrence of its value (stable sort, O(M log M)).

    With ``among`` (bool[M]) only those rows count: a row of ``among`` is first if no earlier row
    of ``among`` has its value; rows outside ``among`` are reported True and hide nothing.
    """
    m = ids.shape[0]
    among = jnp.ones((m,), bool) if among is None else among
    order = jnp.lexsort((jnp.arange(m), ids, ~among))  # rows of `among` first, then by value, then index
    s, a = ids[order], among[order]
    dup = jnp.concatenate([jnp.zeros((1,), bool), (s[1:] == s[:-1]) & a[1:] & a[:-1]])
    return jnp.zeros_like(dup).at[order].set(~dup)


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
