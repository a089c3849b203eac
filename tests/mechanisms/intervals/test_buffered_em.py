"""The buffered rank EM behind the DP intervals: its utility, its identity with the quantile
EM on shifted data, its data-independent bound, the failure bound F(k), and exact privacy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mechanisms.intervals.base import ShiftedRelease
from mechanisms.intervals.buffered_em import buffered_em, failure_bound
from mechanisms.intervals.drechsler import DrechslerExpMech
from mechanisms.intervals.order_statistic import DPOrderStatistic
from mechanisms.median.quantile_em import QuantileEM
from tests.mechanisms.intervals.test_support import privacy_loss

A, B = -5.0, 5.0


def datasets(rng: np.random.Generator) -> list[np.ndarray]:
    """Small awkward datasets: empty, ties, points on both bounds, a tight cluster."""
    out = [np.array([]), np.array([A]), np.array([B]), np.array([A, A, B, B]), np.zeros(5)]
    for n in (1, 2, 3, 6, 11, 40):
        out.append(rng.normal(0.0, 1.5, n).clip(A, B))
        out.append(rng.integers(-5, 6, n).astype(float))
        cluster = rng.uniform(A, B, n)
        cluster[: int(0.7 * n)] = 1e-9 * rng.standard_normal(int(0.7 * n))
        out.append(cluster)
    return [np.sort(x) for x in out]


def brute_utility(x: np.ndarray, y: float, rank: int, buffer: float) -> float:
    """``u_k(y) = −dist(k, [#{x < y − θ}, #{x < y + θ}])`` straight from the definition."""
    below = sum(value < y - buffer for value in x)
    within = sum(value < y + buffer for value in x)
    return -max(0, below - rank, rank - within)


def wrong_shift(x: np.ndarray, rank: int, buffer: float) -> np.ndarray:
    """A planted bug for the checker: every point moved down (no gap opened at the rank)."""
    return x - buffer


def right_shift(x: np.ndarray, rank: int, buffer: float) -> np.ndarray:
    return np.concatenate((x[:rank] - buffer, x[rank:] + buffer))


@pytest.mark.parametrize("shift", [right_shift, wrong_shift])
def test_gap_scores_are_the_utility(shift):
    """On every gap of the shifted data, ``|#{z < y} − k|`` equals the brute-force utility
    (ties, bounds, the empty dataset and every rank); a wrong shift is caught."""
    buffer, mismatches = 0.3, 0
    for x in datasets(np.random.default_rng(1)):
        for rank in range(x.size + 1):
            z = np.concatenate(([A - buffer], shift(x, rank, buffer), [B + buffer]))
            for i in range(x.size + 1):
                if z[i + 1] > z[i]:
                    y = 0.5 * (z[i] + z[i + 1])
                    mismatches += -abs(i - rank) != brute_utility(x, y, rank, buffer)
    assert (mismatches == 0) == (shift is right_shift)


def test_release_density_follows_the_utility():
    """The release's density on each gap is ``∝ exp(κ·u_k)`` with ``κ = ε_e/2``."""
    epsilon, buffer = 0.8, 0.25
    for x in datasets(np.random.default_rng(2))[:20]:
        for rank in {0, x.size // 3, x.size}:
            release = buffered_em(x, A, B, rank=rank, epsilon=epsilon, buffer=buffer)
            edges = release.edges
            lengths = np.diff(edges)
            positive = lengths > 0
            middles = 0.5 * (edges[:-1] + edges[1:])[positive]
            utility = np.array([brute_utility(x, y, rank, buffer) for y in middles])
            log_density = release.log_masses[positive] - np.log(lengths[positive])
            offset = log_density - epsilon / 2 * utility
            assert np.ptp(offset) < 1e-9


def test_it_is_the_quantile_em_on_the_shifted_data():
    """With ``k/n`` a short decimal, the quantile EM (replace-one, ε_e) on the shifted data
    over ``[a − θ, b + θ]`` has the same distribution."""
    rng = np.random.default_rng(3)
    buffer, epsilon = 0.2, 1.3
    for n, rank in ((10, 3), (20, 9), (8, 2), (5, 1)):
        x = np.sort(rng.normal(size=n).clip(A, B))
        mine = buffered_em(x, A, B, rank=rank, epsilon=epsilon, buffer=buffer)
        theirs = QuantileEM(epsilon=epsilon, alpha=rank / n, neighbours="replace_one").release(
            right_shift(x, rank, buffer), (A - buffer, B + buffer)
        )
        grid = np.linspace(A - buffer, B + buffer, 2001)
        assert np.allclose(mine.cdf(grid), theirs.cdf(grid), rtol=0, atol=1e-12)


def test_the_zero_utility_set_has_measure_two_buffers():
    buffer = 0.1
    for x in datasets(np.random.default_rng(4)):
        for rank in range(x.size + 1):
            z = np.concatenate(([A - buffer], right_shift(x, rank, buffer), [B + buffer]))
            assert z[rank + 1] - z[rank] >= 2 * buffer - 1e-12


def tight_dataset(n: int, rank: int, excess: int) -> np.ndarray:
    """``rank + excess`` points at ``a``, the rest at ``b``: with ``m`` just above ``a``,
    ``C = rank + excess`` and the lower end's failure probability nearly meets the bound."""
    return np.array([A] * (rank + excess) + [B] * (n - rank - excess))


def conditional_bound(count: int, rank: int, kappa: float, log_rho: float) -> float:
    return 1.0 if count <= rank else min(1.0, math.exp(log_rho - kappa * (count - rank)))


def mutated_bound(count: int, rank: int, kappa: float, log_rho: float) -> float:
    """A planted bug: ρ/2 in place of ρ (the zero set counted as ``4θ``)."""
    return conditional_bound(count, rank, kappa, log_rho - math.log(2))


@pytest.mark.parametrize("bound", [conditional_bound, mutated_bound])
def test_conditional_failure_bound_holds_and_is_tight(bound):
    """``P(L > m | data) <= g_k(#{x <= m})`` exactly (from the release's cdf), for every
    dataset, rank and median candidate; the mutated bound is violated near tightness."""
    granularity, epsilon_end = 0.01, 6.0
    kappa, log_rho = epsilon_end / 2, -math.log(2 * granularity)
    buffer = granularity * (B - A)
    cases = [(x, rank) for x in datasets(np.random.default_rng(5)) for rank in (0, x.size // 2)]
    cases += [(tight_dataset(9, 3, excess), 3) for excess in (1, 2)]
    worst = 0.0
    for x, rank in cases:
        release = buffered_em(x, A, B, rank=rank, epsilon=epsilon_end, buffer=buffer)
        lower_end = ShiftedRelease(release, -buffer, A, B)
        for m in np.unique(np.concatenate(([A, B, 0.0], x, np.nextafter(x, np.inf)))):
            if not A <= m < B:
                continue
            failure = 1.0 - lower_end.cdf(m)
            allowed = bound(int(np.sum(x <= m)), rank, kappa, log_rho)
            worst = max(worst, failure / allowed)
    assert (worst <= 1 + 1e-9) == (bound is conditional_bound)
    if bound is conditional_bound:
        assert worst > 0.9  # the tight datasets come close


def brute_failure_bound(n: int, rank: int, kappa: float, log_rho: float) -> float:
    counts = np.arange(n + 1)
    pmf = stats.binom.pmf(counts, n, 0.5)
    weights = [conditional_bound(int(c), rank, kappa, log_rho) for c in counts]
    return float(np.dot(pmf, weights))


def test_failure_bound_is_the_binomial_average_of_the_conditional_bound():
    for n in (0, 1, 2, 7, 30, 101):
        for kappa in (0.01, 0.3, 2.0, 50.0):
            for rank in range(n + 1):
                expected = brute_failure_bound(n, rank, kappa, math.log(500.0))
                got = failure_bound(n, rank, kappa=kappa, log_rho=math.log(500.0))
                assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_failure_bound_truncation_is_conservative_and_tight():
    """For ``n`` large and κ small only part of the sum is evaluated (here 3000 terms past
    ``c − k = ln ρ/κ ≈ 311`` of about 10000), the rest is bounded by a term below
    ``e^{−60}``: the value equals the full sum up to rounding."""
    n, kappa, log_rho = 20000, 0.02, math.log(500.0)
    for rank in (9400, 9500, 9700):
        full = brute_failure_bound(n, rank, kappa, log_rho)
        truncated = failure_bound(n, rank, kappa=kappa, log_rho=log_rho)
        assert truncated == pytest.approx(full, rel=1e-12, abs=1e-14)
        assert full > 1e-3


def test_failure_bound_at_extreme_privacy_parameters():
    assert failure_bound(50, 10, kappa=1e-300, log_rho=math.log(500.0)) == 1.0
    assert failure_bound(50, 10, kappa=1e300, log_rho=math.log(500.0)) == pytest.approx(
        stats.binom.cdf(10, 50, 0.5), rel=1e-12
    )


# ------------------------------------------------------------------ privacy


def replace_one_pairs(rng: np.random.Generator):
    for x in datasets(rng):
        if x.size == 0:
            continue
        middle = (x.size - 1) // 2
        for index, value in ((0, B), (x.size - 1, A), (middle, A), (middle, B), (0, 0.0)):
            y = x.copy()
            y[index] = value
            yield x, np.sort(y)


class FullEpsilonPerEnd(DPOrderStatistic):
    """A planted bug: each end spends the whole ε (so the pair is 2ε-DP, not ε-DP)."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.endpoint_epsilon = self.epsilon


@pytest.mark.parametrize("cls", [DPOrderStatistic, DrechslerExpMech, FullEpsilonPerEnd])
def test_each_end_is_half_epsilon_dp_on_replace_one_pairs(cls):
    """Exact privacy loss of each end's EM on replace-one neighbours: at most ε/2 (so the
    interval, post-processing of the two, is ε-DP); the full-ε planted bug is caught."""
    worst = 0.0
    for epsilon in (0.1, 1.0, 8.0):
        method = cls(epsilon=epsilon, granularity=0.01)
        for first, second in replace_one_pairs(np.random.default_rng(6)):
            for rank in {0, first.size // 3, first.size // 2}:
                pairs = zip(
                    method.endpoint_releases(first, A, B, rank),
                    method.endpoint_releases(second, A, B, rank),
                    strict=True,
                )
                for mine, theirs in pairs:
                    worst = max(worst, privacy_loss(mine, theirs) / (epsilon / 2))
    if cls is FullEpsilonPerEnd:
        assert worst > 1.5
    else:
        assert 0.7 < worst <= 1 + 1e-9  # not vacuous: some pair comes close to ε/2
