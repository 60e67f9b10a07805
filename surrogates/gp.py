"""Exact Gaussian-process regression on padded data, hyperparameters by marginal likelihood.

Used by the GP-BO baseline and BANANAS' GP ablation (White, Neiswanger & Savani, 2021, Section 5.1 and Figure 4),
with the kernels of ``surrogates.kernels`` on architecture encodings. Rasmussen & Williams (2006),
Algorithm 2.1: with ``K = k(X, X) + s_n^2 I = L L^T`` and ``alpha = K^-1 y``,

    log p(y | X, theta) = -1/2 y^T alpha - sum_i log L_ii - n/2 log 2 pi          (eq. 2.30)
    mean(x*) = k*^T alpha,    var(x*) = k(x*, x*) - ||L^-1 k*||^2                  (eqs. 2.25-2.26)

Padding (``surrogates.padding``): data come as ``P`` rows with ``mask[P]``. Padded rows get an
identity block in ``K`` (zero cross-covariance, unit variance), a zero target and zero
cross-covariance with test points, so ``y^T K^-1 y``, ``log det K``, the posterior mean and the
posterior variance are exactly those of the ``n = sum(mask)`` real rows, and the ``n/2 log 2 pi``
term counts real rows only: padded rows do not change the likelihood (tested).

Linear algebra (``surrogates.linalg``): the Cholesky factor, its inverse and the likelihood are
plain JAX on every backend (blocked Cholesky in matmuls, no LAPACK custom call: jaxlib's batched CPU LAPACK kernel
deadlocked under ``vmap`` over seeds), and the likelihood's gradient is R&W eq. 5.9,
``dNLL/dK = 1/2 (K^-1 - alpha alpha^T)``, a custom VJP instead of differentiating the factorization.

``fit_kernel_gp`` / ``posterior_from_cross`` are the same GP for any kernel given as a function of its
hyperparameters (NASBOT's kernel on precomputed OTMANN distances, ``nas.searchers.nasbot``).

Targets are standardized with the masked mean/std; hyperparameters ``theta = (log length scale,
log amplitude, log noise)`` start from (mean pairwise distance, 1, 0.1) and are fitted by
``fit_steps`` Adam steps (optax) on the negative log marginal likelihood. Pure, jittable, one
search at a time (callers ``vmap``).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from surrogates.kernels import KERNELS, distance, kernel_matrix
from surrogates.linalg import cholesky, cholesky_with_inverse, gaussian_nll, masked_gram


@dataclasses.dataclass(frozen=True)
class GPConfig:
    kernel: str = "hamming"
    fit_steps: int = 100
    learning_rate: float = 0.05
    min_noise: float = 1e-4  # noise variance floor, in standardized target units
    jitter: float = 1e-6

    def __post_init__(self):
        if self.kernel not in KERNELS:
            raise ValueError(f"GPConfig.kernel must be one of {list(KERNELS)}, got {self.kernel!r}")


def _mm(a, b):
    return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)  # no TF32 rounding on GPUs


def _hyper(theta: dict, cfg: GPConfig):
    return jnp.exp(theta["log_ls"]), jnp.exp(theta["log_amp"]), cfg.min_noise + jnp.exp(theta["log_noise"])


def _noisy_gram(k, theta, mask, cfg: GPConfig):
    """``K + (s_n^2 + jitter) I`` with padded rows and columns replaced by the identity."""
    noise = cfg.min_noise + jnp.exp(theta["log_noise"])
    return masked_gram(k + (noise + cfg.jitter) * jnp.eye(k.shape[0]), mask)


def _gram(theta, x, mask, cfg: GPConfig):
    ls, amp, _ = _hyper(theta, cfg)
    return _noisy_gram(kernel_matrix(cfg.kernel, x, x, ls, amp), theta, mask, cfg)


def neg_log_marginal_likelihood(theta: dict, x: jax.Array, y: jax.Array, mask: jax.Array, cfg: GPConfig):
    """``-log p(y | X, theta)`` over the real rows (R&W eq. 2.30); ``y`` already standardized."""
    return gaussian_nll(_gram(theta, x, mask, cfg), y, mask)


def standardize(y, mask):
    n = jnp.maximum(jnp.sum(mask), 1)
    mean = jnp.sum(jnp.where(mask, y, 0.0)) / n
    std = jnp.sqrt(jnp.sum(jnp.where(mask, jnp.square(y - mean), 0.0)) / n)
    scale = jnp.where(std > 1e-8, std, 1.0)
    return jnp.where(mask, (y - mean) / scale, 0.0), mean, scale


def init_theta(x, mask, cfg: GPConfig) -> dict:
    """Length scale = mean pairwise distance of the real rows; amplitude 1; noise 0.1."""
    d = distance(cfg.kernel, x, x)
    both = mask[:, None] & mask[None, :] & ~jnp.eye(x.shape[0], dtype=bool)
    mean_d = jnp.sum(jnp.where(both, d, 0.0)) / jnp.maximum(jnp.sum(both), 1)
    ls = jnp.where(mean_d > 1e-6, mean_d, 1.0)
    return {"log_ls": jnp.log(ls), "log_amp": jnp.float32(0.0), "log_noise": jnp.log(jnp.float32(0.1))}


def fit_gp(x: jax.Array, y: jax.Array, mask: jax.Array, cfg: GPConfig) -> dict:
    """Fits hyperparameters on the rows where ``mask`` (and ``y`` finite) and caches the posterior."""
    if x.ndim != 2 or y.shape != (x.shape[0],) or mask.shape != (x.shape[0],):
        raise ValueError(f"fit_gp expects x[P, F], y[P], mask[P]; got {x.shape}, {y.shape}, {mask.shape}")
    x = x.astype(jnp.float32)
    mask = mask & jnp.isfinite(y)

    def kernel(theta):
        ls, amp, _ = _hyper(theta, cfg)
        return kernel_matrix(cfg.kernel, x, x, ls, amp)

    return {**fit_kernel_gp(kernel, init_theta(x, mask, cfg), y, mask, cfg), "x": x}


def fit_kernel_gp(kernel, theta: dict, y: jax.Array, mask: jax.Array, cfg: GPConfig) -> dict:
    """The GP fit for any kernel: ``kernel(theta) -> f32[P, P]``, the noiseless prior covariance of the ``P``
    rows, differentiable in ``theta`` (a dict with ``log_noise`` and the kernel's own entries, starting
    values). Fits ``theta`` by ``cfg.fit_steps`` Adam steps on the negative log marginal likelihood of the
    standardized targets (rows where ``mask`` and ``y`` finite) and caches ``L^-1`` and ``alpha``."""
    mask = mask & jnp.isfinite(y)
    ys, y_mean, y_scale = standardize(jnp.where(mask, y, 0.0).astype(jnp.float32), mask)
    opt = optax.adam(cfg.learning_rate)

    def nll(th):
        return gaussian_nll(_noisy_gram(kernel(th), th, mask, cfg), ys, mask)

    loss_grad = jax.grad(nll)

    def step(carry, _):
        th, st = carry
        # finite: surrogates.linalg floors the pivots of a (numerically) singular K instead of NaN
        upd, st = opt.update(loss_grad(th), st, th)
        return (optax.apply_updates(th, upd), st), None

    (theta, _), _ = jax.lax.scan(step, (theta, opt.init(theta)), None, length=cfg.fit_steps)
    _, chol_inv = cholesky_with_inverse(_noisy_gram(kernel(theta), theta, mask, cfg))
    alpha = _mm(chol_inv.T, _mm(chol_inv, ys))
    return {
        "theta": theta,
        "mask": mask,
        "chol_inv": chol_inv,  # L^-1: the posterior's solves are matmuls
        "alpha": alpha,
        "y_mean": y_mean,
        "y_scale": y_scale,
    }


def posterior_from_cross(params: dict, k_star: jax.Array, prior_var: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Posterior mean and std (target units) at new points from their prior covariance with the fitted rows
    ``k_star`` f32[P, M] and their prior variance (``fit_kernel_gp``'s kernel)."""
    k_star = jnp.where(params["mask"][:, None], k_star, 0.0)
    mean = _mm(k_star.T, params["alpha"])
    v = _mm(params["chol_inv"], k_star)
    var = jnp.maximum(prior_var - jnp.sum(v * v, axis=0), 0.0)
    return mean * params["y_scale"] + params["y_mean"], jnp.sqrt(var) * params["y_scale"]


