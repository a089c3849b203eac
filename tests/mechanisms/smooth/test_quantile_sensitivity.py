"""Smooth sensitivity of the α-quantile against brute force over edited datasets.

The brute force enumerates every multiset over a small grid of values (the
data's values plus the bounds ``a`` and ``b``), takes its local sensitivity by
trying every single addition and removal (or replacement), and maximises it
over the multisets within add/remove (or replace) distance ``k`` of the data.

Why the grid suffices.  The statistic is an order statistic whose rank depends
only on the size, so the gaps ``[z_s, z_{s+1}]`` that one addition or removal can
move it across depend on the size alone, and the largest move is the width of
such a gap, reached by a removal or by adding a point at an end of the gap (a
value of ``z``): LS(z) needs no other additions (a replacement moves it at most
to ``z_{r-1}`` or ``z_{r+1}``, reached by replacing with ``a`` or ``b``).  For
A(k), take ``z`` within distance ``k`` whose LS is the width of gap ``s``, and
move the added value at the gap's lower end (if it is one) down to the next
grid value, the one at its upper end up, and the other added values below
(above) the gap to ``a`` (``b``): size and ranks stay, the distance does not
grow, and gap ``s`` gets no narrower.  So ``A(k)`` over grid datasets is the
true one.  ``test_interior_values_never_help`` checks this on a richer grid.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.sorted_data import order_statistics
from mechanisms.smooth.quantile_add_remove import QuantileAddRemove
from mechanisms.smooth.sensitivity import MedianSmoothSensitivity, QuantileSmoothSensitivity

A, B = 0.0, 10.0
GRID = (0.0, 1.0, 3.0, 4.0, 10.0)
RICH_GRID = (0.0, 0.5, 1.0, 2.0, 3.0, 3.5, 4.0, 7.0, 10.0)
ALPHAS = (0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9)
MAX_N = 7
BETAS = (0.05, 0.3, 1.0, 3.0)
Rank = Callable[[np.ndarray, float], np.ndarray]


def ceil_rank(sizes: np.ndarray, alpha: float) -> np.ndarray:
    """``ceil(α m)`` exactly (α as the decimal it was written as)."""
    a = Fraction(repr(alpha))
    return (sizes * a.numerator + a.denominator - 1) // a.denominator


def floor_rank(sizes: np.ndarray, alpha: float) -> np.ndarray:
    """A planted bug: ``max(1, floor(α m))`` instead of ``ceil(α m)``."""
    a = Fraction(repr(alpha))
    return np.where(sizes > 0, np.maximum(sizes * a.numerator // a.denominator, 1), 0)


@cache
def multisets(values: tuple[float, ...], largest: int) -> np.ndarray:
    """Count vectors of every multiset over ``values`` of size at most ``largest``."""
    out = [
        np.bincount(np.array(combo, dtype=np.int64), minlength=len(values))
        for size in range(largest + 1)
        for combo in itertools.combinations_with_replacement(range(len(values)), size)
    ]
    return np.array(out)


def statistic(counts: np.ndarray, values: tuple[float, ...], alpha: float, rank: Rank):
    """The order statistic of the given rank for each row of counts; ``a`` when empty."""
    sizes = counts.sum(axis=1)
    r = rank(sizes, alpha)
    index = (np.cumsum(counts, axis=1) < r[:, None]).sum(axis=1)
    grid = np.asarray(values)
    return np.where(sizes == 0, A, grid[np.minimum(index, len(values) - 1)])


def local_sensitivities(
    counts: np.ndarray, values: tuple[float, ...], alpha: float, rank: Rank, replace: bool
) -> np.ndarray:
    """max |T(z) - T(z')| over the neighbours z' of each row z (additions from ``values``)."""
    t = statistic(counts, values, alpha, rank)
    best = np.zeros(len(counts))
    units = np.eye(len(values), dtype=np.int64)
    for removed in range(len(values)):
        present = counts[:, removed] > 0
        smaller = counts - units[removed]
        if replace:
            for added in range(len(values)):
                moved = statistic(smaller + units[added], values, alpha, rank)
                best = np.where(present, np.maximum(best, np.abs(t - moved)), best)
        else:
            moved = statistic(np.maximum(smaller, 0), values, alpha, rank)
            best = np.where(present, np.maximum(best, np.abs(t - moved)), best)
    if not replace:
        for added in range(len(values)):
            moved = statistic(counts + units[added], values, alpha, rank)
            best = np.maximum(best, np.abs(t - moved))
    return best


@cache
def table(values: tuple[float, ...], largest: int, alpha: float, rank: Rank, replace: bool):
    counts = multisets(values, largest)
    return counts, local_sensitivities(counts, values, alpha, rank, replace)


def brute_force_a(
    data: tuple[float, ...],
    depth: int,
    alpha: float,
    *,
    rank: Rank = ceil_rank,
    replace: bool = False,
    values: tuple[float, ...] = GRID,
) -> np.ndarray:
    """A(k) = max LS over the grid datasets within distance k, for k = 0..depth."""
    counts, ls = table(values, len(data) + depth, alpha, rank, replace)
    own = np.array([data.count(v) for v in values])
    if replace:
        same = counts.sum(axis=1) == len(data)
        counts, ls = counts[same], ls[same]
        distance = np.maximum(own - counts, 0).sum(axis=1)
    else:
        distance = np.abs(counts - own).sum(axis=1)
    return np.array([ls[distance <= k].max() for k in range(depth + 1)])


def smooth_from_a(a_of_k: np.ndarray, beta: float) -> float:
    """max_k e^{-βk} A(k), exact when the last A(k) is b - a (the largest possible)."""
    assert a_of_k[-1] == B - A
    return float(np.max(np.exp(-beta * np.arange(a_of_k.size)) * a_of_k))


def quantile_cost(n: int, alpha: float, i: int, j: int) -> int:
    """The module docstring's c(i, j), literally: (j - i - 1) + h(g0), in integers.

    With α = p/q: ``g0/μ = (q·g0)/(q·μ)``, ``q·g0 = (q - p)i - p(n + 1 - j)``,
    ``q·μ = max(p, q - p)``.
    """
    a = Fraction(repr(alpha))
    p, q = a.numerator, a.denominator
    g0, mu = (q - p) * i - p * (n + 1 - j), max(p, q - p)
    return (j - i - 1) + max(0, g0 // mu, -(g0 // mu) - 1)  # ceil(-y) = -floor(y)


def median_cost(n: int, alpha: float, i: int, j: int) -> int:
    """A planted bug: the median's c(i, j) whatever α."""
    return (j - i - 1) + max(0, i + j - n - 1, n - i - j)


def a_from_cost(data: tuple[float, ...], alpha: float, cost) -> np.ndarray:
    """A(k) = max{x_j - x_i : c(i, j) <= k} for k = 0..n, over padded sorted data."""
    n = len(data)
    x = (A, *sorted(data), B)
    pairs = [(x[j] - x[i], cost(n, alpha, i, j)) for i in range(n + 2) for j in range(i + 1, n + 2)]
    return np.array([max(v for v, c in pairs if c <= k) for k in range(n + 1)])


DATASETS = [d for n in range(MAX_N + 1) for d in itertools.combinations_with_replacement(GRID, n)]


# --------------------------------------------------------------- add/remove


@pytest.mark.parametrize("alpha", ALPHAS)
def test_add_remove_matches_brute_force(alpha: float) -> None:
    """Every dataset: A(k) of the cost formula and LS; every other one: SS_β as computed."""
    for index, data in enumerate(DATASETS):
        a_of_k = brute_force_a(data, len(data), alpha)
        np.testing.assert_array_equal(a_from_cost(data, alpha, quantile_cost), a_of_k)
        ss = QuantileSmoothSensitivity(np.array(data), A, B, alpha=alpha)
        assert ss.local_sensitivity == a_of_k[0]
        if index % 2 == 0:
            expected = [smooth_from_a(a_of_k, beta) for beta in BETAS]
            np.testing.assert_allclose(ss(np.array(BETAS)), expected, rtol=1e-12)


def test_local_sensitivity_can_be_the_gap_above_or_below() -> None:
    """α = 0.1, n = 5: adding lowers the quantile x_1 to a, removing raises it to x_2."""
    data = (1.0, 3.0, 4.0, 4.0, 10.0)
    assert brute_force_a(data, 0, 0.1)[0] == 2.0  # x_2 - x_1 = 2 > x_1 - a = 1
    assert brute_force_a((3.0, 4.0, 4.0, 4.0, 10.0), 0, 0.1)[0] == 3.0  # x_1 - a
    assert QuantileSmoothSensitivity(np.array(data), A, B, alpha=0.1).local_sensitivity == 2.0


@pytest.mark.parametrize(("cost", "caught"), [(quantile_cost, False), (median_cost, True)])
@pytest.mark.parametrize("alpha", [a for a in ALPHAS if a != 0.5])
def test_the_median_cost_is_caught_for_other_alphas(cost, caught: bool, alpha: float) -> None:
    """The check above, run with the median's cost: some A(k) differ for every α ≠ 1/2."""
    mismatches = sum(
        not np.array_equal(a_from_cost(data, alpha, cost), brute_force_a(data, len(data), alpha))
        for data in DATASETS[::4]
    )
    assert bool(mismatches) == caught


@pytest.mark.parametrize(("rank", "caught"), [(ceil_rank, False), (floor_rank, True)])
@pytest.mark.parametrize("alpha", [0.3, 0.6, 0.75, 0.9])
def test_a_floor_rank_is_caught(rank: Rank, caught: bool, alpha: float) -> None:
    """Brute force for the floor-rank statistic disagrees with the ceil-rank formula."""
    mismatches = 0
    for data in DATASETS[::3]:
        a_of_k = brute_force_a(data, len(data), alpha, rank=rank)
        ss = QuantileSmoothSensitivity(np.array(data), A, B, alpha=alpha)
        mismatches += ss.local_sensitivity != a_of_k[0] or not math.isclose(
            ss(0.3), smooth_from_a(a_of_k, 0.3), rel_tol=1e-12
        )
    assert bool(mismatches) == caught


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.75])
@pytest.mark.parametrize("data", [(1.0, 3.0, 3.0), (0.0, 4.0, 10.0), (3.0,), (1.0, 10.0)])
def test_interior_values_never_help(alpha: float, data: tuple[float, ...]) -> None:
    """Additions strictly inside (a, b) reach no larger A(k) than the grid (module docstring)."""
    rich = brute_force_a(data, 3, alpha, values=RICH_GRID)
    np.testing.assert_array_equal(rich, brute_force_a(data, 3, alpha))


