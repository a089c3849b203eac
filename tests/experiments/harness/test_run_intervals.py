"""The sweep of confidence intervals: the harness's own coverage and width, the non-private
reference, refusals, misbehaving interval plug-ins, and a user's mechanism turned into an
interval by one config line."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from harness_mechanisms import PROJECT_ROOT, tiny_overrides

from experiments.data.datasets import DatasetError, SyntheticDataset, scipy_law
from experiments.harness import results_reader
from experiments.harness.config import ConfigError
from experiments.harness.interval_metrics import (
    coverage_p_value,
    coverage_target,
    hoeffding_margin,
    interval_metrics,
    interval_problem,
    nonprivate_width,
)
from experiments.harness.plan import build_plan
from experiments.run import run
from mechanisms import Guarantee, Neighbouring
from mechanisms.intervals import POPULATION_MEDIAN, SAMPLE_MEDIAN
from mechanisms.intervals.base import IntervalMechanism, IntervalRelease

REFERENCE = PROJECT_ROOT / "results" / "reference"
USER_INTERVAL = {
    "label": "user_interval",
    "name": "subsample_aggregate",
    "options": {"estimator": "harness_mechanisms.HarnessLaplace", "blocks": 6},
}
"""A user's plug-in mechanism (the Laplace median of harness_mechanisms) as an interval: one
config line."""


class FaultyIntervals(IntervalMechanism):
    """An interval plug-in whose release misbehaves as ``fault`` says."""

    name = "test_faulty_intervals"

    def __init__(self, *, epsilon=None, delta=None, alpha=0.05, fault="points") -> None:
        super().__init__(epsilon=epsilon, delta=delta, alpha=alpha)
        self.fault = fault

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, Neighbouring.REPLACE_ONE, source="a test")

    def nominal_coverage(self, n: int) -> float:
        return 1.0

    def _release(self, sorted_x, lower, upper) -> IntervalRelease:
        return FaultyRelease(sorted_x, lower, upper, self.fault)


class FaultyRelease(IntervalRelease):
    def __init__(self, sorted_x, lower, upper, fault) -> None:
        self._set_common(sorted_x, lower, upper, 1.0)
        self.fault = fault

    def sample(self, size, rng):
        whole = np.tile([self.lower, self.upper], (size, 1))
        if self.fault == "wrong_truth":
            self.true_value += 1.0
        return {
            "points": whole[:, 0],
            "reversed": whole[:, ::-1],
            "outside": whole - [1.0, 0.0],
            "nan": whole * [1.0, math.nan],
        }.get(self.fault, whole)


def faulty(fault: str) -> dict:
    return {
        "label": f"faulty_{fault}",
        "_target_": f"{__name__}.FaultyIntervals",
        "options": {"fault": fault},
    }


def interval_sweep(compose_config, mechanisms: list, **keys) -> object:
    overrides = tiny_overrides(
        statistics="[median_interval]", **{"keep_estimates": "false", **keys}
    )
    return compose_config(overrides, mechanisms)


# --------------------------------------------------------------------- the metrics


def test_metrics_of_intervals() -> None:
    intervals = np.array([[-1.0, 1.0], [0.5, 2.0], [0.0, 0.0]])
    measured = interval_metrics(intervals, 0.0, 2.0)
    assert measured == {"coverage": 2 / 3, "mean_width": 3.5 / 3, "nonprivate_width": 2.0}
    x = np.arange(1.0, 101.0)  # sign-test rank 40 at alpha = 0.05 for n = 100
    assert nonprivate_width(x, 0.05, 0.0, 200.0) == 61.0 - 40.0
    assert nonprivate_width(x[:5], 0.05, 0.0, 200.0) == 200.0  # no pair reaches 0.95
    assert coverage_target(SAMPLE_MEDIAN, 3.0, 2.0) == 2.0
    assert coverage_target(POPULATION_MEDIAN, 3.0, 2.0) == 3.0
    with pytest.raises(ValueError, match="no population median"):
        coverage_target(POPULATION_MEDIAN, None, 2.0)
    with pytest.raises(ValueError, match="target"):
        coverage_target("the mode", 3.0, 2.0)


@pytest.mark.parametrize(
    ("intervals", "problem"),
    [
        (np.zeros(3), r"shape \(3,\)"),
        (np.zeros((3, 2), dtype=int), "dtype"),
        (np.array([[0.0, 1.0], [1.0, 0.5], [0.0, 0.0]]), "1 of 3 intervals have lo > hi"),
        (np.array([[0.0, 1.0], [0.0, np.inf], [0.0, 0.0]]), "NaN or infinite"),
        (np.array([[-0.5, 1.0], [0.0, 0.5], [0.0, 0.0]]), r"reach outside \[0, 1\]"),
        ([[0.0, 1.0]] * 3, "not a numpy array"),
    ],
)
def test_interval_problems_are_named(intervals, problem) -> None:
    assert interval_problem(np.array([[0.0, 1.0]] * 3), 3, 0.0, 1.0) is None
    found = interval_problem(intervals, 3, 0.0, 1.0)
    assert found is not None and re.search(problem, found), found


def test_coverage_tests() -> None:
    assert coverage_p_value(950, 1000, 0.95) == pytest.approx(0.5, abs=0.03)
    assert coverage_p_value(900, 1000, 0.95) < 1e-9  # 7 standard errors below
    with pytest.raises(ValueError, match="covered"):
        coverage_p_value(11, 10, 0.95)
    margin = hoeffding_margin(200, 9, 0.01)
    assert margin == pytest.approx(math.sqrt(math.log(900) / 400))


# -------------------------------------------------------------------- datasets


def test_datasets_at_several_sizes_and_their_population_median() -> None:
    made = SyntheticDataset.from_config(
        name="normal", n=1, replicates=2, bounds=[-10, 10], params={"loc": 1.0}, sizes=[5, 7]
    )
    assert [(d.id, d.size, d.population_median()) for d in made] == [
        ("normal/n=5", 5, 1.0),
        ("normal/n=7", 7, 1.0),
    ]
    assert made[0].data(0, 0).size == 5
    far = SyntheticDataset.from_config(
        name="far", n=3, replicates=1, bounds=[-10, 10], params={"loc": 20.0}
    )
    assert far[0].population_median() == 10.0  # the median of the clipped law
    for sizes in ([], [0], "100", [1.5]):
        with pytest.raises(DatasetError, match="sizes"):
            SyntheticDataset.from_config(name="x", n=1, replicates=1, bounds=[0, 1], sizes=sizes)


LAWS = {
    "beta": {"a": 0.5, "b": 2.0},
    "exponential": {"scale": 2.0},
    "gamma": {"shape": 2.0, "scale": 3.0},
    "gumbel": {"loc": 1.0, "scale": 2.0},
    "laplace": {"loc": 1.0, "scale": 2.0},
    "logistic": {"loc": 1.0, "scale": 2.0},
    "lognormal": {"mean": 0.5, "sigma": 0.7},
    "normal": {"loc": 1.0, "scale": 2.0},
    "standard_cauchy": {},
    "standard_t": {"df": 3.0},
    "uniform": {"low": -1.0, "high": 3.0},
}


def median_misses(distribution: str, median: float) -> float:
    """|P(X <= median) − 1/2| on 200 000 numpy draws, in binomial standard errors."""
    draws = getattr(np.random.default_rng(7), distribution)(size=200_000, **LAWS[distribution])
    return abs(np.mean(draws <= median) - 0.5) / math.sqrt(0.25 / draws.size)


@pytest.mark.parametrize("distribution", sorted(LAWS))
def test_scipy_laws_are_numpys(distribution) -> None:
    median = float(scipy_law(distribution, LAWS[distribution]).median())
    assert median_misses(distribution, median) < 5.0
    # planted bug: a law off by a tenth of its interquartile range is caught
    law = scipy_law(distribution, LAWS[distribution])
    shifted = median + 0.1 * float(law.ppf(0.75) - law.ppf(0.25))
    assert median_misses(distribution, shifted) > 5.0


# ----------------------------------------------------------------------- sweeps


def test_an_interval_sweep(compose_config, tmp_path) -> None:
    mechanisms = ["nonprivate_order_statistic", "dp_order_statistic", USER_INTERVAL]
    cfg = interval_sweep(compose_config, mechanisms, n=40, plugins="[harness_mechanisms]")
    results = results_reader.load(run(cfg, results_dir=tmp_path / "run"))
    summary = results.summary
    assert (summary["status"] == "ok").all()
    assert set(summary["statistic"]) == {"median_interval(0.05)", "median_interval(0.1)"}
    assert summary["coverage"].between(0, 1).all() and (summary["answer_rate"] == 1).all()
    assert summary[["mean_abs_error", "rmse", "mean_rank_error", "hit_rate"]].isna().all().all()
    reference = summary[summary["mechanism"] == "nonprivate_order_statistic"]
    np.testing.assert_allclose(reference["mean_width"], reference["nonprivate_width"], rtol=1e-14)
    assert np.isinf(reference["guarantee_epsilon"]).all()
    assert not reference["private"].any() and not reference["guarantee_met"].any()
    per_epsilon = reference.groupby("epsilon")[["coverage", "mean_width"]].sum()
    assert (per_epsilon.nunique() == 1).all()  # the same intervals at every ε
    private = summary[summary["mechanism"] != "nonprivate_order_statistic"]
    assert private["private"].all() and private["guarantee_met"].all()
    user = summary[summary["mechanism"] == "user_interval"]
    assert (user["neighbouring"] == "add_remove").all()  # the estimator's guarantee
    widths = private.groupby("mechanism")["mean_width"].mean()
    assert (widths > reference["mean_width"].mean()).all()  # privacy costs width


@pytest.mark.parametrize(
    ("fault", "status"),
    [
        ("points", "expected (3, 2) intervals"),
        ("reversed", "lo > hi"),
        ("outside", "reach outside"),
        ("nan", "NaN or infinite"),
        ("wrong_truth", "differs from the harness's T(S)"),
    ],
)
def test_misbehaving_interval_plugins_are_results(compose_config, tmp_path, fault, status):
    cfg = interval_sweep(compose_config, [faulty(fault)], trials=3, replicates=1)
    summary = results_reader.load(run(cfg, results_dir=tmp_path / fault)).summary
    assert summary["status"].str.contains(status, regex=False).all(), summary["status"][0]
    assert summary["coverage"].isna().all()


def test_interval_sweeps_refuse_what_they_cannot_measure(compose_config) -> None:
    def refused(match: str, mechanisms: list, **keys) -> None:
        with pytest.raises(ConfigError, match=match):
            build_plan(interval_sweep(compose_config, mechanisms, **keys))

    refused("population median", ["drechsler_expmech"], datasets="[vertebral]")
    refused("keep_estimates", ["drechsler_expmech"], keep_estimates="true")
    refused("cannot estimate statistic 'median_interval", ["duff"])
    with pytest.raises(ConfigError, match="and the sweep has none"):
        build_plan(compose_config(tiny_overrides(), ["drechsler_expmech"]))
    with pytest.raises(ConfigError, match="cannot estimate statistic 'median'"):
        build_plan(compose_config(tiny_overrides(), [{"label": "d", "name": "drechsler_expmech"}]))


def test_results_of_format_4_read_without_interval_columns() -> None:
    results = results_reader.load(REFERENCE / "mode")
    assert results.numbers["format"] == 4
    assert results.summary[["coverage", "mean_width", "nonprivate_width"]].isna().all().all()
