"""Acquisition optimization by mutation (White, Neiswanger & Savani, 2021, "BANANAS", Algorithm 1 step 2
and Section 5): the candidates a surrogate scores in a space too large to score whole.

``acquisition_candidates`` returns up to ``num_candidates`` distinct, unqueried mutations of the best
queried string, continuing with the next best up to ``patience`` parents (the authors'
``get_candidates``), and/or ``num_random`` random unqueried strings. With ``num_parents = k > 1`` each
parent gives ``num_candidates // k`` mutations and the parents are the ``k * patience`` best (the code's
``num_arches_to_mutate``): the candidates then come from the ``k`` best strings, Algorithm 1's step 2
("randomly mutating the k architectures ... with the lowest value of f(a)"). Each mutation applies 1..``max_edits``
``space.mutate`` edits, the count uniform. ``fill_missing`` replaces the picks of a step that found too
few candidates with fresh random strings (``random_unseen``, also the BO loops' random first steps).
Used by the BO loop (``nas.searchers.bo``: BANANAS, GP-BO), by TNAS beyond exhaustive acquisition
(``nas.searchers.tnas``), by NASBOT's mutations and the multi-fidelity BANANAS.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from nas.core.dedup import Seen, fill_unique, pack_first, rank_among, seen_add, seen_contains
from nas.core.seen_set import first_in_order

ACQ_OPTS = ("mutation", "random", "mutation_random")


def feature_hash(feats: jax.Array) -> jax.Array:
    """int32[M]: a hash of each feature row (rounded to 1/1024), equal rows give equal hashes.

    Integer arithmetic wraps around exactly and does not depend on the summation order, so the
    hash is deterministic on every backend (a float dot product need not be).
    """
    q = jax.lax.bitcast_convert_type(jnp.round(feats * 1024.0).astype(jnp.int32), jnp.uint32)  # negatives too
    mult = jax.random.bits(jax.random.PRNGKey(0x5EED), (feats.shape[-1],), jnp.uint32) | jnp.uint32(1)
    h = jnp.sum(q * mult, axis=-1, dtype=jnp.uint32)
    h = (h ^ (h >> 15)) * jnp.uint32(0x2C1B3C6D)
    return jax.lax.bitcast_convert_type(h ^ (h >> 12), jnp.int32)


def mutate_edits(space, key: jax.Array, tokens: jax.Array, max_edits: int, edit_probs=None) -> jax.Array:
    """``space.mutate`` applied ``e`` times, ``e`` uniform in ``1..max_edits`` or drawn with ``edit_probs``
    (probabilities of 1, 2, ... edits; ``max_edits = len(edit_probs)``). May undo itself: such candidates
    equal a queried parent and are dropped."""
    if max_edits == 1:
        return space.mutate(key, tokens)
    k_num, k_edit = jax.random.split(key)
    if edit_probs is None:
        num = jax.random.randint(k_num, (), 1, max_edits + 1)
    else:
        num = 1 + jax.random.categorical(k_num, jnp.log(jnp.asarray(edit_probs, jnp.float32)))

    def edit(i, t):
        return jnp.where(i < num, space.mutate(jax.random.fold_in(k_edit, i), t), t)

    return jax.lax.fori_loop(0, max_edits, edit, tokens)


def acquisition_candidates(
    key: jax.Array,
    space,
    tokens: jax.Array,
    scores: jax.Array,
    count: jax.Array,
    seen: Seen,
    *,
    acq_opt: str,
    num_candidates: int,
    patience: int,
    max_edits: int,
    num_random: int,
    features: Callable[[jax.Array], jax.Array] | None = None,
    num_parents: int = 1,
) -> tuple[jax.Array, jax.Array]:
    """Candidates (tokens int32[M, N], ok bool[M]), valid, unqueried and distinct, from the queried
    ``tokens``/``scores`` (rows ``[:count]`` filled, ``-inf`` for empty or failed ones).

    With ``features`` (one string -> f32[F]) a candidate whose features equal a queried string's or an
    earlier candidate's is dropped too, as ``get_candidates`` in the BANANAS code (a dict of path
    indices): the predictor cannot tell them apart (e.g. NB201 cells that differ only on edges off every
    input-output path), so they would be scored as the architecture already seen.
    """
    if acq_opt not in ACQ_OPTS:
        raise ValueError(f"acq_opt must be one of {list(ACQ_OPTS)}, got {acq_opt!r}")
    k_mut, k_rand = jax.random.split(key)
    props = []
    if acq_opt in ("mutation", "mutation_random"):
        per = max(num_candidates // num_parents, 1)  # mutations per parent
        _, parents = jax.lax.top_k(scores, min(num_parents * patience, scores.shape[0]))
        parent_ok = jnp.isfinite(scores[parents])
        keys = jax.random.split(k_mut, parents.shape[0] * per)
        par = jnp.repeat(parents, per)
        muts = jax.vmap(lambda k, t: mutate_edits(space, k, t, max_edits))(keys, tokens[par])
        props.append((muts, jnp.repeat(parent_ok, per), num_candidates))
    if acq_opt in ("random", "mutation_random"):
        rnd = jax.vmap(space.sample)(jax.random.split(k_rand, num_random))
        props.append((rnd, jnp.ones((num_random,), bool), num_random))
    allc = jnp.concatenate([p[0] for p in props])
    ids = jax.vmap(space.string_id)(allc)
    ok_all = (ids >= 0) & ~seen_contains(seen, ids) & first_in_order(ids)
    if features is not None:
        h_cand = feature_hash(jax.vmap(features)(allc))
        h_seen = feature_hash(jax.vmap(features)(tokens))
        filled = jnp.arange(h_seen.shape[0]) < count
        in_seen = jnp.any((h_cand[:, None] == h_seen[None, :]) & filled[None, :], axis=1)
        ok_all &= ~in_seen & first_in_order(h_cand, ok_all)
    parts, start = [], 0
    for toks, pok, n in props:
        m = toks.shape[0]
        (t,), ok = pack_first(ok_all[start : start + m] & pok, n, toks)
        parts.append((t, ok))
        start += m
    return jnp.concatenate([p[0] for p in parts]), jnp.concatenate([p[1] for p in parts])


def random_unseen(key: jax.Array, space, seen: Seen, n: int) -> jax.Array:
    """``n`` distinct valid strings outside ``seen``, uniform (``nas.core.dedup.fill_unique``)."""

    def propose(k):
        return jax.vmap(space.sample)(jax.random.split(k, max(2 * n, 16)))

    tokens, _ = fill_unique(key, space, propose, seen, n, fallback_rounds=0)  # the proposal is uniform already
    return tokens


def fill_missing(key: jax.Array, space, seen: Seen, chosen: jax.Array, chosen_ok: jax.Array) -> jax.Array:
    """``chosen`` (int32[k, N]) with each row not ``chosen_ok`` replaced by a fresh random string, distinct
    from ``seen`` and from the kept rows (a step that found fewer than ``k`` candidates)."""
    k = chosen.shape[0]
    ids = jnp.where(chosen_ok, jax.vmap(space.string_id)(chosen), -2)
    fill = random_unseen(key, space, seen_add(seen, ids), k)
    slot = rank_among(~chosen_ok)  # the i-th missing candidate takes the i-th fresh string
    return jnp.where(chosen_ok[:, None], chosen, fill[jnp.clip(slot, 0, k - 1)])
