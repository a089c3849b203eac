"""The cdf check of a release (experiments.harness.metrics.cdf_problem)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mechanisms
from experiments.harness.conf_files import CONF_DIR, load_entry
from experiments.harness.metrics import CDF_POINTS, cdf_problem
from experiments.harness.plan import mechanism_entry

LOWER, UPPER = -2.0, 3.0


class FakeRelease:
    """A release whose cdf is ``function`` (only ``cdf`` matters)."""

    def __init__(self, function) -> None:
        self.function, self.calls = function, []

    def cdf(self, x):
        self.calls.append(np.array(x, copy=True))
        return self.function(np.asarray(x, dtype=np.float64))


def uniform(x):
    return np.clip((x - LOWER) / (UPPER - LOWER), 0.0, 1.0)


def no_cdf(x):
    raise NotImplementedError("this library exposes no cdf")


def raises(x):
    raise ZeroDivisionError("cdf is broken")


def test_a_good_cdf_passes_and_is_asked_at_both_bounds() -> None:
    release = FakeRelease(uniform)
    assert cdf_problem(release, LOWER, UPPER) is None
    (points,) = release.calls
    assert points.shape == (CDF_POINTS,)
    assert points[0] == LOWER and points[-1] == UPPER
    assert (np.diff(points) > 0).all()


def test_rounding_error_is_tolerated() -> None:
    assert cdf_problem(FakeRelease(lambda x: uniform(x) * (1 - 1e-14)), LOWER, UPPER) is None
    assert cdf_problem(FakeRelease(lambda x: uniform(x) - 1e-15), LOWER, UPPER) is None


def test_a_cdf_that_cannot_be_computed_is_not_a_problem() -> None:
    assert cdf_problem(FakeRelease(no_cdf), LOWER, UPPER) is None


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (raises, "cdf raised ZeroDivisionError: cdf is broken"),
        (lambda x: "nope", "cdf returned str, not an array of numbers"),
        (lambda x: uniform(x)[:-1], "cdf returned shape (4,) for 5 points"),
        (lambda x: np.where(x > 0, np.nan, uniform(x)), "cdf is NaN or infinite at 5 points"),
        (lambda x: 2 * uniform(x), "cdf is outside [0, 1]"),
        (lambda x: uniform(x) - 0.1, "cdf is outside [0, 1]"),
        (lambda x: 1.0 - 0.5 * uniform(x), "cdf decreases"),
        (lambda x: 0.9 * uniform(x), "cdf at the upper bound 3 is 0.9, not 1"),
    ],
)
def test_broken_cdfs_are_described(function, message: str) -> None:
    problem = cdf_problem(FakeRelease(function), LOWER, UPPER)
    assert problem is not None and message in problem, problem


def test_an_unclipped_release_may_leave_mass_above_the_upper_bound() -> None:
    unclipped = FakeRelease(lambda x: 0.9 * uniform(x))
    assert cdf_problem(unclipped, LOWER, UPPER, clipped=False) is None
    assert "not 1" in cdf_problem(unclipped, LOWER, UPPER, clipped=True)


@pytest.mark.parametrize("path", sorted(CONF_DIR.glob("mechanism/*.yaml")), ids=lambda p: p.stem)
def test_every_configured_mechanism_has_a_sound_cdf(path) -> None:
    entry = load_entry(CONF_DIR, "mechanism", path.stem)  # `extends:` resolved
    if entry.get("_target_", "").startswith("mechanisms.peers."):
        pytest.importorskip(entry["_target_"].split(".")[2].split("_")[0])
    entry = mechanism_entry(entry)
    if "median_interval" in entry.cls.statistics:
        pytest.skip("an interval's output is a pair, checked by interval_problem instead")
    if "quantiles" in entry.cls.statistics:
        pytest.skip(
            "rows of m quantiles have no cdf: each level's marginal is checked by "
            "tests/mechanisms/test_conformance.py"
        )
    data = np.random.default_rng(5).normal(0.5, 1.0, 101)
    delta = 1e-3 if entry.takes_delta else None
    for epsilon in (0.1, 1.0):
        mechanism = mechanisms.make(entry.name, epsilon=epsilon, delta=delta, **entry.options)
        assert cdf_problem(mechanism.release(data, (LOWER, UPPER)), LOWER, UPPER) is None


def test_errors_near_the_float_range_give_finite_metrics_without_a_warning() -> None:
    # Before: rmse overflowed to inf with a RuntimeWarning (an unbounded release can land
    # anywhere on the float line), and the results reader refused the row.
    import warnings

    from experiments.harness.metrics import error_metrics

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = error_metrics(np.array([1e308, -1e308, 5.0]), 0.0)
    assert found["rmse"] == pytest.approx(math.sqrt(2 / 3) * 1e308, rel=1e-12)
    assert found["mean_abs_error"] == pytest.approx(1e308 / 3 * 2, rel=1e-12)
    normal = error_metrics(np.array([1.0, 2.0, 3.5]), 0.5)  # no rescaling: the same bits
    assert normal["rmse"] == math.sqrt((0.25 + 2.25 + 9.0) / 3)
