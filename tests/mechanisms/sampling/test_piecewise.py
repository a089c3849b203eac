"""The piecewise-uniform EM sampler against a direct full-array reference computation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import logsumexp

from mechanisms.core.data import lower_median
from mechanisms.core.quantiles import rank_distance
from mechanisms.median.duff import Duff
from mechanisms.median.duff_utility import gap_utility
from mechanisms.median.quantile_em import QuantileEM
from mechanisms.sampling.piecewise import SAMPLERS, PiecewiseUniformRelease
from mechanisms.sampling.racing import IntervalLevels


def linear_score(slope: float, centre: float):
    """Unimodal log-score ``-slope·|i - centre|`` (the shape of every rank EM)."""

    def log_score(gaps: np.ndarray) -> np.ndarray:
        return -slope * np.abs(gaps - centre)

    return log_score


def quadratic_score(curvature: float, centre: int):
    def log_score(gaps: np.ndarray) -> np.ndarray:
        return -curvature * (gaps - centre) ** 2.0

    return log_score


def reference_log_masses(x: np.ndarray, a: float, b: float, log_score) -> np.ndarray:
    """Normalised log mass of every gap, by the textbook formula on full arrays."""
    lengths = np.diff(np.concatenate([[a], x, [b]]))
    scores = log_score(np.arange(x.size + 1))
    out = np.full(x.size + 1, -np.inf)
    positive = lengths > 0
    out[positive] = scores[positive] + np.log(lengths[positive])
    # subtract the max first: logsumexp's own result would round at the ulp of |max|
    out[positive] -= out[positive].max()
    return out - logsumexp(out[positive])


def make(x, a, b, log_score, mode, **kwargs) -> PiecewiseUniformRelease:
    return PiecewiseUniformRelease(
        np.sort(np.asarray(x, dtype=float)), a, b, log_score, mode, **kwargs
    )


def assert_matches_reference(release: PiecewiseUniformRelease, x, a, b, log_score) -> None:
    x = np.sort(np.asarray(x, dtype=float))
    expected = reference_log_masses(x, a, b, log_score)
    got = release.log_masses
    assert np.array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    scale = np.maximum(1.0, np.abs(expected[finite]))
    assert np.all(np.abs(got[finite] - expected[finite]) <= 1e-12 * scale)
    # cdf at every edge = cumulative probability, exact to float error.
    edges = np.concatenate([[a], x, [b]])
    cumulative = np.concatenate([[0.0], np.cumsum(np.exp(expected))])
    cumulative /= cumulative[-1]
    assert np.allclose(release.cdf(edges), cumulative, rtol=0, atol=1e-13)


# ----------------------------------------------------------------- log masses


def test_simple_example_by_hand():
    # gaps [0,1], [1,3], [3,4] with log-scores 0, log 2, 0: masses 1, 4, 1.
    release = make([1.0, 3.0], 0.0, 4.0, lambda g: np.log(np.array([1.0, 2.0, 1.0])[g]), 1)
    assert np.allclose(release.probabilities, [1 / 6, 4 / 6, 1 / 6], rtol=1e-14)
    assert np.allclose(
        release.cdf([0.0, 0.5, 1.0, 2.0, 3.0, 4.0]), [0, 1 / 12, 1 / 6, 1 / 2, 5 / 6, 1]
    )
    assert release.n == 2 and release.true_value == 1.0
    assert release.lower == 0.0 and release.upper == 4.0
    assert np.array_equal(release.edges, [0.0, 1.0, 3.0, 4.0])


def test_ties_and_points_at_bounds_have_zero_mass_without_warnings():
    x = [0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 3.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="raise", invalid="raise", over="raise"):
            release = make(x, 0.0, 3.0, linear_score(0.7, 4), 4)
            masses = release.log_masses
    lengths = np.diff(np.concatenate([[0.0], x, [3.0]]))
    assert np.all(np.isneginf(masses[lengths == 0]))
    assert np.all(np.isfinite(masses[lengths > 0]))
    assert np.all(release.probabilities[lengths == 0] == 0.0)
    assert_matches_reference(release, x, 0.0, 3.0, linear_score(0.7, 4))


def test_empty_data_is_uniform():
    release = make([], -1.0, 3.0, linear_score(1.0, 0), 0)
    assert release.n == 0 and release.true_value == -1.0
    assert np.array_equal(release.probabilities, [1.0])
    assert np.allclose(release.cdf([-2.0, -1.0, 0.0, 1.0, 3.0, 9.0]), [0, 0, 0.25, 0.5, 1, 1])


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(0, 20), min_size=0, max_size=60),
    scale=st.sampled_from([1e-6, 1.0, 1e6]),
    slope=st.floats(1e-3, 60.0),
    shape=st.sampled_from(["linear", "quadratic"]),
    data=st.data(),
)
def test_log_masses_and_cdf_match_reference(values, scale, slope, shape, data):
    x = np.sort(np.array(values, dtype=float) * scale)
    a, b = 0.0, 20.0 * scale
    mode = data.draw(st.integers(0, x.size))
    score = linear_score(slope, mode) if shape == "linear" else quadratic_score(slope, mode)
    release = make(x, a, b, score, mode)
    assert_matches_reference(release, x, a, b, score)
    assert abs(release.probabilities.sum() - 1.0) <= 1e-12
    assert release.true_value == lower_median(x, a)


@settings(max_examples=100, deadline=None)
@given(
    n_near=st.integers(1, 50),
    far=st.floats(1.0, 1e300),
    slope=st.floats(1e-4, 5.0),
)
def test_window_keeps_a_huge_far_gap(n_near, far, slope):
    """A long gap far from the mode can outweigh the mode; the window must keep it."""
    x = np.linspace(0.0, 1e-9, n_near)
    score = linear_score(slope, 0)
    release = make(x, 0.0, far, score, 0)
    assert_matches_reference(release, x, 0.0, far, score)
    last = np.exp(release.log_masses[-1])
    assert release.cdf(far * 0.5) == pytest.approx(
        1.0 - last * (far - far * 0.5) / (far - x[-1]), abs=1e-12
    )


def test_cdf_shapes_nan_and_linearity():
    release = make([1.0, 2.0, 4.0], 0.0, 5.0, linear_score(1.0, 1), 1)
    assert release.cdf(3.0).shape == ()
    grid = np.array([[0.5, 1.5], [np.nan, 6.0]])
    out = release.cdf(grid)
    assert out.shape == (2, 2) and np.isnan(out[1, 0]) and out[1, 1] == 1.0
    assert release.cdf(-np.inf) == 0.0 and release.cdf(np.inf) == 1.0
    # linear inside a gap
    left, mid, right = release.cdf([2.0, 3.0, 4.0])
    assert mid == pytest.approx((left + right) / 2, abs=1e-15)
    assert np.all(np.diff(release.cdf(np.linspace(-1, 6, 1001))) >= 0)


def test_views_are_read_only():
    release = make([1.0, 2.0], 0.0, 3.0, linear_score(1.0, 1), 1)
    for view in (release.log_masses, release.probabilities):
        with pytest.raises(ValueError):
            view[0] = 0.0


def test_true_value_override():
    release = make([1.0, 2.0], 0.0, 3.0, linear_score(1.0, 1), 1, true_value=2.0)
    assert release.true_value == 2.0


# ------------------------------------------------------------------ numerics


def test_diffprivlib_107_mass_ties_at_the_median():
    """80% ties at the median, n = 2e5, ε = 5: every positive gap's *score* is ~1e5 below max."""
    rng = np.random.default_rng(107)
    n = 200_000
    x = rng.uniform(0.0, 1.0, n)
    x[: int(0.8 * n)] = 0.5
    x.sort()
    epsilon = 5.0

    def log_score(gaps: np.ndarray) -> np.ndarray:  # Duff-like utility, ε/2 per unit
        d = 2 * gaps - n
        return -0.5 * epsilon * (1.0 + np.maximum(np.maximum(d, -d - 1), 0))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="raise", invalid="raise", over="raise"):
            release = PiecewiseUniformRelease(x, 0.0, 1.0, log_score, n // 2)
            probabilities = release.probabilities
            draws = release.sample(1000, np.random.default_rng(0))
    assert np.all(np.isfinite(release.log_masses[np.diff(release.edges) > 0]))
    assert abs(probabilities.sum() - 1.0) <= 1e-12
    # the mass sits on the two gaps adjacent to the tie block, as the reference says
    assert_matches_reference(release, x, 0.0, 1.0, log_score)
    assert np.all((draws >= 0.0) & (draws <= 1.0)) and np.all(draws != 0.5)


@pytest.mark.parametrize("slope", [1e-3, 1.0, 50.0])
def test_extreme_scores_and_tiny_gaps(slope):
    # gap lengths from 1e-300 to 1e300 and scores down to -5e7
    x = np.concatenate([np.full(5, 1e-300), np.linspace(1.0, 2.0, 10**6), [1e300]])
    score = linear_score(slope, 500_000)
    release = make(x, 0.0, 1.5e300, score, 500_000)
    assert_matches_reference(release, x, 0.0, 1.5e300, score)


def test_bad_construction_arguments():
    score = linear_score(1.0, 0)
    with pytest.raises(ValueError, match="bounds"):
        make([], 1.0, 1.0, score, 0)
    with pytest.raises(ValueError, match="bounds"):
        make([], -1e308, 1e308, score, 0)
    with pytest.raises(ValueError, match="inside"):
        PiecewiseUniformRelease(np.array([0.5, 2.0]), 0.0, 1.0, score, 0)
    with pytest.raises(ValueError, match="sorted"):
        PiecewiseUniformRelease(np.array([0.7, 0.5, 0.9]), 0.0, 1.0, score, 0)
    with pytest.raises(ValueError, match="mode"):
        make([0.5], 0.0, 1.0, score, 2)
    with pytest.raises(ValueError, match="log_score"):
        make([0.5], 0.0, 1.0, lambda g: np.full(g.shape, np.nan), 0)
    with pytest.raises(ValueError, match="sorted_x"):
        PiecewiseUniformRelease(np.zeros((2, 2)), 0.0, 1.0, score, 0)


# ------------------------------------------------------------------- sampling


@pytest.mark.parametrize(
    ("x", "slope"),
    [
        (np.linspace(0.0, 1.0, 11) ** 2, 0.8),
        (np.array([0.0, 0.2, 0.2, 0.2, 0.7, 1.0, 1.0]), 0.3),
        (np.random.default_rng(3).normal(0.5, 0.1, 500).clip(0, 1), 0.05),
    ],
)
def test_samples_follow_their_own_cdf(x, slope):
    x = np.sort(x)
    release = make(x, 0.0, 1.0, linear_score(slope, x.size // 2), x.size // 2)
    draws = release.sample(20_000, np.random.default_rng(11))
    assert draws.shape == (20_000,) and np.all((draws >= 0.0) & (draws <= 1.0))
    assert stats.kstest(draws, release.cdf).pvalue > 1e-3


def test_ks_has_power_against_a_wrong_cdf():
    x = np.linspace(0.0, 1.0, 101)
    release = make(x, 0.0, 1.0, linear_score(0.5, 50), 50)
    other = make(x, 0.0, 1.0, linear_score(0.5, 52), 52)  # mode moved by two gaps (0.02)
    draws = release.sample(20_000, np.random.default_rng(12))
    assert stats.kstest(draws, other.cdf).pvalue < 1e-6


def test_gap_frequencies_match_probabilities():
    x = np.array([0.1, 0.1, 0.3, 0.35, 0.6, 0.6, 0.6, 0.9])
    release = make(x, 0.0, 1.0, linear_score(0.4, 4), 4)
    draws = release.sample(100_000, np.random.default_rng(5))
    gap = np.searchsorted(release.edges, draws, side="right") - 1
    p = release.probabilities
    positive = p > 0
    observed = np.bincount(gap, minlength=p.size)
    assert observed[~positive].sum() == 0  # zero-length gaps are never drawn
    assert stats.chisquare(observed[positive], 100_000 * p[positive]).pvalue > 1e-3


def test_sample_sizes_rng_and_reproducibility():
    release = make([0.2, 0.4], 0.0, 1.0, linear_score(1.0, 1), 1)
    assert release.sample(0, np.random.default_rng(0)).shape == (0,)
    assert release.sample(np.int64(3), np.random.default_rng(0)).shape == (3,)
    first = release.sample(50, np.random.default_rng(9))
    assert np.array_equal(first, release.sample(50, np.random.default_rng(9)))
    for size in (-1, 2.5, "3", True, None):
        with pytest.raises(ValueError, match="size"):
            release.sample(size, np.random.default_rng(0))
    for rng in (None, 0, np.random.RandomState(0)):
        with pytest.raises(ValueError, match="rng"):
            release.sample(3, rng)


# ------------------------------------------------------------ racing sampler


def make_racing(x, a, b, log_score, mode) -> PiecewiseUniformRelease:
    return make(x, a, b, log_score, mode, sampler="racing")


def duff_score(n: int, epsilon: float):
    """Duff's log-score ``ε·u_d/2`` on gap ``i`` (as in :class:`mechanisms.median.duff.Duff`)."""

    def log_score(gaps: np.ndarray) -> np.ndarray:
        return 0.5 * epsilon * gap_utility(n, gaps)

    return log_score


def test_sampler_option():
    release = make([0.2, 0.4], 0.0, 1.0, linear_score(1.0, 1), 1)
    assert release.sampler == "inverse_cdf" and SAMPLERS == ("inverse_cdf", "racing")
    explicit = make([0.2, 0.4], 0.0, 1.0, linear_score(1.0, 1), 1, sampler="inverse_cdf")
    rng_a, rng_b = np.random.default_rng(4), np.random.default_rng(4)
    assert np.array_equal(release.sample(100, rng_a), explicit.sample(100, rng_b))
    for bad in ("gumbel", "Racing", None):
        with pytest.raises(ValueError, match="sampler"):
            make([0.2], 0.0, 1.0, linear_score(1.0, 1), 1, sampler=bad)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(0, 20), min_size=0, max_size=40),
    slope=st.floats(1e-3, 5.0),
    shape=st.sampled_from(["linear", "quadratic", "duff"]),
    data=st.data(),
)
def test_racing_level_probabilities_are_the_gap_mass_sums(values, slope, shape, data):
    """Ties, points at the bounds (0 and 20), the empty dataset: levels = gaps of equal score."""
    x = np.sort(np.array(values, dtype=float))
    mode = data.draw(st.integers(0, x.size)) if shape != "duff" else x.size // 2
    score = {
        "linear": linear_score(slope, mode),  # equal scores on both sides of the mode
        "quadratic": quadratic_score(slope / 40, mode),
        "duff": duff_score(x.size, slope),
    }[shape]
    release = make_racing(x, 0.0, 20.0, score, mode)
    # Score drops below 210 and lengths in [1, 20]: every positive-length gap has
    # nonzero weight, so the race covers them all; zero-length gaps form no level.
    positive = np.diff(release.edges) > 0
    scores = score(np.arange(x.size + 1))[positive]
    distinct, level = np.unique(scores, return_inverse=True)
    racer = release._racer
    assert racer is not None and racer.log_weights.size == distinct.size
    assert np.isfinite(racer.log_weights).all()
    from_inverse_cdf = np.bincount(level, weights=release.probabilities[positive])
    reference = np.exp(reference_log_masses(x, 0.0, 20.0, score))[positive]
    got = np.exp(racer.log_probabilities)
    assert np.allclose(got, from_inverse_cdf, rtol=1e-12, atol=1e-15)
    assert np.allclose(got, np.bincount(level, weights=reference), rtol=1e-12, atol=1e-15)


def test_racing_covers_exactly_the_gaps_of_nonzero_weight():
    """Slope 50 per gap: gaps 14 away from the mode weigh e^-700 (kept), 15 away e^-750 (not)."""
    x = np.linspace(0.0, 1.0, 101)
    release = make_racing(x, 0.0, 1.0, linear_score(50.0, 50), 50)
    assert release._racer is not None
    assert release._racer.log_weights.size == 15  # |i - 50| = 0..14: levels of 1, 2, ..., 2 gaps
    assert release._racer.log_weights.min() == pytest.approx(-700.0 + math.log(2.0), abs=1e-9)


@pytest.mark.parametrize(
    ("x", "epsilon", "bounds"),
    [
        (np.random.default_rng(1).normal(size=1000), 1.0, (-10.0, 10.0)),
        (np.random.default_rng(2).normal(size=1000), 0.05, (-10.0, 10.0)),
        (np.random.default_rng(3).integers(0, 5, 301).astype(float), 0.5, (0.0, 4.0)),  # ties
        (np.array([]), 1.0, (-1.0, 3.0)),  # one level
    ],
)
def test_duff_racing_and_inverse_cdf_give_the_same_distribution(x, epsilon, bounds):
    inverse = Duff(epsilon=epsilon).release(x, bounds)
    n = inverse.n
    x = np.sort(np.clip(x, *bounds))
    racing = make_racing(x, *bounds, duff_score(n, epsilon), n // 2)
    draws = racing.sample(20_000, np.random.default_rng(21))
    assert np.all((draws >= bounds[0]) & (draws <= bounds[1]))
    assert stats.kstest(draws, inverse.cdf).pvalue > 1e-3
    assert np.array_equal(racing.cdf(draws[:100]), inverse.cdf(draws[:100]))


def test_quantile_em_racing_has_two_gaps_per_level():
    x = np.sort(np.random.default_rng(4).uniform(0.0, 1.0, 200))  # even n, alpha = 1/2
    inverse = QuantileEM(epsilon=0.5).release(x, (0.0, 1.0))
    scale = 0.5 / (2 * 0.5)

    def log_score(gaps: np.ndarray) -> np.ndarray:
        return -scale * rank_distance(200, 0.5, gaps)

    racing = make_racing(x, 0.0, 1.0, log_score, 100)
    assert racing._racer is not None and racing._racer.log_weights.size == 101
    draws = racing.sample(20_000, np.random.default_rng(22))
    assert stats.kstest(draws, inverse.cdf).pvalue > 1e-3


def test_racing_ks_catches_the_log_length_dropped(monkeypatch):
    x = np.sort(np.random.default_rng(5).normal(size=300))
    inverse = Duff(epsilon=1.0).release(x, (-10.0, 10.0))
    score = duff_score(300, 1.0)
    draws = make_racing(x, -10.0, 10.0, score, 150).sample(20_000, np.random.default_rng(23))
    assert stats.kstest(draws, inverse.cdf).pvalue > 1e-3
    monkeypatch.setattr(
        IntervalLevels, "log_measures", property(lambda self: np.zeros(self._measures.size))
    )
    draws = make_racing(x, -10.0, 10.0, score, 150).sample(20_000, np.random.default_rng(23))
    assert stats.kstest(draws, inverse.cdf).pvalue < 1e-6


def test_racing_diffprivlib_107_scores_of_magnitude_1e5():
    """80% ties at the median, n = 2e5, ε = 5: positive gaps' scores ~1e5 below the max."""
    rng = np.random.default_rng(107)
    n = 200_000
    x = rng.uniform(0.0, 1.0, n)
    x[: int(0.8 * n)] = 0.5
    x.sort()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="raise", invalid="raise", over="raise"):
            release = PiecewiseUniformRelease(
                x, 0.0, 1.0, duff_score(n, 5.0), n // 2, sampler="racing"
            )
            draws = release.sample(200_000, np.random.default_rng(0))
    assert np.all((draws >= 0.0) & (draws <= 1.0)) and np.all(draws != 0.5)
    gap = np.searchsorted(release.edges, draws, side="right") - 1
    p = release.probabilities
    observed = np.bincount(gap, minlength=p.size)
    likely = 200_000 * p >= 5  # expected counts 199784, 207 and 9 (next to the tie block)
    assert likely.sum() == 3
    pooled = np.append(observed[likely], observed[~likely].sum())
    expected = 200_000 * np.append(p[likely], p[~likely].sum())
    assert stats.chisquare(pooled, expected).pvalue > 1e-3


def test_racing_with_all_points_at_a_bound_and_empty_data():
    for x in ([0.0, 0.0, 0.0], [1.0, 1.0], []):
        release = make_racing(x, 0.0, 1.0, linear_score(2.0, 1), min(1, len(x)))
        assert release._racer is not None and release._racer.log_weights.size == 1
        draws = release.sample(5000, np.random.default_rng(6))
        assert stats.kstest(draws, "uniform").pvalue > 1e-3
