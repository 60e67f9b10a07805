"""Never spend a query twice: new strings from any proposal, and the repeats of a run counted.

The queried ids are a ``Seen`` set (``nas.core.seen_set``: sorted, fixed capacity; its names are
re-exported here). ``fill_unique`` draws candidates from any proposal until it has ``n`` valid strings
that are new (not seen, and distinct from each other), with uniform samples as a fallback, or exact
uniform draws of new strings where a space allows them (``exact_fallback``). ``count_repeats`` checks a
finished run.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from nas.core.seen_set import (
    EMPTY,
    PAD,
    Seen,
    draw_unseen,
    exact,
    first_occurrence,
    pack_first,
    pack_slots,
    rank_among,
    seen_add,
    seen_contains,
    seen_init,
    seen_insert,
)
from spaces.base import Space

__all__ = [
    "EMPTY",
    "FALLBACK_POOL",
    "FALLBACK_ROUNDS",
    "PAD",
    "Seen",
    "count_repeats",
    "fill_unique",
    "fill_unique_aux",
    "first_occurrence",
    "pack_first",
    "pack_slots",
    "rank_among",
    "seen_add",
    "seen_contains",
    "seen_init",
    "seen_insert",
]

FALLBACK_ROUNDS, FALLBACK_POOL = 32, 64  # uniform rounds when a proposal runs dry (see fill_unique)


def fill_unique(
    key: jax.Array,
    space: Space,
    propose: Callable[[jax.Array], jax.Array],
    seen: Seen,
    n: int,
    max_rounds: int = 64,
    fallback_rounds: int = FALLBACK_ROUNDS,
    exact_fallback: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """``n`` new valid strings from ``propose(key) -> int32[M, N]``.

    Candidates are accepted in proposal order when valid, not in ``seen`` and
    not equal to one already accepted; rounds repeat until ``n`` are found.
    Returns ``(tokens[n, N], fresh[n])``: ``fresh`` marks strings from the
    proposal. If ``max_rounds`` proposals cannot supply ``n`` new strings (a
    converged policy, a small neighbourhood), up to ``fallback_rounds`` rounds of
    ``FALLBACK_POOL`` uniform samples fill the rest with new strings (not
    fresh). Only when those fail too (a space nearly exhausted) do the last
    slots hold uniform samples that may repeat a query; reports count repeats.
    A proposal that is itself uniform passes ``fallback_rounds=0``.
    ``exact_fallback`` (spaces whose configurations are drawn as integers, ``nas.core.unseen_draw.exact``):
    the slots the proposal leaves empty get exact uniform draws over the new
    strings instead (the same distribution, no fallback loop to compile).
    """

    def tagged(k):
        cand = propose(k)
        return cand, jnp.zeros((cand.shape[0],), jnp.int32)

    tokens, fresh, _ = fill_unique_aux(key, space, tagged, seen, n, max_rounds, fallback_rounds, exact_fallback)
    return tokens, fresh


def fill_unique_aux(
    key: jax.Array,
    space: Space,
    propose: Callable[[jax.Array], tuple[jax.Array, jax.Array]],
    seen: Seen,
    n: int,
    max_rounds: int = 64,
    fallback_rounds: int = FALLBACK_ROUNDS,
    exact_fallback: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``fill_unique`` for proposals that carry one int32 tag per candidate.

    ``propose(key) -> (int32[M, N], int32[M])``; returns ``(tokens[n, N],
    fresh[n], tags[n])`` where ``tags`` belong to the accepted candidates (e.g.
    which autoregressive order a policy sample used) and are 0 in fallback
    slots. Same acceptance rule and fallbacks as ``fill_unique``.
    """
    init = (
        jnp.zeros((n, space.num_tokens), jnp.int32),
        jnp.full((n,), EMPTY, jnp.int32),
        jnp.zeros((n,), jnp.int32),
        jnp.int32(0),
    )
    key, (out, out_ids, tags, filled) = _accept(key, space, propose, seen, init, n, max_rounds)
    fresh = jnp.arange(n) < filled
    if exact_fallback and exact(space):
        extra, _ = draw_unseen(jax.random.fold_in(key, 1), space, seen_add(seen, out_ids), n)
        rest = extra[jnp.clip(jnp.arange(n) - filled, 0, n - 1)]
        return jnp.where(fresh[:, None], out, rest), fresh, jnp.where(fresh, tags, 0)
    if fallback_rounds > 0:

        def uniform(k):
            cand = jax.vmap(space.sample)(jax.random.split(k, FALLBACK_POOL))
            return cand, jnp.zeros((FALLBACK_POOL,), jnp.int32)

        _, (out, out_ids, tags, filled) = _accept(
            jax.random.fold_in(key, 1), space, uniform, seen, (out, out_ids, tags, filled), n, fallback_rounds
        )
    new = jnp.arange(n) < filled
    last_resort = jax.vmap(space.sample)(jax.random.split(key, n))
    return jnp.where(new[:, None], out, last_resort), fresh, jnp.where(fresh, tags, 0)


