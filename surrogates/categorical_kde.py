"""Kernel density estimates over categorical token strings: BOHB's l(x) and g(x).

Falkner, Klein & Hutter (2018), "BOHB: Robust and Efficient Hyperparameter Optimization at Scale",
ICML, Section 4 and Eqs. (2)-(3): l(x) and g(x) are product-kernel density estimates over the good and
the bad observations. Their code (HpBandSter's ``bohb`` config generator) fits statsmodels'
``KDEMultivariate`` with categorical (``'u'``) variables, i.e. the Aitchison-Aitken kernel per
dimension,

    K(x_d, X_d; lambda) = 1 - lambda              if x_d == X_d
                          lambda / (c_d - 1)      otherwise            (c_d values of token d),

with statsmodels' normal-reference bandwidth ``1.06 * std(X_d) * n^(-1 / (4 + D))`` (the standard
deviation of the integer codes over the ``n`` rows, ``ddof = 0``) clipped below at ``min_bandwidth``.
A density is the mean over rows of the product over the ``D`` tokens. Two choices of ours, for
tokens only: lambda is clipped above at ``(c_d - 1) / c_d``, where the kernel is uniform (the rule
of thumb gives lambda > 1 on spread-out codes, where the kernel would turn negative), and
statsmodels' ``c_d`` (the number of distinct values in the data) is the token's cardinality.

Sampling (the paper's l'(x), "the same KDE with all bandwidths multiplied by b_w"): draw a row of
the data uniformly, then for each token keep its value with probability ``1 - lambda'`` and else
take one of the other ``c_d - 1`` values uniformly, ``lambda' = min(b_w lambda, (c_d - 1) / c_d)``.
(HpBandSter's sampler applies ``b_w`` to continuous parameters only and, for a categorical one,
keeps the value with probability ``1 - lambda``, else draws uniformly over all values.)

Pure functions of one search; padded rows are masked out (callers ``vmap`` over seeds).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def max_bandwidth(cardinalities) -> jax.Array:
    """f32[D]: lambda at which the Aitchison-Aitken kernel is uniform, ``(c - 1) / c``."""
    c = jnp.asarray(cardinalities, jnp.float32)
    return (c - 1.0) / c


def normal_reference_bandwidth(x: jax.Array, mask: jax.Array, cardinalities, min_bandwidth: float) -> jax.Array:
    """f32[D]: ``1.06 std n^(-1/(4+D))`` over the masked rows of ``x`` (int32[P, D]), clipped to
    ``[min_bandwidth, (c - 1) / c]`` (module docstring)."""
    w = mask.astype(jnp.float32)[:, None]
    n = jnp.maximum(jnp.sum(w), 1.0)
    xf = x.astype(jnp.float32)
    mean = jnp.sum(w * xf, 0) / n
    std = jnp.sqrt(jnp.sum(w * jnp.square(xf - mean), 0) / n)
    bw = 1.06 * std * n ** (-1.0 / (4.0 + x.shape[1]))
    return jnp.minimum(jnp.maximum(bw, min_bandwidth), max_bandwidth(cardinalities))


def log_density(query: jax.Array, x: jax.Array, mask: jax.Array, bandwidth: jax.Array, cardinalities) -> jax.Array:
    """f32[M]: log of the KDE over the masked rows of ``x`` at each ``query`` row (int32[M, D]);
    ``-inf`` when no row is masked in."""
    other = bandwidth / jnp.maximum(jnp.asarray(cardinalities, jnp.float32) - 1.0, 1.0)
    same = query[:, None, :] == x[None, :, :]  # [M, P, D]
    log_k = jnp.sum(jnp.where(same, jnp.log1p(-bandwidth), jnp.log(jnp.maximum(other, 1e-30))), -1)
    log_k = jnp.where(mask[None, :], log_k, -jnp.inf)
    n = jnp.sum(mask)
    return jax.nn.logsumexp(log_k, axis=1) - jnp.log(jnp.maximum(n, 1).astype(jnp.float32))


def sample(key: jax.Array, x: jax.Array, mask: jax.Array, bandwidth: jax.Array, cardinalities, n: int) -> jax.Array:
    """int32[n, D]: ``n`` draws from the KDE over the masked rows of ``x`` with kernel ``bandwidth``
    (the caller multiplies it by b_w and clips it)."""
    k_row, k_keep, k_val = jax.random.split(key, 3)
    count = jnp.maximum(jnp.sum(mask), 1)
    r = jax.random.randint(k_row, (n,), 0, count)  # the r-th masked row
    rows = jnp.searchsorted(jnp.cumsum(mask.astype(jnp.int32)), r + 1)
    datum = x[jnp.clip(rows, 0, x.shape[0] - 1)]
    c = jnp.asarray(cardinalities, jnp.int32)
    change = jax.random.uniform(k_keep, datum.shape) < bandwidth
    shift = jax.random.randint(k_val, datum.shape, 1, jnp.maximum(c, 2))  # one of the other c - 1 values
    return jnp.where(change & (c > 1), (datum + shift) % jnp.maximum(c, 1), datum).astype(jnp.int32)