# -------------------------------------------------------------- replace-one


def nrs_replace_one(x: np.ndarray, alpha: float, beta: float) -> float:
    """NRS07 Proposition 3.4 with the rank r = ceil(αn), evaluated literally."""
    n = x.size
    r = int(ceil_rank(np.array([n]), alpha)[0])
    padded = np.concatenate(([A], x, [B]))

    def at(i: int) -> float:
        return padded[min(max(i, 0), n + 1)]

    return max(
        math.exp(-beta * k) * max(at(r + t) - at(r + t - k - 1) for t in range(k + 2))
        for k in range(n + 1)
    )


@pytest.mark.parametrize("alpha", ALPHAS)
def test_replace_one_matches_brute_force(alpha: float) -> None:
    # n = 0 is left out: the empty set has no replace-one neighbours, and SS is
    # taken as b - a there (a valid upper bound).
    for data in DATASETS[1::3]:
        a_of_k = brute_force_a(data, len(data), alpha, replace=True)
        ss = QuantileSmoothSensitivity(np.array(data), A, B, Neighbouring.REPLACE_ONE, alpha=alpha)
        assert ss.local_sensitivity == a_of_k[0]
        expected = [smooth_from_a(a_of_k, beta) for beta in BETAS]
        np.testing.assert_allclose(ss(np.array(BETAS)), expected, rtol=1e-12)
        assert ss(0.3) == pytest.approx(nrs_replace_one(np.array(data), alpha, 0.3), rel=1e-12)


