"""What every multi-objective searcher shares: the ``num_objectives`` option and the told vector.

A multi-objective searcher is told ``scores`` f32[B, M], every column to maximize (``nas.core.contract``'s
``tell`` checks the shape, ``check_scores``, before the searcher's ``_tell``;
the runner builds ``[valid, -latency, ...]`` with ``spaces.benchmarks.metrics.objective_vector``, a host
study from a user's values and directions). ``-inf`` in a row marks a failed evaluation. The Pareto
machinery (``nas.core.pareto``) minimizes, so searchers hand it ``losses(scores) = -scores``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from nas.core.options import SearcherOptions


@dataclasses.dataclass(frozen=True)
class MultiObjectiveOptions(SearcherOptions):
    """Attributes:
    num_objectives: M, the length of the score vector (the searched score and M - 1 metrics); an
      experiment fills it in from ``config.metrics``.
    """

    num_objectives: int = 2

    def check(self):
        super().check()
        if self.num_objectives < 2:
            raise ValueError(
                f"num_objectives must be >= 2 (the score and at least one metric), got {self.num_objectives}"
            )


def losses(scores: jax.Array) -> jax.Array:
    """``-scores`` as f32 (minimization, ``nas.core.pareto``); a NaN becomes a failed evaluation (+inf)."""
    scores = jnp.asarray(scores, jnp.float32)
    return jnp.where(jnp.isnan(scores), jnp.inf, -scores)


def check_scores(scores: jax.Array, num_objectives: int, batch: int) -> jax.Array:
    """``scores`` as f32[B, M], or a ``ValueError`` naming the shape a multi-objective searcher needs."""
    if scores.shape != (batch, num_objectives):
        raise ValueError(
            f"a multi-objective searcher with num_objectives={num_objectives} is told scores f32[{batch}, "
            f"{num_objectives}] (the score and the metrics, each to maximize), got shape {tuple(scores.shape)}; "
            "run it with metrics=(...) naming the objective's metrics"
        )
    return jnp.asarray(scores, jnp.float32)
