"""The batched noisy-max integral gives the floats of the run-by-run march it replaced.

:mod:`mechanisms.mode.noisy_max_integral` decides its panels one run at a time but
integrates them in batches, keeping the runs decided past a stop when the stop changed
none of their decisions.  Its claim is that the panels, the integrals and their sums
are those of the former march, computed in the same order: the same floats.  The
former code (``tests/test_noisy_max_speed_exactness.py`` of commit 438988b) ran once on
every case below; ``tests/data/noisy_max_integral.npz`` (``tests/data/generate_expected.py``)
records its inputs (the noise scale from ε, the stability histogram's threshold), its log
probabilities, the refusal probability and a digest (:mod:`recorded_values`) of its samples
(same rng, same draws), and digests of its noise laws' floats.  They are compared bit for
bit and by the task's rule (probabilities equal to 1e-13 relative), on gate-like data
(n = 101 points rounded to the integers of [-10, 10]), Zipf data over 10¹² values,
ties, two values, one value, n = 1, 2, 3, sorted and reversed data, data all outside
the bounds, ε from 1e-6 to 1e6, for Laplace noise (report noisy max, the stability
histogram's thresholds) and exponential noise (permute-and-flip, both scales).  A
planted bug, one Gauss-Legendre panel dropped, must fail the comparison.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pytest
from recorded_values import digest, recorded

from mechanisms.mode import noisy_max_integral
from mechanisms.mode.noisy_max_integrand import runs_log_integrals
from mechanisms.mode.permute_and_flip import PermuteAndFlip
from mechanisms.mode.report_noisy_max import ReportNoisyMax
from mechanisms.mode.stability_histogram import StabilityHistogram
from mechanisms.noise.noisy_max import Noise

RECORD = "noisy_max_integral"


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
SAMPLE_SIZE, SAMPLED = 3000, slice(None, None, 3)
"""Samples of SAMPLE_SIZE draws are recorded for every third case."""
NOISE_SCALES = (1e-300, 1e-6, 0.5, 2.0, 1e6, 1e300)
NOISE_KINDS = ("laplace", "exponential")
NOISE_OUTPUTS = ("log_cdf", "log_pdf", "hazard", "log_pdf_slope")


@dataclass(frozen=True)
class Case:
    """A release and the former engine's inputs for it: the levels' count offsets from the
    top and sizes (from the release), the noise (kind by mechanism, scale recorded) and the
    threshold (recorded; None but for the stability histogram)."""

    name: str
    release: object
    kind: str
    offsets: np.ndarray
    sizes: np.ndarray


def make_cases() -> list[Case]:
    out = []
    for label, data, bounds in datasets():
        for epsilon in EPSILONS:
            for name, cls, options in MECHANISMS:
                release = cls(epsilon=epsilon, **options).release(data, bounds)
                levels = release.levels
                top = float(levels.level_counts[0]) if levels.level_counts.size else 0.0
                kind = "exponential" if cls is PermuteAndFlip else "laplace"
                offsets = levels.level_counts - top
                sizes = levels.level_sizes.astype(np.float64)
                case_name = f"{label}, eps={epsilon:g}, {name}"
                out.append(Case(case_name, release, kind, offsets, sizes))
    return out


CASES = make_cases()


def noise(index: int) -> Noise:
    return Noise(CASES[index].kind, float(recorded(RECORD)["scale"][index]))


def threshold(index: int) -> float | None:
    value = float(recorded(RECORD)["threshold"][index])
    return None if math.isnan(value) else value


@functools.cache
def reference(index: int) -> np.ndarray:
    """The former engine's log probabilities for ``CASES[index]`` (recorded)."""
    record = recorded(RECORD)
    ends = np.cumsum(record["lengths"])
    return record["log_probabilities"][ends[index] - record["lengths"][index] : ends[index]]


def current(index: int) -> np.ndarray:
    """The engine's log probabilities, computed afresh (the release caches its own)."""
    case = CASES[index]
    return noisy_max_integral.level_log_probabilities(
        case.offsets, case.sizes, noise(index), threshold(index)
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
    for index in range(len(CASES)):
        new, old = current(index), reference(index)
        worst = max(worst, relative_difference(new, old))
        differing += not np.array_equal(new, old)
    return worst, differing


# ------------------------------------------------------------------ the tests

INDICES = range(len(CASES))
IDS = [case.name for case in CASES]


def test_the_record_holds_exactly_these_cases() -> None:
    record = recorded(RECORD)
    for key in ("lengths", "scale", "threshold", "refusal"):
        assert record[key].shape == (len(CASES),), key
    assert record["log_probabilities"].shape == (int(record["lengths"].sum()),)
    assert record["sample_digests"].shape == (len(INDICES[SAMPLED]),)
    shape = (len(NOISE_KINDS), len(NOISE_SCALES), len(NOISE_OUTPUTS))
    assert record["noise_digests"].shape == shape


@pytest.mark.parametrize("index", INDICES, ids=IDS)
def test_releases_give_the_former_probabilities_bit_for_bit(index: int) -> None:
    case, old = CASES[index], reference(index)
    new = case.release.level_log_probabilities
    assert relative_difference(new, old) <= 1e-13
    np.testing.assert_array_equal(new, old)
    assert case.release.refusal_probability == recorded(RECORD)["refusal"][index]


@pytest.mark.parametrize(
    ("index", "position"),
    [(index, position) for position, index in enumerate(INDICES[SAMPLED])],
    ids=IDS[SAMPLED],
)
def test_samples_are_the_former_draws(index: int, position: int) -> None:
    sample = CASES[index].release.sample(SAMPLE_SIZE, np.random.default_rng(5))
    assert digest(sample, canonical=True) == recorded(RECORD)["sample_digests"][position]


def noise_law_outputs(kind: str, scale: float, x: np.ndarray) -> list[np.ndarray]:
    """The floats of the noise law that the former engine computed (:data:`NOISE_OUTPUTS`)."""
    law = Noise(kind, scale)
    with np.errstate(all="ignore"):
        hazard, slope = law.slope_terms(x)
        return [law.log_cdf(x), law.log_pdf(x), hazard, np.broadcast_to(slope, x.shape)]


def noise_law_points() -> np.ndarray:
    rng = np.random.default_rng(2)
    return np.concatenate(
        (
            rng.normal(0, 1, 2000) * 10.0 ** rng.uniform(-300, 300, 2000),
            [0.0, -0.0, 5e-324, -5e-324, 1e-300, 700.0, -700.0, 1e308, -1e308],
        )
    )


def test_the_noise_laws_give_the_former_floats() -> None:
    x, expected = noise_law_points(), recorded(RECORD)["noise_digests"]
    for i, kind in enumerate(NOISE_KINDS):
        for j, scale in enumerate(NOISE_SCALES):
            found = noise_law_outputs(kind, scale, x)
            for k, (what, values) in enumerate(zip(NOISE_OUTPUTS, found, strict=True)):
                assert digest(values, canonical=True) == expected[i, j, k], (kind, scale, what)


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