def _cross(params, x_new, cfg):
    ls, amp, _ = _hyper(params["theta"], cfg)
    k = kernel_matrix(cfg.kernel, params["x"], x_new.astype(jnp.float32), ls, amp)
    return jnp.where(params["mask"][:, None], k, 0.0), amp


def gp_posterior(params: dict, x_new: jax.Array, cfg: GPConfig) -> tuple[jax.Array, jax.Array]:
    """Posterior mean and std of the latent function at ``x_new[M, F]``, in target units."""
    k_star, amp = _cross(params, x_new, cfg)
    return posterior_from_cross(params, k_star, amp)


def gp_posterior_sample(key: jax.Array, params: dict, x_new: jax.Array, cfg: GPConfig) -> jax.Array:
    """One joint sample of the latent function at ``x_new`` (Thompson sampling): f32[M]."""
    k_star, amp = _cross(params, x_new, cfg)
    ls, _, _ = _hyper(params["theta"], cfg)
    v = _mm(params["chol_inv"], k_star)
    cov = kernel_matrix(cfg.kernel, x_new, x_new, ls, amp) - _mm(v.T, v)
    m = x_new.shape[0]
    chol = cholesky(cov + 1e-5 * amp * jnp.eye(m))
    f = _mm(k_star.T, params["alpha"]) + _mm(chol, jax.random.normal(key, (m,)))
    return f * params["y_scale"] + params["y_mean"]
