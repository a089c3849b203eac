"""Smooth sensitivity of the lower median against brute force over edited datasets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.core.guarantee import Neighbouring
from mechanisms.smooth.sensitivity import MedianSmoothSensitivity

A, B = 0.0, 10.0


def lower_median(z: tuple[float, ...]) -> float:
    return A if not z else z[(len(z) - 1) // 2]


def local_sensitivity(z: tuple[float, ...], additions: tuple[float, ...], replace: bool) -> float:
    """max |T(z) - T(z')| over all neighbours z' built from the candidate values."""
    t = lower_median(z)
    neighbours = []
    for i in range(len(z)):
        rest = z[:i] + z[i + 1 :]
        if replace:
            neighbours += [tuple(sorted((*rest, v))) for v in additions]
        else:
            neighbours.append(rest)
    if not replace:
        neighbours += [tuple(sorted((*z, v))) for v in additions]
    return max((abs(t - lower_median(w)) for w in neighbours), default=0.0)


def brute_force_a(
    data: tuple[float, ...], depth: int, candidates: tuple[float, ...], replace: bool
) -> list[float]:
    """A(k) = max LS over datasets within k edits, for k = 0..depth (breadth-first)."""
    frontier = {tuple(sorted(data))}
    seen = set(frontier)
    best = [max(local_sensitivity(z, candidates, replace) for z in frontier)]
    for _ in range(depth):
        nxt = set()
        for z in frontier:
            for i in range(len(z)):
                rest = z[:i] + z[i + 1 :]
                if replace:
                    nxt.update(tuple(sorted((*rest, v))) for v in candidates)
                else:
                    nxt.add(rest)
            if not replace:
                nxt.update(tuple(sorted((*z, v))) for v in candidates)
        frontier = nxt - seen
        seen |= frontier
        level = max((local_sensitivity(z, candidates, replace) for z in frontier), default=0.0)
        best.append(max(best[-1], level))
    return best


def smooth_from_a(a_of_k: list[float], beta: float) -> float:
    return max(math.exp(-beta * k) * a for k, a in enumerate(a_of_k))


GRID = (0.0, 1.0, 2.0, 4.0, 7.0, 10.0)
SMALL_DATASETS = [d for n in range(0, 5) for d in itertools.combinations_with_replacement(GRID, n)][
    ::3
]


@pytest.mark.parametrize("data", SMALL_DATASETS, ids=str)
def test_add_remove_matches_brute_force(data: tuple[float, ...]) -> None:
    # Additions at a and b and at the data values; A(n) already reaches b - a.
    candidates = tuple(sorted({A, B, *data}))
    a_of_k = brute_force_a(data, len(data) + 1, candidates, replace=False)
    ss = MedianSmoothSensitivity(np.array(data), A, B)
    assert ss.local_sensitivity == pytest.approx(a_of_k[0], abs=1e-12)
    for beta in (0.05, 0.3, 1.0, 3.0):
        assert ss(beta) == pytest.approx(smooth_from_a(a_of_k, beta), rel=1e-12)


@pytest.mark.parametrize("data", [(1.0, 2.0, 2.0), (0.0, 4.0, 7.0, 7.0), (2.0, 4.0), (10.0,)])
def test_add_remove_interior_additions_never_help(data: tuple[float, ...]) -> None:
    """Adding values strictly inside (a, b) reaches no larger A(k) than adding a and b."""
    rich = tuple(sorted({A, B, 0.5, 1.5, 3.0, 5.5, 8.5, *data}))
    simple = tuple(sorted({A, B, *data}))
    depth = 3
    assert brute_force_a(data, depth, rich, False) == brute_force_a(data, depth, simple, False)


@pytest.mark.parametrize("data", SMALL_DATASETS[1::2], ids=str)
def test_replace_one_matches_brute_force(data: tuple[float, ...]) -> None:
    candidates = (A, B)  # the median is monotone in a replaced value, so extremes suffice
    a_of_k = brute_force_a(data, len(data) + 1, candidates, replace=True)
    ss = MedianSmoothSensitivity(np.array(data), A, B, Neighbouring.REPLACE_ONE)
    assert ss.local_sensitivity == pytest.approx(a_of_k[0], abs=1e-12)
    for beta in (0.05, 0.3, 1.0, 3.0):
        assert ss(beta) == pytest.approx(smooth_from_a(a_of_k, beta), rel=1e-12)


def quadratic_replace_one(x: np.ndarray, lower: float, upper: float, beta: float) -> float:
    """NRS07 Proposition 3.4 evaluated literally: max_k e^{-kβ} max_t (x_{m+t} - x_{m+t-k-1})."""
    n = x.size
    m = (n + 1) // 2
    padded = np.concatenate(([lower], x, [upper]))

    def at(i: int) -> float:
        return padded[min(max(i, 0), n + 1)]

    return max(
        math.exp(-beta * k) * max(at(m + t) - at(m + t - k - 1) for t in range(k + 2))
        for k in range(n + 1)
    )


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.0, 3.0, 9.0, 10.0]), max_size=40),
    beta=st.floats(0.001, 5.0),
)
def test_replace_one_divide_and_conquer_equals_quadratic(values: list[float], beta: float) -> None:
    x = np.sort(np.array(values))
    ss = MedianSmoothSensitivity(x, A, B, Neighbouring.REPLACE_ONE)
    assert ss(beta) == pytest.approx(quadratic_replace_one(x, A, B, beta), rel=1e-12)


def quadratic_add_remove(x: np.ndarray, lower: float, upper: float, beta: float) -> float:
    """The add/remove pair formula max_{i<j} (x_j - x_i) exp(-β c(i, j)), literally."""
    n = x.size
    padded = np.concatenate(([lower], x, [upper]))
    return max(
        (padded[j] - padded[i]) * math.exp(-beta * ((j - i - 1) + max(0, i + j - n - 1, n - i - j)))
        for i in range(n + 2)
        for j in range(i + 1, n + 2)
    )


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.0, 3.0, 9.0, 10.0]), max_size=40),
    beta=st.floats(0.001, 5.0),
)
def test_add_remove_linear_formula_equals_all_pairs(values: list[float], beta: float) -> None:
    x = np.sort(np.array(values))
    ss = MedianSmoothSensitivity(x, A, B)
    assert ss(beta) == pytest.approx(quadratic_add_remove(x, A, B, beta), rel=1e-12)


def test_add_remove_is_at_most_replace_one_bound_and_smooth() -> None:
    rng = np.random.default_rng(7)
    x = np.sort(rng.normal(size=301).clip(-10, 10))
    add_remove = MedianSmoothSensitivity(x, -10, 10)
    replace = MedianSmoothSensitivity(x, -10, 10, Neighbouring.REPLACE_ONE)
    betas = np.array([0.01, 0.1, 0.5, 2.0])
    assert np.all(add_remove(betas) <= replace(betas) * (1 + 1e-12))
    # beta-smoothness: SS(S) <= e^beta SS(S') for a neighbour S' (remove the median point).
    neighbour = np.delete(x, 150)
    for beta in betas:
        ratio = add_remove(beta) / MedianSmoothSensitivity(neighbour, -10, 10)(beta)
        assert math.exp(-beta) * (1 - 1e-12) <= ratio <= math.exp(beta) * (1 + 1e-12)


def test_heavy_ties_and_extreme_beta_stay_finite() -> None:
    x = np.sort(np.concatenate((np.zeros(5000), np.full(20000, 3.0), np.full(5000, 10.0))))
    for neighbouring in Neighbouring:
        ss = MedianSmoothSensitivity(x, 0.0, 10.0, neighbouring)
        assert ss.local_sensitivity == 0.0
        values = ss.log(np.array([1e-4, 1.0, 50.0]))
        assert np.all(np.isfinite(values))
        # nothing is smaller than the far pair (a, b), reached after at most n edits
        assert np.all(values >= np.log(10.0) - np.array([1e-4, 1.0, 50.0]) * x.size)


def test_invalid_beta_is_rejected() -> None:
    ss = MedianSmoothSensitivity(np.array([1.0, 2.0]), 0.0, 3.0)
    for beta in (-1.0, np.nan, np.inf):  # beta = 0 is SS_0 = b - a
        with pytest.raises(ValueError, match="beta"):
            ss(beta)
