"""OTMANN, the optimal-transport distance between neural networks of NASBOT (Kandasamy, Neiswanger, Schneider,
Poczos & Xing, 2018, "Neural Architecture Search with Bayesian Optimisation and Optimal Transport", Section 3).

A network is a DAG of layers ``u`` with a label ``ll(u)`` (conv3, relu, ...) and a mass ``lm(u)`` (its amount
of computation); the input layer is first and the output layer last in a topological numbering. The
distance between ``G1`` (layers ``i``, total mass ``M1``) and ``G2`` (layers ``j``, ``M2``) is the value of

    d(G1, G2) = min_Z  <Z, C_lmm> + nu_str <Z, C_str> + nu_nas (M1 - sum Z + M2 - sum Z)     (Section 3, eq. 3)
                s.t.   Z >= 0,  sum_j Z_ij <= lm(i),  sum_i Z_ij <= lm(j)

- ``C_lmm(i, j) = M(ll(i), ll(j))``: the label mismatch penalty (``M`` infinite between incompatible labels);
- ``C_str(i, j) = 1/6 sum_{s in sp, lp, rw} sum_{t in ip, op} |delta_t^s(i) - delta_t^s(j)|``: the
  structural term, from the shortest, longest and random-walk path lengths of a layer from the input
  (``ip``) and to the output (``op``); a random walk steps to a uniformly chosen parent (child);
- ``nu_nas`` per unit of mass left unassigned (the non-assignment penalty).

Theorem 2: ``d`` is the optimal transport between the masses ``[lm(G1), M2]`` and ``[lm(G2), M1]`` with cost
``[[C, nu_nas], [nu_nas, 0]]`` (a dummy layer on each side takes the unassigned mass), and
``d_bar = d / (M1 + M2)`` is the normalized distance; both are pseudo-distances, ``d(G, G) = 0``.

Solver (``transport_value``): an assignment that costs ``>= 2 nu_nas`` is never better than leaving both
masses unassigned (moving mass from ``(i, j)`` to ``(i, dummy) + (dummy, j)`` costs ``2 nu_nas``; the dummy
pair always holds enough mass), so costs are capped at ``2 nu_nas`` with the optimum unchanged (the authors'
code replaces infinities by a large constant), and eq. 3 is a min-cost flow: ``d = nu_nas (M1 + M2) +
min sum Z_ij (C_ij - 2 nu_nas)`` under the row and column capacities. It is solved exactly by successive
shortest paths with a static number of augmentations (one program, vmappable): ``L1 + L2``, the number of
layer slots; on 90,000 random pairs of each readable space 12 (NB201) or 8 (NB101, the MLPs) already give
the value of 64, and tests compare it with an exact linear program (relative error ~1e-7, float32).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import struct

PATH_KINDS = 6  # (shortest, longest, random walk) from the input, then the same to the output


@struct.dataclass
class LayerGraph:
    """One network with ``L`` layer slots, numbered topologically (slot 0 the input, slot ``L-1`` the output);
    absent slots have mass 0 and no edges."""

    labels: jax.Array  # int32[L] label ids of the space's vocabulary
    masses: jax.Array  # f32[L] layer masses (0: absent)
    adj: jax.Array  # bool[L, L] adj[u, v]: u feeds v (u < v)


def path_lengths(g: LayerGraph) -> jax.Array:
    """f32[L, 6]: shortest / longest / random-walk path length of each present layer from the input and to the
    output (0 for absent layers). A ``fori_loop`` over the slots in topological order: one loop body in the
    program whatever ``L`` (an unrolled loop made this the largest part of NASBOT's compile time)."""
    n = g.labels.shape[0]
    adj = g.adj & (g.masses[:, None] > 0) & (g.masses[None, :] > 0)

    def sweep(a):  # lengths from slot 0 along ``a`` (a[u, v]: u precedes v, u < v), slots in order
        def visit(v, lengths):
            sp, lp, rw = lengths  # slots >= v are still 0 and never parents of v
            par = a[:, v]
            cnt = jnp.sum(par)
            sp_v = jnp.where(cnt > 0, 1.0 + jnp.min(jnp.where(par, sp, jnp.inf)), 0.0)
            lp_v = jnp.where(cnt > 0, 1.0 + jnp.max(jnp.where(par, lp, -jnp.inf)), 0.0)
            rw_v = jnp.where(cnt > 0, 1.0 + jnp.sum(jnp.where(par, rw, 0.0)) / jnp.maximum(cnt, 1), 0.0)
            return sp.at[v].set(sp_v), lp.at[v].set(lp_v), rw.at[v].set(rw_v)

        zero = jnp.zeros((n,), jnp.float32)
        return jnp.stack(jax.lax.fori_loop(1, n, visit, (zero, zero, zero)), axis=1)

    from_ip = sweep(adj)
    rev = jnp.flip(adj, (0, 1)).T  # reversed graph, renumbered so the output comes first
    to_op = jnp.flip(sweep(rev), 0)
    return jnp.concatenate([from_ip, to_op], axis=1)


@struct.dataclass
class Prepared:
    """What OTMANN reads of one network (``prepare``): labels, masses and path lengths f32[L, 6]."""

    labels: jax.Array
    masses: jax.Array
    paths: jax.Array


def prepare(g: LayerGraph) -> Prepared:
    """Computes a network's path lengths once (a distance matrix reads each network many times)."""
    return Prepared(labels=g.labels, masses=g.masses, paths=path_lengths(g))


def cost_matrix(p1: Prepared, p2: Prepared, mismatch: jax.Array, nu_str: float) -> jax.Array:
    """f32[L1, L2]: ``C_lmm + nu_str C_str`` (eq. 3); ``mismatch`` f32[V, V] may hold ``inf``."""
    lmm = mismatch[p1.labels[:, None], p2.labels[None, :]]
    struct_cost = jnp.sum(jnp.abs(p1.paths[:, None, :] - p2.paths[None, :, :]), axis=-1) / PATH_KINDS
    return lmm + nu_str * struct_cost


def _shortest_path(w, z, ra, rb, tol):
    """Bellman-Ford from the rows with supply left to the columns with demand left, in the residual graph of
    the flow ``z``: row i -> column j at cost ``w_ij`` (always), column j -> row i at ``-w_ij`` (where
    ``z_ij > 0``). Returns (path cost, last column, column predecessors, row predecessors; -1 = the source)."""
    n1, n2 = w.shape
    d_row = jnp.where(ra > tol, 0.0, jnp.inf)
    p_row = jnp.full((n1,), -1, jnp.int32)
    d_col = jnp.full((n2,), jnp.inf)
    p_col = jnp.zeros((n2,), jnp.int32)
    back = z > tol

    def relax(_, labels):  # one round: rows -> columns, then columns -> rows
        d_row, p_row, d_col, p_col = labels
        via_row = d_row[:, None] + w
        i = jnp.argmin(via_row, axis=0).astype(jnp.int32)
        v = jnp.take_along_axis(via_row, i[None, :], axis=0)[0]
        p_col, d_col = jnp.where(v < d_col, i, p_col), jnp.minimum(d_col, v)
        via_col = jnp.where(back, d_col[None, :] - w, jnp.inf)
        j = jnp.argmin(via_col, axis=1).astype(jnp.int32)
        v = jnp.take_along_axis(via_col, j[:, None], axis=1)[:, 0]
        p_row, d_row = jnp.where(v < d_row, j, p_row), jnp.minimum(d_row, v)
        return d_row, p_row, d_col, p_col

    # a simple path alternates rows and columns: max(n1, n2) + 1 rounds (a loop, not unrolled: compile time)
    d_row, p_row, d_col, p_col = jax.lax.fori_loop(0, max(n1, n2) + 1, relax, (d_row, p_row, d_col, p_col))
    ends = jnp.where(rb > tol, d_col, jnp.inf)
    last = jnp.argmin(ends).astype(jnp.int32)
    return ends[last], last, p_col, p_row


def _augment(w, z, ra, rb, tol):
    """One successive-shortest-path step: push the bottleneck along the cheapest path if it costs < 0."""
    cost, last, p_col, p_row = _shortest_path(w, z, ra, rb, tol)

    def trace(carry, _):  # back from the last column to a source row: forward edge (i, j), then back
        j, on, first, reached = carry
        i = p_col[j]
        prev = p_row[i]
        at_source = prev < 0
        edge = (i, j, jnp.maximum(prev, 0), on, on & ~at_source)
        first, reached = jnp.where(on & at_source, i, first), reached | (on & at_source)
        return (jnp.maximum(prev, 0), on & ~at_source, first, reached), edge

    init = (last, cost < 0, jnp.int32(0), jnp.bool_(False))
    (_, _, first, reached), (rows, fwd, back, fwd_on, back_on) = jax.lax.scan(trace, init, None, length=w.shape[0])
    delta = jnp.minimum(rb[last], ra[first])
    delta = jnp.minimum(delta, jnp.min(jnp.where(back_on, z[rows, back], jnp.inf)))
    delta = jnp.where(reached, delta, 0.0)
    z = z.at[rows, fwd].add(jnp.where(fwd_on, delta, 0.0)).at[rows, back].add(jnp.where(back_on, -delta, 0.0))
    return z, ra.at[first].add(-delta), rb.at[last].add(-delta)


def transport_value(a: jax.Array, b: jax.Array, cost: jax.Array, *, augmentations: int | None = None) -> jax.Array:
    """Exact partial optimal transport: ``min <Z, cost> + pen (sum a - sum Z) + pen (sum b - sum Z)`` over
    ``Z >= 0`` with row sums ``<= a`` and column sums ``<= b``, where ``cost`` holds ``C_ij - 2 pen`` (so the
    value returned is ``min <Z, cost>``; add ``pen (sum a + sum b)``). Successive shortest paths (Ahuja,
    Magnanti & Orlin 1993, Section 9.7) on the bipartite flow network source -> rows -> columns -> sink:
    each augmentation sends the bottleneck along a cheapest residual path while its cost is negative, so the
    flow stays a min-cost flow of its value (no negative cycle) and stops at the optimum. ``augmentations``
    caps the (static) number of steps (default: rows + columns); the masses are normalized to total 1 first.
    One problem; callers vmap."""
    total = jnp.maximum(jnp.sum(a) + jnp.sum(b), 1e-30)
    an, bn = a / total, b / total
    tol = 1e-7
    z = jnp.zeros(cost.shape, jnp.float32)

    def step(_, carry):
        return _augment(cost, *carry, tol)

    steps = sum(cost.shape) if augmentations is None else augmentations
    z, _, _ = jax.lax.fori_loop(0, steps, step, (z, an, bn))
    return jnp.sum(z * cost) * total


def otmann(
    p1: Prepared, p2: Prepared, mismatch: jax.Array, *, nu_str: float, nu_nas: float = 1.0, **solver
) -> tuple[jax.Array, jax.Array]:
    """``(d, d_bar)``: OTMANN and its normalized form ``d / (M1 + M2)`` (Theorem 2) of one pair of prepared
    networks; vmap for more. ``solver`` passes ``augmentations`` to ``transport_value``."""
    m1, m2 = jnp.sum(p1.masses), jnp.sum(p2.masses)
    c = jnp.minimum(cost_matrix(p1, p2, mismatch, nu_str), 2.0 * nu_nas)  # capped: the optimum is unchanged
    d = nu_nas * (m1 + m2) + transport_value(p1.masses, p2.masses, c - 2.0 * nu_nas, **solver)
    return d, d / jnp.maximum(m1 + m2, 1e-12)


def row(batch, i: int):
    """Network ``i`` of a batch (a LayerGraph or Prepared with a leading axis)."""
    return jax.tree.map(lambda x: x[i], batch)


def otmann_matrix(x1: Prepared, x2: Prepared, mismatch: jax.Array, **kwargs) -> tuple[jax.Array, jax.Array]:
    """``(d, d_bar)`` f32[A, B] between the prepared networks of two batches (leading axes A and B)."""
    one = functools.partial(otmann, mismatch=mismatch, **kwargs)
    return jax.vmap(lambda a: jax.vmap(lambda b: one(a, b))(x2))(x1)
