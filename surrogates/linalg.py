"""Cholesky factorization, triangular solves and the Gaussian negative log likelihood in plain JAX.

Why not ``jnp.linalg``: on the CPU, ``jnp.linalg.cholesky`` / ``solve_triangular`` under ``vmap``
become jaxlib's batched LAPACK custom calls, which deadlocked in ``jax::ParallelBatchMap`` (gdb:
``BlockingCounter::Wait`` with an idle pool) in 100-seed GP-BO runs, always when the seeds were
split over 2 CPU devices and sometimes on one. The functions here use only matmuls, elementwise
ops, static slices and small ``fori_loop`` s, so XLA compiles them like any other code: no custom
call, nothing that can hang. GPUs and TPUs run the same code (no backend switch): one algorithm
gives the same numbers on every backend up to matmul rounding (every matmul asks for
``Precision.HIGHEST``, so GPUs do not round to TF32) and the same behaviour on singular input
(below), where LAPACK/cuSOLVER return NaN. At the sizes used here (n <= ~300, 100+ seeds batched)
the work is a few dozen batched matmuls per factorization.

Algorithm: blocked right-looking Cholesky (Golub & Van Loan 2013, Algorithm 4.2.2, with blocks of
``BASE`` columns) that also builds ``M = L^-1``. For each block of columns ``J`` (static offsets,
so every shape is static and nothing is computed on padding):

    panel   [A_JJ; A_IJ]  ->  [L_JJ; L_IJ]  by BASE elimination steps on the panel (a fori_loop;
                                for the rows below, this is forward substitution with L_JJ)
    trailing A_II -= L_IJ L_IJ^T                                   (a matmul)
    M_J,<J = -M_JJ (L_J,<J M_<J,<J),   M_JJ = L_JJ^-1              (matmuls; M_JJ from the loop)

``n^3/3`` flops for ``L`` and ``n^3/3`` for ``M``, almost all in matmuls; ``M`` gives
``K^-1 = M^T M`` for the likelihood gradient and makes the GP posterior's solves matmuls.

Singular input (Gill, Murray & Wright 1981, section 4.4.2.2, "modified Cholesky"): pivot ``j``
is ``d_j = max(c_jj, delta, max_i>j c_ij^2 / gamma)`` with ``c`` the partially eliminated
matrix, ``gamma = max |diag A|`` and ``delta = n eps gamma`` (the rounding error of the
factorization itself). For a matrix that is numerically positive definite this is the plain
pivot ``c_jj`` (then ``c_ij^2 <= c_ii c_jj <= gamma c_jj``); otherwise the factor is that of
``A + E`` with ``E`` diagonal, ``E >= 0``, and ``|L_ij| <= sqrt(gamma)``: finite, never NaN
(LAPACK returns NaN, whose gradient poisoned the GP's hyperparameters).

``gaussian_nll(K, y, mask)``: ``1/2 y^T K^-1 y + 1/2 log det K + n/2 log 2 pi`` (Rasmussen &
Williams 2006, eq. 2.30) with a custom VJP ``dNLL/dK = 1/2 (K^-1 - alpha alpha^T)``,
``dNLL/dy = alpha = K^-1 y`` (eq. 5.9) instead of differentiating through the factorization.
Padded rows (``mask`` False) get an identity block in ``K`` and a zero target and do not count in
``n``, so the value and the gradient are those of the real rows alone.

All functions take one matrix (callers ``vmap``) in any float dtype.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BASE = 32  # columns per block: panels of 32 steps, the rest in matmuls
_HIGHEST = jax.lax.Precision.HIGHEST


def _mm(a, b):
    return jnp.matmul(a, b, precision=_HIGHEST)


def _check_square(name, a):
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} expects one square matrix [n, n] (vmap for batches), got shape {a.shape}")


def pivot_floor(a: jax.Array) -> jax.Array:
    """``delta = n eps max |diag a|``: the smallest pivot kept (module docstring)."""
    return a.shape[-1] * jnp.finfo(a.dtype).eps * _gamma(a)


def _gamma(a):
    return jnp.maximum(jnp.max(jnp.abs(jnp.diagonal(a))), jnp.finfo(a.dtype).tiny)


def _panel(p, floor, gamma):
    """``(L panel [m, b], L_JJ^-1 [b, b])`` of a panel ``p = [A_JJ; A_IJ]`` whose earlier columns are
    eliminated: ``b`` left-looking steps. Step ``j`` updates column ``j`` by the columns before it
    (``c = p_j - L_:,<j L_j,<j^T``, a matrix-vector product), takes ``L_:,j = c / sqrt(d_j)`` and
    row ``j`` of ``L_JJ^-1`` by forward substitution."""
    m, b = p.shape
    rows = jnp.arange(m)

    def step(j, carry):
        chol, inv = carry
        c = p[:, j] - _mm(chol, chol[j])  # columns >= j of chol are still zero
        below = rows > j
        theta = jnp.max(jnp.where(below, jnp.abs(c), 0.0))
        root = jnp.sqrt(jnp.maximum(jnp.maximum(c[j], floor), theta * theta / gamma))
        col = jnp.where(below, c / root, jnp.where(rows == j, root, 0.0))
        chol = jax.lax.dynamic_update_slice(chol, col[:, None], (0, j))
        e_j = (rows[:b] == j).astype(p.dtype)
        inv = inv.at[j].set((e_j - _mm(chol[j, :b], inv)) / root)  # rows >= j of inv are still zero
        return chol, inv

    return jax.lax.fori_loop(0, b, step, (jnp.zeros_like(p), jnp.zeros((b, b), p.dtype)))


def _factor(a, with_inverse: bool):
    n = a.shape[0]
    floor, gamma = pivot_floor(a), _gamma(a)
    cols, inv = [], None  # inv: M[:j0, :j0]
    trailing = a
    for j0 in range(0, n, BASE):
        b = min(BASE, n - j0)
        panel, m_jj = _panel(trailing[:, :b], floor, gamma)
        below = panel[b:]
        trailing = trailing[b:, b:] - _mm(below, below.T)
        cols.append(jnp.concatenate([jnp.zeros((j0, b), a.dtype), panel]))
        if with_inverse:
            if inv is None:
                inv = m_jj
            else:
                l_row = jnp.concatenate(cols[:-1], axis=1)[j0 : j0 + b]  # L[J, :j0]
                m_row = jnp.concatenate([-_mm(m_jj, _mm(l_row, inv)), m_jj], axis=1)
                inv = jnp.concatenate([jnp.pad(inv, ((0, 0), (0, b))), m_row])
    return jnp.concatenate(cols, axis=1), inv


def cholesky_with_inverse(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(L, L^-1)``: lower-triangular ``L`` with ``L L^T = (a + a^T) / 2`` (pivots as in the module
    docstring) and its inverse."""
    _check_square("cholesky_with_inverse", a)
    return _factor(0.5 * (a + a.T), with_inverse=True)


