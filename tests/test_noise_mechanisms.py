"""Noise-adding median mechanisms: distributions, parameters, guarantees and input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import mechanisms
from mechanisms.base import Neighbouring
from mechanisms.global_noise import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_delta,
)
from mechanisms.smooth_laplace import alpha_at, beta_limit
from mechanisms.smooth_sensitivity import MedianSmoothSensitivity

CONFIGS = {
    "smooth_cauchy": ("smooth_cauchy", {}),
    "smooth_laplace": ("smooth_laplace", {"delta": 1e-3}),
    "smooth_laplace_oracle": ("smooth_laplace", {"delta": 1e-3, "tuning": "oracle"}),
    "laplace_ln": ("laplace_ln", {"delta": 1e-3}),
    "laplace_ln_oracle": ("laplace_ln", {"delta": 1e-3, "tuning": "oracle"}),
    "laplace_global": ("laplace_global", {}),
    "gaussian_global": ("gaussian_global", {"delta": 1e-3}),
    "gaussian_classical": ("gaussian_global", {"delta": 1e-3, "calibration": "classical"}),
}
PURE = ("smooth_cauchy", "laplace_global")
BOUNDS = (-2.0, 2.0)


def make(key: str, epsilon: float = 0.3, **options):
    name, base = CONFIGS[key]
    return mechanisms.make(name, epsilon=epsilon, **{**base, **options})


def data(seed: int = 0, n: int = 301) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n)


def randomized_pit(release, draws: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``F(x-) + V·(F(x) - F(x-))``: exactly uniform iff ``F`` is the law of ``draws``."""
    upper = release.cdf(draws)
    lower = release.cdf(np.nextafter(draws, -np.inf))
    return lower + rng.uniform(size=draws.size) * (upper - lower)


# ---------------------------------------------------------------------- distribution


@pytest.mark.parametrize("clip_output", [True, False])
@pytest.mark.parametrize("key", list(CONFIGS))
def test_samples_match_the_cdf(key, clip_output):
    release = make(key, clip_output=clip_output).release(data(), BOUNDS)
    draws = release.sample(20_000, np.random.default_rng(1))
    u = randomized_pit(release, draws, np.random.default_rng(2))
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    if clip_output:
        assert draws.min() >= BOUNDS[0] and draws.max() <= BOUNDS[1]


def test_the_pit_check_detects_a_wrong_scale():
    """The test above can fail: a release whose cdf uses 1.2x the sampled scale."""
    release = make("smooth_laplace", clip_output=False).release(data(), BOUNDS)
    wrong = make("smooth_laplace", clip_output=False).release(data(), BOUNDS)
    wrong.scale *= 1.2
    draws = release.sample(20_000, np.random.default_rng(1))
    u = randomized_pit(wrong, draws, np.random.default_rng(2))
    assert stats.kstest(u, "uniform").pvalue < 1e-6


@pytest.mark.parametrize("key", list(CONFIGS))
def test_clipping_atoms_are_the_unclipped_tails(key):
    clipped = make(key).release(data(), BOUNDS)
    free = make(key, clip_output=False).release(data(), BOUNDS)
    a, b = BOUNDS
    below_a, below_b = np.nextafter(a, -np.inf), np.nextafter(b, -np.inf)
    assert clipped.cdf(below_a) == 0.0
    assert clipped.cdf(b) == 1.0
    atom_a = float(clipped.cdf(a) - clipped.cdf(below_a))
    atom_b = float(clipped.cdf(b) - clipped.cdf(below_b))
    assert atom_a == pytest.approx(float(free.cdf(a)), rel=1e-12, abs=1e-300)
    assert atom_b == pytest.approx(1.0 - float(free.cdf(below_b)), rel=1e-9, abs=1e-15)
    draws = clipped.sample(40_000, np.random.default_rng(3))
    for atom, value in ((atom_a, a), (atom_b, b)):
        hits = np.count_nonzero(draws == value)
        assert abs(hits - draws.size * atom) <= 5 * math.sqrt(draws.size * atom * (1 - atom)) + 1


