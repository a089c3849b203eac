"""The batched noisy-max integral gives the floats of the run-by-run march it replaced.

:mod:`mechanisms.mode.noisy_max_integral` decides its panels one run at a time but
integrates them in batches, keeping the runs decided past a stop when the stop changed
none of their decisions.  Its claim is that the panels, the integrals and their sums
are those of the former march, computed in the same order: the same floats.  The
former code is kept below verbatim (the reference) and both are compared, bit for bit
and by the task's rule (probabilities equal to 1e-13 relative), on gate-like data
(n = 101 points rounded to the integers of [-10, 10]), Zipf data over 10¹² values,
ties, two values, one value, n = 1, 2, 3, sorted and reversed data, data all outside
the bounds, ε from 1e-6 to 1e6, for Laplace noise (report noisy max, the stability
histogram's thresholds) and exponential noise (permute-and-flip, both scales).  The
refusal probability and the samples (same rng, same draws) are compared too.  A
planted bug, one Gauss-Legendre panel dropped, must fail the comparison.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.special import logsumexp

from mechanisms.mode import noisy_max_integral
from mechanisms.mode.noisy_max_integrand import runs_log_integrals
from mechanisms.mode.permute_and_flip import PermuteAndFlip
from mechanisms.mode.report_noisy_max import ReportNoisyMax
from mechanisms.mode.stability_histogram import StabilityHistogram
from mechanisms.noise.noisy_max import Noise

# ------------------------------------------------------------------ the former code
# mechanisms/mode/report_noisy_max.py before the batched integral (the march run by run)

LN2 = math.log(2.0)
NODES, WEIGHTS = np.polynomial.legendre.leggauss(20)
STEEPNESS, SMOOTHNESS, RUN, LINEAR_TAIL, NEGLIGIBLE = 8.0, 1.0, 16, 40.0, 50.0
TILE = 1 << 16


@dataclass(frozen=True)
class FormerNoise:
    kind: str
    scale: float

    @property
    def laplace(self) -> bool:
        return self.kind == "laplace"

    def log_cdf(self, x: np.ndarray) -> np.ndarray:
        b, out = self.scale, np.full(x.shape, -np.inf)
        if not self.laplace:
            y = x / b
            small, large = (x > 0) & (y < LN2), y >= LN2
            with np.errstate(divide="ignore"):
                out[small] = np.log(-np.expm1(-y[small]))
            out[large] = np.log1p(-np.exp(-y[large]))
            return out
        upper = x >= 0
        out[upper] = np.log1p(-0.5 * np.exp(-x[upper] / b))
        out[~upper] = x[~upper] / b - LN2
        return out

    def log_pdf(self, x: np.ndarray) -> np.ndarray:
        b = self.scale
        if self.laplace:
            return -np.abs(x) / b - math.log(2.0 * b)
        out = np.full(x.shape, -np.inf)
        out[x >= 0] = -x[x >= 0] / b - math.log(b)
        return out

    def hazard(self, x: np.ndarray) -> np.ndarray:
        b = self.scale
        if self.laplace:
            tail = np.exp(-np.maximum(x, 0.0) / b)
            return tail / (b * (2.0 - tail))
        out = np.full(x.shape, np.inf)
        positive = x > 0
        out[positive] = np.exp(-x[positive] / b) / (-b * np.expm1(-x[positive] / b))
        return out

    def log_pdf_slope(self, x: np.ndarray) -> np.ndarray:
        b = self.scale
        if self.laplace:
            return np.where(x <= 0, 1.0 / b, -1.0 / b)
        return np.full(x.shape, -1.0 / b)

    def largest(self, log_u: np.ndarray) -> np.ndarray:
        b = self.scale
        with np.errstate(divide="ignore"):
            tail = np.log(-np.expm1(log_u))
        if not self.laplace:
            return -b * tail
        return np.where(log_u < -LN2, b * (log_u + LN2), -b * (LN2 + tail))


def _log_sum_exp(values: np.ndarray) -> np.ndarray:
    peak = values.max(axis=0)
    finite = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return finite + np.log(np.exp(values - finite).sum(axis=0))


def _leave_one_out(terms: np.ndarray, sizes: np.ndarray, infinite: float) -> np.ndarray:
    finite = np.isfinite(terms)
    values = np.where(finite, terms, 0.0)
    out = (values * sizes).sum(axis=1)[:, None] - values
    remaining = (~finite * sizes).sum(axis=1)[:, None] - ~finite
    return np.where(remaining > 0.5, infinite, out)


class _Integrand:
    def __init__(self, offsets: np.ndarray, sizes: np.ndarray, noise: FormerNoise) -> None:
        self.offsets, self.sizes, self.noise = offsets, sizes, noise

    def log_values(self, base: float, x: np.ndarray) -> np.ndarray:
        gap = (base - self.offsets)[None, :] + x[:, None]
        log_cdf = self.noise.log_cdf(gap)
        return _leave_one_out(log_cdf, self.sizes, -np.inf) + self.noise.log_pdf(gap)

    def slopes(self, base: float, x: float) -> np.ndarray:
        gap = (base - self.offsets) + x
        hazard = self.noise.hazard(gap)[None, :]
        return _leave_one_out(hazard, self.sizes, np.inf)[0] + self.noise.log_pdf_slope(gap)

    def edge(self, base: float, x: float) -> tuple[np.ndarray, np.ndarray]:
        return self.log_values(base, np.array([x]))[0], self.slopes(base, x)


def _log_integral_exp(slope: np.ndarray, width: float) -> np.ndarray:
    out = np.full(slope.shape, math.log(width) if width > 0 else -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        up, down = slope > 0, slope < 0
        s = slope[up]
        out[up] = s * width + np.log(-np.expm1(-s * width)) - np.log(s)
        s = slope[down]
        out[down] = np.log(-np.expm1(s * width)) - np.log(-s)
    return out


class _March:
    def __init__(self, integrand: _Integrand) -> None:
        self.f = integrand
        size = integrand.offsets.size
        self.log_p = np.full(size, -np.inf)
        self.active = np.ones(size, dtype=bool)

    def add(self, contribution: np.ndarray) -> None:
        self.log_p[self.active] = np.logaddexp(self.log_p[self.active], contribution[self.active])

    def settle(self, row: np.ndarray, slope: np.ndarray) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            rest = row - np.log(slope)
        self.active &= ~((slope > 0) & (rest < self.log_p - NEGLIGIBLE))

    def linear(self, base: float, start: float, width: float) -> None:
        row, slope = self.f.edge(base, start)
        peak, rate = row, slope
        if np.isfinite(width):
            row_end, slope_end = self.f.edge(base, start + width)
            rising = slope_end > 0
            peak, rate = np.where(rising, row_end, row), np.where(rising, -slope_end, slope)
        self.add(peak + _log_integral_exp(rate, width))
        self.settle(row, slope)

    def below(self, base: float) -> None:
        row, slope = self.f.edge(base, 0.0)
        self.add(row - np.log(slope))

    def panels_between(self, base: float, low: float, high: float) -> None:
        right, slope = high, self.f.slopes(base, high)
        while right > low and self.active.any():
            steep_right = np.abs(slope[self.active]).max()
            span, allowed = right - low, 0.5 * STEEPNESS
            width = min(
                SMOOTHNESS * self.f.noise.scale, span * allowed / (steep_right * span + allowed)
            )
            while True:
                left = max(right - width, low)
                slope_left = self.f.slopes(base, left)
                steep = max(steep_right, np.abs(slope_left[self.active]).max())
                if width * steep <= STEEPNESS:
                    break
                width = min(0.5 * width, STEEPNESS / steep) if steep < np.inf else 0.875 * width
            run = RUN
            while run > 1 and left > low:
                far = max(right - run * width, low)
                slope_far = self.f.slopes(base, far)
                if width * max(steep_right, np.abs(slope_far[self.active]).max()) <= STEEPNESS:
                    left, slope_left = far, slope_far
                    break
                run //= 4
            count = max(1, math.ceil((right - left) / width * (1 - 1e-12)))
            half = 0.5 * (right - left) / count
            middles = left + half * (2 * np.arange(count) + 1)
            x = np.append((middles[:, None] + half * NODES).ravel(), left)
            values = self.f.log_values(base, x)
            weights = np.log(half * np.tile(WEIGHTS, count))[:, None]
            self.add(_log_sum_exp(values[:-1] + weights))
            right, slope = left, slope_left
            if right > low:
                self.settle(values[-1], slope)


def _linear_from(integrand: _Integrand, base: float) -> float:
    b = integrand.noise.scale
    gap = base - integrand.offsets
    below = gap >= 0
    log_k = logsumexp(np.log(integrand.sizes[below]) - gap[below] / b) if below.any() else -np.inf
    return b * (float(np.logaddexp(0.0, log_k)) + LINEAR_TAIL)


def reference_log_probabilities(
    offsets: np.ndarray, sizes: np.ndarray, noise: FormerNoise, threshold: float | None = None
) -> np.ndarray:
    march = _March(_Integrand(offsets, sizes, noise))
    if offsets.size == 0:
        return march.log_p
    floor = -np.inf if noise.laplace else 0.0
    if threshold is not None:
        floor = max(floor, threshold)
    cuts = offsets[offsets > floor]
    if np.isfinite(floor):
        cuts = np.append(cuts, floor)
    cuts = np.unique(cuts)
    tops = np.append(cuts[1:], np.inf)
    for base, top in zip(cuts[::-1], tops[::-1], strict=True):
        split = _linear_from(march.f, base)
        if split < top - base:
            march.linear(base, split, top - base - split)
        march.panels_between(base, 0.0, min(split, top - base))
        if not march.active.any():
            return march.log_p
    if not np.isfinite(floor):
        march.below(float(cuts[0]))
    return march.log_p


def reference_draw(offsets, sizes, noise, threshold, size, rng):
    levels = offsets.size
    winners = np.full(size, -1, dtype=np.int64)
    rows = max(1, min(size, TILE // max(levels, 1)))
    for start in range(0, size if levels else 0, rows):
        count = min(rows, size - start)
        scores = noise.largest(-rng.standard_exponential((count, levels)) / sizes) + offsets
        best = scores.argmax(axis=1)
        if threshold is not None:
            best[scores[np.arange(count), best] < threshold] = -1
        winners[start : start + count] = best
    return winners


# ------------------------------------------------------------------ the cases


def former_noise_scale(epsilon: float, n: int, factor: float = 1.0) -> float:
    """The former clamping of ε, verbatim."""
    return factor / min(max(epsilon, 1e-300), 2.0**40 / (n + 1))


def datasets() -> list[tuple[str, np.ndarray, tuple[int, int]]]:
    rng = np.random.default_rng(11)
    gate = (-10, 10)
    normal = rng.normal(0, 1, 101)
    return [
        ("gate normal", normal, gate),
        ("gate normal sorted", np.sort(normal), gate),
        ("gate normal reversed", np.sort(normal)[::-1], gate),
        ("gate uniform", rng.uniform(-10, 10, 101), gate),
        ("gate beta", 20 * rng.beta(2, 5, 101) - 10, gate),
        ("gate wide normal", rng.normal(0, 4, 101), gate),
        ("heavy ties", np.repeat([3.0, -2.0, 0.0, 7.0], [40, 30, 30, 1]), gate),
        ("two values", np.repeat([-1.0, 1.0], [51, 50]), gate),
        ("one value", np.full(101, 2.0), gate),
        ("all outside the bounds", np.repeat([-50.0, 80.0], [60, 41]), gate),
        ("n=1", np.array([0.4]), gate),
        ("n=2", np.array([-3.0, 5.0]), gate),
        ("n=3", np.array([1.0, 1.0, -6.0]), gate),
        ("no data", np.zeros(0), gate),
        ("Zipf 5000", rng.zipf(1.3, 5000).astype(float), (1, 10**12)),
        ("Zipf 500", rng.zipf(2.0, 500).astype(float), (1, 10**12)),
    ]


EPSILONS = (1e-6, 1e-3, 0.1, 0.5, 2.0, 20.0, 1e3, 1e6)
MECHANISMS = (
    ("report_noisy_max", ReportNoisyMax, {}),
    ("permute_and_flip", PermuteAndFlip, {}),
    ("permute_and_flip monotone=False", PermuteAndFlip, {"monotone": False}),
    ("stability_histogram delta=1/101", StabilityHistogram, {"delta": 1 / 101}),
    ("stability_histogram delta=0.3", StabilityHistogram, {"delta": 0.3}),
)


@dataclass(frozen=True)
class Case:
    """A release and the former engine's inputs for it."""

    name: str
    release: object
    noise: FormerNoise
    offsets: np.ndarray
    sizes: np.ndarray
    threshold: float | None


