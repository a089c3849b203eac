"""``duff-plot decomposition`` and ``figure1 --truth population`` on a hand-made summary."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from experiments.reports.decomposition import decompose
from experiments.reports.figure1.data import scored_against
from experiments.reports.selection import ReportError


def summary() -> pd.DataFrame:
    rows = [
        # dataset, n, replicate, mechanism, ε, privacy, population, sampling
        ("normal", 100, 0, "duff", 1.0, 0.01, 0.05, 0.04),
        ("normal", 100, 1, "duff", 1.0, 0.03, 0.09, 0.08),
        ("normal", 100, 0, "smooth", 1.0, 0.2, 0.22, 0.04),
        ("normal", 100, 1, "smooth", 1.0, 0.4, 0.4, 0.08),
    ]
    columns = ["dataset", "n", "replicate", "mechanism", "epsilon", "mean_abs_error"]
    frame = pd.DataFrame([r[:6] for r in rows], columns=columns).assign(
        population_abs_error=[r[6] for r in rows],
        sample_abs_error=[r[7] for r in rows],
        statistic="median",
        status="ok",
        answer_rate=1.0,
    )
    return frame


def test_decompose_by_hand() -> None:
    table = decompose(summary()).set_index("mechanism")
    assert table.loc["duff", "sampling"] == pytest.approx(0.06)
    assert table.loc["duff", "privacy"] == pytest.approx(0.02)
    assert table.loc["duff", "ratio"] == pytest.approx(0.02 / 0.06)
    assert table.loc["smooth", "population"] == pytest.approx(0.31)
    assert (table["replicates"] == 2).all()


def test_decompose_refuses_rows_without_a_law() -> None:
    with pytest.raises(ReportError, match="population error"):
        decompose(summary().assign(sample_abs_error=math.nan))


def test_truth_population_swaps_the_error_and_refuses_real_data() -> None:
    ok = summary()
    assert scored_against(ok, "sample") is ok
    assert list(scored_against(ok, "population")["mean_abs_error"]) == [0.05, 0.09, 0.22, 0.4]
    with pytest.raises(ReportError, match="no population error"):
        scored_against(ok.assign(population_abs_error=math.nan), "population")