@pytest.mark.parametrize(("rank", "caught"), [(ceil_rank, False), (floor_rank, True)])
def test_replace_one_floor_rank_is_caught(rank: Rank, caught: bool) -> None:
    mismatches = 0
    for alpha, data in itertools.product((0.25, 0.75), DATASETS[1::9]):
        a_of_k = brute_force_a(data, len(data), alpha, rank=rank, replace=True)
        ss = QuantileSmoothSensitivity(np.array(data), A, B, Neighbouring.REPLACE_ONE, alpha=alpha)
        mismatches += not math.isclose(ss(0.3), smooth_from_a(a_of_k, 0.3), rel_tol=1e-12)
    assert bool(mismatches) == caught


# ----------------------------------------------- the algorithm on larger data


def all_pairs(x: np.ndarray, lower: float, upper: float, alpha: float, beta: float) -> float:
    """log max (x_j - x_i) e^{-β c(i, j)} over all pairs, c vectorised in exact integers."""
    n = x.size
    a = Fraction(repr(alpha))
    p, q = a.numerator, a.denominator
    padded = np.concatenate(([lower], x, [upper]))
    i, j = np.arange(n + 2)[:, None], np.arange(n + 2)[None, :]
    # h = max(0, floor(g0/μ), ceil(-g0/μ) - 1) with floor(g0/μ) = floor(g0·q / (μ·q))
    ratio = ((q - p) * i - p * (n + 1 - j)) // max(p, q - p)
    cost = (j - i - 1) + np.maximum(np.maximum(ratio, -ratio - 1), 0)
    width = padded[None, :] - padded[:, None]
    valid = (j > i) & (width > 0)
    log_width = np.log(np.where(valid, width, 1.0))
    return float(np.max(np.where(valid, log_width - beta * cost, -np.inf)))