def make_cases() -> list[Case]:
    out = []
    for label, data, bounds in datasets():
        for epsilon in EPSILONS:
            for name, cls, options in MECHANISMS:
                release = cls(epsilon=epsilon, **options).release(data, bounds)
                levels = release.levels
                top = float(levels.level_counts[0]) if levels.level_counts.size else 0.0
                factor = 2.0 if options.get("monotone") is False else 1.0
                kind = "exponential" if cls is PermuteAndFlip else "laplace"
                noise = FormerNoise(kind, former_noise_scale(epsilon, data.size, factor))
                threshold = None
                if cls is StabilityHistogram:
                    tau = 1.0 + noise.scale * max(0.0, -math.log(2.0 * options["delta"]))
                    threshold = tau - top
                offsets = levels.level_counts - top
                sizes = levels.level_sizes.astype(np.float64)
                case_name = f"{label}, eps={epsilon:g}, {name}"
                out.append(Case(case_name, release, noise, offsets, sizes, threshold))
    return out


CASES = make_cases()


@functools.cache
def reference(index: int) -> np.ndarray:
    """The former engine's log probabilities for ``CASES[index]``."""
    case = CASES[index]
    return reference_log_probabilities(case.offsets, case.sizes, case.noise, case.threshold)


def current(case: Case) -> np.ndarray:
    """The engine's log probabilities, computed afresh (the release caches its own)."""
    noise = Noise(case.noise.kind, case.noise.scale)
    return noisy_max_integral.level_log_probabilities(
        case.offsets, case.sizes, noise, case.threshold
    )


