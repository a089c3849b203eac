"""The mean's mechanisms: Duff for the mean (mechanisms.mean.duff) and the Laplace and
Gaussian mechanisms (mechanisms.mean.noise): distributions, exact privacy, input checks.

Privacy is checked exactly on all neighbouring pairs of small datasets of a grid
(ties, points at both bounds, the empty dataset): both releases are cut into
one partition of ``[a, b]`` (for Duff, every level end point of both datasets,
so both densities are constant on each cell and the largest cell log ratio is
the privacy loss), cell probabilities as differences of the exact cdf.  Each
check also runs on a deliberately broken mechanism (Duff with ``ε·u`` instead
of ``ε·u/2``, a sensitivity too small), which it must catch.  Statistical checks
use fixed seeds.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

import mechanisms
import mechanisms.mean.noise as mean_noise
from mechanisms.core.data import mean_value
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Mechanism
from mechanisms.mean.duff import DuffMean
from mechanisms.mean.noise import (
    GaussianMean,
    LaplaceMean,
    gaussian_joint,
    laplace_joint,
    mean_sensitivity,
    sum_sensitivity,
)
from mechanisms.noise.gaussian import analytic_gaussian_sigma, gaussian_delta
from tests.mechanisms.mean.test_distance import brute_levels

A, B = -1.0, 3.0
GRID = (-1.0, 0.0, 0.5, 3.0)
ADD_REMOVE, REPLACE_ONE = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE
Pair = tuple[tuple[float, ...], tuple[float, ...]]


def datasets(max_n: int) -> Iterator[tuple[float, ...]]:
    for n in range(max_n + 1):
        yield from itertools.combinations_with_replacement(GRID, n)


def neighbour_pairs(neighbouring: Neighbouring, max_n: int = 3) -> Iterator[Pair]:
    """Both orders of every pair of neighbours with the smaller one of size <= max_n."""
    for data in datasets(max_n):
        if neighbouring is ADD_REMOVE:
            for y in GRID:
                bigger = tuple(sorted((*data, y)))
                yield data, bigger
                yield bigger, data
        else:
            for i, y in itertools.product(range(len(data)), GRID):
                other = tuple(sorted((*data[:i], y, *data[i + 1 :])))
                if other != data:
                    yield data, other


def cell_probabilities(release, points: np.ndarray) -> np.ndarray:
    """``P(cell)`` for ``(-inf, p_0], (p_0, p_1], ..., (p_last, inf)``."""
    return np.diff(np.concatenate([[0.0], release.cdf(points), [1.0]]))


def largest_loss(mechanism: Mechanism, pairs: Iterator[Pair], cuts: Callable) -> float:
    """``max |log P_S(cell) - log P_S'(cell)|`` over pairs and cells of positive probability."""
    worst = 0.0
    for first, second in pairs:
        one, two = (mechanism.release(np.array(d), (A, B)) for d in (first, second))
        points = cuts(one, two)
        p, q = cell_probabilities(one, points), cell_probabilities(two, points)
        keep = (p > 1e-13) | (q > 1e-13)
        assert (p[keep] > 0).all() and (q[keep] > 0).all()  # same support
        worst = max(worst, float(np.max(np.abs(np.log(p[keep]) - np.log(q[keep])))))
    return worst


def level_cuts(one, two) -> np.ndarray:
    """Every level end point of both Duff releases (and the bounds)."""
    ends = [r.levels.lower_ends for r in (one, two)] + [r.levels.upper_ends for r in (one, two)]
    return np.unique(np.concatenate([*ends, [A, B]]))


def fine_cuts(one, two) -> np.ndarray:
    return np.unique(np.concatenate([np.linspace(A, B, 2001), [one.true_value, two.true_value]]))


