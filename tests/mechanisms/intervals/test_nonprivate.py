"""The non-private order-statistic interval: exact coverage by enumeration, the rank rule,
the interval on awkward data, and its measured coverage."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mechanisms.intervals.nonprivate import (
    NonPrivateOrderStatistic,
    order_statistic_coverage,
    sign_test_rank,
)
from tests.mechanisms.intervals.test_support import chernoff_threshold, mean_exact_coverage

ALPHA = 0.05


def enumerated_coverage(n: int, rank: int, below: float, tie: float) -> float:
    """``P(x_(rank) <= m <= x_(n+1−rank))`` by enumerating which points fall below, on, or
    above ``m`` (probabilities ``below``, ``tie``, ``1 − below − tie``): ``x_(l) <= m`` iff at
    least ``l`` points are ``<= m``, and ``x_(u) >= m`` iff at least ``n − u + 1`` are ``>= m``."""
    total = 0.0
    for cells in itertools.product((-1, 0, 1), repeat=n):
        at_most = sum(cell <= 0 for cell in cells)
        at_least = sum(cell >= 0 for cell in cells)
        if at_most >= rank and at_least >= rank:
            probability = 1.0
            for cell in cells:
                probability *= {-1: below, 0: tie, 1: 1.0 - below - tie}[cell]
            total += probability
    return total


def mutated_coverage(n: int, rank: int) -> float:
    """A planted off-by-one: ``P(B <= rank)`` in place of ``P(B <= rank − 1)``."""
    return 1.0 - 2.0 * float(stats.binom.cdf(rank, n, 0.5))


@pytest.mark.parametrize("formula", [order_statistic_coverage, mutated_coverage])
def test_coverage_formula_against_enumeration(formula):
    """Continuous distributions (no tie at the median): the formula is the exact coverage;
    the planted off-by-one is caught."""
    mismatches = 0
    for n in range(1, 9):
        for rank in range(1, (n + 1) // 2 + 1):
            exact = enumerated_coverage(n, rank, 0.5, 0.0)
            mismatches += abs(formula(n, rank) - exact) > 1e-12
    assert (mismatches == 0) == (formula is order_statistic_coverage)


@pytest.mark.parametrize(("below", "tie"), [(0.3, 0.4), (0.5, 0.2), (0.2, 0.6), (0.45, 0.1)])
def test_the_formula_is_a_lower_bound_with_an_atom_at_the_median(below, tie):
    """A distribution with an atom at its median (``P(X < m) = below <= 1/2`` and
    ``P(X > m) <= 1/2``) is covered at least as often as a continuous one."""
    for n in range(1, 8):
        for rank in range(1, (n + 1) // 2 + 1):
            bound = order_statistic_coverage(n, rank)
            assert enumerated_coverage(n, rank, below, tie) >= bound - 1e-12


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01, 0.5])
def test_rank_is_the_narrowest_symmetric_pair_reaching_the_level(alpha):
    for n in range(0, 60):
        valid = [
            rank
            for rank in range(1, (n + 1) // 2 + 1)
            if order_statistic_coverage(n, rank) >= 1 - alpha
        ]
        assert sign_test_rank(n, alpha) == (max(valid) if valid else None)
    # no pair exists below log2(2/α) points: 2^-n > α/2
    assert sign_test_rank(math.ceil(math.log2(2 / alpha)) - 1, alpha) is None
    assert sign_test_rank(math.ceil(math.log2(2 / alpha)), alpha) == 1


def test_known_ranks():
    """Textbook values: n = 6: [x_(1), x_(6)] (96.9%), n = 10: [x_(2), x_(9)] (97.9%),
    n = 20: [x_(6), x_(15)] (95.9%), n = 100: [x_(40), x_(61)] (96.48%); larger n: the
    defining property, and the normal approximation ``n/2 − 1.96·sqrt(n)/2``."""
    for n, rank, level in ((6, 1, 0.969), (10, 2, 0.979), (20, 6, 0.959)):
        assert sign_test_rank(n, ALPHA) == rank
        assert order_statistic_coverage(n, rank) == pytest.approx(level, abs=5e-4)
    assert sign_test_rank(100, ALPHA) == 40
    assert order_statistic_coverage(100, 40) == pytest.approx(0.9648, abs=1e-4)
    for n in (1000, 10**6):
        rank = sign_test_rank(n, ALPHA)
        assert stats.binom.cdf(rank - 1, n, 0.5) <= ALPHA / 2 < stats.binom.cdf(rank, n, 0.5)
        assert abs(rank - (n / 2 - 1.96 * math.sqrt(n) / 2)) <= 2


def test_interval_on_ties_bounds_and_clipping():
    method = NonPrivateOrderStatistic(alpha=0.1)
    data = np.array([5.0, -3.0, 2.0, 2.0, 2.0, 9.0, -1.0, 2.0, 0.0, 7.0, 2.0, 12.0])
    release = method.release(data, (-2.0, 8.0))
    x = np.sort(np.clip(data, -2.0, 8.0))
    rank = sign_test_rank(12, 0.1)
    rows = release.sample(3, np.random.default_rng(0))
    assert np.array_equal(rows, np.tile([x[rank - 1], x[12 - rank]], (3, 1)))
    assert release.nominal_coverage == order_statistic_coverage(12, rank)
    assert release.true_value == x[5]
    assert release.coverage(x[rank - 1]) == 1.0
    assert release.coverage(np.nextafter(x[rank - 1], -np.inf)) == 0.0
    assert release.coverage(x[12 - rank]) == 1.0


@pytest.mark.parametrize("n", [0, 1, 5])
def test_too_few_points_give_the_whole_range(n):
    method = NonPrivateOrderStatistic(alpha=ALPHA)
    release = method.release(np.linspace(0.2, 0.4, n), (0.0, 1.0))
    assert np.array_equal(release.sample(2, np.random.default_rng(0)), [[0.0, 1.0], [0.0, 1.0]])
    assert release.nominal_coverage == 1.0 == method.nominal_coverage(n)
    assert release.coverage(0.0) == release.coverage(1.0) == 1.0


@pytest.mark.parametrize("distribution", ["normal", "uniform"])
@pytest.mark.parametrize("n", [100, 1000])
def test_measured_coverage_is_the_exact_one(distribution, n):
    """The coverage over 4000 datasets matches ``order_statistic_coverage`` both ways."""
    trials = 4000
    method = NonPrivateOrderStatistic(alpha=ALPHA)
    measured = mean_exact_coverage(method, distribution, n, trials, seed=n)
    exact = method.nominal_coverage(n)
    assert chernoff_threshold(exact, trials, -1) <= measured <= chernoff_threshold(exact, trials, 1)