def relative_difference(new: np.ndarray, old: np.ndarray) -> float:
    """``max |P_new/P_old - 1|`` over the levels (``inf`` if one is 0 and not the other)."""
    finite = np.isfinite(old)
    if new.shape != old.shape or not np.array_equal(np.isfinite(new), finite):
        return math.inf
    return float(np.max(np.abs(np.expm1(new[finite] - old[finite])), initial=0.0))


def compare_all() -> tuple[float, int]:
    """The largest relative difference over the cases, and how many differ at all."""
    worst, differing = 0.0, 0
    for index, case in enumerate(CASES):
        new, old = current(case), reference(index)
        worst = max(worst, relative_difference(new, old))
        differing += not np.array_equal(new, old)
    return worst, differing


# ------------------------------------------------------------------ the tests

INDICES = range(len(CASES))
IDS = [case.name for case in CASES]


@pytest.mark.parametrize("index", INDICES, ids=IDS)
def test_releases_give_the_former_probabilities_bit_for_bit(index: int) -> None:
    case, old = CASES[index], reference(index)
    new = case.release.level_log_probabilities
    assert relative_difference(new, old) <= 1e-13
    np.testing.assert_array_equal(new, old)
    refusal = 0.0
    if case.threshold is not None:
        log_cdf = case.noise.log_cdf(case.threshold - case.offsets)
        refusal = math.exp(float((log_cdf * case.sizes).sum()))
    assert case.release.refusal_probability == refusal


