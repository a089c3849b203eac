"""Propose-test-release for the median: distance to instability, exact privacy, refusals."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

import mechanisms.median.ptr as ptr
from mechanisms.core.guarantee import Neighbouring
from mechanisms.median.ptr import PTRMedian, instability_distance, reference_proposal
from mechanisms.smooth.tuning import EvenlySpaced

A, B = 0.0, 1.0
Dataset = tuple[float, ...]


def lower_median(z: Dataset) -> float:
    return A if not z else z[(len(z) - 1) // 2]


def brute_local_sensitivity(z: Dataset, values: Dataset) -> float:
    """max |T(z) - T(z')| over removing any point of z or adding any of ``values``."""
    t = lower_median(z)
    removed = [z[:i] + z[i + 1 :] for i in range(len(z))]
    added = [tuple(sorted((*z, v))) for v in values]
    return max(abs(lower_median(w) - t) for w in removed + added)


def brute_distance(x: Dataset, proposal: float, values: Dataset, depth: int) -> float:
    """Least number of add/remove edits (additions from ``values``) reaching LS > proposal,
    by breadth-first search; ``inf`` if none within ``depth``."""
    frontier = {tuple(sorted(x))}
    seen = set(frontier)
    for k in range(depth + 1):
        if any(brute_local_sensitivity(z, values) > proposal for z in frontier):
            return float(k)
        step = set()
        for z in frontier:
            step.update(z[:i] + z[i + 1 :] for i in range(len(z)))
            step.update(tuple(sorted((*z, v))) for v in values)
        frontier = step - seen
        seen |= frontier
    return math.inf


DATASETS: list[Dataset] = [
    (),
    (0.5,),
    (0.0,),
    (1.0,),
    (0.2, 0.6),
    (0.5, 0.5),
    (0.0, 1.0),
    (0.3, 0.4, 0.5),
    (0.5, 0.5, 0.5),
    (0.0, 0.0, 1.0),
    (0.1, 0.45, 0.5, 0.55),
    (0.2, 0.5, 0.5, 0.5, 0.8),
]
PROPOSALS = (0.05, 0.12, 0.3, 0.55, 1.0)
DEPTH = 4


def distance_mismatches(distance: Callable[..., float]) -> list[tuple[Dataset, float]]:
    """The (dataset, proposal) where ``distance`` disagrees with the breadth-first search.

    Additions range over a, b, the data and the midpoints (interior additions
    never help, and a and b give every local sensitivity); a distance beyond
    ``DEPTH`` must be beyond it in the search too.
    """
    wrong = []
    for x in DATASETS:
        grid = sorted({A, B, *x})
        values = tuple(sorted({*grid, *((u + v) / 2 for u, v in itertools.pairwise(grid))}))
        for proposal in PROPOSALS:
            got = distance(np.array(x), A, B, proposal)
            expected = brute_distance(x, proposal, values, DEPTH)
            if not (got == expected or (got > DEPTH and expected == math.inf)):
                wrong.append((x, proposal))
    return wrong


def test_distance_to_instability_matches_brute_force() -> None:
    assert distance_mismatches(instability_distance) == []


@pytest.mark.parametrize(
    "mutant",
    [
        lambda x, a, b, p: instability_distance(x, a, b, p) + 1,  # one edit too many
        lambda x, a, b, p: instability_distance(x, a, b, 1.5 * p),  # a looser bound
    ],
)
def test_the_brute_force_check_catches_a_wrong_distance(mutant) -> None:
    assert distance_mismatches(mutant) != []


def test_distance_is_infinite_iff_the_proposal_covers_the_width() -> None:
    x = np.linspace(0.1, 0.9, 9)
    assert instability_distance(x, A, B, 1.0) == math.inf
    assert instability_distance(x, A, B, np.nextafter(1.0, 0)) == 9.0  # A(n) = b - a
    assert instability_distance(np.array([]), A, B, 0.5) == 0.0  # LS(∅) = b - a


# ------------------------------------------------------------------- exact privacy


def neighbour_pairs(grid: Dataset, max_size: int) -> list[tuple[Dataset, Dataset]]:
    """Every dataset of size <= max_size on the grid with each dataset one addition larger."""
    pairs = []
    for size in range(max_size + 1):
        for x in itertools.combinations_with_replacement(grid, size):
            pairs += [(x, tuple(sorted((*x, v)))) for v in grid]
    return pairs


def cells(release, points: np.ndarray) -> np.ndarray:
    """P(cell) for (-inf, p_0], (p_0, p_1], ..., (p_last = b, inf) (this last cell is ⊥)."""
    cdf = np.asarray(release.cdf(points), dtype=np.float64)
    return np.diff(np.concatenate(([0.0], cdf, [1.0])))


def worst_hockey_stick(make: Callable[[], PTRMedian], grid: Dataset, max_size: int) -> float:
    """max over neighbour pairs and both directions of Σ_cells max(0, P - e^ε Q) / δ."""
    mechanism = make()
    points = np.union1d(np.linspace(A, B, 2001), grid)
    worst = 0.0
    for x, y in neighbour_pairs(grid, max_size):
        p = cells(mechanism.release(np.array(x), (A, B)), points)
        q = cells(mechanism.release(np.array(y), (A, B)), points)
        for first, second in ((p, q), (q, p)):
            excess = np.maximum(0.0, first - math.exp(mechanism.epsilon) * second).sum()
            worst = max(worst, float(excess) / mechanism.required_delta)
    return worst


GRID = (0.0, 0.3, 0.5, 0.6, 1.0)
SETTINGS = [
    {"epsilon": 1.0, "delta": 0.05, "proposal": 0.15},
    {"epsilon": 1.0, "delta": 0.05},  # the default proposal
    {"epsilon": 0.5, "delta": 0.2, "proposal": 0.35},
    {"epsilon": 2.0, "delta": 0.01, "reference_size": 20, "refusal_target": 0.8},
]


@pytest.mark.parametrize("setting", SETTINGS)
def test_the_approximate_dp_condition_holds_on_neighbour_pairs(setting) -> None:
    assert worst_hockey_stick(lambda: PTRMedian(**setting), GRID, 3) <= 1.0 + 1e-9


def test_the_privacy_check_catches_a_distance_one_too_large(monkeypatch) -> None:
    real = ptr.instability_distance
    monkeypatch.setattr(ptr, "instability_distance", lambda *args: real(*args) + 1)
    assert worst_hockey_stick(lambda: PTRMedian(**SETTINGS[0]), GRID, 3) > 1.0


def test_the_privacy_check_catches_the_textbook_budget() -> None:
    """ε for the test and ε for the release (Dwork & Roth's (2ε, δ) form) is not (ε, δ)."""

    def textbook() -> PTRMedian:
        mechanism = PTRMedian(epsilon=1.0, delta=0.01, proposal=0.15)
        mechanism.epsilon_test = mechanism.epsilon_release = mechanism.epsilon
        mechanism.scaled_tau = math.log(1 / mechanism.required_delta)
        return mechanism

    assert worst_hockey_stick(textbook, GRID, 3) > 1.0


# ---------------------------------------------------------------- the distribution


def test_refusal_probability_matches_monte_carlo() -> None:
    release = PTRMedian(epsilon=1.0, delta=1e-3, reference_size=200).release(
        np.random.default_rng(0).uniform(size=200), (A, B)
    )
    r = release.refusal_probability
    assert 0.05 < r < 0.95
    draws = release.sample(200_000, np.random.default_rng(1))
    refused = np.isnan(draws).mean()
    assert abs(refused - r) <= 5 * math.sqrt(r * (1 - r) / draws.size)


@pytest.mark.parametrize("clip_output", [True, False])
def test_answers_follow_the_cdf(clip_output: bool) -> None:
    mechanism = PTRMedian(epsilon=1.0, delta=1e-3, reference_size=200, clip_output=clip_output)
    release = mechanism.release(np.random.default_rng(2).uniform(size=200), (A, B))
    answers = release.sample(40_000, np.random.default_rng(3))
    answers = answers[~np.isnan(answers)]
    kept = 1.0 - release.refusal_probability
    upper = release.cdf(answers) / kept
    lower = release.cdf(np.nextafter(answers, -np.inf)) / kept
    u = lower + np.random.default_rng(4).uniform(size=answers.size) * (upper - lower)
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert float(release.cdf(B if clip_output else np.inf)) == pytest.approx(kept, abs=1e-15)


def test_refusal_is_the_laplace_cdf_at_the_threshold() -> None:
    mechanism = PTRMedian(epsilon=0.8, delta=1e-4, proposal=0.05)
    x = np.sort(np.random.default_rng(5).uniform(size=101))
    release = mechanism.release(x, (A, B))
    gamma = instability_distance(x, A, B, 0.05)
    tau = math.log(1 / (2e-4)) / 0.4
    expected = stats.laplace.cdf(tau - gamma, scale=1 / 0.4)
    assert release.refusal_probability == pytest.approx(expected, rel=1e-12)


def test_a_proposal_of_the_whole_width_never_refuses() -> None:
    release = PTRMedian(epsilon=1.0, delta=1e-3, proposal=1.0).release([0.2, 0.9], (A, B))
    assert release.refusal_probability == 0.0
    assert not np.isnan(release.sample(1000, np.random.default_rng(0))).any()


@pytest.mark.parametrize("target", [0.05, 0.5, 0.9])
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_the_reference_proposal_is_the_least_meeting_the_target(epsilon, target) -> None:
    """On the reference data itself, P(⊥) <= target, and one rank less would exceed it."""
    n = 500
    mechanism = PTRMedian(epsilon=epsilon, delta=1e-3, refusal_target=target, reference_size=n)
    reference = np.asarray(EvenlySpaced(n)[np.arange(n)])
    release = mechanism.release(reference, (0.0, 1.0))
    assert release.refusal_probability <= target
    smaller = reference_proposal(n, mechanism.scaled_tau, mechanism.epsilon_test, target)
    below = PTRMedian(epsilon=epsilon, delta=1e-3, proposal=smaller - 0.5 / n)
    assert below.release(reference, (0.0, 1.0)).refusal_probability > target


def test_the_default_proposal_does_not_depend_on_the_data() -> None:
    """The size of the data is private under add/remove: the proposal must not use it."""
    mechanism = PTRMedian(epsilon=1.0, delta=1e-3)
    proposals = {
        mechanism.release(np.linspace(0.2, 0.8, n), (A, B)).parameters["proposal"]
        for n in (0, 1, 10, 999, 1000, 5000)
    }
    assert len(proposals) == 1


def test_empty_data_is_unstable_and_released_around_a() -> None:
    release = PTRMedian(epsilon=1.0, delta=0.1, proposal=0.5).release([], (A, B))
    assert release.true_value == A and release.n == 0
    assert release.parameters["distance"] == 0.0


def test_guarantee_and_class_attributes() -> None:
    mechanism = PTRMedian(epsilon=1.0, delta=1e-3)
    assert mechanism.may_refuse and mechanism.requires_delta
    assert mechanism.statistics == frozenset({"median"})
    guarantee = mechanism.guarantee
    assert (guarantee.epsilon, guarantee.delta) == (1.0, 1e-3)
    assert guarantee.neighbouring is Neighbouring.ADD_REMOVE


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"proposal": 0.0}, "proposal"),
        ({"proposal": 1.5}, "proposal"),
        ({"proposal": "0.1"}, "proposal"),
        ({"refusal_target": 1.0}, "refusal_target"),
        ({"reference_size": 0}, "reference_size"),
        ({"reference_size": None}, "reference_size"),
        ({"clip_output": 1}, "clip_output"),
        ({"delta": None}, "delta"),
        ({"epsilon": 5e-324}, "epsilon"),
    ],
)
def test_bad_public_input_names_the_argument(options, name) -> None:
    with pytest.raises(ValueError, match=name):
        PTRMedian(**{"epsilon": 1.0, "delta": 1e-3, **options})