def _accept(key, space, propose, seen, state, n, max_rounds):
    """Rounds of ``propose`` until ``n`` new strings are packed into ``state`` or ``max_rounds`` have run;
    returns the key after the last round and the state."""

    def cond(c):
        return (c[4] < n) & (c[5] < max_rounds)

    def body(c):
        k, out, out_ids, out_tags, filled, rounds = c
        k, sub = jax.random.split(k)
        cand, tags = propose(sub)
        ids = jax.vmap(space.string_id)(cand)
        ok = (ids >= 0) & ~seen_contains(seen, ids) & first_occurrence(ids)
        ok &= ~jnp.any(ids[:, None] == out_ids[None, :], axis=1)
        slot = pack_slots(ok, n, filled)
        out = out.at[slot].set(cand, mode="drop")
        out_ids = out_ids.at[slot].set(ids, mode="drop")
        out_tags = out_tags.at[slot].set(tags.astype(jnp.int32), mode="drop")
        return k, out, out_ids, out_tags, jnp.minimum(filled + jnp.sum(ok), n), rounds + 1

    out, out_ids, tags, filled = state
    key, out, out_ids, tags, filled, _ = jax.lax.while_loop(cond, body, (key, out, out_ids, tags, filled, jnp.int32(0)))
    return key, (out, out_ids, tags, filled)


def count_repeats(space: Space, tokens, fidelity=None) -> int:
    """How many queries of a run repeat an earlier query of the same trial (``tokens[T, Q, N]``); with
    ``fidelity`` (int[T, Q], a multi-fidelity history, -1 after the last evaluation) an evaluation repeats
    only an earlier one of the same string at the same fidelity."""
    tokens = np.asarray(tokens)
    if space.ids_are_grid_rows:  # ids are mixed-radix rows: numpy, no program to compile
        ids = (tokens.astype(np.int64) * space.grid_strides).sum(-1)
    elif space.plain_product:  # a grid too large for int32 rows hashes its ids: the strings are the keys
        ids = np.asarray([[row.tobytes() for row in trial] for trial in tokens.astype(np.int32)], object)
    else:
        ids = np.asarray(_string_ids(space)(jnp.asarray(tokens)))
    if fidelity is None:
        return int(sum(len(row) - len(set(row.tolist())) for row in ids))
    fidelity = np.asarray(fidelity)
    pairs = [[(i, f) for i, f in zip(r.tolist(), g.tolist()) if f >= 0] for r, g in zip(ids, fidelity)]
    return int(sum(len(p) - len(set(p)) for p in pairs))


_ID_PROGRAMS: dict = {}


def _string_ids(space: Space):
    """``jit(vmap(vmap(space.string_id)))``, one per space (compiled once per shape)."""
    if space not in _ID_PROGRAMS:
        _ID_PROGRAMS[space] = jax.jit(jax.vmap(jax.vmap(space.string_id)))
    return _ID_PROGRAMS[space]
