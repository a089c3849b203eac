"""The errors against the population (population_value, population_abs_error,
sample_abs_error): a tiny sweep against a hand computation, and older summaries still read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import LAPLACE, tiny_overrides

from experiments.harness import results_reader
from experiments.harness.metrics import POPULATION_METRICS, population_metrics
from experiments.harness.plan import build_plan
from experiments.run import run
from mechanisms.core.data import lower_median, sorted_bounded

REFERENCES = Path(__file__).resolve().parents[3] / "results" / "reference"


def test_population_metrics_by_hand() -> None:
    metrics = population_metrics(np.array([0.1, -0.3, 0.5]), 0.2, 0.0)
    assert metrics == {
        "population_value": 0.0,
        "population_abs_error": pytest.approx(0.3),
        "sample_abs_error": 0.2,
    }
    assert all(np.isnan(v) for v in population_metrics(np.array([1.0]), 0.2, None).values())
    assert np.isnan(population_metrics(np.array([]), 0.2, 0.0)["population_abs_error"])


def test_a_tiny_sweep_against_a_hand_computation(compose_config, tmp_path) -> None:
    cfg = compose_config(tiny_overrides(keep_estimates="true"), [LAPLACE])
    results = results_reader.load(run(cfg, results_dir=tmp_path), estimates=True)
    assert results.estimates is not None
    plan = build_plan(results.manifest["config"])
    datasets = {d.id: d for d in plan.datasets}
    theta = {"normal": 0.0, "beta": 0.5}
    summary = results.summary
    assert (summary["status"] == "ok").all()
    for i, row in summary.iterrows():
        dataset = datasets[row["dataset"]]
        data = sorted_bounded(
            dataset.data(plan.settings.seed, int(row["replicate"])),
            dataset.lower,
            dataset.upper,
            "clip",
        )
        truth = lower_median(data, dataset.lower)
        estimates = results.estimates["estimates"][i]
        assert row["population_value"] == pytest.approx(theta[row["dataset"]], abs=1e-12)
        assert row["sample_abs_error"] == pytest.approx(abs(truth - theta[row["dataset"]]))
        assert row["population_abs_error"] == pytest.approx(
            np.mean(np.abs(estimates - theta[row["dataset"]]))
        )


@pytest.mark.parametrize("name", ["mode"])
def test_reference_summaries_without_the_columns_still_load(name: str) -> None:
    """Committed format-5 summaries written before the population columns read, with them NaN
    (the mode reference's; the mean's was rerun with them when the tuning moved, issue 31)."""
    results = results_reader.load(REFERENCES / name)
    assert len(results.summary)
    for column in POPULATION_METRICS:
        assert results.summary[column].isna().all()
