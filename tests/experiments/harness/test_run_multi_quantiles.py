"""The sweep of m quantiles at once: the statistic, the harness's checks of rows of estimates,
its metrics against a hand computation, misbehaving plug-ins, and the results files."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from harness_mechanisms import PROJECT_ROOT
from results_helpers import write_results

from experiments.base.seeding import noise_rng
from experiments.harness import results_reader
from experiments.harness.config import ConfigError
from experiments.harness.plan import build_plan
from experiments.harness.results import SUMMARY_COLUMNS
from experiments.harness.vector_metrics import VECTOR_METRICS, vector_metrics, vector_problem
from experiments.run import run
from mechanisms import Guarantee, Neighbouring
from mechanisms.multi.base import MultiQuantileMechanism
from mechanisms.multi.release import QuantilesRelease
from mechanisms.statistics import Quantiles, points_between

REFERENCE = PROJECT_ROOT / "results" / "reference"
STATISTIC = {
    "name": "mq",
    "_target_": "mechanisms.statistics.Quantiles",
    "options": {"m": [1, 3]},
}
CONFIG = {
    "seed": 5,
    "n": 31,
    "replicates": 2,
    "trials": 6,
    "epsilons": [1.0],
    "delta": 1e-6,
    "datasets": ["normal", "uniform"],
    "statistics": [STATISTIC],
    "mechanisms": ["joint_exp", "ind_exp", "tree_quantiles_gaussian"],
}


# -------------------------------------------------------------------- the statistic


def test_the_statistic_of_m_quantiles() -> None:
    evenly = Quantiles.from_config(m=[1, 3])
    assert [s.id for s in evenly] == ["quantiles(m=1)", "quantiles(m=3)"]
    assert evenly[1].alphas == (0.25, 0.5, 0.75)
    assert evenly[1].mechanism_options() == {"alphas": (0.25, 0.5, 0.75)}
    (listed,) = Quantiles.from_config(alphas=[0.1, 0.3])
    assert listed.id == "quantiles(0.1,0.3)"
    (many,) = Quantiles.from_config(alphas=[k / 100 for k in range(1, 21)])
    assert re.fullmatch(r"quantiles\(m=20,[0-9a-f]{8}\)", many.id)
    x = np.arange(1.0, 11.0)
    assert listed.values(x, 0.0, 20.0).tolist() == [1.0, 3.0]  # x_(ceil(α n)), α n exact
    assert listed.values(np.empty(0), -1.0, 1.0).tolist() == [-1.0, -1.0]
    with pytest.raises(TypeError, match="vector"):
        listed.value(x, 0.0, 20.0)
    for options in ({}, {"m": 2, "alphas": [0.5]}, {"m": 2, "beta": 1}):
        with pytest.raises(ValueError, match="quantiles"):
            Quantiles.from_config(**options)
    with pytest.raises(ValueError, match="increasing"):
        Quantiles((0.5, 0.2))


# ---------------------------------------------------------------------- the metrics


def test_metrics_by_hand() -> None:
    x = np.arange(10.0)  # T(S) for levels (0.25, 0.75): x_(3) = 2, x_(8) = 7
    truth = np.array([2.0, 7.0])
    rows = np.array([[2.0, 7.0], [0.5, 9.5], [4.0, 4.0]])
    ranks = points_between(x, truth, rows)
    assert ranks.tolist() == [[0, 0], [1, 2], [1, 2]]  # {1}, {8, 9}; {3}, {5, 6}
    measured = vector_metrics(rows, truth, ranks)
    absolute = [0.0, 0.0, 1.5, 2.5, 2.0, 3.0]
    assert measured["total_rank_error"] == (0 + 3 + 3) / 3
    assert measured["max_rank_error"] == (0 + 2 + 2) / 3
    assert measured["mean_rank_error"] == 6 / 6
    assert measured["mean_abs_error"] == pytest.approx(np.mean(absolute), rel=1e-15)
    assert measured["sd_abs_error"] == pytest.approx(np.std(absolute, ddof=1), rel=1e-14)
    assert measured["mean_error"] == pytest.approx((0 + 0 - 1.5 + 2.5 + 2 - 3) / 6, rel=1e-15)
    assert measured["rmse"] == pytest.approx(math.sqrt(np.mean(np.square(absolute))), rel=1e-15)
    assert measured["answer_rate"] == 1.0


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        (np.zeros(3), r"shape \(3,\), expected \(3, 2\)"),
        (np.zeros((3, 3)), r"shape \(3, 3\)"),
        (np.zeros((3, 2), dtype=int), "dtype"),
        (np.array([[0.0, 1.0], [0.6, 0.5], [0.0, 0.0]]), "1 of 3 rows decrease"),
        (np.array([[0.0, 1.0], [0.0, np.nan], [0.0, 0.0]]), "NaN or infinite"),
        (np.array([[-0.5, 1.0], [0.0, 0.5], [0.0, 1.5]]), r"2 of 3 rows .* outside \[0, 1\]"),
        ([[0.0, 1.0]] * 3, "not a numpy array"),
    ],
)
def test_vector_problems_are_named(rows, problem) -> None:
    assert vector_problem(np.array([[0.0, 1.0]] * 3), 3, 2, 0.0, 1.0) is None
    found = vector_problem(rows, 3, 2, 0.0, 1.0)
    assert found is not None and re.search(problem, found), found


# ----------------------------------------------------------------------- sweeps


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> results_reader.Results:
    return results_reader.load(run(CONFIG, results_dir=tmp_path_factory.mktemp("mq"), n_jobs=1))


def test_a_multi_quantiles_sweep(sweep: results_reader.Results) -> None:
    summary = sweep.summary
    assert len(summary) == 2 * 2 * 2 * 3 and (summary["status"] == "ok").all()
    assert set(summary["statistic"]) == {"quantiles(m=1)", "quantiles(m=3)"}
    assert summary["true_value"].isna().all()  # a vector: not in summary.csv
    assert (summary["total_rank_error"] >= summary["max_rank_error"]).all()
    m = summary["statistic"].map({"quantiles(m=1)": 1, "quantiles(m=3)": 3})
    np.testing.assert_allclose(summary["mean_rank_error"] * m, summary["total_rank_error"])
    assert summary[["coverage", "hit_rate", "mean_count_gap"]].isna().all().all()
    assert summary["private"].all() and summary["guarantee_met"].all()
    assert (summary["seconds"] > 0).all()


def test_the_sweep_metrics_are_those_of_its_draws(sweep: results_reader.Results) -> None:
    """One cell recomputed by hand: the same data, the same noise stream, the metrics by loops."""
    plan = build_plan(CONFIG)
    unit = next(
        u
        for u in plan.units()
        if u.dataset.id == "uniform"
        and u.replicate == 1
        and u.mechanism.label == "joint_exp"
        and u.statistic.id == "quantiles(m=3)"
    )
    data = unit.dataset.data(CONFIG["seed"], 1)
    rng = noise_rng(CONFIG["seed"], "uniform", 1, "joint_exp", 1.0, "quantiles(m=3)")
    mechanism = unit.mechanism.configure(1.0, None, unit.statistic)
    rows = mechanism.release(data, (unit.dataset.lower, unit.dataset.upper)).sample(6, rng)
    x = np.sort(np.clip(data, unit.dataset.lower, unit.dataset.upper))
    truth = [x[math.ceil(a * x.size) - 1] for a in (0.25, 0.5, 0.75)]
    ranks = [
        [sum(1 for v in x if min(t, e) < v < max(t, e)) for t, e in zip(truth, row, strict=True)]
        for row in rows
    ]
    summary = sweep.summary
    cell = summary[
        (summary["dataset"] == "uniform")
        & (summary["replicate"] == 1)
        & (summary["mechanism"] == "joint_exp")
        & (summary["statistic"] == "quantiles(m=3)")
    ].iloc[0]
    assert cell["total_rank_error"] == pytest.approx(np.mean([sum(r) for r in ranks]), rel=1e-12)
    assert cell["max_rank_error"] == pytest.approx(np.mean([max(r) for r in ranks]), rel=1e-12)
    errors = [abs(e - t) for row in rows for t, e in zip(truth, row, strict=True)]
    assert cell["mean_abs_error"] == pytest.approx(np.mean(errors), rel=1e-12)


class FaultyQuantiles(MultiQuantileMechanism):
    """An m-quantiles plug-in whose rows misbehave as ``fault`` says."""

    name = "test_faulty_quantiles"

    def __init__(self, *, fault: str = "shape", **options) -> None:
        super().__init__(**options)
        self.fault = fault

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="a test")

    def _release(self, sorted_x, lower, upper) -> QuantilesRelease:
        return FaultyRows(sorted_x, lower, upper, self.alphas, self.fault)


class FaultyRows(QuantilesRelease):
    def __init__(self, sorted_x, lower, upper, alphas, fault) -> None:
        self._set_common(sorted_x, lower, upper, alphas)
        self.fault = fault

    def sample(self, size, rng):
        rows = np.tile(self.true_value, (size, 1))
        if self.fault == "wrong_truth":
            self.true_value = self.true_value + 1.0
        return {
            "shape": rows[:, :1],
            "decreasing": rows[:, ::-1],
            "outside": rows + (self.upper - self.lower),
            "nan": rows * np.nan,
        }.get(self.fault, rows)


@pytest.mark.parametrize(
    ("fault", "status"),
    [
        ("shape", "expected (4, 3) rows of quantiles"),
        ("decreasing", "rows decrease"),
        ("outside", "outside [-10, 10]"),
        ("nan", "NaN or infinite"),
        ("wrong_truth", "differs from the harness's T(S)"),
    ],
)
def test_misbehaving_quantiles_plugins_are_results(tmp_path, fault, status) -> None:
    faulty = {
        "label": fault,
        "_target_": f"{__name__}.FaultyQuantiles",
        "options": {"fault": fault},
    }
    config = {
        **CONFIG,
        "trials": 4,
        "replicates": 1,
        "datasets": ["normal"],
        "statistics": [{**STATISTIC, "options": {"m": 3}}],
        "mechanisms": ["ind_exp", faulty],
    }
    summary = results_reader.load(run(config, results_dir=tmp_path / fault, n_jobs=1)).summary
    bad = summary[summary["mechanism"] == fault]
    assert bad["status"].str.contains(status, regex=False).all(), bad["status"].iloc[0]
    assert bad[["total_rank_error", "mean_abs_error"]].isna().all().all()
    assert (summary.loc[summary["mechanism"] == "ind_exp", "status"] == "ok").all()


def test_a_correct_plugin_passes(tmp_path) -> None:
    """The control of the planted faults above: exact rows are ok, with no error at all."""
    exact = {"label": "exact", "_target_": f"{__name__}.FaultyQuantiles", "options": {"fault": ""}}
    config = {**CONFIG, "replicates": 1, "datasets": ["normal"], "mechanisms": [exact]}
    summary = results_reader.load(run(config, results_dir=tmp_path / "exact", n_jobs=1)).summary
    assert (summary["status"] == "ok").all()
    assert (summary[["total_rank_error", "max_rank_error", "mean_abs_error"]] == 0).all().all()


def test_keep_estimates_is_refused_for_vectors() -> None:
    with pytest.raises(ConfigError, match=r"keep_estimates: .* quantiles"):
        build_plan({**CONFIG, "keep_estimates": True})


# ------------------------------------------------------------------- results files


def test_format_5_files_without_the_vector_columns_still_read(tmp_path) -> None:
    """Committed references predate the vector columns; a file of the layout without them
    reads with NaN there, and a file of the current layout with them."""
    for name in ("mode", "mean", "ptr", "peers", "figure2"):
        assert (
            results_reader.load(REFERENCE / name).summary[list(VECTOR_METRICS)].isna().all().all()
        )
    row = {"dataset": "normal", "replicate": 0, "mechanism": "duff", "registry_name": "duff"}
    row |= {"status": "ok", "trials": 1, "upper": 1.0}
    directory = write_results(tmp_path / "old", pd.DataFrame([{**row, "epsilon": 1.0}]))
    summary = pd.read_csv(directory / "summary.csv").drop(columns=list(VECTOR_METRICS))
    summary.to_csv(directory / "summary.csv", index=False)
    read = results_reader.load(directory).summary
    assert list(read.columns) == list(SUMMARY_COLUMNS)
    assert read[list(VECTOR_METRICS)].isna().all().all()


def test_the_reader_checks_vector_rows(tmp_path) -> None:
    row = {
        "dataset": "normal",
        "replicate": 0,
        "mechanism": "joint_exp",
        "registry_name": "joint_exp",
        "statistic": "quantiles(m=3)",
        "epsilon": 1.0,
        "true_value": math.nan,
        "status": "ok",
        "trials": 1,
        "upper": 1.0,
    }
    assert results_reader.load(write_results(tmp_path / "good", pd.DataFrame([row])))
    broken = write_results(tmp_path / "bad", pd.DataFrame([{**row, "max_rank_error": -1.0}]))
    with pytest.raises(results_reader.ResultsError, match="max_rank_error"):
        results_reader.load(broken)
    median = {**row, "statistic": "median", "mechanism": "duff", "registry_name": "duff"}
    with pytest.raises(results_reader.ResultsError, match="true_value"):
        results_reader.load(write_results(tmp_path / "median", pd.DataFrame([median])))
