"""The incumbent of a run: after each query, the best query so far by the score the searcher sees.

The protocol of every report (DESIGN.md): after query ``t`` the incumbent is the query with the best
validation score among the first ``t + 1`` (ties keep the earlier query, a NaN is never the
incumbent), and the reported figure is that query's report score (its test score, or its seed-mean
validation score where the objective has no test split). ``incumbent_index`` / ``incumbent_curve``
compute this in JAX (inside compiled programs or on device arrays); ``incumbent_indices`` /
``incumbent_scores`` in numpy, for host code that must compile nothing (progress lines between
chunks, reports).

Multi-fidelity runs (``nas.engine.multi_fidelity_runner``) keep the same rule on the evaluations at
the top fidelity: the incumbent is the best configuration evaluated at the top fidelity so far
(``top_fidelity_score`` masks the others), for every searcher alike; a single-fidelity searcher's
queries are all top-fidelity evaluations.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def incumbent_index(score: jax.Array) -> jax.Array:
    """int32[..., T]: the index of the best score among the first ``t + 1`` queries (ties keep the earlier),
    or -1 while no query has a score above ``-inf``."""
    score = jnp.asarray(score)
    score = jnp.where(jnp.isnan(score), -jnp.inf, score)  # a NaN never becomes the incumbent
    t = jnp.arange(score.shape[-1], dtype=jnp.int32)
    prev_best = jax.lax.cummax(score, axis=score.ndim - 1)
    prev_best = jnp.concatenate([jnp.full(score.shape[:-1] + (1,), -jnp.inf, score.dtype), prev_best[..., :-1]], -1)
    improves = score > prev_best  # strictly better than everything before it (NaN never improves)
    return jax.lax.cummax(jnp.where(improves, t, -1), axis=score.ndim - 1)


def incumbent_curve(score: jax.Array, report_score: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Best-so-far score and the report score of that incumbent, f32[..., T] each.

    The incumbent after ``t + 1`` queries is the query with the best score so
    far (ties keep the earlier query); before any finite score both are ``-inf``.
    """
    idx = incumbent_index(score)
    safe = jnp.maximum(idx, 0)
    best = jnp.take_along_axis(jnp.asarray(score), safe, axis=-1)
    rep = jnp.take_along_axis(jnp.asarray(report_score), safe, axis=-1)
    return jnp.where(idx >= 0, best, -jnp.inf), jnp.where(idx >= 0, rep, -jnp.inf)


def incumbent_indices(score: np.ndarray) -> np.ndarray:
    """int[..., Q]: the index of the best-score query among the first q + 1 (``nas.engine.incumbent.incumbent_index``,
    in numpy: host code compiles no programs). Ties keep the earlier query, a NaN never becomes the
    incumbent, -1 while no score is above ``-inf``."""
    score = np.asarray(score)
    clean = np.where(np.isnan(score), -np.inf, score)
    prev_best = np.maximum.accumulate(clean, axis=-1)
    prev_best = np.concatenate([np.full(score.shape[:-1] + (1,), -np.inf, score.dtype), prev_best[..., :-1]], -1)
    t = np.arange(score.shape[-1])
    return np.maximum.accumulate(np.where(clean > prev_best, t, -1), axis=-1)


def incumbent_scores(score: np.ndarray, report_score: np.ndarray) -> np.ndarray:
    """f64[T, Q]: the report score of the incumbent (``incumbent_indices``) among the first q + 1 queries
    (``nas.engine.incumbent.incumbent_curve``), ``-inf`` while no score is above ``-inf``."""
    idx = incumbent_indices(score)
    rep = np.take_along_axis(np.asarray(report_score), np.maximum(idx, 0), axis=-1)
    return np.where(idx >= 0, rep, -np.inf).astype(np.float64)


def top_fidelity_score(score, fidelity, num_fidelities: int):
    """``score`` where the evaluation ran at the top fidelity, ``-inf`` elsewhere (numpy or JAX arrays):
    the scores the incumbent of a multi-fidelity run is chosen from."""
    xp = jnp if isinstance(score, jax.Array) else np
    return xp.where(xp.asarray(fidelity) == num_fidelities - 1, score, -xp.inf)
