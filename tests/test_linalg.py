"""surrogates/linalg.py (LAPACK-free Cholesky, solves, Gaussian NLL) against float64 numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from surrogates import linalg as la


def _spd(n, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, n + 2))
    return x @ x.T / n + noise * np.eye(n)


@jax.jit
def _all(a, b):
    chol, inv = la.cholesky_with_inverse(a)
    return {
        "chol": chol,
        "inv": inv,
        "tri_inv": la.triangular_inverse(chol),
        "solve": la.solve_triangular(chol, b),
        "solve_t": la.solve_triangular(chol, b, trans=True),
        "cho_solve": la.cho_solve(chol, b),
        "cho_solve_vec": la.cho_solve(chol, b[:, 0]),
    }


@pytest.mark.parametrize("n", [1, 5, 16, 37, 100])  # base block, one block, non-powers of two, recursion
def test_factor_and_solves_match_float64_numpy(n):
    a = _spd(n, seed=n)
    b = np.random.default_rng(1).normal(size=(n, 3))
    out = jax.tree.map(np.asarray, _all(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)))
    chol = np.linalg.cholesky(a)
    inv = np.linalg.inv(chol)
    want = {
        "chol": chol,
        "inv": inv,
        "tri_inv": inv,
        "solve": inv @ b,
        "solve_t": inv.T @ b,
        "cho_solve": np.linalg.solve(a, b),
        "cho_solve_vec": np.linalg.solve(a, b[:, 0]),
    }
    for k, w in want.items():
        err = np.max(np.abs(out[k] - w)) / np.max(np.abs(w))
        assert err < 2e-6, (k, err)  # float32 rounding (cond(a) ~ 1e2)
    assert np.all(np.triu(out["chol"], 1) == 0) and np.all(np.triu(out["inv"], 1) == 0)


def _np_nll(k, y):
    sign, logdet = np.linalg.slogdet(k)
    assert sign > 0
    return 0.5 * y @ np.linalg.solve(k, y) + 0.5 * logdet + 0.5 * len(y) * np.log(2 * np.pi)


nll_and_grad = jax.jit(jax.value_and_grad(la.gaussian_nll, argnums=(0, 1)))


def test_nll_value_and_gradient_match_float64_numpy():
    n = 45
    k = _spd(n, seed=3)
    y = np.random.default_rng(4).normal(size=n)
    value, (g_k, g_y) = nll_and_grad(jnp.asarray(k, jnp.float32), jnp.asarray(y, jnp.float32), jnp.ones(n, bool))
    assert float(value) == pytest.approx(_np_nll(k, y), rel=1e-6)
    k_inv = np.linalg.inv(k)
    alpha = k_inv @ y
    want = 0.5 * (k_inv - np.outer(alpha, alpha))
    np.testing.assert_allclose(g_k, want, atol=1e-5 * np.abs(want).max())  # float32, cond(K) ~ 40
    np.testing.assert_allclose(g_y, alpha, rtol=1e-5, atol=1e-6 * np.abs(alpha).max())
    # the gradient is that of a symmetric K: central differences of the float64 NLL along symmetric directions
    rng = np.random.default_rng(5)
    for _ in range(3):
        e = rng.normal(size=(n, n))
        e = e + e.T
        h = 1e-5
        fd = (_np_nll(k + h * e, y) - _np_nll(k - h * e, y)) / (2 * h)
        assert float(np.sum(np.asarray(g_k, np.float64) * e)) == pytest.approx(fd, rel=1e-4)


def test_hyperparameter_gradient_matches_finite_differences():
    """Gradient through K(theta) (amplitude, length scale, noise), as the GP fit uses it."""
    rng = np.random.default_rng(6)
    x = rng.integers(0, 2, (30, 8)).astype(np.float64)
    d = np.abs(x[:, None] - x[None]).sum(-1)
    y = rng.normal(size=30)

    def gram(theta, xp):
        return xp.exp(theta[1]) * xp.exp(-d / xp.exp(theta[0])) + xp.exp(theta[2]) * xp.eye(30)

    theta = np.array([0.7, 0.2, -2.0])
    g = jax.jit(jax.grad(lambda t: la.gaussian_nll(gram(t, jnp).astype(jnp.float32), jnp.float32(y), jnp.ones(30, bool))))
    g = np.asarray(g(jnp.asarray(theta, jnp.float32)))
    for i in range(3):
        e = np.eye(3)[i] * 1e-6
        fd = (_np_nll(gram(theta + e, np), y) - _np_nll(gram(theta - e, np), y)) / 2e-6
        assert g[i] == pytest.approx(fd, rel=1e-3, abs=1e-3)


def test_padded_rows_change_nothing():
    n, p = 23, 40
    k = _spd(n, seed=7)
    y = np.random.default_rng(8).normal(size=n)
    kp = np.random.default_rng(9).normal(size=(p, p))  # garbage in the padded rows and columns
    kp[:n, :n] = k
    yp = np.concatenate([y, np.full(p - n, 1e3)])
    mask = np.arange(p) < n
    v, (gk, gy) = nll_and_grad(jnp.float32(k), jnp.float32(y), jnp.ones(n, bool))
    vp, (gkp, gyp) = nll_and_grad(jnp.float32(kp), jnp.float32(yp), jnp.asarray(mask))
    assert float(vp) == pytest.approx(float(v), rel=1e-6)
    np.testing.assert_allclose(gkp[:n, :n], gk, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gyp[:n], gy, rtol=1e-5, atol=1e-6)
    assert np.all(np.asarray(gkp)[~(mask[:, None] & mask[None, :])] == 0) and np.all(np.asarray(gyp)[n:] == 0)


def test_nearly_singular_matrix_gives_finite_factor_value_and_gradient():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(40, 3))
    k = x @ x.T  # rank 3: LAPACK's Cholesky fails (NaN) on it in float32
    k[5] = k[6]
    k[:, 5] = k[:, 6]  # two equal rows as well
    y = rng.normal(size=40)
    kj = jnp.float32(k)
    chol = np.asarray(jax.jit(la.cholesky)(kj), np.float64)
    assert np.all(np.isfinite(chol))
    floor = float(la.pivot_floor(kj))
    # the factor is that of K plus at most the pivot floor on the diagonal
    assert np.max(np.abs(chol @ chol.T - k)) < 1e-5 * np.abs(k).max() + floor
    value, (g_k, g_y) = nll_and_grad(kj, jnp.float32(y), jnp.ones(40, bool))
    assert np.isfinite(float(value)) and np.all(np.isfinite(g_k)) and np.all(np.isfinite(g_y))


def test_vmap_equals_one_matrix_at_a_time():
    mats = np.stack([_spd(20, seed=s) for s in range(6)]).astype(np.float32)
    ys = np.random.default_rng(11).normal(size=(6, 20)).astype(np.float32)
    masks = np.arange(20)[None, :] < np.array([20, 19, 15, 20, 3, 11])[:, None]
    vb, (gb, _) = jax.jit(jax.vmap(jax.value_and_grad(la.gaussian_nll, argnums=(0, 1))))(mats, ys, masks)
    cb = jax.jit(jax.vmap(la.cholesky))(mats)
    for i in range(6):
        v, (g, _) = nll_and_grad(mats[i], ys[i], masks[i])
        assert float(vb[i]) == pytest.approx(float(v), rel=1e-6)
        np.testing.assert_allclose(gb[i], g, atol=1e-5 * np.abs(g).max())  # another program: float32 rounding
        np.testing.assert_allclose(cb[i], np.linalg.cholesky(mats[i].astype(np.float64)), atol=1e-5)


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match="square"):
        la.cholesky(jnp.ones((3, 4)))
    with pytest.raises(ValueError, match=r"K\[n, n\], y\[n\], mask\[n\]"):
        la.gaussian_nll(jnp.eye(3), jnp.ones(4), jnp.ones(3, bool))
    with pytest.raises(ValueError, match="rows"):
        la.solve_triangular(jnp.eye(3), jnp.ones(4))
