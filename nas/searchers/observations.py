"""The results a multi-fidelity searcher was told, in order, at a fixed capacity.

``Observations`` holds every result told (tokens, fidelity index, score): the data of BOHB's KDEs
(``nas.searchers.bohb``) and of the multi-fidelity BANANAS ensemble (``nas.searchers.mf_bananas``).
A NaN score is kept as ``-inf`` (a failed evaluation).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.multi_fidelity import Job


@struct.dataclass
class Observations:
    """Results in the order told: rows ``[:count]`` filled (``fidelity`` -1 and ``score`` -inf after them)."""

    tokens: jax.Array  # int32[E, N]
    fidelity: jax.Array  # int32[E]
    score: jax.Array  # f32[E]
    count: jax.Array  # int32[]


def observations_init(capacity: int, num_tokens: int) -> Observations:
    return Observations(
        tokens=jnp.zeros((capacity, num_tokens), jnp.int32),
        fidelity=jnp.full((capacity,), -1, jnp.int32),
        score=jnp.full((capacity,), -jnp.inf, jnp.float32),
        count=jnp.int32(0),
    )


def observe(obs: Observations, job: Job, score: jax.Array) -> Observations:
    """``obs`` with the result of ``job`` appended (dropped past the capacity)."""
    i = obs.count
    fits = i < obs.score.shape[0]
    return Observations(
        tokens=obs.tokens.at[i].set(job.tokens, mode="drop"),
        fidelity=obs.fidelity.at[i].set(job.fidelity, mode="drop"),
        score=obs.score.at[i].set(jnp.where(jnp.isnan(score), -jnp.inf, score), mode="drop"),
        count=i + fits.astype(jnp.int32),
    )
