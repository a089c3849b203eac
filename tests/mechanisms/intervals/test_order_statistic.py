"""The DP order-statistic interval (union bound, optimised split): its rank rule by brute
force, its coverage on N(0,1) and U(0,1), and a planted bug without the privacy widening."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mechanisms.intervals.drechsler import joint_rank
from mechanisms.intervals.nonprivate import sign_test_rank
from mechanisms.intervals.order_statistic import DPOrderStatistic, union_rank
from tests.mechanisms.intervals.test_support import (
    DISTRIBUTIONS,
    chernoff_threshold,
    mean_exact_coverage,
)

ALPHA = 0.05
TRIALS = 1000
CELLS = [(d, n, e) for d in DISTRIBUTIONS for n in (100, 1000) for e in (0.5, 2.0)]


def brute_union_rank(n: int, alpha: float, kappa: float, log_rho: float) -> int | None:
    """The largest ``k >= 0`` for which some ``j >= 1`` has
    ``P(B <= k + j − 1) + ρe^{−κj} <= α/2``, by trying every pair."""
    cdf = stats.binom.cdf(np.arange(n + 1), n, 0.5)
    steps = np.arange(1, n + 2)
    privacy = np.exp(log_rho - kappa * steps)
    feasible = [
        rank
        for rank in range(n + 1)
        if np.any(cdf[np.minimum(rank + steps - 1, n)] + privacy <= alpha / 2)
    ]
    return max(feasible) if feasible else None


def off_by_one_union_rank(n: int, alpha: float, *, kappa: float, log_rho: float) -> int | None:
    """A planted bug: one rank too far in (the sampling term read as ``P(B <= k + j − 2)``)."""
    rank = union_rank(n, alpha, kappa=kappa, log_rho=log_rho)
    return None if rank is None else rank + 1


@pytest.mark.parametrize("rule", [union_rank, off_by_one_union_rank])
def test_union_rank_against_brute_force(rule):
    mismatches = 0
    for n in (0, 1, 10, 30, 61):
        for kappa in (0.05, 0.5, 3.0, 40.0):
            for log_rho in (0.0, math.log(50.0), math.log(500.0)):
                for alpha in (0.05, 0.2):
                    expected = brute_union_rank(n, alpha, kappa, log_rho)
                    mismatches += rule(n, alpha, kappa=kappa, log_rho=log_rho) != expected
    assert (mismatches == 0) == (rule is union_rank)


def test_union_rank_is_never_beyond_the_joint_rank():
    """The union bound is looser than ``F``: its rank is never closer to the median."""
    for n in (20, 100, 333, 1000):
        for epsilon in (0.1, 0.5, 1.0, 2.0, 10.0):
            options = {"kappa": epsilon / 4, "log_rho": math.log(500.0)}
            union, joint = union_rank(n, ALPHA, **options), joint_rank(n, ALPHA, **options)
            assert union is None or (joint is not None and union <= joint)


def test_nominal_coverage_is_at_least_the_level():
    for n in (0, 5, 50, 100, 400, 1000, 10**5):
        for epsilon in (0.1, 0.5, 2.0, 50.0):
            method = DPOrderStatistic(epsilon=epsilon, alpha=ALPHA)
            rank = method.lower_rank(n)
            nominal = method.nominal_coverage(n)
            assert nominal == 1.0 if rank is None else 1 - ALPHA <= nominal < 1.0
    # large ε: the ranks tend to the non-private ones
    assert DPOrderStatistic(epsilon=1e6).lower_rank(1000) == sign_test_rank(1000, ALPHA) - 1


class NoPrivacyWidening(DPOrderStatistic):
    """A planted bug: the EMs target the non-private ranks (no room for the privacy error)."""

    def lower_rank(self, n: int) -> int | None:
        rank = sign_test_rank(n, self.alpha)
        return None if rank is None else rank - 1


@pytest.mark.parametrize(("distribution", "n", "epsilon"), CELLS)
def test_coverage_reaches_the_level(distribution, n, epsilon):
    """Exact conditional coverage of the population median averaged over 1000 datasets:
    not below ``1 − α`` by more than the 1e-9 Chernoff tolerance (0.90 at 1000 trials)."""
    method = DPOrderStatistic(epsilon=epsilon, alpha=ALPHA)
    measured = mean_exact_coverage(method, distribution, n, TRIALS, seed=n + int(10 * epsilon))
    assert measured >= chernoff_threshold(1 - ALPHA, TRIALS, -1)


@pytest.mark.parametrize("distribution", list(DISTRIBUTIONS))
def test_without_the_widening_the_coverage_check_fails(distribution):
    """At n = 100, ε = 0.5 the EMs' rank error is large next to the sampling error: the
    planted bug covers about 0.75 and fails the check of the previous test."""
    method = NoPrivacyWidening(epsilon=0.5, alpha=ALPHA)
    measured = mean_exact_coverage(method, distribution, 100, TRIALS, seed=105)
    assert measured < chernoff_threshold(1 - ALPHA, TRIALS, -1)


def test_exact_coverage_matches_sampled_intervals():
    """``release.coverage(t)`` against the frequency of ``lo <= t <= hi`` in 20000 draws."""
    draws = 20000
    data = np.random.default_rng(7).normal(size=300)
    release = DPOrderStatistic(epsilon=1.5, alpha=0.2).release(data, (-3.0, 3.0))
    intervals = release.sample(draws, np.random.default_rng(8))
    for t in (-3.0, -0.4, -0.1, 0.0, 0.05, 0.3, 3.0):
        exact = release.coverage(t)
        hits = float(np.mean((intervals[:, 0] <= t) & (t <= intervals[:, 1])))
        assert chernoff_threshold(exact, draws, -1) <= hits <= chernoff_threshold(exact, draws, 1)
