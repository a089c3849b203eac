"""ExpMech of Drechsler et al.: the joint rank rule by brute force and its coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.intervals.buffered_em import failure_bound
from mechanisms.intervals.drechsler import DrechslerExpMech, joint_rank
from mechanisms.intervals.nonprivate import sign_test_rank
from tests.mechanisms.intervals.test_support import (
    DISTRIBUTIONS,
    chernoff_threshold,
    mean_exact_coverage,
)

ALPHA = 0.05
TRIALS = 1000
CELLS = [(d, n, e) for d in DISTRIBUTIONS for n in (100, 1000) for e in (0.5, 2.0)]


def scanned_rank(n: int, alpha: float, *, kappa: float, log_rho: float) -> int | None:
    """The largest ``k`` with ``F(k) <= α/2`` by scanning every ``k``."""
    feasible = [
        rank
        for rank in range(n + 1)
        if failure_bound(n, rank, kappa=kappa, log_rho=log_rho) <= alpha / 2
    ]
    return max(feasible) if feasible else None


def first_infeasible_rank(n: int, alpha: float, *, kappa: float, log_rho: float) -> int | None:
    """A planted bug: the bisection's answer plus one (``F(k) > α/2`` there)."""
    rank = joint_rank(n, alpha, kappa=kappa, log_rho=log_rho)
    return None if rank is None else rank + 1


@pytest.mark.parametrize("rule", [joint_rank, first_infeasible_rank])
def test_joint_rank_against_a_scan(rule):
    mismatches = 0
    for n in (0, 1, 7, 40, 150):
        for kappa in (0.05, 0.5, 3.0, 40.0):
            for log_rho in (0.0, math.log(500.0)):
                for alpha in (0.05, 0.3):
                    expected = scanned_rank(n, alpha, kappa=kappa, log_rho=log_rho)
                    mismatches += rule(n, alpha, kappa=kappa, log_rho=log_rho) != expected
    assert (mismatches == 0) == (rule is joint_rank)


def test_ranks_and_nominal_coverage():
    """The nominal coverage ``1 − 2F(k)`` reaches the level; ranks grow with ε up to the
    non-private rank minus one (the lower end's zero set ends at ``x_(k+1)``)."""
    for n in (10, 100, 1000):
        ranks = []
        for epsilon in (0.1, 0.5, 1.0, 2.0, 1e6):
            method = DrechslerExpMech(epsilon=epsilon, alpha=ALPHA)
            rank = method.lower_rank(n)
            ranks.append(-1 if rank is None else rank)
            nominal = method.nominal_coverage(n)
            assert nominal == 1.0 if rank is None else 1 - ALPHA <= nominal < 1.0
        assert ranks == sorted(ranks)
        assert ranks[-1] == sign_test_rank(n, ALPHA) - 1


@pytest.mark.parametrize(("distribution", "n", "epsilon"), CELLS)
def test_coverage_reaches_the_level(distribution, n, epsilon):
    """As for the union-bound interval: the exact conditional coverage averaged over 1000
    datasets is not below ``1 − α`` by more than the 1e-9 Chernoff tolerance."""
    method = DrechslerExpMech(epsilon=epsilon, alpha=ALPHA)
    measured = mean_exact_coverage(method, distribution, n, TRIALS, seed=7 * n + int(epsilon))
    assert measured >= chernoff_threshold(1 - ALPHA, TRIALS, -1)


def test_exact_coverage_matches_sampled_intervals():
    draws = 20000
    data = np.random.default_rng(9).uniform(size=500)
    release = DrechslerExpMech(epsilon=0.7, alpha=0.1, granularity=0.01).release(data, (0, 1))
    intervals = release.sample(draws, np.random.default_rng(10))
    for t in (0.0, 0.4, 0.45, 0.5, 0.52, 0.6, 1.0):
        exact = release.coverage(t)
        hits = float(np.mean((intervals[:, 0] <= t) & (t <= intervals[:, 1])))
        assert chernoff_threshold(exact, draws, -1) <= hits <= chernoff_threshold(exact, draws, 1)
