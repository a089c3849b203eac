"""The mean's dataset-distance utility (mechanisms.mean.distance) against brute force.

Brute force (exact, in fractions): enumerate every removal subset ``R`` of the
data and every number ``s`` of additions; ``s >= 1`` additions realise every
added sum in ``[s·a, s·b]``, so ``(R, s)`` reaches the interval
``[(Σ - ΣR + s·a)/m, (Σ - ΣR + s·b)/m]``, ``m = n - |R| + s``, at distance
``|R| + s``.  Level ``k`` is the union of these intervals over ``|R| + s <= k``
(replace-one: ``|R| = s <= k``, ``m = n``), merged without assuming it is an
interval; the check asserts it is one (the module's contiguity claim) and that
its ends equal ``L_k``, ``U_k``.  Edits without additions reach finitely many
points (measure zero) and are left out, as in the module.

Every check also runs on deliberately wrong level functions (additions not
required, the wrong points removed, always the most removals, the add/remove
levels for replace-one), which it must reject.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

from mechanisms.core.guarantee import Neighbouring
from mechanisms.mean.distance import MeanLevels, kept_shortfall, mean_levels

LevelFunction = Callable[[np.ndarray, float, float, Neighbouring], MeanLevels]
Ends = list[tuple[Fraction, Fraction]]

A, B = Fraction(-1), Fraction(3)
GRID = tuple(Fraction(v, 4) for v in (-4, -3, 0, 1, 2, 10, 12))  # ties, points at a and b
ADD_REMOVE, REPLACE_ONE = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE


def merged(intervals: list[tuple[Fraction, Fraction]]) -> list[list[Fraction]]:
    """The union of closed intervals as disjoint sorted intervals."""
    out: list[list[Fraction]] = []
    for left, right in sorted(intervals):
        if out and left <= out[-1][1]:
            out[-1][1] = max(out[-1][1], right)
        else:
            out.append([left, right])
    return out


@functools.cache
def brute_levels(data: tuple[Fraction, ...], a: Fraction, b: Fraction, neighbouring) -> Ends:
    """``[(L_k, U_k)]`` by enumeration of all edits (module docstring); one interval each."""
    n, total = len(data), sum(data, Fraction(0))
    count = n + 1 if neighbouring is ADD_REMOVE else max(n, 1)
    if neighbouring is REPLACE_ONE and n == 0:
        return [(a, b)]  # ∅: the uniform convention (no dataset of size 0 but ∅)
    ends: Ends = []
    for k in range(1, count + 1):
        reached = []
        for r in range(min(k, n) + 1):
            for removed in itertools.combinations(data, r):
                rest = total - sum(removed, Fraction(0))
                additions = range(1, k - r + 1) if neighbouring is ADD_REMOVE else [r] * (r >= 1)
                for s in additions:
                    m = n - r + s
                    reached.append(((rest + s * a) / m, (rest + s * b) / m))
        union = merged(reached)
        assert len(union) == 1, f"level {k} of {data} is not an interval: {union}"
        ends.append((union[0][0], union[0][1]))
    return ends


def datasets() -> list[tuple[Fraction, ...]]:
    """All multisets of GRID of size <= 3 and 60 random ones of size 4 to 6 (fixed seed)."""
    small = [c for n in range(4) for c in itertools.combinations_with_replacement(GRID, n)]
    rng = random.Random(7)
    large = [tuple(sorted(rng.choices(GRID, k=rng.randint(4, 6)))) for _ in range(60)]
    return small + large


def as_array(data: tuple[Fraction, ...]) -> np.ndarray:
    return np.array([float(v) for v in data])


def level_errors(levels: LevelFunction, neighbouring: Neighbouring) -> list[str]:
    """Every dataset where ``levels`` differs from brute force by more than 1e-12 relative."""
    errors = []
    for data in datasets():
        expected = brute_levels(data, A, B, neighbouring)
        got = levels(as_array(data), float(A), float(B), neighbouring)
        ends = np.array([[float(lo), float(hi)] for lo, hi in expected])
        computed = np.column_stack([got.lower_ends, got.upper_ends])
        if computed.shape != ends.shape or not np.allclose(computed, ends, rtol=1e-12, atol=0):
            errors.append(f"{[float(v) for v in data]}: {computed.tolist()} != {ends.tolist()}")
    return errors


# ------------------------------------------------------------ deliberately wrong levels


def quadratic_levels(neighbouring: Neighbouring, flaw: str = "") -> LevelFunction:
    """``min``/``max`` over every ``r`` of ``J(r, k - r)`` in O(n²), optionally with a flaw:
    ``"s_zero"`` (allow ``s = 0``), ``"wrong_end"`` (remove the smallest points for
    ``L_k``), ``"most_removals"`` (always ``r = min(k - 1, n)``)."""

    def levels(x: np.ndarray, a: float, b: float, _: Neighbouring) -> MeanLevels:
        n, total = x.size, float(np.sum(x))
        top = np.concatenate([[0.0], np.cumsum(x[::-1])])  # sums of the r largest
        bottom = np.concatenate([[0.0], np.cumsum(x)])  # sums of the r smallest
        low, high = [], []
        for k in range(1, n + 2):
            last = min(k if flaw == "s_zero" else k - 1, n)
            rs = [last] if flaw == "most_removals" else range(last + 1)
            rs = [r for r in rs if n - r + (k - r) >= 1]
            removed_low = bottom if flaw == "wrong_end" else top
            low.append(min((total - removed_low[r] + (k - r) * a) / (n + k - 2 * r) for r in rs))
            high.append(max((total - bottom[r] + (k - r) * b) / (n + k - 2 * r) for r in rs))
        return MeanLevels(np.array(low), np.array(high))

    return levels


FLAWED = {
    "additions_not_required": quadratic_levels(ADD_REMOVE, "s_zero"),
    "smallest_removed_for_the_lower_end": quadratic_levels(ADD_REMOVE, "wrong_end"),
    "always_the_most_removals": quadratic_levels(ADD_REMOVE, "most_removals"),
}


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
def test_levels_match_brute_force(neighbouring):
    assert level_errors(mean_levels, neighbouring) == []


def test_the_quadratic_reference_matches_brute_force():
    assert level_errors(quadratic_levels(ADD_REMOVE), ADD_REMOVE) == []


@pytest.mark.parametrize("flaw", list(FLAWED))
def test_the_brute_force_check_catches_wrong_levels(flaw):
    assert level_errors(FLAWED[flaw], ADD_REMOVE)


def test_the_brute_force_check_catches_add_remove_levels_for_replace_one():
    def add_remove(x, a, b, _):
        return mean_levels(x, a, b, ADD_REMOVE)

    assert level_errors(add_remove, REPLACE_ONE)


@pytest.mark.parametrize("n", [1, 2, 50, 400])
@pytest.mark.parametrize("seed", range(4))
def test_the_binary_search_finds_the_quadratic_minimum(n, seed):
    """Larger data (continuous, with ties and points at the bounds): the O(n log n)
    argmin of ``P_j/(2j + k - n)`` against the minimum over every ``j``."""
    rng = np.random.default_rng(seed)
    x = rng.choice([rng.beta(0.3, 2.0, n), rng.integers(0, 4, n) / 3.0, rng.uniform(0, 1, n)])
    x = np.sort(np.clip(x, 0.0, 1.0))
    got = mean_levels(x, 0.0, 1.0, ADD_REMOVE)
    expected = quadratic_levels(ADD_REMOVE)(x, 0.0, 1.0, ADD_REMOVE)
    # the reference's Σ - top_r cancels: an absolute error of a few n·2**-52
    np.testing.assert_allclose(got.lower_ends, expected.lower_ends, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.upper_ends, expected.upper_ends, rtol=1e-12, atol=1e-12)


def test_kept_shortfall_is_zero_from_the_level_where_everything_can_go():
    z = np.array([0.5, 1.0, 2.0])
    shortfall = kept_shortfall(z, 4)
    assert shortfall[-1] == 0.0  # k = n + 1: remove all, add x
    assert shortfall[0] == pytest.approx(3.5 / 4)  # k = 1: add one point at a


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
def test_levels_are_nested_and_end_at_the_bounds(neighbouring):
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 300):
        x = np.sort(rng.uniform(-2.0, 5.0, n))
        levels = mean_levels(x, -2.0, 5.0, neighbouring)
        assert levels.count == (n + 1 if neighbouring is ADD_REMOVE else max(n, 1))
        assert levels.lower_ends[-1] == -2.0 and levels.upper_ends[-1] == 5.0
        assert (np.diff(levels.lower_ends) <= 0).all() and (np.diff(levels.upper_ends) >= 0).all()
        if n:
            mean = x.mean()
            assert levels.lower_ends[0] <= mean <= levels.upper_ends[0]
        assert (np.diff(levels.edges()) >= 0).all() and levels.edges().size == 2 * levels.count - 2


def test_the_empty_dataset_has_one_level_everywhere():
    for neighbouring in (ADD_REMOVE, REPLACE_ONE):
        levels = mean_levels(np.zeros(0), 0.0, 1.0, neighbouring)
        assert levels.count == 1
        assert levels.level(np.linspace(0, 1, 5)).tolist() == [1] * 5


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
def test_level_is_the_brute_force_distance_off_the_end_points(neighbouring):
    """``level(x) = min{k : x in I_k}`` at points strictly between the end points."""
    for data in datasets()[::5]:
        expected = brute_levels(data, A, B, neighbouring)
        ends = sorted({float(v) for pair in expected for v in pair})
        points = np.array([(lo + hi) / 2 for lo, hi in itertools.pairwise(ends)])
        distance = [
            min(k for k, (lo, hi) in enumerate(expected, 1) if lo <= Fraction(p) <= hi)
            for p in points
        ]
        got = mean_levels(as_array(data), float(A), float(B), neighbouring).level(points)
        assert got.tolist() == distance, data


def test_paper_example_one_addition():
    """Section 4.1: one addition reaches ``[μ'(a), μ'(b)]``, ``μ'(y) = (n·μ + y)/(n + 1)``."""
    x = np.array([0.0, 1.0, 5.0])
    levels = mean_levels(x, 0.0, 10.0)
    assert levels.lower_ends[0] == pytest.approx((6.0 + 0.0) / 4)
    assert levels.upper_ends[0] == pytest.approx((6.0 + 10.0) / 4)
