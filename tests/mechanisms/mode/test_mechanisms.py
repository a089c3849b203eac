"""The mode mechanisms' utilities and exact probabilities against brute force.

Every exact probability is compared with an independent computation on tiny domains
(enumeration of ``Y``, of all orders of permute-and-flip, adaptive quadrature of the
noisy max), including empty data, all-tied data and data at both bounds; each checker
is also run on a deliberately wrong variant, which it must reject.  Samples, cdfs and
huge domains: tests/mechanisms/mode/test_releases.py; privacy: test_privacy.py beside it.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable

import numpy as np
import pytest
from scipy import integrate

from mechanisms.core.domain import mode_value
from mechanisms.mode.count_em import CountEM
from mechanisms.mode.duff import DuffMode, utility
from mechanisms.mode.permute_and_flip import PermuteAndFlip
from mechanisms.mode.report_noisy_max import Noise, ReportNoisyMax, noisy_max_release
from mechanisms.mode.stability_histogram import StabilityHistogram

TINY = (0, 3)  # Y = {0, 1, 2, 3}
DATASETS = [
    [],
    [2.0],
    [0.0, 0.0, 3.0, 3.0],  # ties at the top, points at a and b
    [1.0, 1.0, 1.0, 2.0, 2.0, 0.0],
    [0.0, 1.0, 2.0, 3.0],  # all tied, Y fully seen
    [-5.0, 1.4, 1.6, 2.5, 9.0],  # clipped to a and b, rounded half to even
]


def counts_over(data: list[float], lower: int, upper: int) -> np.ndarray:
    """``n_y`` for every ``y`` of ``Y``, by clipping and rounding each point by hand."""
    counts = np.zeros(upper - lower + 1)
    for x in data:
        counts[int(np.rint(min(max(x, lower), upper))) - lower] += 1
    return counts


# ------------------------------------------------------------------ Duff's utility


def brute_force_utility(counts: tuple[int, ...], y: int, reach: int = 16) -> int:
    """``-min d(S, S')`` over datasets ``S'`` (count vectors) where ``y`` is a most
    frequent value, by breadth-first search over single additions and removals."""
    seen, queue = {counts}, deque([(counts, 0)])
    while queue:
        state, distance = queue.popleft()
        if state[y] == max(state):
            return -distance
        for j, step in itertools.product(range(len(state)), (-1, 1)):
            nxt = tuple(c + step * (i == j) for i, c in enumerate(state))
            if min(nxt) >= 0 and sum(nxt) <= reach and nxt not in seen:
                seen.add(nxt)
                queue.append((nxt, distance + 1))
    raise AssertionError("no dataset reached")


def wrong_utility(sorted_x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Planted bug: counts the gap to the *second* largest count."""
    counts = np.sort(np.bincount(np.rint(sorted_x).astype(int), minlength=4))
    return utility(sorted_x, y) + (counts[-1] - counts[-2])


@pytest.mark.parametrize(("function", "correct"), [(utility, True), (wrong_utility, False)])
def test_duff_utility_is_minus_the_add_remove_distance(function: Callable, correct: bool) -> None:
    mismatches = 0
    for counts in itertools.product(range(4), repeat=3):
        data = np.repeat(np.arange(3.0), counts)
        for y in range(3):
            mismatches += function(data, np.array([y]))[0] != brute_force_utility(counts, y)
    assert (mismatches == 0) == correct


def test_duff_utility_has_sensitivity_one() -> None:
    for counts in itertools.product(range(4), repeat=3):
        data = np.repeat(np.arange(3.0), counts)
        for z in range(3):
            added = np.sort(np.append(data, z))
            change = utility(added, np.arange(3.0)) - utility(data, np.arange(3.0))
            assert np.abs(change).max() <= 1


# ------------------------------------------------------------------ exact pmfs


def em_pmf_by_enumeration(data: list[float], scale: float) -> np.ndarray:
    weights = np.exp(scale * counts_over(data, *TINY))
    return weights / weights.sum()


@pytest.mark.parametrize("data", DATASETS)
@pytest.mark.parametrize("epsilon", [1e-3, 0.7, 5.0])
def test_exponential_mechanisms_match_enumeration(data: list[float], epsilon: float) -> None:
    y = np.arange(TINY[0], TINY[1] + 1.0)
    cases = [
        (DuffMode(epsilon=epsilon), epsilon / 2),
        (CountEM(epsilon=epsilon, monotone=False), epsilon / 2),
        (CountEM(epsilon=epsilon), epsilon),
    ]
    for mechanism, scale in cases:
        release = mechanism.release(data, TINY)
        np.testing.assert_allclose(release.pmf(y), em_pmf_by_enumeration(data, scale), rtol=1e-13)
        assert release.true_value == mode_value(np.sort(np.clip(data, *TINY)), 0.0)


def test_duff_mode_equals_the_count_em_with_half_epsilon() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        bounds = (int(rng.integers(-5, 0)), int(rng.integers(1, 30)))
        data = rng.integers(bounds[0] - 2, bounds[1] + 3, rng.integers(0, 60)).astype(float)
        epsilon = float(rng.choice([1e-4, 0.1, 1.0, 7.0]))
        y = np.arange(bounds[0], bounds[1] + 1.0)
        duff = DuffMode(epsilon=epsilon).release(data, bounds).log_pmf(y)
        count = CountEM(epsilon=epsilon, monotone=False).release(data, bounds).log_pmf(y)
        np.testing.assert_allclose(np.exp(duff), np.exp(count), rtol=1e-12, atol=0)


def permute_and_flip_by_enumeration(quality: np.ndarray, scale: float) -> np.ndarray:
    """The literal procedure, averaged over every order of the candidates."""
    p = np.exp((quality - quality.max()) / scale)
    out = np.zeros(p.size)
    orders = list(itertools.permutations(range(p.size)))
    for order in orders:
        fail = 1.0
        for i in order:
            out[i] += fail * p[i]
            fail *= 1.0 - p[i]
    return out / len(orders)


def noisy_max_by_quadrature(quality: np.ndarray, noise: Noise, threshold: float) -> np.ndarray:
    """``∫ f(t - q_y) Π_{j≠y} F(t - q_j) dt`` over ``t >= threshold``, by scipy's quad."""
    b, out = noise.scale, []
    for y in range(quality.size):
        others = np.delete(quality, y)

        def density(t: float, y: int = y, others: np.ndarray = others) -> float:
            log_f = noise.log_pdf(np.array([t - quality[y]]))[0]
            return math.exp(log_f + noise.log_cdf(t - others).sum())

        low = max(threshold, quality.min() - 60 * b)
        kinks = [q for q in np.unique(quality) if q > low]
        value, _ = integrate.quad(
            density, low, quality.max() + 80 * b, points=kinks or None, epsabs=0,
            epsrel=1e-13, limit=500,
        )  # fmt: skip
        out.append(value)
    return np.array(out)


def engine_pmf(
    data: np.ndarray, bounds: tuple[int, int], noise: Noise, **options: object
) -> np.ndarray:
    """The pmf over ``Y`` of :func:`noisy_max_release` with the given noise."""
    release = noisy_max_release(np.sort(np.clip(data, *bounds)), *bounds, noise, **options)
    return release.pmf(np.arange(bounds[0], bounds[1] + 1.0))


def identity(noise: Noise) -> Noise:
    return noise


def wrong_scale(noise: Noise) -> Noise:
    """Planted bug: a noise scale 1% too large."""
    return Noise(noise.kind, 1.01 * noise.scale)


def random_tiny_cases(seed: int, count: int):
    """(data, bounds, ε) on domains of at most 5 values, the fixed DATASETS first."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        bounds = (0, int(rng.integers(1, 5)))
        data = rng.integers(-1, 6, rng.integers(0, 9)).astype(float)
        if trial < len(DATASETS):
            data, bounds = np.array(DATASETS[trial]), TINY
        yield trial, data, bounds, float(rng.choice([0.05, 0.5, 2.0, 30.0]))


@pytest.mark.parametrize(("mutate", "correct"), [(identity, True), (wrong_scale, False)])
def test_permute_and_flip_matches_every_order(mutate: Callable, correct: bool) -> None:
    worst = 0.0
    for trial, data, bounds, epsilon in random_tiny_cases(2, 60):
        monotone = bool(trial % 2)
        scale = (1.0 if monotone else 2.0) / epsilon
        noise = Noise("exponential", scale)
        release = PermuteAndFlip(epsilon=epsilon, monotone=monotone).release(data, bounds)
        y = np.arange(bounds[0], bounds[1] + 1.0)
        np.testing.assert_array_equal(release.pmf(y), engine_pmf(data, bounds, noise))
        exact = permute_and_flip_by_enumeration(counts_over(list(data), *bounds), scale)
        computed = engine_pmf(data, bounds, mutate(noise))
        mask = exact > 1e-280
        worst = max(worst, float(np.max(np.abs(computed[mask] / exact[mask] - 1))))
    assert (worst < 1e-12) == correct, worst


@pytest.mark.parametrize(("mutate", "correct"), [(identity, True), (wrong_scale, False)])
def test_noisy_max_and_stability_histogram_match_quadrature(
    mutate: Callable, correct: bool
) -> None:
    worst = 0.0
    for trial, data, bounds, epsilon in random_tiny_cases(3, 40):
        quality = counts_over(list(data), *bounds)
        y = np.arange(bounds[0], bounds[1] + 1.0)
        noise = Noise("laplace", 1 / epsilon)
        if trial % 2:  # report noisy max over all of Y
            release = ReportNoisyMax(epsilon=epsilon).release(data, bounds)
            threshold, present, options = -np.inf, quality >= 0, {}
        else:  # the stability histogram: present values only, from the threshold
            release = StabilityHistogram(epsilon=epsilon, delta=0.01).release(data, bounds)
            threshold, present = 1 + math.log(50) / epsilon, quality > 0
            options = {"threshold": threshold, "unseen": False}
        np.testing.assert_array_equal(release.pmf(y), engine_pmf(data, bounds, noise, **options))
        exact = np.zeros(quality.size)
        if present.any():
            exact[present] = noisy_max_by_quadrature(quality[present], noise, threshold)
        refusal = math.exp(noise.log_cdf(threshold - quality[present]).sum())
        assert release.refusal_probability == pytest.approx(refusal, rel=1e-14)
        assert release.pmf(y).sum() + refusal == pytest.approx(1, abs=1e-13)
        computed = engine_pmf(data, bounds, mutate(noise), **options)
        mask = exact > 1e-280
        worst = max(worst, float(np.max(np.abs(computed[mask] / exact[mask] - 1), initial=0)))
    assert (worst < 1e-11) == correct, worst


def test_noisy_max_probabilities_sum_to_one_on_huge_skewed_domains() -> None:
    rng = np.random.default_rng(4)
    data = rng.zipf(1.3, 5000).astype(float)
    for epsilon in (1e-6, 0.01, 1.0, 100.0, 1e12):
        for cls in (ReportNoisyMax, PermuteAndFlip):
            release = cls(epsilon=epsilon).release(data, (1, 10**12))
            sizes = release.levels.level_sizes.astype(float)
            total = float(np.exp(release.level_log_probabilities) @ sizes)
            assert total == pytest.approx(1, abs=1e-12), (cls, epsilon)
            assert release.cdf(10.0**12)[()] == pytest.approx(1, abs=1e-12)


def test_permute_and_flip_is_never_worse_than_the_exponential_mechanism() -> None:
    """McKenna & Sheldon's comparison, on the expected count gap n_max - n_M."""
    rng = np.random.default_rng(6)
    for _ in range(100):
        bounds = (0, int(rng.integers(1, 40)))
        data = rng.integers(0, bounds[1] + 1, rng.integers(1, 40)).astype(float)
        quality = counts_over(list(data), *bounds)
        y = np.arange(bounds[0], bounds[1] + 1.0)
        for monotone in (True, False):
            epsilon = float(rng.choice([0.1, 1.0, 3.0]))
            pf = PermuteAndFlip(epsilon=epsilon, monotone=monotone).release(data, bounds).pmf(y)
            em = CountEM(epsilon=epsilon, monotone=monotone).release(data, bounds).pmf(y)
            gap = quality.max() - quality
            assert pf @ gap <= em @ gap * (1 + 1e-12) + 1e-15
