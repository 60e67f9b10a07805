"""Ridge regression on padded, masked data: the linear surrogate of SMBO.

Negrinho et al. 2019, Section 7.2: "a linear surrogate function to predict the validation
accuracy of an architecture from its features". The fit minimises
``sum_i mask_i (y_i - x_i.w - b)^2 + l2 |w|^2`` with an unpenalised bias (centred data), in
closed form: the primal ``(X'X + l2 I) w = X'y`` when there are fewer features than rows,
else the dual ``w = X' (X X' + l2 I)^-1 y``. Rows with ``mask`` False are zeroed, so data padded
to a fixed capacity compiles once.

Every matrix product runs at full float32 precision (``"highest"``: GPUs otherwise round float32
products to TF32, about 1e-3 relative). The SPD solve is a Cholesky factorisation written in JAX
(``lax.fori_loop`` over columns) rather than LAPACK: jaxlib's batched CPU LAPACK kernels deadlocked when
many seeds ran at once (see ``nas/engine/devices.py``), and this system is at most a few hundred rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def cholesky(a: jax.Array) -> jax.Array:
    """Lower-triangular ``L`` with ``L L' = a`` for a symmetric positive definite ``a`` (f32[n, n])."""
    n = a.shape[0]
    rows = jnp.arange(n)

    def column(j, lower):
        # entries k >= j of row j are still zero, so this subtracts sum_{k<j} L[:, k] L[j, k]
        s = a[:, j] - lower @ lower[j]
        d = jnp.sqrt(jnp.maximum(s[j], 1e-12))
        col = jnp.where(rows > j, s / d, 0.0).at[j].set(d)
        return lower.at[:, j].set(col)

    with jax.default_matmul_precision("highest"):
        return jax.lax.fori_loop(0, n, column, jnp.zeros_like(a))


def cho_solve(lower: jax.Array, b: jax.Array) -> jax.Array:
    """``x`` with ``L L' x = b`` (forward then backward substitution)."""
    n = lower.shape[0]

    def fwd(i, z):
        return z.at[i].set((b[i] - lower[i] @ z) / lower[i, i])

    def bwd(k, x):
        i = n - 1 - k
        return x.at[i].set((z[i] - lower[:, i] @ x) / lower[i, i])

    with jax.default_matmul_precision("highest"):
        z = jax.lax.fori_loop(0, n, fwd, jnp.zeros_like(b))
        return jax.lax.fori_loop(0, n, bwd, jnp.zeros_like(b))


def solve_spd(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a^-1 b`` for SPD ``a``; a relative jitter of 1e-6 of the mean diagonal keeps f32 pivots positive."""
    jitter = 1e-6 * jnp.mean(jnp.diag(a)) * jnp.eye(a.shape[0], dtype=a.dtype)
    return cho_solve(cholesky(a + jitter), b)


def fit_ridge(x: jax.Array, y: jax.Array, mask: jax.Array, l2: float) -> tuple[jax.Array, jax.Array]:
    """(w f32[F], b f32[]) of ridge regression on the rows of ``x`` (f32[C, F]) with ``mask``."""
    m = mask.astype(x.dtype)
    count = jnp.maximum(jnp.sum(m), 1.0)
    x_mean = jnp.sum(x * m[:, None], axis=0) / count
    y_mean = jnp.sum(jnp.where(mask, y, 0.0)) / count
    xc = (x - x_mean) * m[:, None]
    yc = jnp.where(mask, y - y_mean, 0.0)
    c, f = x.shape
    with jax.default_matmul_precision("highest"):  # full float32 products on GPUs too (no TF32 rounding)
        if f <= c:
            w = solve_spd(xc.T @ xc + l2 * jnp.eye(f, dtype=x.dtype), xc.T @ yc)
        else:
            alpha = solve_spd(xc @ xc.T + l2 * jnp.eye(c, dtype=x.dtype), yc)
            w = xc.T @ alpha
        return w, y_mean - x_mean @ w


def predict_ridge(w: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.matmul(x, w, precision="highest") + b