SAMPLES = {
    "normal": lambda rng, n: rng.normal(size=n),
    "integers": lambda rng, n: rng.integers(-4, 5, n).astype(float),
    "cauchy": lambda rng, n: rng.standard_cauchy(n),
    "ties at a bound": lambda rng, n: np.where(rng.uniform(size=n) < 0.8, -4.0, rng.normal(size=n)),
}


@pytest.mark.parametrize("sample", list(SAMPLES))
@pytest.mark.parametrize("alpha", [0.01, 0.1, 0.3, 0.3333333333333333, 0.6, 0.9, 0.99])
@pytest.mark.parametrize("n", [1, 64, 700])
def test_windowed_search_equals_all_pairs(sample: str, alpha: float, n: int) -> None:
    rng = np.random.default_rng(n)
    x = np.sort(np.clip(SAMPLES[sample](rng, n), -4, 4))
    ss = QuantileSmoothSensitivity(x, -4, 4, alpha=alpha)
    for beta in (1e-4, 1e-2, 0.3, 2.0, 50.0):
        assert ss.log(beta) == pytest.approx(all_pairs(x, -4, 4, alpha, beta), rel=1e-12, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.0, 3.0, 9.0, 10.0]), max_size=40),
    alpha=st.sampled_from([0.05, 0.2, 0.45, 0.5, 0.55, 0.7, 0.95]),
    beta=st.floats(0.001, 5.0),
)
def test_any_alpha_equals_all_pairs(values: list[float], alpha: float, beta: float) -> None:
    x = np.sort(np.array(values))
    ss = QuantileSmoothSensitivity(x, A, B, alpha=alpha)
    assert ss.log(beta) == pytest.approx(all_pairs(x, A, B, alpha, beta), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_the_general_search_reduces_to_the_median_formula(seed: int) -> None:
    """At α = 1/2 the two-dimensional search (forced here) gives the median's one-line A(k)."""
    rng = np.random.default_rng(seed)
    x = np.sort(np.clip(np.round(rng.normal(size=500), 1), -3, 3))
    median = MedianSmoothSensitivity(x, -3, 3)
    general = QuantileAddRemove(  # the α ≠ 1/2 search, on the median
        lambda ranks: order_statistics(x, ranks, -3.0, 3.0), x.size, 0.5, math.log(6.0)
    )
    assert general.local_sensitivity == median.local_sensitivity
    betas = np.array([1e-4, 1e-3, 0.05, 0.5, 5.0])
    general_log = [general.log(float(beta)) for beta in betas]
    np.testing.assert_allclose(general_log, median.log(betas), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("neighbouring", list(Neighbouring))
@pytest.mark.parametrize("alpha", [0.1, 0.7])
def test_smooth_upper_bound_on_local_sensitivity(neighbouring: Neighbouring, alpha: float) -> None:
    """SS_β >= LS and SS_β(S) <= e^β SS_β(S') for neighbours, on data with ties."""
    rng = np.random.default_rng(3)
    x = np.sort(np.round(rng.normal(size=200), 1).clip(-3, 3))
    if neighbouring is Neighbouring.ADD_REMOVE:
        neighbours = [np.delete(x, k) for k in (0, 19, 20, 139, 140, 199)]
        neighbours += [np.sort(np.append(x, v)) for v in (-3.0, 3.0, x[19], x[139])]
    else:
        neighbours = [np.sort(np.append(np.delete(x, k), v)) for k in (19, 140) for v in (-3, 3)]
    betas = np.array([0.01, 0.1, 1.0])
    ss = QuantileSmoothSensitivity(x, -3, 3, neighbouring, alpha=alpha)
    assert np.all(ss(betas) >= ss.local_sensitivity)
    for other in neighbours:
        near = QuantileSmoothSensitivity(other, -3, 3, neighbouring, alpha=alpha)
        assert np.all(np.abs(ss.log(betas) - near.log(betas)) <= betas * (1 + 1e-12))


@pytest.mark.parametrize("alpha", [0.1, 0.9])
def test_extreme_beta(alpha: float) -> None:
    x = np.sort(np.random.default_rng(0).normal(size=3000)).clip(-5, 5)
    ss = QuantileSmoothSensitivity(x, -5, 5, alpha=alpha)
    assert ss.log(0.0) == math.log(10.0)  # SS_0 = b - a, the global sensitivity
    assert ss.log(1e300) == math.log(ss.local_sensitivity)
    ties = QuantileSmoothSensitivity(np.zeros(50), -5, 5, alpha=alpha)
    assert ties.local_sensitivity == 0.0 and ties(1e300) == 0.0