@pytest.mark.parametrize("index", INDICES[::3], ids=IDS[::3])
def test_samples_are_the_former_draws(index: int) -> None:
    case = CASES[index]
    rng, former_rng = np.random.default_rng(5), np.random.default_rng(5)
    sample = case.release.sample(3000, rng)
    threshold = case.threshold
    levels = reference_draw(case.offsets, case.sizes, case.noise, threshold, 3000, former_rng)
    expected = np.full(3000, np.nan)
    expected[levels >= 0] = case.release.levels.uniform(levels[levels >= 0], former_rng)
    np.testing.assert_array_equal(sample, expected)


def test_the_noise_laws_give_the_former_floats() -> None:
    rng = np.random.default_rng(2)
    x = np.concatenate(
        (
            rng.normal(0, 1, 2000) * 10.0 ** rng.uniform(-300, 300, 2000),
            [0.0, -0.0, 5e-324, -5e-324, 1e-300, 700.0, -700.0, 1e308, -1e308],
        )
    )
    for kind in ("laplace", "exponential"):
        for scale in (1e-300, 1e-6, 0.5, 2.0, 1e6, 1e300):
            old, new = FormerNoise(kind, scale), Noise(kind, scale)
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(new.log_cdf(x), old.log_cdf(x))
                np.testing.assert_array_equal(new.log_pdf(x), old.log_pdf(x))
                hazard, slope = new.slope_terms(x)
                np.testing.assert_array_equal(hazard, old.hazard(x))
                np.testing.assert_array_equal(np.broadcast_to(slope, x.shape), old.log_pdf_slope(x))


def test_the_cases_reach_tiny_probabilities_and_every_path(monkeypatch) -> None:
    """Probabilities below e^-256 (one ulp of log P is 5.7e-14 of P there), and stops
    after which the batched runs stand, stops after which some are dropped, and the
    march ending at a stop."""
    tiny = sum(bool(np.any(np.isfinite(old) & (old < -256))) for old in map(reference, INDICES))
    seen = {"stand": 0, "dropped": 0}
    unchanged = noisy_max_integral._March._unchanged

    def spy(self, step):
        verdict = unchanged(self, step)
        seen["stand" if verdict else "dropped"] += bool(step.count)
        return verdict

    monkeypatch.setattr(noisy_max_integral._March, "_unchanged", spy)
    compare_all()
    assert tiny > 20 and seen["stand"] > 20 and seen["dropped"] > 5, (tiny, seen)


def drop_one_panel(f, bases, lefts, halves, counts):
    """Planted bug: the first run of several panels loses its leftmost panel."""
    first = next((r for r, count in enumerate(counts) if count > 1), None)
    if first is not None:
        lefts, counts = list(lefts), list(counts)
        lefts[first] += 2.0 * halves[first]
        counts[first] -= 1
    return runs_log_integrals(f, bases, lefts, halves, counts)


def test_the_comparison_catches_a_dropped_panel(monkeypatch) -> None:
    assert compare_all() == (0.0, 0)
    monkeypatch.setattr(noisy_max_integral, "runs_log_integrals", drop_one_panel)
    worst, differing = compare_all()
    assert worst > 1e-13 and differing > 100, (worst, differing)
