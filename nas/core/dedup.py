"""Never spend a query twice: new strings from any proposal, and the repeats of a run counted.

The queried ids are a ``Seen`` set (``nas.core.seen_set``: sorted, fixed capacity; its names are
re-exported here). ``fill_unique`` draws candidates from any proposal until it has ``n`` valid strings
that are new (not seen, and distinct from each other), with uniform samples as a fallback, or exact
uniform draws of new strings where a space allows them (``exact_fallback``). ``count_repeats`` checks a
finished run.

A one-step program (a ``Study``'s ``ask``, traced inside ``one_step_programs()``) skips work its result
does not read, with the same bits: a proposal that also gives its first rows alone (``propose_head``)
proposes only those when they already fill the ``n`` slots (the usual case: the first candidate is new),
and the fallbacks are computed only where a slot is left empty (``lax.cond``); a proposal that also gives
one row at a time (``propose_row``) is read a row at a time when the program asks for one string, until a
row is new. Batched programs (the
engine's, ``vmap``-ped over seeds, where a ``cond`` computes both branches) trace the plain rounds.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

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
    "computed_where",
    "count_repeats",
    "fill_unique",
    "fill_unique_aux",
    "first_occurrence",
    "one_step_programs",
    "pack_first",
    "pack_slots",
    "rank_among",
    "seen_add",
    "seen_contains",
    "seen_init",
    "seen_insert",
]

FALLBACK_ROUNDS, FALLBACK_POOL = 32, 64  # uniform rounds when a proposal runs dry (see fill_unique)
_ONE_STEP = contextvars.ContextVar("nasjax_one_step_programs", default=False)


@contextlib.contextmanager
def one_step_programs() -> Iterator[None]:
    """Traces inside it build an unbatched one-step program: ``fill_unique`` skips the work its result does not
    read (module docstring). Only for programs that are not ``vmap``-ped (a batched ``cond`` runs both sides)."""
    token = _ONE_STEP.set(True)
    try:
        yield
    finally:
        _ONE_STEP.reset(token)


def computed_where(needed: jax.Array, compute: Callable[[], Any]) -> Any:
    """``compute()`` (arrays) where ``needed`` (a scalar) is True; zeros of its shapes otherwise, without
    computing it, in a one-step program (elsewhere it is always computed): for values the caller reads only
    where ``needed``, so the result is the same either way."""
    if not _ONE_STEP.get():
        return compute()
    shapes = jax.eval_shape(compute)
    return jax.lax.cond(needed, compute, lambda: jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), shapes))


def fill_unique(
    key: jax.Array,
    space: Space,
    propose: Callable[[jax.Array], jax.Array],
    seen: Seen,
    n: int,
    max_rounds: int = 64,
    fallback_rounds: int = FALLBACK_ROUNDS,
    exact_fallback: bool = False,
    propose_head: Callable[[jax.Array], jax.Array] | None = None,
    propose_row: tuple[Callable[[jax.Array, jax.Array], jax.Array], int] | None = None,
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
    ``propose_head(key) -> int32[H, N]``, ``H >= n``: the first ``H`` rows ``propose(key)`` returns, computed
    alone; a one-step program proposes only them in the first round when they fill the ``n`` slots (the
    same strings, module docstring). ``propose_row = (row, M)``: ``row(key, j) -> int32[N]`` is row ``j`` of
    ``propose(key)``, computed alone; a one-step program that asks for one string (``n == 1``) then proposes
    one row at a time, in order, and stops at the first new one (the string the rounds accept).
    """

    def tagged(fn):
        def run(k):
            cand = fn(k)
            return cand, jnp.zeros((cand.shape[0],), jnp.int32)

        return run

    head = None if propose_head is None else tagged(propose_head)
    if propose_row is not None and _ONE_STEP.get() and n == 1:
        return _one_by_one(key, space, propose_row, seen, max_rounds, fallback_rounds, exact_fallback)
    tokens, fresh, _ = fill_unique_aux(
        key, space, tagged(propose), seen, n, max_rounds, fallback_rounds, exact_fallback, propose_head=head
    )
    return tokens, fresh


