"""The racing sampler (Duff paper, Algorithm 1) against exact level probabilities.

Every statistical check runs with a fixed seed and is also run on a deliberately
broken variant (the log-measure term dropped, the sign of ``log p`` flipped,
``E`` raced instead of ``log E``, the argmax taken, cumulative lengths not reset
per level, pieces chosen regardless of length), which must make it fail.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import softmax

import mechanisms
import mechanisms.sampling.racing as racing
from mechanisms.sampling.racing import FiniteLevels, IntervalLevels, RacingSampler, race

LevelSampler = Callable[[int, np.random.Generator], np.ndarray]

DRAWS = 200_000


def chisquare_pvalue(levels: np.ndarray, probabilities: np.ndarray) -> float:
    """Multinomial goodness of fit of drawn ``levels`` to exact ``probabilities``.

    A draw of a level of probability 0 gives p-value 0; levels with expected
    count below 5 are pooled into one cell.
    """
    observed = np.bincount(levels, minlength=probabilities.size)
    if observed[probabilities == 0].any():
        return 0.0
    expected = probabilities * levels.size
    small = expected < 5
    cells_observed = np.append(observed[~small], observed[small].sum())
    cells_expected = np.append(expected[~small], expected[small].sum())
    keep = cells_expected > 0
    return float(stats.chisquare(cells_observed[keep], cells_expected[keep]).pvalue)


def level_pvalue(
    sample_levels: LevelSampler, log_scores: np.ndarray, log_measures: np.ndarray, seed: int
) -> float:
    """Frequencies of ``DRAWS`` levels vs ``P(K = k) ∝ exp(s_k)·μ(A_k)`` (eq. 5), by softmax."""
    weights = np.asarray(log_scores) + np.asarray(log_measures)
    finite = weights > -np.inf
    probabilities = np.zeros(weights.size)
    probabilities[finite] = softmax(weights[finite])
    drawn = sample_levels(DRAWS, np.random.default_rng(seed))
    return chisquare_pvalue(drawn, probabilities)


# Duff-like levels: utility -k, ε = 1, so s_k = -k/2, and sets of many sizes.
SCORES = -0.5 * np.arange(8.0)
LOG_MEASURES = np.array([math.log(m) for m in (3, 20, 1, 60, 10, 400, 1, 70)])
LOG_MEASURES[6] = -np.inf  # an empty level


def flawed_race(log_weights: np.ndarray, size: int, rng: np.random.Generator, flaw: str):
    """Algorithm 1 with one planted mistake, on a plain (draws × levels) matrix."""
    entrants = np.flatnonzero(log_weights > -np.inf)
    e = rng.standard_exponential((size, entrants.size))
    if flaw == "no_log":  # argmin(E_k - log p_k)
        return entrants[(e - log_weights[entrants]).argmin(axis=1)]
    z = np.log(e) - log_weights[entrants]
    return entrants[z.argmax(axis=1)]  # flaw == "argmax"


def finite_levels(log_sizes: np.ndarray) -> FiniteLevels:
    """Counting-measure levels whose elements are ``1000·k + j`` (a stand-in draw)."""

    def uniform(levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return 1000 * levels + rng.integers(0, 1000, levels.size)

    return FiniteLevels(log_sizes, uniform)


def real_sampler(size: int, rng: np.random.Generator) -> np.ndarray:
    return RacingSampler(SCORES, finite_levels(LOG_MEASURES)).sample_levels(size, rng)


CANDIDATES: dict[str, tuple[LevelSampler, bool]] = {
    "algorithm_1": (real_sampler, True),
    "log_measure_dropped": (lambda size, rng: race(SCORES, size, rng), False),
    "wrong_sign": (  # argmin(log E_k + log p_k)
        lambda size, rng: race(
            np.where(np.isfinite(LOG_MEASURES), -(SCORES + LOG_MEASURES), -np.inf), size, rng
        ),
        False,
    ),
    "E_not_log_E": (
        lambda size, rng: flawed_race(SCORES + LOG_MEASURES, size, rng, "no_log"),
        False,
    ),
    "argmax": (lambda size, rng: flawed_race(SCORES + LOG_MEASURES, size, rng, "argmax"), False),
}


@pytest.mark.parametrize("name", list(CANDIDATES))
def test_level_frequencies_match_exact_probabilities_and_catch_planted_bugs(name):
    sampler, correct = CANDIDATES[name]
    with np.errstate(divide="ignore"):  # the planted races may take log 0
        pvalue = level_pvalue(sampler, SCORES, LOG_MEASURES, seed=5)
    if correct:
        assert pvalue > 1e-3
    else:
        assert pvalue < 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_race_on_random_levels(seed):
    rng = np.random.default_rng(100 + seed)
    log_weights = rng.normal(0.0, 2.0, rng.integers(1, 40))
    log_weights[rng.random(log_weights.size) < 0.2] = -np.inf
    log_weights[0] = 1e5  # scores of magnitude 1e5: only differences matter
    log_weights[1:] += 1e5
    drawn = race(log_weights, DRAWS, np.random.default_rng(seed))
    probabilities = np.zeros(log_weights.size)
    finite = log_weights > -np.inf
    probabilities[finite] = softmax(log_weights[finite])
    assert chisquare_pvalue(drawn, probabilities) > 1e-3


def untiled_race(log_weights: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1 on one (draws × levels) matrix: the same stream of exponentials."""
    z = np.log(rng.standard_exponential((size, log_weights.size))) - log_weights
    return z.argmin(axis=1)