def test_a_scale_that_underflows_gives_the_point_mass():
    release = make("smooth_cauchy", epsilon=50.0).release(np.full(5000, 1.0), BOUNDS)
    assert release.scale == 0.0
    assert np.all(release.sample(100, np.random.default_rng(0)) == 1.0)
    np.testing.assert_array_equal(release.cdf([0.999, 1.0, 1.5]), [0.0, 1.0, 1.0])


# ---------------------------------------------------------------------- parameters


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 2.0])
def test_smooth_cauchy_scale_is_six_ss_over_epsilon(epsilon, neighbours):
    x = data(4)
    release = make("smooth_cauchy", epsilon=epsilon, neighbours=neighbours).release(x, BOUNDS)
    ss = MedianSmoothSensitivity(np.sort(np.clip(x, *BOUNDS)), *BOUNDS, Neighbouring(neighbours))
    assert release.scale == pytest.approx(6 * float(ss(epsilon / 6)) / epsilon, rel=1e-12)
    assert release.parameters["beta"] == release.parameters["alpha"] == pytest.approx(epsilon / 6)


@pytest.mark.parametrize("tuning", ["oracle", "public"])
@pytest.mark.parametrize("delta", [1e-3, 1e-8])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 2.0])
def test_smooth_laplace_parameters_meet_proposition_2_with_equality(epsilon, delta, tuning):
    release = make("smooth_laplace", epsilon=epsilon, delta=delta, tuning=tuning).release(
        data(5), (-10, 10)
    )
    beta, alpha = release.parameters["beta"], release.parameters["alpha"]
    assert alpha > 0 and beta > 0
    bound = alpha + math.expm1(beta) * math.log(1 / delta) - beta
    assert bound == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize(
    "sample",
    [
        lambda rng: rng.normal(size=1000),
        lambda rng: rng.uniform(size=1000),
        lambda rng: rng.beta(0.5, 0.5, size=400),
        lambda rng: np.round(rng.normal(size=200), 1),
    ],
)
@pytest.mark.parametrize("epsilon", [0.1, 2.0])
def test_smooth_laplace_oracle_scale_is_minimal(sample, epsilon, neighbours):
    """No β on a fine grid (α from (P2) at equality) gives a smaller SS_β/α."""
    x = np.clip(sample(np.random.default_rng(8)), -10, 10)
    delta = 1e-3
    mechanism = make(
        "smooth_laplace", epsilon=epsilon, delta=delta, tuning="oracle", neighbours=neighbours
    )
    release = mechanism.release(x, (-10, 10))
    ss = MedianSmoothSensitivity(np.sort(x), -10, 10, Neighbouring(neighbours))
    log_inv_delta = math.log(1 / delta)
    top = beta_limit(epsilon, log_inv_delta)
    # replace-one SS costs O(n log n) per β: a coarser grid keeps the test fast
    betas = np.linspace(
        top * 1e-4, top * (1 - 1e-6), 500 if neighbours == "replace_one" else 20_000
    )
    grid = np.exp(ss.log(betas) - np.log(alpha_at(betas, epsilon, log_inv_delta))).min()
    assert release.scale <= grid * (1 + 1e-9)


def test_laplace_global_scale():
    release = make("laplace_global", epsilon=0.5).release(data(), (-3, 5))
    assert release.scale == 16.0
    assert release.true_value == np.sort(data())[150]


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-9])
def test_analytic_gaussian_sigma_is_the_smallest_private_sigma(epsilon, delta):
    sigma = analytic_gaussian_sigma(epsilon, delta, 3.0)
    assert gaussian_delta(sigma, epsilon, 3.0) <= delta
    assert gaussian_delta(sigma * (1 - 1e-9), epsilon, 3.0) > delta
    if epsilon < 1:
        assert sigma < classical_gaussian_sigma(epsilon, delta, 3.0)


@pytest.mark.parametrize("sigma", [0.7, 2.0, 5.0])
def test_gaussian_delta_is_the_privacy_profile(sigma):
    """δ(ε) = ∫ (p - e^ε q)_+ for N(0, σ²) against N(Δ, σ²), by quadrature."""
    epsilon, shift = 0.8, 1.5
    # p > e^ε q  iff  x < Δ/2 - εσ²/Δ
    edge = shift / 2 - epsilon * sigma**2 / shift
    value, _ = integrate.quad(
        lambda x: stats.norm.pdf(x, 0, sigma) - math.exp(epsilon) * stats.norm.pdf(x, shift, sigma),
        -np.inf,
        edge,
        epsabs=1e-14,
    )
    assert gaussian_delta(sigma, epsilon, shift) == pytest.approx(value, abs=1e-12)


