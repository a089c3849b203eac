"""The Laplace log-normal mechanism: distribution, parameters, guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import mechanisms
from mechanisms.noise.laws import StandardLaplaceLogNormal
from mechanisms.noise.zcdp import cdp_epsilon_for, zcdp_to_dp
from mechanisms.smooth.laplace_ln_tuning import (
    SIGMA_MAX,
    optimal_parameters,
    optimal_sigma,
    t_for_sigma,
)
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity


def quad_cdf(z: float, sigma: float) -> float:
    """``P(X e^{σY} <= z) = ∫ φ(y) F_Lap(z e^{-σy}) dy`` by adaptive quadrature."""

    def integrand(y: float) -> float:
        w = z * math.exp(-sigma * y)
        lap = 0.5 * math.exp(w) if w < 0 else 1.0 - 0.5 * math.exp(-w)
        return math.exp(stats.norm.logpdf(y)) * lap

    points = [0.0]
    if z != 0 and sigma > 0 and abs(math.log(abs(z))) < 39 * sigma:
        points.append(math.log(abs(z)) / sigma)  # where the integrand turns over
    value, _ = integrate.quad(
        integrand, -40, 40, points=points, epsabs=1e-14, epsrel=1e-13, limit=500
    )
    return value


@pytest.mark.parametrize("sigma", [0.0, 0.05, 0.4, 1.0, SIGMA_MAX])
def test_cdf_matches_adaptive_quadrature(sigma):
    zs = np.concatenate((-np.geomspace(1e-6, 1e4, 13), [0.0], np.geomspace(1e-6, 1e4, 13)))
    noise = StandardLaplaceLogNormal(sigma)
    reference = np.array([quad_cdf(float(z), sigma) for z in zs])
    np.testing.assert_allclose(noise.cdf(zs), reference, rtol=0, atol=1e-10)


def test_cdf_limits_and_symmetry():
    noise = StandardLaplaceLogNormal(0.7)
    z = np.array([-np.inf, -1e300, -3.0, 0.0, 3.0, 1e300, np.inf])
    cdf = noise.cdf(z)
    np.testing.assert_allclose(cdf[[0, 1, 3, 5, 6]], [0, 0, 0.5, 1, 1], atol=1e-15)
    assert cdf[2] == pytest.approx(1 - cdf[4], abs=1e-15)


@pytest.mark.parametrize("sigma", [0.3, 1.5])
def test_sampler_matches_cdf_by_kolmogorov_smirnov(sigma):
    noise = StandardLaplaceLogNormal(sigma)
    draws = noise.sample(200_000, np.random.default_rng(11))
    assert stats.kstest(draws, noise.cdf).pvalue > 1e-3
    assert np.var(draws) == pytest.approx(2 * math.exp(2 * sigma**2), rel=0.1 if sigma < 1 else 0.6)


def test_sigma_outside_the_supported_range_is_rejected():
    with pytest.raises(ValueError, match="sigma"):
        StandardLaplaceLogNormal(SIGMA_MAX * 1.01)


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 3.0])
def test_optimal_sigma_is_the_positive_root_of_the_cubic(epsilon):
    """Bun & Steinke 2019 sec. 3.1.1: 5(ε/t)σ³ - 5σ² - 1 = 0, as dp_multiq solves it."""
    for t in [1e-9, 1e-4 * epsilon, 0.1 * epsilon, 1.5 * epsilon]:
        roots = np.roots([5 * epsilon / t, -5, 0, -1])
        positive = roots[(abs(roots.imag) < 1e-9) & (roots.real > 0)].real
        assert float(optimal_sigma(t, epsilon)) == pytest.approx(positive.max(), rel=1e-10)
    sigmas = np.array([0.1, 0.5, 2.0])
    np.testing.assert_allclose(
        optimal_sigma(t_for_sigma(sigmas, epsilon), epsilon), sigmas, rtol=1e-12
    )


def noise_sd(ss: QuantileSmoothSensitivity, t, sigma, epsilon: float) -> np.ndarray:
    """√2·e^{σ²}·SS_t/s with s = e^{-3σ²/2}(ε - t/σ) (Bun & Steinke 2019, sec. 3.1.1)."""
    t, sigma = np.atleast_1d(t), np.atleast_1d(sigma)
    log_ss = np.concatenate([ss.log(t[i : i + 500]) for i in range(0, t.size, 500)])
    s = np.exp(-1.5 * sigma**2) * (epsilon - t / sigma)
    return math.sqrt(2) * np.exp(sigma**2 + log_ss) / s


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 2.0])
@pytest.mark.parametrize(("seed", "alpha"), [(0, 0.5), (1, 0.5), (2, 0.25)])
def test_oracle_parameters_satisfy_the_budget_and_beat_a_grid(epsilon, seed, alpha):
    x = np.sort(np.clip(np.random.default_rng(seed).normal(size=1000), -10, 10))
    ss = QuantileSmoothSensitivity(x, -10, 10, alpha=alpha)
    p = optimal_parameters(ss, epsilon)
    assert p.t / p.sigma + math.exp(1.5 * p.sigma**2) * p.s == pytest.approx(epsilon, rel=1e-12)
    best = noise_sd(ss, p.t, p.sigma, epsilon)[0]
    # O(n log² n) per t for α ≠ 1/2 (the median's A(k) are cached): a coarser grid
    size = 20_000 if alpha == 0.5 else 300
    ts = np.geomspace(1e-5 * epsilon, float(t_for_sigma(SIGMA_MAX, epsilon)), size)
    grid = noise_sd(ss, ts, optimal_sigma(ts, epsilon), epsilon).min()
    assert best <= grid * (1 + 1e-8)
    for factor in (0.97, 1.03):  # σ is optimal for the chosen t
        assert noise_sd(ss, p.t, p.sigma * factor, epsilon)[0] > best


@pytest.mark.parametrize(("alpha", "index"), [(0.5, 499), (0.1, 99), (0.9, 899)])
def test_release_uses_the_parameters_and_clips(alpha, index):
    x = np.random.default_rng(3).normal(size=999)
    mechanism = mechanisms.make("laplace_ln", epsilon=1.0, delta=1e-3, tuning="oracle", alpha=alpha)
    release = mechanism.release(x, (-10, 10))
    p = release.parameters
    ss = QuantileSmoothSensitivity(np.sort(x), -10, 10, alpha=alpha)
    assert release.scale == pytest.approx(float(ss(p["beta"])) / p["alpha"], rel=1e-12)
    assert release.true_value == np.sort(x)[index]  # x_(ceil(999α))
    draws = release.sample(2000, np.random.default_rng(0))
    assert draws.min() >= -10 and draws.max() <= 10


def test_conversion_to_approximate_dp():
    """ρ-zCDP ⇒ (ρ + 2√(ρ log 1/δ), δ)-DP; for ρ = ε²/2: ε²/2 + ε√(2 log 1/δ)."""
    epsilon, delta = 1.0, 1e-3
    expected = 0.5 + math.sqrt(2 * math.log(1e3))
    assert zcdp_to_dp(0.5 * epsilon**2, delta) == pytest.approx(expected, rel=1e-14)
    for target in (0.1, 1.0, 2.0, 50.0):
        cdp = cdp_epsilon_for(target, 1e-6)
        assert zcdp_to_dp(0.5 * cdp**2, 1e-6) == pytest.approx(target, rel=1e-12)


def test_guarantee_reports_rho_and_the_converted_epsilon():
    g = mechanisms.make("laplace_ln", epsilon=1.0, delta=1e-3).guarantee
    assert g.kind == "zcdp"
    assert g.rho == 0.5
    assert g.delta == 1e-3
    assert g.epsilon == pytest.approx(0.5 + math.sqrt(2 * math.log(1e3)))
    assert g.epsilon > 4  # much larger than the nominal ε = 1
    matched = mechanisms.make("laplace_ln", epsilon=1.0, delta=1e-3, target="approx_dp")
    assert matched.guarantee.epsilon == pytest.approx(1.0, rel=1e-12)
    assert matched.guarantee.rho < 0.5


def test_bad_target_is_rejected():
    with pytest.raises(ValueError, match="target"):
        mechanisms.make("laplace_ln", epsilon=1.0, delta=1e-3, target="pure")
