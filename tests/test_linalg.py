"""surrogates/linalg.py (LAPACK-free Cholesky, solves, Gaussian NLL) against float64 numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

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


def _kernel_matrix(n, seed, jitter):
    """An ill-conditioned GP Gram matrix: RBF on close 1-d points (cond ~1/jitter) plus jitter."""
    x = np.sort(np.random.default_rng(seed).uniform(0, 1, n))
    return np.exp(-0.5 * (x[:, None] - x[None]) ** 2 / 0.3**2) + jitter * np.eye(n)


@pytest.mark.parametrize("n,jitter", [(37, 1e-6), (100, 1e-10)])
def test_ill_conditioned_with_jitter_matches_numpy_in_float64(n, jitter):
    """The algorithm in float64 (jax x64 mode) equals LAPACK via numpy to float64 rounding."""
    a = _kernel_matrix(n, seed=n, jitter=jitter)
    b = np.random.default_rng(2).normal(size=(n, 2))
    cond, eps = np.linalg.cond(a), np.finfo(np.float64).eps
    assert cond > 0.1 / jitter  # really ill-conditioned
    with jax.enable_x64(True):
        chol, inv = jax.tree.map(np.asarray, jax.jit(la.cholesky_with_inverse)(jnp.asarray(a)))
        sol = np.asarray(jax.jit(la.cho_solve)(jnp.asarray(chol), jnp.asarray(b)))
    assert chol.dtype == np.float64
    want = np.linalg.cholesky(a)
    # backward stable: L L^T = A to n eps |A|; forward: L equals LAPACK's L to cond(A) eps
    assert np.max(np.abs(chol @ chol.T - a)) < 10 * n * eps
    assert np.max(np.abs(chol - want)) < 10 * cond * eps
    # L^-1: L X - I within n cond(L) eps (cond(L) = cond(A)^(1/2)); X L - I as LAPACK's trsm (scipy)
    assert np.max(np.abs(chol @ inv - np.eye(n))) < 10 * n * np.sqrt(cond) * eps
    ref_inv = scipy.linalg.solve_triangular(want, np.eye(n), lower=True)
    assert np.max(np.abs(inv @ chol - np.eye(n))) < 10 * np.max(np.abs(ref_inv @ want - np.eye(n)))
    # cho_solve (blocked substitution): residual as small as LAPACK's potrs (scipy) on numpy's factor
    ref = scipy.linalg.cho_solve((want, True), b)
    resid = np.max(np.abs(a @ sol - b)) / np.max(np.abs(b))
    ref_resid = np.max(np.abs(a @ ref - b)) / np.max(np.abs(b))
    assert resid < 10 * max(ref_resid, n * eps), (resid, ref_resid)
    # A^-1 b through M = L^-1 (the GP's alpha): the forward error of a backward-stable solve, cond(A) eps
    assert np.max(np.abs(inv.T @ (inv @ b) - ref)) < 10 * cond * eps * np.max(np.abs(ref))
    assert np.max(np.abs(sol - ref)) < 10 * cond * eps * np.max(np.abs(ref))


def test_ill_conditioned_with_jitter_in_float32_is_backward_stable():
    """float32 (as the GP runs): the factor of an ill-conditioned Gram matrix with jitter is finite,
    ``L L^T`` equals ``A`` to float32 rounding, and the NLL equals numpy's float64 value."""
    n = 100
    a = _kernel_matrix(n, seed=1, jitter=1e-4)
    y = np.random.default_rng(3).normal(size=n)
    chol = np.asarray(jax.jit(la.cholesky)(jnp.float32(a)), np.float64)
    assert np.all(np.isfinite(chol))
    assert np.max(np.abs(chol @ chol.T - a)) < 10 * n * np.finfo(np.float32).eps
    value = float(jax.jit(la.gaussian_nll)(jnp.float32(a), jnp.float32(y), jnp.ones(n, bool)))
    want = _np_nll(a, y)
    # cond(K) ~ 6e5, y^T K^-1 y ~ 1e6: measured 7e-4 relative (LAPACK in float32: 1e-4)
    assert value == pytest.approx(want, rel=2e-3)


def test_gp_programs_have_no_lapack_call():
    """The vmapped GP fit and posterior lower to plain HLO: no LAPACK custom call that could hang."""
    from surrogates import gp as gpm

    cfg = gpm.GPConfig(kernel="hamming", fit_steps=2)
    x = jnp.zeros((3, 40, 6))
    y = jnp.zeros((3, 40))
    mask = jnp.ones((3, 40), bool)

    def fit_and_predict(key, x, y, mask):
        params = gpm.fit_gp(x, y, mask, cfg)
        return gpm.gp_posterior(params, x[:5], cfg), gpm.gp_posterior_sample(key, params, x[:5], cfg)

    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    text = jax.jit(jax.vmap(fit_and_predict)).lower(keys, x, y, mask).as_text()
    assert "custom_call" not in text, [line for line in text.splitlines() if "custom_call" in line][:3]
    if jax.default_backend() != "cpu":
        pytest.skip("the check's premise (jnp.linalg.cholesky lowers to LAPACK) holds on the CPU only")
    # the check can fail: jnp.linalg.cholesky lowers to a LAPACK custom call on the CPU
    assert "lapack" in jax.jit(jax.vmap(jnp.linalg.cholesky)).lower(jnp.ones((3, 4, 4))).as_text()


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

    def nll(t):
        return la.gaussian_nll(gram(t, jnp).astype(jnp.float32), jnp.float32(y), jnp.ones(30, bool))

    g = jax.jit(jax.grad(nll))
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
