"""Hypervolume in 2 and 3 objectives, jittable, and the normalization the reports use.

The hypervolume of a set of points (minimization) with respect to a reference point ``r`` is the
Lebesgue measure of the region they dominate and ``r`` bounds,
``HV(P, r) = vol( U_{p in P} [p_1, r_1] x ... x [p_M, r_M] )`` (Zitzler & Thiele, 1998/1999, the
"size of the dominated space"). Dominated points, copies and points on or beyond the reference in any
objective add nothing. Functions take one set of points ``[n, M]`` with a ``mask[n]``; callers
``vmap`` (over seeds and query counts).

- ``hypervolume_2d``: a sweep over the points sorted by the first objective; between consecutive
  points the dominated height is the reference minus the running minimum of the second objective:
  ``O(n log n)``.
- ``hypervolume_3d``: slices between consecutive third-objective values (sorted), each slice's area
  the 2-D hypervolume of the points at or below it: ``O(n^2 log n)``, fine for the few hundred points
  of a run.

**Normalization and reference point** (``normalize``). Reports compute the hypervolume of the
points mapped per objective to ``(v - ideal) / (reference - ideal)``, so the reference point is
``(1, ..., 1)`` and a front's hypervolume lies in ``[0, 1]``: ``ideal`` is the best value in the
table (over every configuration), ``reference`` the table's **median** error and, per further metric,
the true front's costliest network more accurate than that median plus 10 % of the front's range
(``nas.experiment.pareto_report``). The region counted is that of networks at least as accurate as
the table's median network: the trade-off a practitioner chooses from, not the cheap networks at
chance accuracy that a reference at the worst error would weigh most.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _inside(points: jax.Array, ref: jax.Array, mask: jax.Array | None) -> jax.Array:
    """bool[n]: rows that exist, are finite and lie strictly inside the reference box."""
    ok = jnp.all(jnp.isfinite(points), axis=-1) & jnp.all(points < ref, axis=-1)
    return ok if mask is None else ok & mask


def hypervolume_2d(points: jax.Array, ref: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """f32[]: the hypervolume of ``points[n, 2]`` (minimization) bounded by ``ref[2]``."""
    ref = jnp.asarray(ref, points.dtype)
    ok = _inside(points, ref, mask)
    x = jnp.where(ok, points[:, 0], ref[0])  # rows left out sit on the reference: zero width
    y = jnp.where(ok, points[:, 1], ref[1])
    order = jnp.lexsort((y, x))
    xs, ys = x[order], y[order]
    lowest = jax.lax.cummin(ys)  # the lowest second objective among the points at or left of xs[i]
    width = jnp.concatenate([xs[1:], ref[:1]]) - xs
    return jnp.sum(width * (ref[1] - lowest))


def hypervolume_3d(points: jax.Array, ref: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """f32[]: the hypervolume of ``points[n, 3]`` (minimization) bounded by ``ref[3]``."""
    ref = jnp.asarray(ref, points.dtype)
    ok = _inside(points, ref, mask)
    n = points.shape[0]
    z = jnp.where(ok, points[:, 2], ref[2])
    order = jnp.argsort(z)
    p, ok_s, zs = points[order], ok[order], z[order]
    height = jnp.concatenate([zs[1:], ref[2:]]) - zs
    rows = jnp.arange(n)
    areas = jax.vmap(lambda k: hypervolume_2d(p[:, :2], ref[:2], ok_s & (rows <= k)))(rows)
    return jnp.sum(areas * height)


def hypervolume(points: jax.Array, ref: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """f32[]: the hypervolume of ``points[n, M]`` bounded by ``ref[M]``, for ``M`` in 1, 2, 3."""
    m = points.shape[-1]
    if m == 1:
        ok = _inside(points, jnp.asarray(ref, points.dtype), mask)
        return jnp.max(jnp.where(ok, ref[0] - points[:, 0], 0.0))
    if m == 2:
        return hypervolume_2d(points, ref, mask)
    if m == 3:
        return hypervolume_3d(points, ref, mask)
    raise ValueError(f"hypervolume is implemented for 1 to 3 objectives, got {m}")


def normalize(points: jax.Array, ideal, reference) -> jax.Array:
    """``(points - ideal) / (reference - ideal)`` per objective: the reference point becomes ``(1, ..., 1)``."""
    ideal = jnp.asarray(ideal, jnp.float32)
    reference = jnp.asarray(reference, jnp.float32)
    return (jnp.asarray(points, jnp.float32) - ideal) / (reference - ideal)
