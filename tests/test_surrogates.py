"""MLP ensemble, exact GP, kernels and bucketed padding: exact checks plus small real fits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from surrogates import gp as gpm
from surrogates.kernels import hamming_distance, kernel_matrix
from surrogates.mlp_ensemble import MLPEnsembleConfig, adam_step, ensemble_mean_std, fit_ensemble, predict_ensemble
from surrogates.padding import bucket_size

CFG = MLPEnsembleConfig(num_members=3, num_layers=3, width=16, epochs=60)


def _data(n=160, f=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, (n, f)).astype(np.float32)
    y = (x @ rng.normal(size=f) + 0.05 * rng.normal(size=n)).astype(np.float32) * 2 + 80
    return x, y


def _pad(x, y, p):
    n = x.shape[0]
    xp = np.concatenate([x, np.full((p - n, x.shape[1]), 7.0, np.float32)])
    yp = np.concatenate([y, np.full(p - n, -1e4, np.float32)])
    return xp, yp, np.arange(p) < n


fit = jax.jit(fit_ensemble, static_argnums=(4,))


def test_mlp_padding_does_not_change_the_fit():
    x, y = _data()
    p1 = fit(jax.random.PRNGKey(0), x[:50], y[:50], np.ones(50, bool), CFG)
    p2 = fit(jax.random.PRNGKey(0), *_pad(x[:50], y[:50], 96), CFG)
    a, b = predict_ensemble(p1, x[100:], CFG), predict_ensemble(p2, x[100:], CFG)
    assert a.shape == (3, 60)
    np.testing.assert_allclose(a, b, atol=1e-3)  # same rows, same order, same steps: float rounding only


def test_mlp_ensemble_learns_and_members_differ():
    x, y = _data()
    params = fit(jax.random.PRNGKey(1), x[:100], y[:100], np.ones(100, bool), CFG)
    preds = predict_ensemble(params, x[100:], CFG)
    mean, std = ensemble_mean_std(preds)
    mae = float(jnp.mean(jnp.abs(mean - y[100:])))
    assert mae < 0.35 * float(np.mean(np.abs(y[100:] - y[:100].mean())))  # far better than the constant
    assert float(jnp.mean(std)) > 1e-3  # own init + own data order per member


def test_mlp_weights_mask_out_examples():
    x, y = _data()
    yb = y.copy()
    yb[:40] += 50.0  # corrupted targets, weight 0
    w = np.ones(100, np.float32)
    w[:40] = 0.0
    mask = np.ones(100, bool)
    clean = predict_ensemble(fit(jax.random.PRNGKey(2), x[:100], yb[:100], mask, CFG, w), x[100:], CFG).mean(0)
    dirty = predict_ensemble(fit(jax.random.PRNGKey(2), x[:100], yb[:100], mask, CFG), x[100:], CFG).mean(0)
    assert float(jnp.mean(jnp.abs(clean - y[100:]))) < 0.25 * float(jnp.mean(jnp.abs(dirty - y[100:])))


def test_mlp_warm_start_continues_from_given_params():
    x, y = _data()
    mask = np.ones(100, bool)
    first = fit(jax.random.PRNGKey(3), x[:60], y[:60], np.ones(60, bool), CFG)
    # zero epochs from a warm start: the given layers, unchanged
    same = fit(jax.random.PRNGKey(4), x[:100], y[:100], mask, CFG, None, first, jnp.int32(0))
    jax.tree_util.tree_map(np.testing.assert_array_equal, same["layers"], first["layers"])
    # 5 epochs from the earlier fit beat 5 epochs from scratch on held-out rows
    warm = fit(jax.random.PRNGKey(4), x[:100], y[:100], mask, CFG, None, first, jnp.int32(5))
    cold = fit(jax.random.PRNGKey(4), x[:100], y[:100], mask, CFG, None, None, jnp.int32(5))
    mae = lambda p: float(jnp.mean(jnp.abs(predict_ensemble(p, x[100:], CFG).mean(0) - y[100:])))  # noqa: E731
    assert mae(warm) < 0.7 * mae(cold)


def test_fused_adam_step_equals_optax_adam():
    import optax

    params = {"a": jnp.array([1.0, -2.0, 0.5]), "b": jnp.array([[0.3]])}
    opt = optax.adam(0.01, b1=0.9, b2=0.99)
    st = opt.init(params)
    zeros = jax.tree.map(jnp.zeros_like, params)
    mine, m, v = params, zeros, zeros
    ref = params
    for t in range(1, 6):
        grads = jax.tree.map(lambda p, t=t: jnp.sin(3.0 * p + t), ref)
        upd, st = opt.update(grads, st, ref)
        ref = optax.apply_updates(ref, upd)
        mine, m, v = adam_step(mine, jax.tree.map(lambda p, t=t: jnp.sin(3.0 * p + t), mine), m, v, float(t), 0.01)
    for k in params:
        np.testing.assert_allclose(mine[k], ref[k], rtol=1e-6, atol=1e-7)
    assert not np.allclose(mine["a"], params["a"])  # it moved


def test_mlp_config_validates():
    with pytest.raises(ValueError, match="loss"):
        MLPEnsembleConfig(loss="huber")


def test_kernels_hand_values_and_psd():
    a = jnp.asarray([[1, 0, 1, 0], [1, 1, 1, 0], [0, 1, 0, 1]], jnp.float32)
    np.testing.assert_array_equal(hamming_distance(a, a), [[0, 1, 4], [1, 0, 3], [4, 3, 0]])
    k = kernel_matrix("hamming", a, a, 2.0, 1.5)
    np.testing.assert_allclose(k[0, 2], 1.5 * np.exp(-2.0), rtol=1e-6)
    x, _ = _data(60)
    for kind in ("hamming", "rbf", "matern52"):
        ev = np.linalg.eigvalsh(np.asarray(kernel_matrix(kind, x, x, 3.0, 1.0), np.float64))
        assert ev.min() > -1e-4, kind


def _numpy_nll(theta, x, ys, cfg):
    ls, amp, noise = (float(v) for v in gpm._hyper(theta, cfg))
    k = np.asarray(kernel_matrix(cfg.kernel, x, x, ls, amp), np.float64) + (noise + cfg.jitter) * np.eye(len(x))
    _, logdet = np.linalg.slogdet(k)
    return 0.5 * ys @ np.linalg.solve(k, ys) + 0.5 * logdet + 0.5 * len(x) * np.log(2 * np.pi)


def test_gp_likelihood_exact_and_padding_invariant():
    cfg = gpm.GPConfig(kernel="hamming")
    x, y = _data(40)
    ys = (y - y.mean()) / y.std()
    theta = {"log_ls": jnp.log(3.0), "log_amp": jnp.float32(0.2), "log_noise": jnp.log(0.05)}
    nll_fn = jax.jit(gpm.neg_log_marginal_likelihood, static_argnums=(4,))
    grad_fn = jax.jit(jax.grad(gpm.neg_log_marginal_likelihood), static_argnums=(4,))
    nll = float(nll_fn(theta, x, ys, np.ones(40, bool), cfg))
    assert nll == pytest.approx(_numpy_nll(theta, x, ys, cfg), rel=1e-4)
    xp, yp, mp = _pad(x, ys, 64)
    nll_p = float(nll_fn(theta, xp, yp, mp, cfg))
    assert nll_p == pytest.approx(nll, rel=1e-5)
    g1 = grad_fn(theta, x, ys, np.ones(40, bool), cfg)
    g2 = grad_fn(theta, xp, yp, mp, cfg)
    for k in g1:
        assert float(g2[k]) == pytest.approx(float(g1[k]), rel=1e-3, abs=1e-4)


@pytest.mark.slow  # fits a GP's hyperparameters (model training)
def test_gp_fit_posterior_padded_equals_unpadded_and_numpy():
    cfg = gpm.GPConfig(kernel="hamming", fit_steps=50)
    x, y = _data(80)
    f = jax.jit(gpm.fit_gp, static_argnums=(3,))
    p1 = f(x[:50], y[:50], np.ones(50, bool), cfg)
    p2 = f(*_pad(x[:50], y[:50], 64), cfg)
    m1, s1 = gpm.gp_posterior(p1, x[50:], cfg)
    m2, s2 = gpm.gp_posterior(p2, x[50:], cfg)
    np.testing.assert_allclose(m1, m2, rtol=1e-4)
    np.testing.assert_allclose(s1, s2, rtol=1e-3, atol=1e-4)
    # closed-form posterior (R&W eqs. 2.25-2.26) in float64
    ls, amp, noise = (float(v) for v in gpm._hyper(p1["theta"], cfg))
    kk = np.asarray(kernel_matrix("hamming", x[:50], x[:50], ls, amp), np.float64) + (noise + cfg.jitter) * np.eye(50)
    ks = np.asarray(kernel_matrix("hamming", x[:50], x[50:], ls, amp), np.float64)
    ys = (y[:50] - y[:50].mean()) / y[:50].std()
    mean = ks.T @ np.linalg.solve(kk, ys) * y[:50].std() + y[:50].mean()
    var = amp - np.sum(ks * np.linalg.solve(kk, ks), 0)
    np.testing.assert_allclose(m1, mean, rtol=1e-4)
    np.testing.assert_allclose(s1, np.sqrt(np.maximum(var, 0)) * y[:50].std(), rtol=1e-2, atol=1e-3)
    # the fitted model predicts held-out points better than the mean
    assert float(jnp.mean(jnp.abs(m1 - y[50:]))) < 0.5 * float(np.mean(np.abs(y[50:] - y[:50].mean())))


@pytest.mark.slow  # fits a GP's hyperparameters (model training)
def test_gp_fit_improves_likelihood_and_sample_shapes():
    cfg = gpm.GPConfig(kernel="rbf", fit_steps=60)
    x, y = _data(50, seed=3)
    mask = np.ones(50, bool)
    ys, _, _ = gpm.standardize(jnp.asarray(y), mask)
    before = gpm.neg_log_marginal_likelihood(gpm.init_theta(x, mask, cfg), x, ys, mask, cfg)
    params = gpm.fit_gp(x, y, mask, cfg)
    after = gpm.neg_log_marginal_likelihood(params["theta"], x, ys, mask, cfg)
    assert float(after) < float(before)
    s = gpm.gp_posterior_sample(jax.random.PRNGKey(0), params, x[:7], cfg)
    assert s.shape == (7,) and np.all(np.isfinite(np.asarray(s)))


def test_bucket_size():
    assert [bucket_size(n, 150) for n in (0, 1, 10, 32, 33, 140, 150)] == [0, 32, 32, 32, 64, 150, 150]
    assert bucket_size(10, 150, multiple=16) == 16
    with pytest.raises(ValueError):
        bucket_size(151, 150)
