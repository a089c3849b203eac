"""Duff for the α-quantile and the inverse sensitivity mechanism (replace-one): the utility
against an explicit search over edited datasets, the release, and exact privacy.

Brute force: breadth-first search over multisets (stored as counts over a value
list), until the α-quantile ``x_(ceil(α·n'))`` (``a`` for ∅) of the edited dataset
equals the target ``x``.  Add/remove: one addition or removal per step, additions
drawn from ``{a, x, b}``.  Replace-one: one element replaced by a value of
``{a, x, b}`` per step.  The candidate set suffices for the reason given in
``test_duff.py`` beside this file (an added or substituted value below ``x`` can be moved to
``a``, one above to ``b``: the counts below, at and above ``x`` and the number of
edits are unchanged); ``test_candidate_set_is_sufficient`` checks it again.  The
rank is computed here from ``Fraction(repr(alpha))``, independently of
:mod:`mechanisms.median.quantile_em`.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import mechanisms
import mechanisms.median.duff
import mechanisms.median.duff_utility
from mechanisms.core.guarantee import Neighbouring
from mechanisms.median.duff import Duff, utility
from mechanisms.median.duff_utility import Multiples, QuantileDistance, gap_utility
from mechanisms.registry import supported_statistics
from mechanisms.sampling.piecewise import PiecewiseUniformRelease, score_epsilon
from tests.mechanisms.median.test_em_privacy import (
    add_remove_pairs,
    cdf_privacy_loss,
    partition,
    privacy_loss,
    replace_one_pairs,
)

A, B = 0.0, 4.0
GRID = (0.0, 1.0, 2.0, 3.0, 4.0)
ALPHAS = (0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9)
ADD_REMOVE, REPLACE_ONE = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE


def add_remove_gap_utility(n: int, gaps: np.ndarray, alpha: float) -> np.ndarray:
    return QuantileDistance.of(n, alpha, ADD_REMOVE).gap_utility(gaps)


def replace_one_gap_utility(n: int, gaps: np.ndarray, alpha: float) -> np.ndarray:
    return QuantileDistance.of(n, alpha, REPLACE_ONE).gap_utility(gaps)


def add_remove_mode(n: int, alpha: float) -> int:
    return QuantileDistance.of(n, alpha, ADD_REMOVE).mode


# ------------------------------------------------------------- brute force


def rank(size: int, alpha: float) -> int:
    return math.ceil(Fraction(repr(alpha)) * size)


def quantile(values: tuple[float, ...], counts: tuple[int, ...], alpha: Fraction) -> float:
    """``x_(ceil(α·n))`` of the multiset with ``counts[j]`` copies of ``values[j]``; ``a`` for ∅."""
    remaining = -(-alpha.numerator * sum(counts) // alpha.denominator)  # ceil(α·n)
    if remaining == 0:
        return A
    for value, count in zip(values, counts, strict=True):
        remaining -= count
        if remaining <= 0:
            return value
    raise AssertionError("rank above n")


def edits(counts: tuple[int, ...], candidates: list[int], neighbouring: Neighbouring):
    """Multisets one edit away (as count tuples)."""
    for v, count in enumerate(counts):
        if count == 0:
            continue
        removed = (*counts[:v], count - 1, *counts[v + 1 :])
        if neighbouring is ADD_REMOVE:
            yield removed
            continue
        for c in candidates:
            if c != v:
                yield (*removed[:c], removed[c] + 1, *removed[c + 1 :])
    if neighbouring is ADD_REMOVE:
        for c in candidates:
            yield (*counts[:c], counts[c] + 1, *counts[c + 1 :])


def search_distances(
    data: tuple[float, ...],
    target: float,
    alphas: tuple[float, ...],
    neighbouring: Neighbouring,
    extra: tuple[float, ...] = (),
) -> dict[float, float]:
    """``min d(S, S')`` over ``S'`` with α-quantile ``target``, for every α (inf: unreachable)."""
    values = tuple(sorted({*data, A, B, target, *extra}))
    candidates = [values.index(v) for v in sorted({A, target, B, *extra})]
    start = tuple(data.count(v) for v in values)
    exact = {alpha: Fraction(repr(alpha)) for alpha in alphas}
    found: dict[float, float] = {}

    def visit(state: tuple[int, ...], depth: int) -> None:
        for alpha in alphas:
            if alpha not in found and quantile(values, state, exact[alpha]) == target:
                found[alpha] = depth

    visit(start, 0)
    frontier, seen, depth = [start], {start}, 0
    while frontier and len(found) < len(alphas):
        depth += 1
        assert depth <= len(data) + 1  # remove everything, add the target
        following = []
        for state in frontier:
            for neighbour in edits(state, candidates, neighbouring):
                if neighbour not in seen:
                    seen.add(neighbour)
                    following.append(neighbour)
                    visit(neighbour, depth)
        frontier = following
    return {alpha: found.get(alpha, math.inf) for alpha in alphas}


def targets(data: tuple[float, ...]) -> list[float]:
    """Gap midpoints, every data value, and the bounds."""
    points = sorted({A, B, *data})
    middles = [(lo + hi) / 2 for lo, hi in itertools.pairwise(points)]
    return sorted({*middles, *points})


def mismatches(
    datasets: list[tuple[float, ...]], neighbouring: Neighbouring, alphas=ALPHAS
) -> list[tuple]:
    """(data, target, α, utility, -distance) wherever :func:`utility` disagrees with the search."""
    out = []
    for data in datasets:
        x = np.array(data, dtype=float)
        for target in targets(data):
            expected = search_distances(data, target, alphas, neighbouring)
            for alpha in alphas:
                got = float(utility(x, target, A, alpha=alpha, neighbouring=neighbouring))
                if got != -expected[alpha]:
                    out.append((data, target, alpha, got, -expected[alpha]))
    return out


def all_datasets(sizes) -> list[tuple[float, ...]]:
    return [d for n in sizes for d in itertools.combinations_with_replacement(GRID, n)]


def random_datasets(n: int, count: int) -> list[tuple[float, ...]]:
    rng = np.random.default_rng(n)
    return [tuple(sorted(rng.choice(GRID, size=n).tolist())) for _ in range(count)]


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
@pytest.mark.parametrize("n", range(6))
def test_utility_equals_brute_force_exhaustive(neighbouring, n):
    """All multisets of size n <= 5 over {0..4} = [a, b]: every gap, every value, the bounds."""
    assert mismatches(all_datasets([n]), neighbouring) == []


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
@pytest.mark.parametrize("n", [6, 7])
def test_utility_equals_brute_force_random(neighbouring, n):
    assert mismatches(random_datasets(n, 25), neighbouring) == []


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
def test_utility_equals_brute_force_unusual_alphas(neighbouring):
    """α with long decimals, near 0 and 1, and α·n just off an integer."""
    alphas = (0.01, 0.33, 0.34, 0.45, 0.55, 0.66, 0.99, 0.30000000000000004)
    datasets = all_datasets(range(5)) + random_datasets(7, 10)
    assert mismatches(datasets, neighbouring, alphas) == []


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
def test_candidate_set_is_sufficient(neighbouring):
    """The search with every grid value and half-point as a candidate gives the same distances."""
    everything = tuple(np.arange(0.0, 4.25, 0.5).tolist())
    for data in all_datasets(range(4)):
        for target in targets(data):
            small = search_distances(data, target, ALPHAS, neighbouring)
            assert search_distances(data, target, ALPHAS, neighbouring, everything) == small


def test_the_empty_dataset_matters_at_a():
    """{b} is one removal from ∅ (T = a) but two edits from any S' != ∅ with T_0.9 = a."""
    assert search_distances((B,), A, (0.9, 0.5), ADD_REMOVE) == {0.9: 1, 0.5: 1}
    assert float(utility(np.array([B]), A, A, alpha=0.9)) == -1.0
    assert float(utility(np.array([B]), 1.0, A, alpha=0.9)) == -2.0
    assert float(utility(np.array([]), A, A, neighbouring=REPLACE_ONE)) == 0.0
    assert float(utility(np.array([]), 1.0, A, neighbouring=REPLACE_ONE)) == -math.inf


# ------------------------------------------------ the checker has power

MUTATIONS = {
    "floor rank": lambda n, alpha: math.floor(Fraction(repr(alpha)) * n),
    "rank + 1": lambda n, alpha: math.ceil(Fraction(repr(alpha)) * n) + 1,
    "rank - 1": lambda n, alpha: math.ceil(Fraction(repr(alpha)) * n) - 1,
}


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
@pytest.mark.parametrize("mutation", [None, *MUTATIONS])
def test_brute_force_check_catches_a_wrong_rank(monkeypatch, neighbouring, mutation):
    datasets = all_datasets(range(4))
    if mutation is None:
        assert mismatches(datasets, neighbouring) == []
        return
    monkeypatch.setattr(mechanisms.median.duff_utility, "quantile_rank", MUTATIONS[mutation])
    assert mismatches(datasets, neighbouring)


def test_brute_force_check_catches_a_floor_for_a_ceiling(monkeypatch):
    """G(m) = ceil(m·α/(1-α)) computed with a floor: wrong only where m·α/(1-α) is fractional."""
    datasets = all_datasets(range(5))
    monkeypatch.setattr(Multiples, "ceil", Multiples.floor)
    assert mismatches(datasets, ADD_REMOVE)


def test_brute_force_check_catches_alpha_swapped_with_one_minus_alpha(monkeypatch):
    """F and G built from 1 - α (the rank k still right): caught off α = 1/2."""
    datasets = all_datasets(range(4))
    monkeypatch.setattr(
        mechanisms.median.duff_utility, "exact_alpha", lambda alpha: 1 - Fraction(repr(alpha))
    )
    assert mismatches(datasets, ADD_REMOVE, (0.5,)) == []
    assert mismatches(datasets, ADD_REMOVE, (0.3,))


# ------------------------------------------------------ gap form, median


def exact_gap_utility(n: int, gap: int, alpha: float) -> int:
    """Minus the distance on gap ``i`` as the cheaper of the derivation's two edit plans
    (copies of x only; one copy, then removals), in exact rationals: independent of
    the code's choice of plan by α <= 1/2 or α > 1/2."""
    a = Fraction(repr(alpha))
    k = math.ceil(a * n)
    floor_div = lambda m: math.floor(m / a)  # noqa: E731
    ceil_odds = lambda m: math.ceil(m * a / (1 - a))  # noqa: E731
    if gap < k:
        return -min(max(1, ceil_odds(n - gap) - gap), 1 + max(0, n + 1 - floor_div(gap + 1)))
    return -min(floor_div(gap) - n + 1, 1 + max(0, gap + 1 - ceil_odds(n - gap + 1)))


@pytest.mark.parametrize("neighbouring", [ADD_REMOVE, REPLACE_ONE])
@pytest.mark.parametrize("seed", range(6))
def test_gap_form_equals_pointwise_utility_inside_gaps(neighbouring, seed):
    rng = np.random.default_rng(seed)
    gap_form = add_remove_gap_utility if neighbouring is ADD_REMOVE else replace_one_gap_utility
    for alpha in (*ALPHAS, 0.01, 0.999, 0.123456789):
        x = np.sort(rng.integers(0, 6, size=rng.integers(1, 40)).astype(float))
        edges = np.concatenate([[0.0], x, [6.0]])
        positive = np.flatnonzero(np.diff(edges) > 0)
        middles = (edges[positive] + edges[positive + 1]) / 2
        expected = utility(x, middles, 0.0, alpha=alpha, neighbouring=neighbouring)
        assert np.array_equal(gap_form(x.size, positive, alpha), expected)


def old_pointwise_median_utility(sorted_x: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The median's closed form of mechanisms.median.duff (the module docstring), for comparison."""
    n = sorted_x.size
    below = np.searchsorted(sorted_x, points, side="left")
    not_above = np.searchsorted(sorted_x, points, side="right")
    ties, d = not_above - below, below - (n - not_above)
    in_gap = -(1 + np.maximum(np.maximum(d, -d - 1), 0))
    at_value = -np.maximum(np.maximum(d - (ties - 1), -ties - d), 0)
    return np.where(ties == 0, in_gap, at_value).astype(np.float64)


@pytest.mark.parametrize("n", [*range(60), 999, 1000, 12345, 10**6 + 1])
def test_median_reduces_to_the_papers_step_function_bit_for_bit(n):
    gaps = np.arange(n + 1)
    assert np.array_equal(add_remove_gap_utility(n, gaps, 0.5), gap_utility(n, gaps))
    assert add_remove_mode(n, 0.5) == n // 2


@pytest.mark.parametrize("seed", range(5))
def test_median_pointwise_utility_is_the_closed_form(seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.integers(0, 5, size=rng.integers(1, 30)).astype(float))
    points = np.concatenate([np.arange(0.0, 5.0, 0.25), x])
    expected = old_pointwise_median_utility(x, points)
    assert np.array_equal(utility(x, points, 0.0), expected)
    assert np.array_equal(utility(x, points, 0.0, alpha=0.5), expected)


def median_release(sorted_x: np.ndarray, a: float, b: float, epsilon: float, gap_form):
    n = sorted_x.size
    half_epsilon = 0.5 * score_epsilon(epsilon, n)
    return PiecewiseUniformRelease(
        sorted_x, a, b, lambda gaps: gap_form(n, gaps) * half_epsilon, mode=n // 2
    )


@pytest.mark.parametrize("epsilon", [1e-3, 0.1, 1.0, 5.0, 50.0])
def test_median_release_and_samples_are_identical(epsilon):
    """Duff(alpha=0.5) against a release built from the paper's step function and from the
    general α formula: the same log masses and the same samples for the same rng."""
    rng = np.random.default_rng(int(epsilon * 1000))
    for _ in range(8):
        x = np.sort(np.round(rng.normal(size=rng.integers(0, 300)), 1))
        got = Duff(epsilon=epsilon, alpha=0.5).release(x, (-2.0, 2.0))
        clipped = np.clip(x, -2.0, 2.0)
        general = lambda n, gaps: add_remove_gap_utility(n, gaps, 0.5)  # noqa: E731
        for gap_form in (gap_utility, general):
            reference = median_release(clipped, -2.0, 2.0, epsilon, gap_form)
            assert np.array_equal(got.log_masses, reference.log_masses)
            draws = got.sample(500, np.random.default_rng(7))
            assert np.array_equal(draws, reference.sample(500, np.random.default_rng(7)))
        assert got.true_value == Duff(epsilon=epsilon).release(x, (-2.0, 2.0)).true_value


# ------------------------------------------------ unimodality and the mode


@pytest.mark.parametrize("alpha", [*ALPHAS, 0.01, 0.33, 0.999, 0.30000000000000004, 1e-12])
def test_gap_utilities_are_unimodal_with_the_stated_mode(alpha):
    for n in [*range(0, 80), 1001, 5000]:
        gaps = np.arange(n + 1)
        u = add_remove_gap_utility(n, gaps, alpha)
        mode = add_remove_mode(n, alpha)
        assert u[mode] == -1 and (np.delete(u, mode) <= -2).all(), (alpha, n)
        steps = np.diff(u)
        assert (steps[:mode] >= 0).all() and (steps[mode:] <= 0).all(), (alpha, n)
        h = replace_one_gap_utility(n, gaps, alpha)
        k = rank(n, alpha)
        assert h[k] == h.max() == -1 and np.flatnonzero(h == -1).tolist() == sorted(
            {max(k - 1, 0), k}
        )
        steps = np.diff(h)
        assert (steps[:k] >= 0).all() and (steps[k:] <= 0).all()


@pytest.mark.parametrize("alpha", [0.1, 0.3, 0.30000000000000004, 0.123456789012345, 0.9, 1e-9])
def test_gap_utility_is_exact_for_n_ten_million(alpha):
    n = 10**7
    rng = np.random.default_rng(0)
    mode = add_remove_mode(n, alpha)
    gaps = np.unique(
        np.concatenate([rng.integers(0, n + 1, 300), np.arange(-50, 50) + mode, [0, n]])
    )
    gaps = gaps[(gaps >= 0) & (gaps <= n)]
    expected = [exact_gap_utility(n, int(g), alpha) for g in gaps]
    assert add_remove_gap_utility(n, gaps, alpha).tolist() == expected


@pytest.mark.parametrize(
    "ratio",
    [
        Fraction(10, 3),
        1 / Fraction("0.30000000000000004"),
        Fraction("0.30000000000000004") / Fraction("0.69999999999999996"),
        Fraction("0.123456789012345"),
        Fraction(1, 10**300),
        Fraction(1, 2) / Fraction(1, 2),
        1 / Fraction("0.99999999999999989"),
    ],
)
@pytest.mark.parametrize("order", [1, 2, 7, 1000, 10**7 + 1])
def test_multiples_are_exact(ratio, order):
    rng = np.random.default_rng(order)
    m = rng.integers(0, order + 1, 2000)
    m = np.unique(np.concatenate([m, (m // 3) * 3, np.arange(min(order, 500) + 1), [order]]))
    m = m[m <= order]  # with multiples of 3, where m/0.30000000000000004 is nearly whole
    multiples = Multiples.of(ratio, order)
    assert multiples.floor(m).tolist() == [math.floor(v * ratio) for v in m.tolist()]
    assert multiples.ceil(m).tolist() == [math.ceil(v * ratio) for v in m.tolist()]


# ---------------------------------------------------------------- release


def reference_log_masses(x, a, b, epsilon, alpha, neighbouring) -> np.ndarray:
    """Normalised ε·u/2 + log len, u from the pointwise utility at gap midpoints."""
    edges = np.concatenate([[a], x, [b]])
    lengths = np.diff(edges)
    positive = lengths > 0
    middles = (edges[:-1] + edges[1:])[positive] / 2
    u = utility(x, middles, a, alpha=alpha, neighbouring=neighbouring)
    if x.size == 0:  # replace-one on ∅: uniform (the module docstring)
        u = np.zeros_like(middles)
    out = np.full(x.size + 1, -np.inf)
    out[positive] = 0.5 * epsilon * u + np.log(lengths[positive])
    out[positive] -= out[positive].max()
    return out - np.log(np.exp(out[positive]).sum())


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("alpha", [0.1, 0.3, 0.75, 0.9])
@pytest.mark.parametrize("epsilon", [1e-3, 1.0, 20.0])
def test_release_is_the_em_with_half_epsilon_times_utility(epsilon, alpha, neighbours):
    rng = np.random.default_rng(int(alpha * 100))
    for size in (0, 1, 2, 5, 150):
        x = np.sort(np.round(rng.normal(size=size), 1))
        release = Duff(epsilon=epsilon, alpha=alpha, neighbours=neighbours).release(x, (-2, 2))
        clipped = np.clip(x, -2.0, 2.0)
        neighbouring = Neighbouring(neighbours)
        expected = reference_log_masses(clipped, -2.0, 2.0, epsilon, alpha, neighbouring)
        got = release.log_masses
        assert np.array_equal(np.isneginf(got), np.isneginf(expected))
        finite = np.isfinite(expected)
        assert np.allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12)
        truth = -2.0 if size == 0 else clipped[rank(size, alpha) - 1]
        assert release.true_value == truth


@pytest.mark.parametrize(
    ("alpha", "n", "rank_"), [(0.1, 10, 1), (0.55, 100, 55), (0.3, 10, 3), (0.9, 7, 7)]
)
def test_true_value_is_the_exact_rank(alpha, n, rank_):
    x = np.arange(1.0, n + 1.0)
    for neighbours in ("add_remove", "replace_one"):
        release = Duff(epsilon=1.0, alpha=alpha, neighbours=neighbours).release(x, (0, n + 1))
        assert release.true_value == float(rank_)


@pytest.mark.parametrize(("alpha", "neighbours"), [(0.1, "add_remove"), (0.8, "replace_one")])
def test_samples_follow_the_release_cdf(alpha, neighbours):
    data = np.random.default_rng(1).normal(size=301)
    release = Duff(epsilon=1.0, alpha=alpha, neighbours=neighbours).release(data, (-10, 10))
    draws = release.sample(20_000, np.random.default_rng(2))
    assert stats.kstest(draws, release.cdf).pvalue > 1e-3


@pytest.mark.parametrize("epsilon", [1e-3, 0.1, 1.0, 50.0])
@pytest.mark.parametrize(("alpha", "neighbours"), [(0.1, "add_remove"), (0.9, "replace_one")])
def test_large_n_no_nan_and_normalised(epsilon, alpha, neighbours):
    data = np.random.default_rng(6).standard_normal(10**6)
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        release = Duff(epsilon=epsilon, alpha=alpha, neighbours=neighbours).release(data, (-9, 9))
        probabilities = release.probabilities
        draws = release.sample(100, np.random.default_rng(0))
    assert not np.isnan(release.log_masses).any()
    assert abs(probabilities.sum() - 1.0) <= 1e-12
    assert np.all(np.isfinite(draws)) and np.all(np.abs(draws) <= 9)


def test_empty_and_single_point_datasets():
    for neighbours in ("add_remove", "replace_one"):
        empty = Duff(epsilon=1.0, alpha=0.9, neighbours=neighbours).release([], (0, 1))
        assert empty.true_value == 0.0 and empty.cdf(0.25) == pytest.approx(0.25)
    # {0.3}, α = 0.9, add/remove: x in (.3, 1] is the 0.9-quantile (rank 2) of {0.3, x}
    # (u = -1); x in [0, .3) needs 0.3 removed and x added (u = -2); replace-one: both
    # gaps are one replacement away
    one = Duff(epsilon=1.0, alpha=0.9).release([0.3], (0, 1))
    weights = np.array([0.3 * math.exp(-0.5), 0.7])
    assert np.allclose(one.probabilities, weights / weights.sum())
    one = Duff(epsilon=1.0, alpha=0.9, neighbours="replace_one").release([0.3], (0, 1))
    assert np.allclose(one.probabilities, [0.3, 0.7])


# ------------------------------------------------------ options, guarantee


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
def test_options_guarantee_and_repr(neighbours):
    mechanism = mechanisms.make("duff", epsilon=0.5, alpha=0.25, neighbours=neighbours)
    assert isinstance(mechanism, Duff) and mechanism.alpha == 0.25
    assert mechanism.neighbouring is Neighbouring(neighbours)
    guarantee = mechanism.guarantee
    assert guarantee.neighbouring is Neighbouring(neighbours)
    assert guarantee.epsilon == 0.5 and guarantee.delta == 0.0 and guarantee.kind == "pure"
    assert ("Asi & Duchi" in guarantee.source) is (neighbours == "replace_one")
    assert Duff.statistics == frozenset({"median", "quantile"})
    assert supported_statistics(Duff) == frozenset({"median", "quantile", "mode", "mean"})
    suffix = ", neighbours='replace_one'" if neighbours == "replace_one" else ""
    assert repr(mechanism) == f"Duff(epsilon=0.5, alpha=0.25{suffix})"
    assert repr(Duff(epsilon=2.0)) == "Duff(epsilon=2)"


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": "0.5"}, "alpha"),
        ({"alpha": True}, "alpha"),
        ({"neighbours": "swap"}, "neighbours"),
        ({"neighbours": Neighbouring.REPLACE_ONE.name}, "neighbours"),
    ],
)
def test_bad_options(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        mechanisms.make("duff", epsilon=1.0, **kwargs)


# ------------------------------------------------------------ exact privacy

PRIVACY_EPSILONS = [1e-3, 1.0, 50.0]
PRIVACY_CONFIGS = [
    {"alpha": 0.1},
    {"alpha": 0.3},
    {"alpha": 0.75},
    {"alpha": 0.9},
    {"alpha": 0.5, "neighbours": "replace_one"},
    {"alpha": 0.1, "neighbours": "replace_one"},
    {"alpha": 0.77, "neighbours": "replace_one"},
]


def quantile_pairs(alpha: float, neighbouring: Neighbouring, rng: np.random.Generator):
    """Edits at and next to the α-quantile, on tie-heavy and spread data, and the generic pairs."""
    generic = add_remove_pairs if neighbouring is ADD_REMOVE else replace_one_pairs
    yield from generic(rng)
    for n in (1, 2, 3, 7, 10, 11, 40):
        for x in (
            np.sort(rng.integers(-5, 6, n).astype(float)),
            np.sort(rng.normal(0.0, 1.5, n).clip(-5, 5)),
        ):
            k = rank(n, alpha)
            near = sorted({max(k - 2, 0), k - 1, min(k, n - 1)})
            for index in near:
                if neighbouring is ADD_REMOVE:
                    yield x, np.delete(x, index)
                    below = max(np.nextafter(x[index], -np.inf), -5.0)
                    for value in (x[index], below, -5.0, 5.0):
                        yield x, np.sort(np.append(x, value))
                else:
                    for value in (-5.0, 5.0, min(x[index] + 0.01, 5.0), x[max(index - 1, 0)]):
                        y = x.copy()
                        y[index] = value
                        yield x, np.sort(y)


def interval_cuts(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """A grid plus every data point of small datasets and points just beside them."""
    points = np.union1d(first, second)
    if points.size > 30:
        points = points[:: points.size // 30 + 1]
    beside = np.concatenate([points - 1e-6, points + 1e-6])
    return np.unique(np.clip(np.concatenate([np.linspace(-5, 5, 41), points, beside]), -5, 5))


def interval_privacy_loss(s, t, cuts: np.ndarray, floor: float = 1e-6) -> float:
    """max |log P_S([u, v]) - log P_S'([u, v])| over all intervals between cuts, from the cdf."""
    p, q = s.cdf(cuts), t.cdf(cuts)
    mass_s, mass_t = p[None, :] - p[:, None], q[None, :] - q[:, None]
    usable = (mass_s > floor) & (mass_t > floor)
    return float(np.max(np.abs(np.log(mass_s[usable]) - np.log(mass_t[usable])), initial=0.0))


def worst_loss(options: dict, epsilon: float, *, check: bool = True) -> float:
    neighbouring = Neighbouring(options.get("neighbours", "add_remove"))
    mechanism = Duff(epsilon=epsilon, **options)
    worst = 0.0
    for first, second in quantile_pairs(options["alpha"], neighbouring, np.random.default_rng(0)):
        assert first.size == second.size or neighbouring is ADD_REMOVE
        s, t = mechanism.release(first, (-5, 5)), mechanism.release(second, (-5, 5))
        cuts = partition(first, second)
        loss = privacy_loss(s, t, cuts)
        if check:
            bound = epsilon * (1 + 1e-9)
            assert loss <= bound, (options, epsilon, first, second, loss)
            assert cdf_privacy_loss(s, t, cuts) <= bound
            assert interval_privacy_loss(s, t, interval_cuts(first, second)) <= bound
        worst = max(worst, loss)
    return worst


@pytest.mark.parametrize("options", PRIVACY_CONFIGS)
@pytest.mark.parametrize("epsilon", PRIVACY_EPSILONS)
def test_exact_privacy_on_adversarial_pairs(options, epsilon):
    # the check is not vacuous: some pair comes close to the bound
    assert worst_loss(options, epsilon) >= 0.7 * epsilon


@pytest.mark.parametrize("options", [{"alpha": 0.1}, {"alpha": 0.9, "neighbours": "replace_one"}])
def test_privacy_check_catches_epsilon_instead_of_half_epsilon(monkeypatch, options):
    epsilon = 1.0
    assert worst_loss(options, epsilon, check=False) <= epsilon * (1 + 1e-9)
    monkeypatch.setattr(mechanisms.median.duff, "score_epsilon", lambda eps, n: 2 * eps)
    assert worst_loss(options, epsilon, check=False) > 1.5 * epsilon
