"""The mode and the mean as statistics of the sweep, ⊥ in the metrics, and their datasets."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from experiments.data.vertebral import VertebralColumn
from experiments.data.zipf import ZipfDataset
from experiments.harness.metrics import cdf_problem, error_metrics, estimates_problem
from mechanisms.core.domain import check_domain, count_of, domain_counts, mode_value
from mechanisms.statistics import Mean, Median, Mode


def integer_datasets() -> list[list[float]]:
    """Tie-heavy data on [0, 6], some off the integers (rounded half to even)."""
    rng = np.random.default_rng(5)
    sets: list[list[float]] = [[], [3.0], [2.5, 3.5], [0.0, 6.0, 6.0]]
    for n in range(1, 30):
        sets.append(sorted(rng.integers(0, 7, size=n).astype(float).tolist()))
        sets.append(sorted(np.round(rng.uniform(0, 6, size=n), 1).tolist()))
    return sets


def brute_counts(values: list[float]) -> Counter:
    return Counter(float(np.rint(v)) for v in values)


def test_mode_is_the_smallest_most_frequent_rounded_value() -> None:
    for values in integer_datasets():
        counts = brute_counts(values)
        top = max(counts.values(), default=0)
        expected = min((y for y, c in counts.items() if c == top), default=0.0)
        assert Mode().value(np.asarray(values), 0.0, 6.0) == expected
        assert mode_value(np.asarray(values), 0.0) == expected


def test_counts_and_count_gaps_by_brute_force() -> None:
    grid = np.arange(0.0, 7.0)
    for values in integer_datasets():
        counts = brute_counts(values)
        top = max(counts.values(), default=0)
        x = np.asarray(values)
        assert count_of(x, grid).tolist() == [counts.get(y, 0) for y in grid]
        assert Mode().count_gaps(x, grid).tolist() == [top - counts.get(y, 0) for y in grid]
        distinct, how_many = domain_counts(x)
        assert dict(zip(distinct.tolist(), how_many.tolist(), strict=True)) == dict(counts)


def test_every_value_tied_at_the_top_is_a_hit() -> None:
    x = np.array([1.0, 1.0, 4.0, 4.0, 5.0])
    metrics = error_metrics(
        np.array([1.0, 4.0, 5.0, 2.0]),
        1.0,
        None,
        Mode().count_gaps(x, np.array([1.0, 4.0, 5.0, 2.0])),
    )
    assert metrics["hit_rate"] == 0.5
    assert metrics["mean_count_gap"] == (0 + 0 + 1 + 2) / 4


def test_mean_is_within_an_ulp_of_the_exact_mean_and_has_no_rank_error() -> None:
    for values in integer_datasets():
        x = np.asarray(values)
        exact = float(sum(map(Fraction, values)) / len(values)) if values else 0.0
        mean = Mean().value(x, 0.0, 6.0)
        assert mean == Mean().value(x[::-1].copy(), 0.0, 6.0)  # no dependence on the order
        assert abs(mean - exact) <= math.ulp(exact)  # fsum's exact sum, one division
        assert Mean().rank_errors(x, exact, np.array([1.0])) is None
        assert Mean().count_gaps(x, np.array([1.0])) is None
    assert Median().rank_errors(np.array([0.0, 1.0, 2.0]), 0.0, np.array([2.0])).tolist() == [1]


@pytest.mark.parametrize(
    ("bounds", "message"),
    [((0.5, 3), "must be integers"), ((0, 2.0**54), "within ±2"), ((3, 3), "a < b")],
)
def test_a_mode_domain_needs_integer_bounds(bounds: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_domain(bounds)


# ---------------------------------------------------------------------- ⊥ in the metrics


def test_metrics_are_over_answered_trials_with_the_answer_rate() -> None:
    metrics = error_metrics(np.array([1.0, 3.0]), 2.0, trials=4)
    assert metrics["answer_rate"] == 0.5 and metrics["mean_abs_error"] == 1.0
    nothing = error_metrics(np.array([]), 2.0, trials=4)
    assert nothing["answer_rate"] == 0.0 and math.isnan(nothing["mean_abs_error"])
    assert error_metrics(np.array([2.0]), 2.0)["answer_rate"] == 1.0


def test_nan_is_a_problem_unless_the_mechanism_may_refuse() -> None:
    sample = np.array([0.5, np.nan, 0.2])
    assert "1 of 3 estimates are NaN" in str(estimates_problem(sample, 3, 0.0, 1.0))
    assert estimates_problem(sample, 3, 0.0, 1.0, may_refuse=True) is None
    infinite = np.array([0.5, np.inf, 0.2])
    assert estimates_problem(infinite, 3, 0.0, 1.0, may_refuse=True) is not None


class Refusing:
    """A release answering ⊥ with probability ``refusal`` and uniform on [0, 1] otherwise."""

    def __init__(self, refusal: float, claimed: object) -> None:
        self.refusal, self.refusal_probability = refusal, claimed

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return (1 - self.refusal) * np.clip(x, 0.0, 1.0)


def test_the_cdf_at_the_upper_bound_is_one_minus_the_refusal_probability() -> None:
    assert cdf_problem(Refusing(0.25, 0.25), 0.0, 1.0) is None
    assert "not 1 - refusal_probability" in str(cdf_problem(Refusing(0.25, 0.0), 0.0, 1.0))
    assert "not a number in [0, 1]" in str(cdf_problem(Refusing(0.25, 1.5), 0.0, 1.0))


# ---------------------------------------------------------------------------- datasets


def test_zipf_draws_follow_the_truncated_law() -> None:
    (dataset,) = ZipfDataset.from_config(
        name="zipf", n=200_000, replicates=1, exponent=1.5, support=10
    )
    x = dataset.data(2020, 0)
    assert dataset.bounds == (1.0, 10.0) and x.min() >= 1 and x.max() <= 10
    law = np.arange(1, 11.0) ** -1.5
    law /= law.sum()
    observed = np.bincount(x.astype(int), minlength=11)[1:] / x.size
    assert np.abs(observed - law).max() < 5 * math.sqrt(law.max() / x.size)  # ~5 SD
    assert np.array_equal(x, dataset.data(2020, 0))


@pytest.mark.parametrize(
    ("options", "message"), [({"support": 1}, "support"), ({"exponent": -1}, "exponent")]
)
def test_bad_zipf_options_are_named(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ZipfDataset.from_config(name="zipf", n=10, replicates=1, **options)


def test_rounded_vertebral_data_lie_on_their_integer_domain() -> None:
    datasets = VertebralColumn.from_config(name="v", rounded=True)
    plain = VertebralColumn.from_config(name="v")
    assert len(datasets) == 12
    for rounded, raw in zip(datasets, plain, strict=True):
        x = rounded.data(0, 0)
        assert np.array_equal(x, np.rint(raw.data(0, 0)))
        check_domain(rounded.bounds)
        assert rounded.lower <= x.min() and x.max() <= rounded.upper


def largest_mode(sorted_x: np.ndarray, lower: float) -> float:
    """A planted bug: the *largest* most frequent value."""
    values, counts = domain_counts(sorted_x)
    if values.size == 0:
        return float(lower)
    return float(values[counts == counts.max()][-1])


def unrounded_counts(sorted_x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A planted bug: counts of the raw values, not of the values rounded into Y."""
    return np.searchsorted(sorted_x, y, side="right") - np.searchsorted(sorted_x, y)


@pytest.mark.parametrize(
    ("mode", "counts", "caught"),
    [
        (mode_value, count_of, False),
        (largest_mode, count_of, True),
        (mode_value, unrounded_counts, True),
    ],
)
def test_the_brute_force_checks_catch_planted_bugs(mode, counts, caught) -> None:
    grid = np.arange(0.0, 7.0)
    mismatches = 0
    for values in integer_datasets():
        brute = brute_counts(values)
        top = max(brute.values(), default=0)
        expected = min((y for y, c in brute.items() if c == top), default=0.0)
        x = np.asarray(values)
        mismatches += mode(x, 0.0) != expected
        mismatches += counts(x, grid).tolist() != [brute.get(y, 0) for y in grid]
    assert (mismatches > 0) is caught