def cholesky(a: jax.Array) -> jax.Array:
    """Lower-triangular ``L`` with ``L L^T = (a + a^T) / 2`` (``jnp.linalg.cholesky`` without LAPACK)."""
    _check_square("cholesky", a)
    return _factor(0.5 * (a + a.T), with_inverse=False)[0]


def _substitute(chol, rhs, trans: bool):
    """``L^-1 rhs`` (``L^-T rhs`` with ``trans``) for a small lower-triangular block: row-by-row
    substitution (LAPACK's trsm order, backward stable), a ``fori_loop`` of matrix-vector products."""
    n = chol.shape[0]
    chol = jnp.tril(chol)
    tri = chol.T if trans else chol  # solve tri x = rhs; tri upper with trans (rows from the last)

    def row(k, x):  # rows of x not yet solved are zero, so tri[i] @ x uses the solved ones only
        i = n - 1 - k if trans else k
        return x.at[i].set((rhs[i] - _mm(tri[i], x)) / tri[i, i])

    return jax.lax.fori_loop(0, n, row, jnp.zeros_like(rhs))


def solve_triangular(chol: jax.Array, b: jax.Array, *, trans: bool = False) -> jax.Array:
    """``L^-1 b`` (or ``L^-T b`` with ``trans``) for lower-triangular ``L``; ``b`` is ``[n]`` or ``[n, m]``.

    Blocked substitution: ``L_JJ x_J = b_J - L_J,<J x_<J`` (transposed: from the last block up), the
    off-diagonal blocks in matmuls, the diagonal blocks by row substitution.
    """
    _check_square("solve_triangular", chol)
    if b.shape[0] != chol.shape[0]:
        raise ValueError(f"solve_triangular: b has {b.shape[0]} rows, the factor {chol.shape[0]}")
    n = chol.shape[0]
    starts = list(range(0, n, BASE))
    xs = {}
    for j0 in reversed(starts) if trans else starts:
        j1 = min(j0 + BASE, n)
        rhs = b[j0:j1]
        if trans and j1 < n:
            rhs = rhs - _mm(chol[j1:, j0:j1].T, jnp.concatenate([xs[s] for s in starts if s >= j1]))
        if not trans and j0 > 0:
            rhs = rhs - _mm(chol[j0:j1, :j0], jnp.concatenate([xs[s] for s in starts if s < j0]))
        xs[j0] = _substitute(chol[j0:j1, j0:j1], rhs, trans)
    return jnp.concatenate([xs[s] for s in starts])