def _one_by_one(key, space, propose_row, seen, max_rounds, fallback_rounds, exact_fallback):
    """``fill_unique`` of one string in a one-step program: row ``j`` of round ``r``'s proposal, one at a time.

    The rounds accept the first row of a round that is valid and new (a row repeating an earlier one of its
    round is rejected as that one was), so the first such row in (round, row) order is the string, and the
    key after its round is the key the rounds return: the same result. A round's ``M`` rows cost one row's
    work until one is new (the usual case: the first)."""
    row, m = propose_row

    def cond(c):
        return ~c[3] & (c[2] < max_rounds)

    def body(c):  # c: the key before this round's split, the row, rounds done, found, the row's string
        k, j, r, _, _ = c
        cand = row(jax.random.split(k)[1], j)
        i = space.string_id(cand)
        ok = (i >= 0) & ~seen_contains(seen, i[None])[0]
        last = ~ok & (j == m - 1)  # the round's rows are spent: the next round splits the key this one made
        return jnp.where(last, jax.random.split(k)[0], k), jnp.where(last, 0, j + 1), r + last, ok, cand

    init = (key, jnp.int32(0), jnp.int32(0), jnp.bool_(False), jnp.zeros((space.num_tokens,), jnp.int32))
    k, _, _, found, cand = jax.lax.while_loop(cond, body, init)
    key = jnp.where(found, jax.random.split(k)[0], k)  # the rounds' key after the last round they ran
    out_ids = jnp.where(found, space.string_id(cand), EMPTY)[None]
    out = jnp.where(found, cand, 0)[None]  # as the rounds leave an empty slot
    tags = jnp.zeros((1,), jnp.int32)
    filled = found.astype(jnp.int32)
    return _fill_rest(key, space, seen, 1, out, out_ids, tags, filled, fallback_rounds, exact_fallback)[:2]


def fill_unique_aux(
    key: jax.Array,
    space: Space,
    propose: Callable[[jax.Array], tuple[jax.Array, jax.Array]],
    seen: Seen,
    n: int,
    max_rounds: int = 64,
    fallback_rounds: int = FALLBACK_ROUNDS,
    exact_fallback: bool = False,
    propose_head: Callable[[jax.Array], tuple[jax.Array, jax.Array]] | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``fill_unique`` for proposals that carry one int32 tag per candidate.

    ``propose(key) -> (int32[M, N], int32[M])``; returns ``(tokens[n, N],
    fresh[n], tags[n])`` where ``tags`` belong to the accepted candidates (e.g.
    which autoregressive order a policy sample used) and are 0 in fallback
    slots. Same acceptance rule and fallbacks as ``fill_unique`` (``propose_head``
    too, giving the first rows' tags as well).
    """
    init = (
        jnp.zeros((n, space.num_tokens), jnp.int32),
        jnp.full((n,), EMPTY, jnp.int32),
        jnp.zeros((n,), jnp.int32),
        jnp.int32(0),
    )
    head = propose_head if _ONE_STEP.get() else None
    key, (out, out_ids, tags, filled) = _accept(key, space, propose, seen, init, n, max_rounds, head)
    return _fill_rest(key, space, seen, n, out, out_ids, tags, filled, fallback_rounds, exact_fallback)


def _fill_rest(key, space, seen, n, out, out_ids, tags, filled, fallback_rounds, exact_fallback):
    """The fallbacks of ``fill_unique_aux`` for the slots the proposal left empty (from ``filled`` on)."""
    fresh = jnp.arange(n) < filled
    if exact_fallback and exact(space):
        extra = computed_where(
            filled < n,
            lambda: draw_unseen(jax.random.fold_in(key, 1), space, seen_add(seen, out_ids), n)[0],
        )
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
    last_resort = computed_where(~jnp.all(new), lambda: jax.vmap(space.sample)(jax.random.split(key, n)))
    return jnp.where(new[:, None], out, last_resort), fresh, jnp.where(fresh, tags, 0)


def _accept(key, space, propose, seen, state, n, max_rounds, propose_head=None):
    """Rounds of ``propose`` until ``n`` new strings are packed into ``state`` or ``max_rounds`` have run;
    returns the key after the last round and the state. With ``propose_head`` (the first rows of a
    proposal) the first round proposes only those where they fill the slots: the rows after them would
    land past the last slot, so the state is the full round's."""

    def take(cand, tags, out, out_ids, out_tags, filled):
        ids = jax.vmap(space.string_id)(cand)
        ok = (ids >= 0) & ~seen_contains(seen, ids) & first_occurrence(ids)
        ok &= ~jnp.any(ids[:, None] == out_ids[None, :], axis=1)
        slot = pack_slots(ok, n, filled)
        out = out.at[slot].set(cand, mode="drop")
        out_ids = out_ids.at[slot].set(ids, mode="drop")
        out_tags = out_tags.at[slot].set(tags.astype(jnp.int32), mode="drop")
        return out, out_ids, out_tags, jnp.minimum(filled + jnp.sum(ok), n)

    def cond(c):
        return (c[4] < n) & (c[5] < max_rounds)

    def body(c):
        k, *rest, rounds = c
        k, sub = jax.random.split(k)
        return k, *take(*propose(sub), *rest), rounds + 1

    def rounds(key, state):
        key, *state, _ = jax.lax.while_loop(cond, body, (key, *state, jnp.int32(0)))
        return key, tuple(state)

    if propose_head is None or max_rounds < 1:
        return rounds(key, state)
    k1, sub = jax.random.split(key)  # the first round's keys, as body splits them
    first = take(*propose_head(sub), *state)
    filled_first = (state[3] < n) & (first[3] >= n)  # the head alone fills the slots the round started with
    return jax.lax.cond(filled_first, lambda: (k1, first), lambda: rounds(key, state))


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