# ---------------------------------------------------------------------- guarantees


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("key", list(CONFIGS))
def test_guarantees(key, neighbours):
    mechanism = make(key, neighbours=neighbours)
    g = mechanism.guarantee
    assert g.neighbouring is Neighbouring(neighbours)
    assert g.source
    assert g.data_dependent_tuning == key.endswith("oracle")
    if key in PURE:
        assert (g.kind, g.epsilon, g.delta) == ("pure", 0.3, 0.0)
    elif key.startswith("laplace_ln"):
        assert g.kind == "zcdp" and g.rho == pytest.approx(0.045)
    else:
        assert (g.kind, g.epsilon, g.delta) == ("approximate", 0.3, 1e-3)


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize("key", list(CONFIGS))
@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, math.inf, "x"])
def test_bad_epsilon(key, epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        make(key, epsilon=epsilon)


@pytest.mark.parametrize("key", list(CONFIGS))
def test_bad_delta(key):
    name, _ = CONFIGS[key]
    if key in PURE:
        with pytest.raises(ValueError, match="delta"):
            make(key, delta=1e-3)
        return
    for delta in (None, 0.0, 1.0, 1.5, "x"):
        with pytest.raises(ValueError, match="delta"):
            mechanisms.make(name, epsilon=0.5, delta=delta)


def test_smooth_laplace_rejects_delta_above_e_minus_2():
    make("smooth_laplace", delta=0.13)
    with pytest.raises(ValueError, match="delta"):
        make("smooth_laplace", delta=0.14)


def test_classical_gaussian_needs_epsilon_below_one():
    with pytest.raises(ValueError, match="epsilon"):
        make("gaussian_classical", epsilon=1.0)


@pytest.mark.parametrize("key", list(CONFIGS))
@pytest.mark.parametrize(
    ("option", "value"),
    [("neighbours", "hamming"), ("clip_output", "yes"), ("clip_output", 1), ("bounding", "trim")],
)
def test_bad_options(key, option, value):
    with pytest.raises(ValueError, match=option):
        make(key, **{option: value})


def test_bad_calibration():
    with pytest.raises(ValueError, match="calibration"):
        make("gaussian_global", calibration="tight")


# ---------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("epsilon", [1e-3, 50.0])
@pytest.mark.parametrize("key", list(CONFIGS))
def test_edge_datasets_give_finite_distributions(key, epsilon, neighbours):
    """n = 1, ties, everything outside the bounds (clipped or dropped): no NaN, no warning."""
    cases = [
        ("clip", [0.3]),
        ("clip", [1.0] * 40),
        ("clip", [7.0] * 25),
        ("drop", [7.0, -9.0]),
        ("clip", data(9, 50)),
    ]
    if key == "gaussian_classical" and epsilon >= 1:
        return
    for bounding, x in cases:
        mechanism = make(key, epsilon=epsilon, neighbours=neighbours, bounding=bounding)
        release = mechanism.release(x, BOUNDS)
        assert all(math.isfinite(v) for v in release.parameters.values())
        draws = release.sample(500, np.random.default_rng(0))
        cdf = release.cdf(np.linspace(-3, 3, 61))
        assert np.isfinite(draws).all() and np.isfinite(cdf).all()
        assert np.all(np.diff(cdf) >= 0) and cdf[0] == 0.0 and cdf[-1] == 1.0


def test_release_records_n_bounds_and_read_only_parameters():
    release = make("smooth_laplace", bounding="drop").release([5.0, 0.1, 0.2, -4.0], BOUNDS)
    assert (release.n, release.lower, release.upper, release.true_value) == (2, -2.0, 2.0, 0.1)
    with pytest.raises(TypeError):
        release.parameters["beta"] = 1.0  # type: ignore[index]
    assert release.sample(0, np.random.default_rng(0)).shape == (0,)
    with pytest.raises(ValueError, match="rng"):
        release.sample(3, 0)  # type: ignore[arg-type]
