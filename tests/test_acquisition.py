"""Acquisition functions (BANANAS appendix B) against closed forms, quadrature and Monte Carlo."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from surrogates import acquisition as acq
from surrogates.mlp_ensemble import ensemble_mean_std

CASES = [(0.3, 1.0, 0.0), (-1.0, 0.5, 0.2), (2.0, 0.1, 1.0), (91.2, 0.7, 92.0), (0.0, 3.0, -4.0)]


def _quad_ei_pi(mean, std, best):
    """EI = int_best^inf (y - best) N(y) dy and PI = int_best^inf N(y) dy by the trapezoid rule."""
    y = np.linspace(mean - 12 * std, mean + 12 * std, 400001)
    dens = np.exp(-0.5 * ((y - mean) / std) ** 2) / (std * np.sqrt(2 * np.pi))
    up = y > best
    return np.trapezoid(np.where(up, (y - best) * dens, 0.0), y), np.trapezoid(np.where(up, dens, 0.0), y)


@pytest.mark.parametrize("mean,std,best", CASES)
def test_ei_pi_equal_numerical_integration(mean, std, best):
    ei_q, pi_q = _quad_ei_pi(mean, std, best)
    ei = float(acq.expected_improvement(jnp.float32(mean), jnp.float32(std), jnp.float32(best)))
    pi = float(acq.probability_of_improvement(jnp.float32(mean), jnp.float32(std), jnp.float32(best)))
    assert ei == pytest.approx(ei_q, rel=2e-4, abs=1e-6)
    assert pi == pytest.approx(pi_q, rel=2e-4, abs=1e-6)


def test_hand_computed_values():
    # mean == best: EI = std * phi(0) = std / sqrt(2 pi), PI = 1/2
    assert float(acq.expected_improvement(jnp.float32(1.0), jnp.float32(2.0), jnp.float32(1.0))) == pytest.approx(
        2.0 / np.sqrt(2 * np.pi), rel=1e-6
    )
    assert float(acq.probability_of_improvement(jnp.float32(1.0), jnp.float32(2.0), jnp.float32(1.0))) == 0.5
    # one std above the best: PI = Phi(1) = 0.841344746, EI = 1*Phi(1) + phi(1) = 1.083315470
    assert float(acq.probability_of_improvement(jnp.float32(1.0), jnp.float32(1.0), jnp.float32(0.0))) == pytest.approx(
        0.841344746, rel=1e-6
    )
    assert float(acq.expected_improvement(jnp.float32(1.0), jnp.float32(1.0), jnp.float32(0.0))) == pytest.approx(
        1.083315470, rel=1e-6
    )
    # a point mass: EI = max(mean - best, 0), PI = 1[mean > best]
    z = jnp.float32(0.0)
    assert float(acq.expected_improvement(jnp.float32(3.0), z, jnp.float32(1.0))) == 2.0
    assert float(acq.expected_improvement(jnp.float32(0.0), z, jnp.float32(1.0))) == 0.0
    assert float(acq.probability_of_improvement(jnp.float32(0.0), z, jnp.float32(1.0))) == 0.0
    # UCB (maximization form of eq. 1) and its minimization twin, beta = 0.5
    assert float(acq.ucb(jnp.float32(90.0), jnp.float32(2.0))) == 91.0
    assert float(acq.lcb(jnp.float32(90.0), jnp.float32(2.0))) == 89.0


def test_ei_monte_carlo_and_monotonic():
    key = jax.random.PRNGKey(0)
    mean, std, best = 0.4, 1.3, 1.0
    f = mean + std * np.asarray(jax.random.normal(key, (2_000_000,)))
    mc = np.mean(np.maximum(f - best, 0.0))
    ei = float(acq.expected_improvement(jnp.float32(mean), jnp.float32(std), jnp.float32(best)))
    assert ei == pytest.approx(mc, rel=5e-3)
    # EI increases with the mean and (for fixed mean) with the std
    ms = jnp.linspace(-2, 2, 50)
    assert np.all(np.diff(np.asarray(acq.expected_improvement(ms, jnp.ones(50), jnp.float32(0.0)))) > 0)
    ss = jnp.linspace(0.1, 3, 50)
    assert np.all(np.diff(np.asarray(acq.expected_improvement(jnp.zeros(50), ss, jnp.float32(0.5)))) > 0)


def test_ensemble_mean_std_is_the_papers():
    preds = np.random.default_rng(0).normal(size=(5, 7)).astype(np.float32)
    mean, std = ensemble_mean_std(jnp.asarray(preds))
    np.testing.assert_allclose(mean, preds.mean(0), rtol=1e-6)
    np.testing.assert_allclose(std, preds.std(0, ddof=1), rtol=1e-5)  # M - 1 denominator


def test_thompson_picks_one_whole_member_uniformly():
    members = jnp.asarray(np.arange(20, dtype=np.float32).reshape(4, 5))
    picks = []
    for i in range(400):
        out = np.asarray(acq.thompson(jax.random.PRNGKey(i), members))
        row = np.flatnonzero(np.all(np.asarray(members) == out, axis=1))
        assert len(row) == 1  # one member's full prediction vector, not a mix
        picks.append(row[0])
    counts = np.bincount(picks, minlength=4)
    assert counts.min() > 60  # each of 4 members ~100 times


def test_independent_thompson_is_per_candidate_gaussian():
    mean = jnp.asarray([0.0, 5.0, -2.0])
    std = jnp.asarray([1.0, 0.1, 2.0])
    draws = jax.vmap(lambda k: acq.independent_thompson(k, mean, std))(jax.random.split(jax.random.PRNGKey(1), 20000))
    d = np.asarray(draws)
    np.testing.assert_allclose(d.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(d.std(0), std, rtol=0.03)
    assert abs(np.corrcoef(d[:, 0], d[:, 2])[0, 1]) < 0.03  # independent across candidates


def test_unknown_acquisition_fails_clearly():
    with pytest.raises(ValueError, match="unknown acquisition"):
        acq.acquisition_scores("bogus", jax.random.PRNGKey(0), jnp.zeros(3), jnp.ones(3), 0.0)
    with pytest.raises(ValueError, match="needs member predictions"):
        acq.acquisition_scores("ts", jax.random.PRNGKey(0), jnp.zeros(3), jnp.ones(3), 0.0)