def triangular_inverse(chol: jax.Array) -> jax.Array:
    """``L^-1`` of a lower-triangular ``L``."""
    return solve_triangular(chol, jnp.eye(chol.shape[0], dtype=chol.dtype))


def cho_solve(chol: jax.Array, b: jax.Array) -> jax.Array:
    """``A^-1 b`` from ``L = cholesky(A)`` (``jax.scipy.linalg.cho_solve((L, True), b)``)."""
    return solve_triangular(chol, solve_triangular(chol, b), trans=True)


@jax.custom_vjp
def _quad_logdet(k, y):
    """``1/2 y^T K^-1 y + 1/2 log det K`` (custom VJP: R&W eq. 5.9)."""
    return _quad_logdet_fwd(k, y)[0]


def _quad_logdet_fwd(k, y):
    chol, inv = cholesky_with_inverse(k)
    alpha = _mm(inv.T, _mm(inv, y))
    value = 0.5 * jnp.dot(y, alpha, precision=_HIGHEST) + jnp.sum(jnp.log(jnp.diagonal(chol)))
    return value, (inv, alpha)


def _quad_logdet_bwd(res, g):
    inv, alpha = res
    k_inv = _mm(inv.T, inv)
    return g * 0.5 * (k_inv - alpha[:, None] * alpha[None, :]), g * alpha


_quad_logdet.defvjp(_quad_logdet_fwd, _quad_logdet_bwd)


def masked_gram(k: jax.Array, mask: jax.Array) -> jax.Array:
    """``k`` with the rows and columns of padded entries (``mask`` False) replaced by the identity."""
    both = mask[:, None] & mask[None, :]
    return jnp.where(both, k, jnp.eye(k.shape[0], dtype=k.dtype))


def gaussian_nll(k: jax.Array, y: jax.Array, mask: jax.Array) -> jax.Array:
    """``-log N(y | 0, K)`` over the rows where ``mask`` (R&W eq. 2.30); differentiable in ``k`` and ``y``.

    Padded rows: identity block in ``K``, zero target, not counted in ``n/2 log 2 pi``.
    """
    _check_square("gaussian_nll", k)
    if y.shape != (k.shape[0],) or mask.shape != (k.shape[0],):
        raise ValueError(f"gaussian_nll expects K[n, n], y[n], mask[n]; got {k.shape}, {y.shape}, {mask.shape}")
    y = jnp.where(mask, y, 0.0)
    n = jnp.sum(mask).astype(k.dtype)
    return _quad_logdet(masked_gram(k, mask), y) + 0.5 * n * jnp.log(2.0 * jnp.pi).astype(k.dtype)
