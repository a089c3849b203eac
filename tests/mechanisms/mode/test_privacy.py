"""Exact privacy of the mode mechanisms on add/remove neighbours.

For each pair ``(S, S')`` the probability of every output is taken from the
releases' exact log pmfs (so outputs whose probability underflows are checked too):
every value of a tiny domain, and on larger domains every value present in either
dataset plus one value absent from both (all absent values share one probability).
Pure ε-DP requires ``max_y |log P_S(y) - log P_S'(y)| <= ε``; the stability histogram
(ε, δ)-DP requires ``Σ_o (P_S(o) - e^ε P_S'(o))_+ <= δ`` over the outputs and ⊥, both
ways.  Pairs: every dataset of at most 4 points on 3 values with every added point,
random datasets with ties, and adversarial ones (ties at the top, one point versus
none, all points on one value, points at both bounds).  Each check is also run on a
deliberately wrong variant (twice the ε, a threshold too low), which it must reject,
and must come close to its bound on the right one (it is not vacuous).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from functools import cache

import numpy as np
import pytest

from mechanisms.mode.count_em import CountEM
from mechanisms.mode.duff import DuffMode
from mechanisms.mode.permute_and_flip import PermuteAndFlip
from mechanisms.mode.release import ModeRelease, exponential_mechanism
from mechanisms.mode.report_noisy_max import Noise, ReportNoisyMax, noisy_max_release
from mechanisms.mode.stability_histogram import StabilityHistogram, release_threshold

EPSILONS = (0.1, 1.0, 4.0)
DELTA = 1e-3
Factory = Callable[[tuple[float, ...], tuple[int, int], float], ModeRelease]
Pair = tuple[tuple[float, ...], tuple[float, ...], tuple[int, int]]


def sorted_data(data: tuple[float, ...], bounds: tuple[int, int]) -> np.ndarray:
    return np.sort(np.clip(np.array(data, dtype=float), *bounds))


def mechanism(cls: type, **options: object) -> Factory:
    return lambda data, bounds, epsilon: cls(epsilon=epsilon, **options).release(data, bounds)


def count_em_with(factor: float) -> Factory:
    """``P ∝ exp(factor·ε·n_y)``; factor 2 is the planted bug."""
    return lambda data, bounds, epsilon: exponential_mechanism(
        sorted_data(data, bounds), *bounds, factor * epsilon, "inverse_cdf"
    )


def noisy_max_with(kind: str, factor: float) -> Factory:
    """Noisy max with noise of scale ``factor/ε``; too small a factor is the planted bug."""
    return lambda data, bounds, epsilon: noisy_max_release(
        sorted_data(data, bounds), *bounds, Noise(kind, factor / epsilon)
    )


def stability_with(scale_factor: float, delta_factor: float) -> Factory:
    """The stability histogram with ``Lap(scale_factor/ε)`` and the threshold of
    ``delta_factor·δ``: the real one at (1, 1); noise too small or threshold too low."""

    def factory(data: tuple[float, ...], bounds: tuple[int, int], epsilon: float) -> ModeRelease:
        scale = scale_factor / epsilon
        threshold = release_threshold(scale, delta_factor * DELTA)
        noise = Noise("laplace", scale)
        return noisy_max_release(
            sorted_data(data, bounds), *bounds, noise, threshold=threshold, unseen=False
        )

    return factory


PURE = {
    "duff_mode": mechanism(DuffMode),
    "count_em_monotone": mechanism(CountEM),
    "count_em_general": mechanism(CountEM, monotone=False),
    "permute_and_flip_monotone": mechanism(PermuteAndFlip),
    "permute_and_flip_general": mechanism(PermuteAndFlip, monotone=False),
    "report_noisy_max": mechanism(ReportNoisyMax),
}
TIGHT = {"duff_mode": 0.5, "count_em_general": 0.5, "permute_and_flip_general": 0.5}
"""The exact worst loss over ε: the general forms (factor ε/2) on counts are the monotone
mechanisms at ε/2, so their loss is ε/2 (proofs in mechanisms.mode.count_em and
mechanisms.mode.permute_and_flip); the others reach ε."""
PURE_BUGS = {
    "count_em_exp_2eps_n": count_em_with(2.0),
    "permute_and_flip_scale_half": noisy_max_with("exponential", 0.5),
    "report_noisy_max_scale_half": noisy_max_with("laplace", 0.5),
}
APPROXIMATE = {"stability_histogram": mechanism(StabilityHistogram, delta=DELTA)}
APPROXIMATE_BUGS = {
    "stability_threshold_low": stability_with(1.0, 100.0),
    "stability_noise_half": stability_with(0.5, 1.0),
}


# ------------------------------------------------------------------ pairs


def exhaustive_pairs() -> Iterator[Pair]:
    """Every dataset of at most 4 points on Y = {0, 1, 2}, with every added point."""
    for size in range(5):
        for data in itertools.combinations_with_replacement((0.0, 1.0, 2.0), size):
            for z in (0.0, 1.0, 2.0):
                yield data, tuple(sorted((*data, z))), (0, 2)


def random_and_adversarial_pairs() -> Iterator[Pair]:
    rng = np.random.default_rng(11)
    bounds = (0, 40)
    for _ in range(12):
        data = tuple(sorted(rng.integers(0, 41, rng.integers(1, 30)).astype(float)))
        index = int(rng.integers(len(data)))
        yield data[:index] + data[index + 1 :], data, bounds  # one point removed
        yield data, tuple(sorted((*data, float(rng.integers(0, 41))))), bounds
    tied = (3.0, 3.0, 3.0, 7.0, 7.0, 7.0, 9.0)
    yield tied, tuple(sorted((*tied, 7.0))), bounds  # breaks a tie at the top
    yield tied, (3.0, 3.0, 7.0, 7.0, 7.0, 9.0), bounds
    yield (), (5.0,), bounds  # one point versus none
    yield (), (0.0,), (0, 10**6)  # ... on a huge domain: EM and noisy max come close to ε
    yield (5.0,) * 20, (5.0,) * 21, bounds  # all points on one value
    yield (0.0, 40.0), (0.0, 40.0, 40.0), bounds  # points at both bounds


def all_pairs() -> list[Pair]:
    return [*exhaustive_pairs(), *random_and_adversarial_pairs()]


def outputs(first: ModeRelease, second: ModeRelease) -> np.ndarray:
    """Every value that either release can output with its own probability: the values
    present in either dataset, and one value absent from both (if any)."""
    present = np.union1d(first.levels.values, second.levels.values)
    candidates = np.arange(first.lower, first.lower + present.size + 1)
    absent = candidates[~np.isin(candidates, present)][:1]
    return np.union1d(present, absent)


# ------------------------------------------------------------------ checks


def pure_loss(first: ModeRelease, second: ModeRelease) -> float:
    """``max_y |log P_S(y) - log P_S'(y)|`` (``inf`` if only one can output ``y``)."""
    points = outputs(first, second)
    a, b = first.log_pmf(points), second.log_pmf(points)
    possible = ~(np.isneginf(a) & np.isneginf(b))
    return float(np.max(np.abs(a[possible] - b[possible]), initial=0.0))