def randomized_pit(release, draws: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``F(x-) + V·(F(x) - F(x-))``: exactly uniform iff ``F`` is the law of ``draws``."""
    upper = release.cdf(draws)
    lower = release.cdf(np.nextafter(draws, -np.inf))
    return lower + rng.uniform(size=draws.size) * (upper - lower)


def pit_pvalue(release, seed: int, draws: int = 20_000, sampled_from=None) -> float:
    """KS p-value of draws of ``sampled_from`` (default: ``release``) against ``release.cdf``."""
    rng = np.random.default_rng(seed)
    sample = (sampled_from or release).sample(draws, rng)
    return float(stats.kstest(randomized_pit(release, sample, rng), "uniform").pvalue)


DATASETS = {
    "empty": (),
    "one_point": (0.5,),
    "at_the_bounds": (-1.0, -1.0, 3.0),
    "ties": (0.0, 0.0, 0.5, 0.5, 2.0),
    "spread": (-0.75, 0.0, 0.25, 1.5, 2.5, 3.0),
}


# ------------------------------------------------------------------------- Duff, mean


def brute_density(data: tuple[float, ...], epsilon: float, neighbouring) -> Callable:
    """``x -> exp(-ε·k(x)/2)``, ``k`` the brute-force distance (test_distance.py)."""
    ends = brute_levels(tuple(Fraction(v) for v in data), Fraction(A), Fraction(B), neighbouring)
    lows = np.array([float(lo) for lo, _ in ends])
    highs = np.array([float(hi) for _, hi in ends])

    def density(x: np.ndarray) -> np.ndarray:
        inside = (lows[None, :] <= x[:, None]) & (x[:, None] <= highs[None, :])
        return np.exp(-epsilon * (inside.argmax(axis=1) + 1) / 2)

    return density


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
@pytest.mark.parametrize("epsilon", [0.5, 3.0])
@pytest.mark.parametrize("name", list(DATASETS))
def test_duff_mean_cdf_is_the_integral_of_the_brute_force_density(name, epsilon, neighbouring):
    data = DATASETS[name]
    steps = 400_000
    width = (B - A) / steps
    midpoints = A + width * (np.arange(steps) + 0.5)
    mass = brute_density(data, epsilon, neighbouring)(midpoints) * width
    integral = np.concatenate([[0.0], np.cumsum(mass)]) / mass.sum()
    release = DuffMean(epsilon=epsilon, neighbours=neighbouring.value).release(data, (A, B))
    at = np.arange(0, steps + 1, 4000)
    # the midpoint rule is exact between jumps; each jump costs at most one step's mass
    np.testing.assert_allclose(release.cdf(A + width * at), integral[at], atol=5e-5)


@pytest.mark.parametrize("sampler", ["racing", "inverse_cdf"])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("name", ["empty", "ties", "spread"])
def test_duff_mean_samples_match_the_cdf(name, neighbours, sampler):
    mechanism = DuffMean(epsilon=1.0, neighbours=neighbours, sampler=sampler)
    release = mechanism.release(DATASETS[name], (A, B))
    assert pit_pvalue(release, seed=11) > 1e-3


def test_the_sample_check_catches_the_wrong_epsilon():
    release = DuffMean(epsilon=1.0).release(DATASETS["spread"], (A, B))
    wrong = DuffMean(epsilon=2.0).release(DATASETS["spread"], (A, B))
    assert pit_pvalue(release, seed=11, sampled_from=wrong) < 1e-6


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
def test_duff_mean_is_private_on_every_neighbour_pair(neighbouring, epsilon):
    mechanism = DuffMean(epsilon=epsilon, neighbours=neighbouring.value)
    loss = largest_loss(mechanism, neighbour_pairs(neighbouring), level_cuts)
    assert 0.5 * epsilon < loss <= epsilon * (1 + 1e-9)


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
def test_the_privacy_check_catches_epsilon_times_u(neighbouring):
    """The density ``exp(ε·u)`` (without the 1/2 of the EM) is the mechanism at 2ε."""
    epsilon = 0.5
    mechanism = DuffMean(epsilon=2 * epsilon, neighbours=neighbouring.value)
    assert largest_loss(mechanism, neighbour_pairs(neighbouring), level_cuts) > epsilon * 1.1


def test_duff_mean_release_records_the_data():
    data = np.array([2.0, -5.0, 0.25, 0.25])
    release = DuffMean(epsilon=1.0).release(data, (A, B))
    bounded = np.sort(np.clip(data, A, B))
    assert release.n == 4 and release.true_value == mean_value(bounded, A)
    assert release.levels.count == 5 and (release.lower, release.upper) == (A, B)
    assert DuffMean(epsilon=1.0).release([], (A, B)).true_value == A


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
def test_duff_mean_of_the_empty_dataset_is_uniform(neighbours):
    release = DuffMean(epsilon=1.0, neighbours=neighbours).release([], (A, B))
    points = np.linspace(A, B, 9)
    np.testing.assert_allclose(release.cdf(points), (points - A) / (B - A), atol=1e-15)


def test_duff_mean_at_n_100000():
    x = np.random.default_rng(0).beta(2.0, 5.0, 100_000)
    release = DuffMean(epsilon=1.0).release(x, (0.0, 1.0))
    assert release.levels.count == 100_001
    draws = release.sample(2000, np.random.default_rng(1))
    assert np.abs(draws - release.true_value).max() < 2e-4
    # not 1/2: I_1 = [μ - (μ - a)/(n + 1), μ + (b - μ)/(n + 1)], wider above μ = 2/7
    assert 0.3 < release.cdf(release.true_value) < 0.5


def test_duff_mean_options_and_guarantee():
    assert DuffMean.statistics == frozenset({"mean"})
    assert mechanisms.get("duff_mean") is DuffMean
    replace = DuffMean(epsilon=2.0, neighbours="replace_one", sampler="racing")
    assert replace.guarantee.neighbouring is REPLACE_ONE and replace.guarantee.delta == 0
    assert repr(replace) == "DuffMean(epsilon=2, neighbours='replace_one', sampler='racing')"
    assert repr(DuffMean(epsilon=1.0)) == "DuffMean(epsilon=1)"
    with pytest.raises(ValueError, match="neighbours"):
        DuffMean(epsilon=1.0, neighbours="swap")
    with pytest.raises(ValueError, match="sampler"):
        DuffMean(epsilon=1.0, sampler="rejection")
    with pytest.raises(ValueError, match="delta"):
        DuffMean(epsilon=1.0, delta=1e-6)


# ------------------------------------------------------------- sensitivities, brute force


def largest_change(statistic: Callable, neighbouring: Neighbouring) -> float:
    return max(
        abs(statistic(np.array(one)) - statistic(np.array(two)))
        for one, two in neighbour_pairs(neighbouring, max_n=4)
    )


def centred_sum(x: np.ndarray) -> float:
    return math.fsum(x - (A + B) / 2)


def plain_sum(x: np.ndarray) -> float:
    return math.fsum(x)


@pytest.mark.parametrize(("statistic", "private"), [(centred_sum, True), (plain_sum, False)])
def test_the_centred_sum_has_sensitivity_half_the_width(statistic, private):
    """Attained, and the check fails for the plain sum (``max(|a|, |b|) = 3 > 2``)."""
    assert (largest_change(statistic, ADD_REMOVE) == sum_sensitivity(A, B)) is private


def test_the_count_has_sensitivity_one():
    assert largest_change(lambda x: float(x.size), ADD_REMOVE) == 1.0


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize(("shift", "private"), [(0, True), (1, False)])
def test_the_replace_one_mean_has_sensitivity_width_over_n(n, shift, private):
    """Over replace-one pairs of size ``n``; ``(b - a)/(n + 1)`` must be caught."""
    changes = [
        abs(mean_value(np.array(one), A) - mean_value(np.array(two), A))
        for one, two in neighbour_pairs(REPLACE_ONE, max_n=4)
        if len(one) == n
    ]
    claimed = mean_sensitivity(A, B, n + shift)
    assert (max(changes) == pytest.approx(claimed)) is private
    assert (max(changes) <= claimed * (1 + 1e-12)) is private


# ---------------------------------------------------------------- privacy, noise


def small_width(lower: float, upper: float, n: int) -> float:
    return (upper - lower) / (n + 1)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("broken", [False, True])
def test_replace_one_laplace_is_exactly_private(epsilon, broken, monkeypatch):
    """Clipped Laplace releases on a partition: the loss is ε on the worst pair (the
    atoms at the bounds have ratio ``e^ε`` exactly); ``(b - a)/(n + 1)`` exceeds it."""
    if broken:
        monkeypatch.setattr(mean_noise, "mean_sensitivity", small_width)
    mechanism = LaplaceMean(epsilon=epsilon, neighbours="replace_one")
    loss = largest_loss(mechanism, neighbour_pairs(REPLACE_ONE), fine_cuts)
    assert (loss <= epsilon * (1 + 1e-9)) is not broken
    assert loss >= epsilon * (1 - 1e-9)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.5, 1e-3), (2.0, 1e-6)])
@pytest.mark.parametrize("broken", [False, True])
def test_replace_one_gaussian_is_exactly_private(epsilon, delta, broken, monkeypatch):
    """δ(ε) of two Gaussians of σ at distance |μ - μ'| (Balle & Wang, Theorem 8) on every
    pair, and the hockey-stick divergence on a partition, at most δ; clipping is
    post-processing.  ``(b - a)/(n + 1)`` must be caught."""
    if broken:
        monkeypatch.setattr(mean_noise, "mean_sensitivity", small_width)
    mechanism = GaussianMean(epsilon=epsilon, delta=delta, neighbours="replace_one")
    worst_exact = worst_cells = 0.0
    for one, two in neighbour_pairs(REPLACE_ONE):
        first, second = (mechanism.release(np.array(d), (A, B)) for d in (one, two))
        shift = abs(first.true_value - second.true_value)
        worst_exact = max(worst_exact, gaussian_delta(first.scale, epsilon, shift))
        points = fine_cuts(first, second)
        p, q = cell_probabilities(first, points), cell_probabilities(second, points)
        worst_cells = max(worst_cells, float(np.maximum(p - math.exp(epsilon) * q, 0).sum()))
    assert (worst_exact <= delta) is not broken
    assert worst_cells <= worst_exact * (1 + 1e-6)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("broken", [False, True])
def test_add_remove_laplace_ratio_passes_the_partition_check(epsilon, broken, monkeypatch):
    """A lower bound of the loss (the ratio is post-processing of an ε-DP pair), from the
    exact cdf; a centred sum with sensitivity (b - a)/8 must be caught."""
    if broken:
        monkeypatch.setattr(mean_noise, "sum_sensitivity", lambda a, b: (b - a) / 8)
    loss = largest_loss(LaplaceMean(epsilon=epsilon), neighbour_pairs(ADD_REMOVE, 2), fine_cuts)
    assert (loss <= epsilon * (1 + 1e-9)) is not broken


@pytest.mark.parametrize("broken", [False, True])
def test_add_remove_gaussian_ratio_passes_the_hockey_stick_check(broken, monkeypatch):
    epsilon, delta = 1.0, 1e-3
    if broken:
        monkeypatch.setattr(mean_noise, "sum_sensitivity", lambda a, b: (b - a) / 8)
    mechanism = GaussianMean(epsilon=epsilon, delta=delta)
    worst = 0.0
    for one, two in neighbour_pairs(ADD_REMOVE, 2):
        first, second = (mechanism.release(np.array(d), (A, B)) for d in (one, two))
        p, q = (cell_probabilities(r, fine_cuts(first, second)) for r in (first, second))
        worst = max(worst, float(np.maximum(p - math.exp(epsilon) * q, 0).sum()))
    assert (worst <= delta) is not broken


# -------------------------------------------------------------- the ratio's cdf


@functools.cache
def quadrature_joint(law_name: str, shift: float, slope: float, start: float) -> float:
    """``∫_start^∞ f(t)·F(shift + slope·t) dt`` by adaptive quadrature, split at the kinks."""
    law = getattr(stats, law_name)
    kinks = [0.0] + ([-shift / slope] if slope else [])
    edges = sorted({start, *(k for k in kinks if k > start)})
    edges.append(edges[-1] + 80.0)

    def integrand(t: float) -> float:
        return float(law.pdf(t) * law.cdf(shift + slope * t))

    pieces = [
        integrate.quad(integrand, lo, hi, epsabs=1e-15, epsrel=1e-13, limit=200)[0]
        for lo, hi in itertools.pairwise(edges)
    ]
    return math.fsum(pieces)


GRID_CASES = list(
    itertools.product((0.0, 0.7, -2.5, 12.0), (0.0, 1.0, -1.0, 0.4, -3.0), (0.0, 0.5, -1.5, -30.0))
)
JOINT_CASES = [*GRID_CASES[::2], (0.0, 0.4, 0.0), (0.0, -1.0, 0.5), (0.7, 0.4, -30.0)]
"""Zeros of shift and start (Owen's special cases), slopes ±1 (a zero rate), far starts."""


def no_owen_correction(shift, slope, start):
    """Owen's formula without its ``β = 1/2`` correction for ``hk < 0``."""
    norm = np.hypot(1.0, slope)
    k = -start
    beta = np.where((shift / norm) * k < 0, 0.5, 0.0)
    return gaussian_joint(shift, slope, start) + beta


def cut_short(shift, slope, start):
    """The Laplace integral stopped 2 instead of 1500 past ``max(t1, 0)``."""
    saved = mean_noise.LAPLACE_HORIZON
    mean_noise.LAPLACE_HORIZON = 2.0
    try:
        return laplace_joint(shift, slope, start)
    finally:
        mean_noise.LAPLACE_HORIZON = saved


@pytest.mark.parametrize(
    ("joint", "law", "exact"),
    [
        (laplace_joint, "laplace", True),
        (gaussian_joint, "norm", True),
        (cut_short, "laplace", False),
        (no_owen_correction, "norm", False),
    ],
    ids=["laplace", "gaussian", "laplace_cut_short", "gaussian_no_correction"],
)
def test_joint_probabilities_match_quadrature(joint, law, exact):
    errors = [
        abs(float(joint(np.array([g]), np.array([s]), t)[0]) - quadrature_joint(law, g, s, t))
        for g, s, t in JOINT_CASES
    ]
    assert (max(errors) < 1e-13) is exact


MEAN_CONFIGS = {
    "laplace": (LaplaceMean, {}),
    "gaussian": (GaussianMean, {"delta": 1e-3}),
}


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("clip_output", [True, False])
@pytest.mark.parametrize("name", ["empty", "one_point", "spread"])
@pytest.mark.parametrize("key", list(MEAN_CONFIGS))
def test_noisy_mean_samples_match_the_cdf(key, name, clip_output, neighbours):
    cls, options = MEAN_CONFIGS[key]
    mechanism = cls(epsilon=1.0, neighbours=neighbours, clip_output=clip_output, **options)
    release = mechanism.release(DATASETS[name], (A, B))
    assert pit_pvalue(release, seed=5) > 1e-3


@pytest.mark.parametrize("key", list(MEAN_CONFIGS))
def test_the_sample_check_catches_a_cdf_without_the_count_clamp(key, monkeypatch):
    """A cdf that forgets the draws with ``Ñ <= 1`` (the clamped term ``F(t1)·F(...)``)."""
    cls, options = MEAN_CONFIGS[key]
    release = cls(epsilon=1.0, **options).release(DATASETS["one_point"], (A, B))
    correct = release.cdf(np.linspace(A, B, 7))
    monkeypatch.setattr(release.noise, "cdf", lambda z: np.zeros_like(np.asarray(z, float)))
    assert not np.allclose(release.cdf(np.linspace(A, B, 7)), correct)
    assert pit_pvalue(release, seed=5) < 1e-6


@pytest.mark.parametrize("key", list(MEAN_CONFIGS))
def test_noisy_mean_cdf_limits_and_no_nan(key):
    cls, options = MEAN_CONFIGS[key]
    for clip_output in (True, False):
        release = cls(epsilon=1.0, clip_output=clip_output, **options).release([0.5], (A, B))
        values = release.cdf(np.array([-np.inf, np.nan, np.inf]))
        assert values[0] == 0 and np.isnan(values[1]) and values[2] == 1
    for epsilon in (1e-9, 1e6):
        for data in ([], [A], [B] * 3):
            release = cls(epsilon=epsilon, **options).release(data, (A, B))
            draws = release.sample(10_000, np.random.default_rng(2))
            assert np.isfinite(draws).all() and ((draws >= A) & (draws <= B)).all()
            assert release.cdf(B) == 1.0 and 0 <= release.cdf(A) <= 1


def test_noise_scales():
    epsilon, delta = 0.8, 1e-5
    ratio = LaplaceMean(epsilon=epsilon).release([0.0, 1.0], (A, B))
    assert ratio.parameters["sum_scale"] == pytest.approx((B - A) / epsilon)
    assert ratio.parameters["count_scale"] == pytest.approx(2 / epsilon)
    replace = LaplaceMean(epsilon=epsilon, neighbours="replace_one").release([0.0, 1.0], (A, B))
    assert replace.scale == pytest.approx((B - A) / 2 / epsilon)
    gaussian = GaussianMean(epsilon=epsilon, delta=delta).release([0.0, 1.0], (A, B))
    sigma = analytic_gaussian_sigma(epsilon / 2, delta / 2, 1.0)
    assert gaussian.parameters["count_scale"] == sigma
    assert gaussian.parameters["sum_scale"] == pytest.approx(sigma * (B - A) / 2, rel=1e-9)
    assert gaussian.true_value == 0.5 and gaussian.centred_sum == -1.0


def test_noisy_mean_options_and_guarantees():
    for cls in (LaplaceMean, GaussianMean):
        assert cls.statistics == frozenset({"mean"})
        assert mechanisms.get(cls.name) is cls
    assert LaplaceMean(epsilon=1.0).guarantee.delta == 0
    gaussian = GaussianMean(epsilon=1.0, delta=1e-6, neighbours="replace_one").guarantee
    assert gaussian.delta == 1e-6 and gaussian.neighbouring is REPLACE_ONE
    with pytest.raises(ValueError, match="delta"):
        GaussianMean(epsilon=1.0)
    with pytest.raises(ValueError, match="delta"):
        LaplaceMean(epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="neighbours"):
        LaplaceMean(epsilon=1.0, neighbours="swap")
    with pytest.raises(ValueError, match="clip_output"):
        LaplaceMean(epsilon=1.0, clip_output="yes")
    with pytest.raises(ValueError, match="epsilon"):  # (b - a)/ε overflows: public inputs only
        LaplaceMean(epsilon=1e-300).release([1.0], (-1e300, 1e300))