@pytest.mark.parametrize(("levels", "size"), [(50, 3000), (racing.TILE + 3, 3), (1, 10)])
def test_tiles_race_exactly_like_one_matrix(levels, size):
    """50 levels: tiles of 1310 draws; TILE + 3 levels: one draw per tile; a single level."""
    log_weights = np.random.default_rng(levels).normal(0.0, 3.0, levels)
    got = race(log_weights, size, np.random.default_rng(8))
    assert np.array_equal(got, untiled_race(log_weights, size, np.random.default_rng(8)))


def test_zero_weight_levels_and_empty_draws():
    drawn = race(np.array([-np.inf, -3.0, -np.inf]), 5, np.random.default_rng(0))
    assert np.array_equal(drawn, [1] * 5)
    assert race(np.zeros(3), 0, np.random.default_rng(0)).shape == (0,)


def test_race_bad_input():
    for bad in (np.array([np.nan, 0.0]), np.array([np.inf, 0.0]), np.zeros((2, 2))):
        with pytest.raises(ValueError, match="log_weights"):
            race(bad, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="log_weights"):
        race(np.array([-np.inf, -np.inf]), 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="size"):
        race(np.zeros(2), -1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        race(np.zeros(2), 1, np.random.RandomState(0))


# ------------------------------------------------------------ counting measure


def test_huge_counting_levels_without_overflow():
    """Levels of 10^300 and e^100000 elements, given by their log sizes, against small ones."""
    log_sizes = np.array([0.0, math.log(3.0), 300 * math.log(10.0), 1e5, -np.inf])
    scores = np.array([0.0, -1.0, -300 * math.log(10.0) + math.log(2.0), -1e5 - 1.0, 0.0])
    levels = finite_levels(log_sizes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            sampler = RacingSampler(scores, levels)
            probabilities = np.exp(sampler.log_probabilities)
    weights = np.array([1.0, 3 * math.exp(-1.0), 2.0, math.exp(-1.0), 0.0])
    assert np.allclose(probabilities, weights / weights.sum(), rtol=1e-11, atol=0)
    assert level_pvalue(sampler.sample_levels, scores, log_sizes, seed=2) > 1e-3
    values = sampler.sample(1000, np.random.default_rng(3))
    assert set(np.unique(values // 1000)) == {0, 1, 2, 3}  # the empty level 4 never


def test_finite_levels_bad_input():
    def uniform(levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return levels

    for bad in ([-0.5, 0.0], [np.nan], [np.inf], [[0.0]]):
        with pytest.raises(ValueError, match="log_sizes"):
            FiniteLevels(np.array(bad), uniform)
    wrong = FiniteLevels(np.zeros(2), lambda levels, rng: np.zeros(levels.size + 1))
    with pytest.raises(ValueError, match="uniform"):
        RacingSampler(np.zeros(2), wrong).sample(3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="log_scores"):
        RacingSampler(np.array([0.0, np.inf]), finite_levels(np.zeros(2)))
    with pytest.raises(ValueError, match="log_scores"):
        RacingSampler(np.zeros(3), finite_levels(np.zeros(2)))
    with pytest.raises(ValueError, match="positive measure"):
        RacingSampler(np.zeros(2), finite_levels(np.full(2, -np.inf)))


# ------------------------------------------------------------ interval levels


@settings(max_examples=200, deadline=None)
@given(
    segments=st.lists(
        st.lists(st.floats(1e-300, 1e300), min_size=1, max_size=20), min_size=1, max_size=12
    )
)
def test_segmented_scan_is_the_per_segment_cumulative_sum(segments):
    values = np.concatenate([np.array(s) for s in segments])
    counts = np.array([len(s) for s in segments])
    first = np.repeat(np.cumsum(counts) - counts, counts)
    got = racing._segmented_scan(values, first, np.add)
    expected = np.concatenate([np.cumsum(s) for s in segments])
    assert np.allclose(got, expected, rtol=8 * 2.0**-53, atol=0)
    running_max = racing._segmented_scan(values, first, np.maximum)
    assert np.array_equal(running_max, np.concatenate([np.maximum.accumulate(s) for s in segments]))


def interval_example() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pieces of 5 levels: several per level, unsorted, zero-length ones, an empty level 3.

    Level 1's pieces (3e-300 and 1e-300 long) follow level 0's (1e300 each) in
    the level order, so cumulative lengths not reset per level lose them.
    """
    pieces = [  # (left, right, level)
        (-2e300, -1e300, 0),
        (3e-300, 6e-300, 1),
        (2.0, 3.0, 2),
        (3.0, 3.5, 2),
        (2.0, 2.0, 4),
        (7.0, 9.0, 2),
        (4.0, 4.0, 3),
        (1e-300, 2e-300, 1),
        (6.0, 6.5, 4),
        (9.0, 9.0, 4),
        (1.0, 1.0, 0),
        (1e300, 2e300, 0),
    ]
    left, right, level = zip(*pieces, strict=True)
    return np.array(left), np.array(right), np.array(level)


def piece_pvalue(levels: IntervalLevels, left, right, level, seed: int) -> float:
    """Which piece each uniform draw of every level falls in, vs ``len_j/μ(A_k)``."""
    lengths = right - left
    rng = np.random.default_rng(seed)
    pvalues = []
    for k in np.unique(level[lengths > 0]):
        mine = np.flatnonzero((level == k) & (lengths > 0))
        draws = levels.uniform(np.full(20_000, k), rng)
        inside = (draws[:, None] >= left[mine]) & (draws[:, None] <= right[mine])
        if not inside.any(axis=1).all():
            return 0.0
        piece = inside.argmax(axis=1)
        expected = lengths[mine] / math.fsum(lengths[mine])
        pvalues.append(chisquare_pvalue(piece, expected) if mine.size > 1 else 1.0)
        within = (draws - left[mine][piece]) / lengths[mine][piece]  # uniform in its piece
        pvalues.append(stats.kstest(within, "uniform").pvalue)
    return min(pvalues)


def test_interval_levels_measures_and_uniform_draws():
    left, right, level = interval_example()
    levels = IntervalLevels(left, right, level)
    lengths = right - left
    expected = [math.fsum(lengths[(level == k)]) for k in range(5)]
    with np.errstate(divide="ignore"):
        assert np.allclose(levels.log_measures, np.log(expected), rtol=1e-15, atol=0)
    assert levels.log_measures[3] == -np.inf
    assert piece_pvalue(levels, left, right, level, seed=4) > 1e-3


class LengthBlindLevels(IntervalLevels):
    """Planted bug: the piece of a level is chosen uniformly, regardless of its length."""

    def uniform(self, levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        pieces = self._stops[levels] - self._starts[levels]
        index = self._starts[levels] + (rng.random(levels.size) * pieces).astype(np.int64)
        return self._left[index] + self._lengths[index] * rng.random(levels.size)


def test_piece_check_catches_planted_bugs(monkeypatch):
    left, right, level = interval_example()
    assert piece_pvalue(LengthBlindLevels(left, right, level), left, right, level, 4) < 1e-9
    monkeypatch.setattr(racing, "_segmented_scan", lambda values, first, op: op.accumulate(values))
    assert piece_pvalue(IntervalLevels(left, right, level), left, right, level, 4) < 1e-9


def test_total_lengths_beyond_float64_and_subnormal_lengths():
    """A level of total length 2.7e308 (not a float64) and one of 2 * 5e-324 = 1e-323."""
    left = np.array([-1e308, 0.0, -1e-322, 1e-322])
    right = np.array([-1e-322 - 5e-324, 1.7e308, -1e-322 + 5e-324, 1e-322 + 5e-324])
    levels = IntervalLevels(left, right, np.array([0, 0, 1, 1]))
    expected = [308 * math.log(10.0) + math.log(2.7), math.log(1e-323)]
    assert np.allclose(levels.log_measures, expected, rtol=1e-15, atol=0)
    draws = RacingSampler(np.array([0.0, 1400.0]), levels).sample(10_000, np.random.default_rng(7))
    # level 1 weighs e^1400·1e-323 = e^656 against 2.7e308 = e^710: probability e^-54
    assert np.all((draws >= -1e308) & (draws <= 1.7e308))
    assert stats.kstest(draws / 1e308, stats.uniform(-1.0, 2.7).cdf).pvalue > 1e-3


def test_on_intervals_groups_equal_scores_into_levels():
    left = np.array([0.0, 1.0, 1.0, 3.0, 4.0, 4.0])
    right = np.array([1.0, 1.0, 3.0, 4.0, 4.0, 8.0])
    scores = np.array([-1.0, 0.0, -2.0, -1.0, 5.0, -2.0])  # level of score 5: one empty gap
    sampler = RacingSampler.on_intervals(left, right, scores)
    assert sampler.log_weights.size == 4  # distinct scores -2, -1, 0, 5
    lengths = right - left
    brute = np.exp(scores + np.log(lengths, where=lengths > 0, out=np.full(6, -np.inf)))
    by_level = [brute[scores == s].sum() for s in (-2.0, -1.0, 0.0, 5.0)]
    assert np.allclose(np.exp(sampler.log_probabilities), by_level / np.sum(by_level), rtol=1e-14)
    draws = sampler.sample(50_000, np.random.default_rng(6))

    def cdf(x):
        return np.interp(x, np.append(left, 8.0), np.append(0.0, np.cumsum(brute) / brute.sum()))

    assert stats.kstest(draws, cdf).pvalue > 1e-3


def test_interval_levels_bad_input():
    with pytest.raises(ValueError, match="left, right and level"):
        IntervalLevels(np.zeros(2), np.ones(3), np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="level"):
        IntervalLevels(np.zeros(2), np.ones(2), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="level"):
        IntervalLevels(np.zeros(2), np.ones(2), np.array([0, -1]))
    with pytest.raises(ValueError, match="intervals"):
        IntervalLevels(np.ones(2), np.zeros(2), np.array([0, 1]))
    with pytest.raises(ValueError, match="positive measure"):
        RacingSampler.on_intervals(np.ones(2), np.ones(2), np.zeros(2))


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("duff", {}),
        ("duff", {"alpha": 0.1, "neighbours": "replace_one"}),
        ("quantile_em", {"alpha": 0.9}),
    ],
)
def test_the_mechanisms_racing_option_samples_their_exact_distribution(name, options) -> None:
    """``sampler="racing"`` of a mechanism draws from the same release as inversion: its
    draws pass a KS test against the exact cdf (fixed seed), and the option is checked."""
    data = np.random.default_rng(3).normal(size=200).round(1)
    raced = mechanisms.make(name, epsilon=1.0, sampler="racing", **options)
    release = raced.release(data, (-10.0, 10.0))
    draws = release.sample(20_000, np.random.default_rng(4))
    assert stats.kstest(draws, release.cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="sampler must be one of"):
        mechanisms.make(name, epsilon=1.0, sampler="gumbel")