def delta_needed(first: ModeRelease, second: ModeRelease, epsilon: float) -> float:
    """``max`` over both orders of ``Σ_o (P(o) - e^ε P'(o))_+``, ⊥ included."""
    points = outputs(first, second)
    p = np.append(first.pmf(points), first.refusal_probability)
    q = np.append(second.pmf(points), second.refusal_probability)
    return max(
        float(np.maximum(p - math.exp(epsilon) * q, 0).sum()),
        float(np.maximum(q - math.exp(epsilon) * p, 0).sum()),
    )


@cache
def release_of(name: str, data: tuple[float, ...], bounds: tuple[int, int], epsilon: float):
    factories = PURE | PURE_BUGS | APPROXIMATE | APPROXIMATE_BUGS
    return factories[name](data, bounds, epsilon)


def worst_pure_loss(name: str, epsilon: float) -> float:
    return max(
        pure_loss(release_of(name, s, bounds, epsilon), release_of(name, t, bounds, epsilon))
        for s, t, bounds in all_pairs()
    )


def worst_delta(name: str, epsilon: float) -> float:
    return max(
        delta_needed(
            release_of(name, s, bounds, epsilon), release_of(name, t, bounds, epsilon), epsilon
        )
        for s, t, bounds in all_pairs()
    )


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("name", PURE)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_pure_mechanisms_are_epsilon_dp_on_every_pair(name: str, epsilon: float) -> None:
    worst = worst_pure_loss(name, epsilon)
    tight = TIGHT.get(name, 1.0) * epsilon
    assert worst <= tight * (1 + 1e-9), (name, epsilon, worst)
    assert worst >= 0.9 * tight, (name, epsilon, worst)  # the check is not vacuous


@pytest.mark.parametrize("name", PURE_BUGS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_the_pure_check_catches_twice_the_epsilon(name: str, epsilon: float) -> None:
    assert worst_pure_loss(name, epsilon) > 1.2 * epsilon


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_stability_histogram_is_epsilon_delta_dp_on_every_pair(epsilon: float) -> None:
    assert worst_delta("stability_histogram", epsilon) <= DELTA * (1 + 1e-9)
    # one point versus none is exactly the δ of the analysis: the check is tight
    empty, one = (), (5.0,)
    needed = delta_needed(
        release_of("stability_histogram", empty, (0, 40), epsilon),
        release_of("stability_histogram", one, (0, 40), epsilon),
        epsilon,
    )
    assert needed == pytest.approx(DELTA, rel=1e-12)


@pytest.mark.parametrize("name", APPROXIMATE_BUGS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_the_approximate_check_catches_a_low_threshold_or_small_noise(
    name: str, epsilon: float
) -> None:
    assert worst_delta(name, epsilon) > 1.5 * DELTA


def test_monotone_count_em_loses_almost_epsilon_when_a_value_appears() -> None:
    """∅ versus {z} on 10⁶ values: the ratio at z is e^ε·|Y|/(|Y| - 1 + e^ε), near e^ε."""
    for epsilon in EPSILONS:
        first = release_of("count_em_monotone", (), (0, 10**6), epsilon)
        second = release_of("count_em_monotone", (0.0,), (0, 10**6), epsilon)
        size = 10**6 + 1
        expected = epsilon + math.log(size) - math.log(size - 1 + math.exp(epsilon))
        assert pure_loss(first, second) == pytest.approx(expected, rel=1e-12)
