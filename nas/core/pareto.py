"""Pareto dominance, non-dominated sorting and crowding distance (Deb et al. 2002, NSGA-II), jittable.

Deb, Pratap, Agarwal & Meyarivan (2002), "A Fast and Elitist Multiobjective Genetic Algorithm:
NSGA-II", IEEE TEVC 6(2). Every function here **minimizes**: it takes ``losses[n, M]`` (a searcher
passes ``-scores``, its scores being higher-is-better) and a ``mask[n]`` of the rows that exist
(padding of fixed-size buffers is masked out). Functions take one set of points; callers ``vmap``.

- ``dominates(a, b)``: ``a`` is no worse in every objective and better in one (Sec. II).
- ``front_ranks``: the non-dominated front of every row (0 = non-dominated; Sec. III-A's fronts
  F_1, F_2, ... as 0, 1, ...), by peeling fronts off the dominance matrix: ``O(F n^2 M)``.
  ``front_ranks_2d`` gives the same ranks for ``M = 2`` in ``O(n log n)`` work (a sort, then one
  pass that keeps the smallest second objective of each front, as patience sorting does for a
  longest chain: a row's front is the length of the longest dominance chain ending at it).
- ``crowding_distance``: Sec. III-B, within each front: the boundary rows of each objective get
  infinity, the others the sum over objectives of the gap between their neighbours divided by the
  front's range in that objective (a range of 0 adds nothing).
- ``nsga2_order``: rows by the crowded-comparison operator (rank ascending, then crowding
  descending, then index): the order of NSGA-II's environmental selection.

Failed evaluations (a non-finite loss in any objective) rank after every finite row (rank ``n``),
padding after them (``n + 1``); both have crowding distance 0, so no selection prefers them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def dominates(a: jax.Array, b: jax.Array) -> jax.Array:
    """bool[]: ``a`` Pareto-dominates ``b`` (minimization): ``a <= b`` everywhere and ``a < b`` somewhere."""
    return jnp.all(a <= b, axis=-1) & jnp.any(a < b, axis=-1)


def finite_rows(losses: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """bool[n]: rows that exist and whose every loss is finite (NaN and infinities are failed evaluations)."""
    ok = jnp.all(jnp.isfinite(losses), axis=-1)
    return ok if mask is None else ok & mask


def dominance_matrix(losses: jax.Array, ok: jax.Array) -> jax.Array:
    """bool[n, n]: ``[i, j]`` = row ``i`` dominates row ``j``, both among the ``ok`` rows."""
    d = dominates(losses[:, None, :], losses[None, :, :])
    return d & ok[:, None] & ok[None, :]


def _unranked(mask: jax.Array, ok: jax.Array) -> jax.Array:
    n = mask.shape[0]
    return jnp.where(mask, jnp.where(ok, 0, n), n + 1).astype(jnp.int32)


def front_ranks(losses: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """int32[n]: the non-dominated front of each row, 0 first (Deb et al. 2002, Sec. III-A), by peeling:
    the rows no remaining row dominates form the next front. Failed rows: ``n``; masked rows: ``n + 1``."""
    n = losses.shape[0]
    mask = jnp.ones((n,), bool) if mask is None else mask
    ok = finite_rows(losses, mask)
    dom = dominance_matrix(losses, ok)

    def body(carry):
        rank, left, f = carry
        dominated = jnp.any(dom & left[:, None], axis=0)  # some remaining row dominates it
        front = left & ~dominated  # never empty while rows are left: dominance has no cycles
        return jnp.where(front, f, rank), left & ~front, f + 1

    rank, _, _ = jax.lax.while_loop(lambda c: jnp.any(c[1]), body, (_unranked(mask, ok), ok, jnp.int32(0)))
    return rank


def front_ranks_2d(losses: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """``front_ranks`` for two objectives in ``O(n log n)`` work: sort by (first, second) loss; a row's front
    is the number of fronts holding a row (earlier in that order) with a second loss ``<=`` its own, i.e. the
    length of the longest dominance chain before it. ``tails[f]`` keeps the smallest second loss of front
    ``f`` so far (increasing in ``f``), so that count is one ``searchsorted``. Identical rows share a front."""
    n = losses.shape[0]
    if losses.shape[-1] != 2:
        raise ValueError(f"front_ranks_2d takes two objectives, got {losses.shape[-1]}")
    mask = jnp.ones((n,), bool) if mask is None else mask
    ok = finite_rows(losses, mask)
    x = jnp.where(ok, losses[:, 0], jnp.inf)
    y = jnp.where(ok, losses[:, 1], jnp.inf)
    order = jnp.lexsort((y, x))

    def step(carry, row):
        tails, px, py, pf = carry
        xi, yi, oki = row
        same = (xi == px) & (yi == py)  # a copy of the previous row: neither dominates the other
        f = jnp.where(same, pf, jnp.searchsorted(tails, yi, side="right")).astype(jnp.int32)
        tails = jnp.where(oki & ~same, tails.at[f].set(yi), tails)
        return (tails, xi, yi, f), f

    init = (jnp.full((n,), jnp.inf, losses.dtype), jnp.asarray(jnp.nan, losses.dtype),
            jnp.asarray(jnp.nan, losses.dtype), jnp.int32(0))  # fmt: skip
    _, f_sorted = jax.lax.scan(step, init, (x[order], y[order], ok[order]))
    rank = jnp.zeros((n,), jnp.int32).at[order].set(f_sorted)
    return jnp.where(ok, rank, _unranked(mask, ok))


def insert_front_ranks(losses: jax.Array, mask: jax.Array, ranks: jax.Array, new: jax.Array) -> jax.Array:
    """int32[n]: ``front_ranks(losses, mask | (rows == new))`` given ``ranks`` = ``front_ranks(losses, mask)``,
    i.e. the fronts after row ``new`` joins, updated instead of recomputed.

    Row ``p = new`` gets ``1 +`` the highest front among the rows dominating it (0 if none). Only rows
    ``p`` dominates can move (a chain through ``p`` ends at a row ``p`` dominates, by transitivity), and
    each moves back by at most one front (drop ``p`` from any chain). Row ``q`` moves iff ``p`` dominates
    it and ``q`` was in ``p``'s front, or a row that moved from the front just before ``q``'s dominates
    it: waves front by front, one vector pass each (two objectives: a running minimum over the rows in
    sorted order; more: a dominance test against the moved rows)."""
    n = losses.shape[0]
    ok = finite_rows(losses, mask)
    vp = losses[new]
    p_ok = jnp.all(jnp.isfinite(vp))
    f_p = jnp.max(jnp.where(ok & dominates(losses, vp), ranks, -1)) + 1
    below = ok & dominates(vp, losses) & p_ok  # the rows p dominates: the only ones that can move
    if losses.shape[-1] == 2:
        x = jnp.where(below, losses[:, 0], jnp.inf)
        y = jnp.where(below, losses[:, 1], jnp.inf)
        order = jnp.lexsort((y, x))
        xs, ys = x[order], y[order]
        same = jnp.concatenate([jnp.zeros((1,), bool), (xs[1:] == xs[:-1]) & (ys[1:] == ys[:-1])])
        group = jax.lax.cummax(jnp.where(same, 0, jnp.arange(n)))  # the first sorted row of each copy group

        def dominated_by(moved):  # rows some moved row dominates: a lexicographically smaller, lower-or-equal row
            low = jax.lax.cummin(jnp.where(moved[order], ys, jnp.inf))
            before = jnp.concatenate([jnp.full((1,), jnp.inf, ys.dtype), low[:-1]])[group]
            return jnp.zeros((n,), bool).at[order].set(before <= ys)
    else:

        def dominated_by(moved):
            return jnp.any(moved[:, None] & dominates(losses[:, None, :], losses[None, :, :]), axis=0)

    def body(carry):
        moved, level, out = carry
        out = jnp.where(moved, ranks + 1, out)
        nxt = below & (ranks == level + 1) & dominated_by(moved)
        return nxt, level + 1, out

    first = below & (ranks == f_p)
    _, _, out = jax.lax.while_loop(lambda c: jnp.any(c[0]), body, (first, f_p, ranks))
    return out.at[new].set(jnp.where(p_ok, f_p, n)).astype(jnp.int32)


def crowding_distance(losses: jax.Array, ranks: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """f32[n]: the crowding distance of each row within its front (Deb et al. 2002, Sec. III-B); 0 for failed
    and masked rows."""
    n, m = losses.shape
    mask = jnp.ones((n,), bool) if mask is None else mask
    ok = finite_rows(losses, mask)
    seg = jnp.where(ok, ranks, n)  # every failed or masked row in one segment of its own
    dist = jnp.zeros((n,), jnp.float32)
    for j in range(m):
        v = jnp.where(ok, losses[:, j], 0.0).astype(jnp.float32)
        order = jnp.lexsort((v, seg))  # by front, then by this objective
        s, vs = seg[order], v[order]
        lo = jax.ops.segment_min(v, seg, num_segments=n + 1)
        hi = jax.ops.segment_max(v, seg, num_segments=n + 1)
        span = (hi - lo)[s]
        has_prev = jnp.concatenate([jnp.zeros((1,), bool), s[1:] == s[:-1]])
        has_next = jnp.concatenate([s[:-1] == s[1:], jnp.zeros((1,), bool)])
        prev = jnp.concatenate([vs[:1], vs[:-1]])
        nxt = jnp.concatenate([vs[1:], vs[-1:]])
        gap = jnp.where(span > 0, (nxt - prev) / jnp.where(span > 0, span, 1.0), 0.0)
        d = jnp.where(has_prev & has_next, gap, jnp.inf)
        dist = dist + jnp.zeros((n,), jnp.float32).at[order].set(d)
    return jnp.where(ok, dist, 0.0)


def nsga2_priority(losses: jax.Array, mask: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """(front ranks int32[n], crowding distances f32[n]); the sorted ``O(n log n)`` ranks for two objectives."""
    ranks = front_ranks_2d(losses, mask) if losses.shape[-1] == 2 else front_ranks(losses, mask)
    return ranks, crowding_distance(losses, ranks, mask)


def nsga2_order(ranks: jax.Array, crowding: jax.Array) -> jax.Array:
    """int32[n]: rows by the crowded-comparison operator (rank ascending, crowding descending, index)."""
    return jnp.lexsort((-crowding, ranks)).astype(jnp.int32)


def crowded_better(rank_a, crowd_a, rank_b, crowd_b) -> jax.Array:
    """bool[]: ``a`` wins the crowded comparison against ``b`` (lower rank, or equal rank and more crowding)."""
    return (rank_a < rank_b) | ((rank_a == rank_b) & (crowd_a > crowd_b))


# -- host side (numpy): fronts of whole tables ---------------------------------------------------
def nondominated_mask(points: np.ndarray) -> np.ndarray:
    """bool[n]: the non-dominated rows of ``points[n, M]`` (minimization; rows with a non-finite value are
    dominated), in numpy: a sort and a running minimum for two objectives, blocks of comparisons otherwise."""
    p = np.asarray(points, np.float64)
    ok = np.all(np.isfinite(p), axis=1)
    out = np.zeros(p.shape[0], bool)
    idx = np.nonzero(ok)[0]
    q = p[idx]
    if q.shape[1] == 2:
        order = np.lexsort((q[:, 1], q[:, 0]))
        y = q[order, 1]
        best_before = np.concatenate([[np.inf], np.minimum.accumulate(y)[:-1]])
        keep = y < best_before
        sorted_q = q[order]
        for k in range(1, len(order)):  # an exact copy of a kept row is not dominated either
            keep[k] |= keep[k - 1] and bool(np.all(sorted_q[k] == sorted_q[k - 1]))
        out[idx[order[keep]]] = True
        return out
    keep = np.ones(len(q), bool)
    for s in range(0, len(q), 1024):
        blk = q[s : s + 1024]
        dominated = np.zeros(len(blk), bool)
        for t in range(0, len(q), 1024):
            other = q[t : t + 1024]
            le = np.all(other[None, :, :] <= blk[:, None, :], axis=2)
            lt = np.any(other[None, :, :] < blk[:, None, :], axis=2)
            dominated |= np.any(le & lt, axis=1)
        keep[s : s + 1024] = ~dominated
    out[idx[keep]] = True
    return out
