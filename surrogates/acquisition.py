"""Acquisition functions on a Gaussian (or ensemble) predictive distribution.

BANANAS (White, Neiswanger & Savani, 2021), eq. (1) and appendix B, eqs. (2)-(5). The paper minimizes validation
*error*; this project maximizes validation *scores* (accuracy, -log MSE), so every function here
returns "higher is better" and the formulas are the paper's with the sign of ``f`` flipped:

- UCB, eq. (1)/(4): the paper's ``f_hat - beta * sigma_hat`` on errors is ``mean + beta * std`` on
  scores (``ucb``); ``lcb`` is ``mean - beta * std`` for callers that minimize. ``beta = 0.5``.
- EI, eq. (2): ``E[max(f - y_best, 0)]`` for ``f ~ N(mean, std^2)``
  ``= (mean - y_best) * Phi(z) + std * phi(z)``, ``z = (mean - y_best) / std``: the closed form of
  the paper's integral ``int_{-inf}^{y_min} (y_min - y) N(y; f_hat, sigma_hat^2) dy``. (A widely
  used implementation rescales the std by a "calibration factor" and drops signs; ours is the
  closed form and is tested against numerical integration.)
- PI, eq. (3): ``P(f > y_best) = Phi(z)``.
- TS, eq. (5): the prediction of ONE uniformly drawn ensemble member (``members[m~]``); for a GP
  the caller passes a joint posterior sample as the single "member".
- ITS (independent Thompson sampling, BANANAS' code default ``explore_type='its'``): an
  independent draw ``N(mean_i, std_i^2)`` for every candidate ``i``.

``mean`` and ``std`` for an ensemble are the paper's: the mean of the member predictions and
their sample standard deviation with ``M - 1`` in the denominator (``mlp_ensemble.ensemble_mean_std``).
All functions work on f32[C] candidate vectors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

ACQUISITIONS = ("ucb", "ei", "pi", "ts", "its")
_MIN_STD = 1e-9


def norm_cdf(z: jax.Array) -> jax.Array:
    return 0.5 * jax.scipy.special.erfc(-z / jnp.sqrt(2.0))


def norm_pdf(z: jax.Array) -> jax.Array:
    return jnp.exp(-0.5 * z * z) / jnp.sqrt(2.0 * jnp.pi)


def ucb(mean: jax.Array, std: jax.Array, beta: float = 0.5) -> jax.Array:
    """Optimistic bound for maximization (the paper's UCB, eq. 1, on negated errors)."""
    return mean + beta * std


def lcb(mean: jax.Array, std: jax.Array, beta: float = 0.5) -> jax.Array:
    """Lower confidence bound ``mean - beta * std`` (the paper's form, for minimization)."""
    return mean - beta * std


def expected_improvement(mean: jax.Array, std: jax.Array, best: jax.Array) -> jax.Array:
    """``E[max(f - best, 0)]``, ``f ~ N(mean, std^2)`` (eq. 2, maximization); ``std = 0`` -> ``max(mean - best, 0)``."""
    s = jnp.maximum(std, _MIN_STD)
    z = (mean - best) / s
    ei = (mean - best) * norm_cdf(z) + s * norm_pdf(z)
    return jnp.where(std > _MIN_STD, jnp.maximum(ei, 0.0), jnp.maximum(mean - best, 0.0))


def probability_of_improvement(mean: jax.Array, std: jax.Array, best: jax.Array) -> jax.Array:
    """``P(f > best)`` (eq. 3, maximization); a point mass gives 1 if ``mean > best`` else 0."""
    s = jnp.maximum(std, _MIN_STD)
    pi = norm_cdf((mean - best) / s)
    return jnp.where(std > _MIN_STD, pi, (mean > best).astype(mean.dtype))


def thompson(key: jax.Array, members: jax.Array) -> jax.Array:
    """Eq. (5): the predictions ``members[m]`` of one member ``m ~ Unif{0..E-1}``; members f32[E, C]."""
    m = jax.random.randint(key, (), 0, members.shape[0])
    return members[m]


def independent_thompson(key: jax.Array, mean: jax.Array, std: jax.Array) -> jax.Array:
    """ITS: an independent Gaussian draw per candidate."""
    return mean + std * jax.random.normal(key, mean.shape, mean.dtype)


def acquisition_scores(
    kind: str,
    key: jax.Array,
    mean: jax.Array,
    std: jax.Array,
    best: jax.Array,
    members: jax.Array | None = None,
    beta: float = 0.5,
) -> jax.Array:
    """Scores f32[C] (higher = query first) for the acquisition ``kind`` (static)."""
    if kind == "ucb":
        return ucb(mean, std, beta)
    if kind == "ei":
        return expected_improvement(mean, std, best)
    if kind == "pi":
        return probability_of_improvement(mean, std, best)
    if kind == "ts":
        if members is None:
            raise ValueError("Thompson sampling ('ts') needs member predictions or a posterior sample")
        return thompson(key, members)
    if kind == "its":
        return independent_thompson(key, mean, std)
    raise ValueError(f"unknown acquisition {kind!r}; choose from {list(ACQUISITIONS)}")
