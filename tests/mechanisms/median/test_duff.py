"""Duff for the lower median: utility against brute force, the paper's step function, the release.

Brute force: breadth-first search over multisets, one addition or removal per
step, until the lower median (``T(∅) = a``) equals the target ``x``.  Additions
are drawn from ``{a, x, b}`` (those inside ``[a, b]``).  That candidate set is
sufficient: take any edited dataset ``S'`` with ``T(S') = x`` and replace each
*added* value below ``x`` by ``a`` and each added value above ``x`` by ``b``.
Every element keeps its side of ``x`` (below / equal / above), so the counts
below, at and above ``x`` are unchanged and the element of rank ``ceil(n'/2)`` is
still ``x``; and the symmetric difference with ``S`` does not grow (the removed
points are the same, the number of added ones is the same).  So a shortest path
using only these additions exists.  ``test_candidate_set_is_sufficient`` also
checks this against a BFS with every grid value and midpoint as a candidate.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import mechanisms
from mechanisms.core.guarantee import Guarantee, Neighbouring
from mechanisms.median.duff import Duff, utility
from mechanisms.median.duff_utility import gap_utility

A, B = 0.0, 4.0
GRID = (0.0, 1.0, 2.0, 3.0, 4.0)


def lower_median(state: tuple[float, ...]) -> float:
    return A if not state else state[(len(state) - 1) // 2]


def bfs_distance(data: tuple[float, ...], target: float, candidates: tuple[float, ...]) -> int:
    """Smallest number of single additions (from ``candidates``) / removals making T = target."""
    start = tuple(sorted(data))
    if lower_median(start) == target:
        return 0
    frontier, seen, depth = [start], {start}, 0
    while frontier:
        depth += 1
        assert depth <= len(data) + 1  # remove everything, add the target
        following = []
        for state in frontier:
            removals = {state[:i] + state[i + 1 :] for i in range(len(state))}
            additions = {tuple(sorted((*state, c))) for c in candidates}
            for neighbour in removals | additions:
                if neighbour in seen:
                    continue
                if lower_median(neighbour) == target:
                    return depth
                seen.add(neighbour)
                following.append(neighbour)
        frontier = following
    raise AssertionError("target unreachable")


def targets(data: tuple[float, ...]) -> list[float]:
    """Gap midpoints, every data value, and the bounds."""
    points = sorted({A, B, *data})
    middles = [(lo + hi) / 2 for lo, hi in itertools.pairwise(points)]
    return sorted({*middles, *points})


def check_against_bfs(data: tuple[float, ...]) -> None:
    x = np.sort(np.array(data, dtype=float))
    for target in targets(data):
        candidates = tuple(sorted({A, target, B}))
        expected = -bfs_distance(data, target, candidates)
        assert utility(x, target, A) == expected, (data, target)


# ------------------------------------------------------------- the utility


@pytest.mark.parametrize("n", range(8))
def test_utility_equals_brute_force_exhaustive(n):
    """All multisets of size n <= 7 over {0,..,4}, [a, b] = [0, 4]: every gap, value, bound."""
    for data in itertools.combinations_with_replacement(GRID, n):
        check_against_bfs(data)


@pytest.mark.parametrize("n", [8, 9])
def test_utility_equals_brute_force_random(n):
    rng = np.random.default_rng(n)
    for _ in range(15):
        data = tuple(sorted(rng.choice(GRID, size=n).tolist()))
        check_against_bfs(data)


@pytest.mark.parametrize("n", range(4))
def test_candidate_set_is_sufficient(n):
    """BFS with every grid value and half-point as a candidate gives the same distances."""
    everything = tuple(np.arange(0.0, 4.25, 0.5).tolist())
    for data in itertools.combinations_with_replacement(GRID, n):
        for target in targets(data):
            small = bfs_distance(data, target, tuple(sorted({A, target, B})))
            assert bfs_distance(data, target, everything) == small


def test_empty_dataset_has_utility_zero_at_a_only():
    empty = np.array([])
    assert utility(empty, A, A) == 0.0
    assert utility(empty, 2.0, A) == -1.0
    assert utility(empty, B, A) == -1.0


@pytest.mark.parametrize("n", range(1, 41))
def test_gap_utility_is_the_papers_step_function(n):
    """Section 4.1 (distinct points): u = -2k + [n odd] on [y_{m-k}, y_{m-k+1}] and
    u = -2k + [n even] on [y_{m+k-1}, y_{m+k}]."""
    m = (n + 1) // 2 if n % 2 else n // 2
    u = gap_utility(n, np.arange(n + 1))
    for k in range(1, m + 1):
        assert u[m - k] == -2 * k + (n % 2)
    for k in range(1, n - m + 2):
        assert u[m + k - 1] == -2 * k + (1 - n % 2)
    assert u.max() == -1 and np.argmax(u) == n // 2


@pytest.mark.parametrize("seed", range(5))
def test_gap_utility_equals_pointwise_utility_inside_gaps(seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.integers(0, 6, size=rng.integers(1, 30)).astype(float))
    edges = np.concatenate([[0.0], x, [6.0]])
    positive = np.flatnonzero(np.diff(edges) > 0)
    middles = (edges[positive] + edges[positive + 1]) / 2
    assert np.array_equal(gap_utility(x.size, positive), utility(x, middles, 0.0))


# ---------------------------------------------------------------- release


def reference_log_masses(x: np.ndarray, a: float, b: float, epsilon: float) -> np.ndarray:
    """Normalised log(ε·u_d/2 + log len) with u_d from the pointwise utility at gap midpoints."""
    edges = np.concatenate([[a], x, [b]])
    lengths = np.diff(edges)
    positive = lengths > 0
    log_mass = np.full(x.size + 1, -np.inf)
    middles = (edges[:-1] + edges[1:])[positive] / 2
    log_mass[positive] = 0.5 * epsilon * utility(x, middles, a) + np.log(lengths[positive])
    log_mass[positive] -= log_mass[positive].max()
    return log_mass - np.log(np.exp(log_mass[positive]).sum())


@pytest.mark.parametrize("epsilon", [1e-3, 0.1, 1.0, 10.0, 50.0])
@pytest.mark.parametrize("seed", range(3))
def test_release_is_the_em_with_half_epsilon_times_utility(epsilon, seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.integers(-5, 6, size=rng.integers(1, 200)).astype(float) / 2)
    release = Duff(epsilon=epsilon).release(x, (-3.0, 3.0))
    clipped = np.clip(x, -3.0, 3.0)
    expected = reference_log_masses(clipped, -3.0, 3.0, epsilon)
    got = release.log_masses
    assert np.array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    assert np.allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12)
    assert release.true_value == clipped[(x.size - 1) // 2]


def test_registry_guarantee_and_repr():
    mechanism = mechanisms.make("duff", epsilon=0.5)
    assert isinstance(mechanism, Duff) and mechanisms.get("duff") is Duff
    assert mechanism.guarantee == Guarantee(
        epsilon=0.5,
        delta=0.0,
        neighbouring=Neighbouring.ADD_REMOVE,
        source=mechanism.guarantee.source,
    )
    assert mechanism.guarantee.kind == "pure" and mechanism.neighbouring is Neighbouring.ADD_REMOVE
    assert repr(mechanism) == "Duff(epsilon=0.5)"


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 8.0])
def test_samples_follow_the_release_cdf(epsilon):
    data = np.random.default_rng(1).normal(size=301)
    release = Duff(epsilon=epsilon).release(data, (-10, 10))
    draws = release.sample(20_000, np.random.default_rng(2))
    assert stats.kstest(draws, release.cdf).pvalue > 1e-3


def test_ks_detects_the_wrong_epsilon():
    """The statistical check above can fail: samples at ε are not the EM at 3ε."""
    data = np.random.default_rng(1).normal(size=301)
    draws = Duff(epsilon=1.0).release(data, (-10, 10)).sample(20_000, np.random.default_rng(2))
    wrong = Duff(epsilon=3.0).release(data, (-10, 10))
    assert stats.kstest(draws, wrong.cdf).pvalue < 1e-6


# ------------------------------------------------------------- edge cases


def test_single_point_all_equal_and_outside_bounds():
    rng = np.random.default_rng(0)
    one = Duff(epsilon=1.0).release([0.3], (0, 1))
    assert one.n == 1 and one.true_value == 0.3
    # gap [0, .3] has u = -1 and gap [.3, 1] has u = -2 (n = 1 is odd)
    assert np.allclose(
        one.probabilities, np.array([0.3, 0.7 * math.exp(-0.5)]) / (0.3 + 0.7 * math.exp(-0.5))
    )
    same = Duff(epsilon=1.0).release(np.full(50, 0.25), (0, 1))
    assert same.true_value == 0.25 and np.count_nonzero(same.probabilities) == 2
    clipped = Duff(epsilon=1.0).release([5.0, 6.0, -3.0], (0, 1))  # -> [0, 1, 1]
    assert clipped.n == 3 and clipped.true_value == 1.0
    assert np.count_nonzero(clipped.probabilities) == 1  # only (0, 1) has positive length
    dropped = Duff(epsilon=1.0, bounding="drop").release([5.0, 6.0, -3.0], (0, 1))
    assert dropped.n == 0 and dropped.true_value == 0.0
    assert dropped.cdf(0.3) == pytest.approx(0.3)
    for release in (one, same, clipped, dropped):
        draws = release.sample(100, rng)
        assert np.all((draws >= 0) & (draws <= 1))


@pytest.mark.parametrize("epsilon", [1e-3, 1e-2, 0.1, 1.0, 10.0, 50.0])
def test_large_n_no_nan_and_normalised(epsilon):
    data = np.random.default_rng(6).standard_normal(10**6)
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        release = Duff(epsilon=epsilon).release(data, (-10, 10))
        probabilities = release.probabilities
        draws = release.sample(100, np.random.default_rng(0))
    assert not np.isnan(release.log_masses).any() and not np.isnan(probabilities).any()
    assert abs(probabilities.sum() - 1.0) <= 1e-12
    assert np.all(np.isfinite(draws)) and np.all(np.abs(draws) <= 10)
    assert np.isfinite(release.cdf(np.linspace(-10, 10, 101))).all()


@pytest.mark.parametrize(
    ("kwargs", "data", "bounds", "argument"),
    [
        ({}, [1.0, np.nan], (0, 1), "data"),
        ({}, [1.0, np.inf], (0, 1), "data"),
        ({}, [-np.inf], (0, 1), "data"),
        ({}, [True, False], (0, 1), "data"),
        ({}, [[0.1, 0.2]], (0, 1), "data"),
        ({}, ["a"], (0, 1), "data"),
        ({}, [0.5], (1, 1), "bounds"),
        ({}, [0.5], (2, 1), "bounds"),
        ({}, [0.5], (0, np.inf), "bounds"),
        ({}, [0.5], (0,), "bounds"),
    ],
)
def test_bad_release_input(kwargs, data, bounds, argument):
    with pytest.raises(ValueError, match=argument):
        Duff(epsilon=1.0, **kwargs).release(data, bounds)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": np.inf}, "epsilon"),
        ({"epsilon": np.nan}, "epsilon"),
        ({"epsilon": "x"}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1e-6}, "delta"),
        ({"epsilon": 1.0, "bounding": "wrap"}, "bounding"),
    ],
)
def test_bad_configuration(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        mechanisms.make("duff", **kwargs)


def test_bad_sample_arguments():
    release = Duff(epsilon=1.0).release([0.5], (0, 1))
    with pytest.raises(ValueError, match="size"):
        release.sample(-1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        release.sample(1, 42)
