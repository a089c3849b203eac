"""``duff-plot quantiles``: the table names the mechanism with the lowest pooled rank error."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.harness.results_reader import load
from experiments.reports import cli
from experiments.run import run

QUANTILES = {
    "name": "q",
    "_target_": "mechanisms.statistics.Quantile",
    "options": {"alpha": [0.1, 0.9]},
}
CONFIG = {
    "seed": 3,
    "n": 41,
    "replicates": 2,
    "trials": 20,
    "epsilons": [0.5, 2.0],
    "datasets": ["normal", "uniform"],
    "statistics": [QUANTILES],
    "mechanisms": [
        "duff",
        "quantile_em",
        "smooth_cauchy",
        "smooth_laplace_oracle",
    ],
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    results = run(CONFIG, results_dir=tmp_path_factory.mktemp("quantiles"), n_jobs=1)
    assert cli.main(["quantiles", str(results)]) == 0
    return results, (results / "quantiles_table.md").read_text(encoding="utf-8")


def test_the_winner_is_the_lowest_pooled_rank_error_of_a_private_mechanism(report) -> None:
    results, text = report
    summary = load(results).summary
    pooled = (
        summary.groupby(["epsilon", "statistic", "mechanism", "dataset"])["mean_rank_error"]
        .mean()
        .groupby(["epsilon", "statistic", "mechanism"])
        .mean()
    )
    names = {"duff": "Duff (EM)", "quantile_em": "Quantile EM"}
    names["smooth_cauchy"] = "SmoothSens_ε (Cauchy)"
    for (epsilon, statistic), errors in pooled.groupby(["epsilon", "statistic"]):
        private = errors.droplevel([0, 1]).drop("smooth_laplace_oracle")  # oracle: not private
        best = names[private.idxmin()]
        alpha = statistic.removeprefix("quantile(").removesuffix(")")
        row = f"| {epsilon:g} | {alpha} | {best} | "
        assert row in text, (row, text)
    assert (results / "quantiles.png").stat().st_size > 0


def test_a_run_without_quantiles_is_refused(tmp_path: Path, capsys) -> None:
    median = {**CONFIG, "statistics": ["median"], "mechanisms": ["duff"], "epsilons": [1.0]}
    results = run(median, results_dir=tmp_path / "median", n_jobs=1)
    assert cli.main(["quantiles", str(results)]) == 2
    assert "estimates no quantile statistic" in capsys.readouterr().err
