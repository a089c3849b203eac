"""``duff-plot multi_quantiles``: the table names the method with the lowest error per m, and
the figure and table are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.harness.results_reader import load
from experiments.reports import cli
from experiments.reports.multi_quantiles import cells
from experiments.run import run

CONFIG = {
    "seed": 3,
    "n": 101,
    "replicates": 2,
    "trials": 10,
    "epsilons": [1.0],
    "delta": 1e-6,
    "datasets": ["normal", "uniform"],
    "statistics": [
        {"name": "mq", "_target_": "mechanisms.statistics.Quantiles", "options": {"m": [1, 5]}}
    ],
    "mechanisms": ["joint_exp", "ind_exp", "tree_quantiles"],
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    results = run(CONFIG, results_dir=tmp_path_factory.mktemp("multi_quantiles"), n_jobs=1)
    assert cli.main(["multi_quantiles", str(results)]) == 0
    return results, (results / "multi_quantiles_table.md").read_text(encoding="utf-8")


def test_the_figure_and_table_are_written(report) -> None:
    results, text = report
    for name in ("multi_quantiles.png", "multi_quantiles.pdf"):
        assert (results / name).stat().st_size > 0
    assert text.startswith("# m quantiles at once")
    assert "0 rows failed" in text


def test_the_winner_is_the_lowest_error(report) -> None:
    results, text = report
    table = cells(load(results))
    summary = load(results).summary
    five = summary[summary["statistic"] == "quantiles(m=5)"]
    by_hand = (five.groupby(["dataset", "mechanism"])["total_rank_error"].mean() / 5).unstack()
    for dataset, row in by_hand.iterrows():
        best = row.idxmin()
        assert table.loc[(dataset, 5, best), "error"] == pytest.approx(row.min(), rel=1e-12)
        names = {"joint_exp": "JointExp", "ind_exp": "IndExp", "tree_quantiles": "Tree (Laplace)"}
        assert f"| {dataset} | 5 | {names[best]} |" in text


def test_a_run_without_the_statistic_is_refused(tmp_path, capsys) -> None:
    median = {**CONFIG, "statistics": ["median"], "mechanisms": ["duff"], "replicates": 1}
    results = run(median, results_dir=tmp_path / "median", n_jobs=1)
    assert cli.main(["multi_quantiles", str(results)]) == 2
    assert "no quantiles statistic" in capsys.readouterr().err
