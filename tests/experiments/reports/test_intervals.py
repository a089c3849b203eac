"""Tests of ``duff-plot intervals`` (:mod:`experiments.reports.intervals`): the cell formulas,
the below-nominal test, the README block, the figures and the refusal of unusable input."""

from __future__ import annotations

import json
import math
import re
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from results_helpers import write_results
from scipy import stats

from experiments.harness import results_reader
from experiments.harness.results import config_hash
from experiments.reports import cli
from experiments.reports.intervals import command as intervals
from experiments.reports.selection import ReportError
from experiments.run import run

BASELINE, DP, EXPMECH, SUBSAMPLE = (
    "nonprivate_order_statistic",
    "dp_order_statistic",
    "drechsler_expmech",
    "subsample_aggregate",
)
NAMES = {
    BASELINE: "Non-private order statistics",
    DP: "DP order statistics (union bound)",
    EXPMECH: "ExpMech (Drechsler et al.)",
    SUBSAMPLE: "Subsample and aggregate",
}


def grid(
    mechanisms: list[str],
    replicates: int,
    *,
    datasets: tuple[str, ...] = ("normal",),
    subsets: tuple[str, ...] = ("n=100",),
    alphas: tuple[float, ...] = (0.05,),
    epsilons: tuple[float, ...] = (0.5, 1.0),
    trials: int = 1,
) -> pd.DataFrame:
    """Interval rows for the whole plan: every interval covers, every width is 1."""
    keys = product(datasets, subsets, range(replicates), alphas, mechanisms, epsilons)
    frame = pd.DataFrame(
        list(keys), columns=["dataset", "subset", "replicate", "alpha", "mechanism", "epsilon"]
    )
    baseline = frame["mechanism"] == BASELINE
    return frame.assign(
        statistic=[f"median_interval({a!r})" for a in frame.pop("alpha")],
        registry_name=frame["mechanism"],
        n=100,
        upper=1.0,
        trials=trials,
        coverage=1.0,
        mean_width=1.0,
        nonprivate_width=1.0,
        guarantee_epsilon=np.where(baseline, math.inf, frame["epsilon"]),
        private=~baseline,
        neighbouring="replace_one",
        status="ok",
    )


def write(directory: Path, summary: pd.DataFrame) -> Path:
    """:func:`results_helpers.write_results`, with each interval statistic's ``alpha`` in
    run.json (as the harness records it) and the config hash updated."""
    write_results(directory, summary)
    path = directory / "run.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for entry in manifest["numbers"]["statistics"]:
        if entry["kind"] == "median_interval":
            entry["alpha"] = float(entry["id"].removeprefix("median_interval(").rstrip(")"))
    manifest["config_hash"] = config_hash(manifest["numbers"])
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return directory


def cells_of(directory: Path, summary: pd.DataFrame) -> intervals.Cells:
    return intervals.summarise(results_reader.load(write(directory, summary)))


def at(frame: pd.DataFrame, **where: object) -> pd.Series:
    """The mask of the rows whose columns equal ``where``."""
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    return mask


# ----------------------------------------------------------------------------- cells


def test_a_cell_is_the_mean_coverage_its_standard_error_and_a_ratio_of_summed_widths() -> None:
    rows = pd.DataFrame(
        {
            "dataset": "normal",
            "subset": "n=100",
            "alpha": 0.05,
            "mechanism": DP,
            "epsilon": 1.0,
            "coverage": [1.0, 0.0, 1.0, 1.0],
            "trials": 1,
            "mean_width": [2.0, 4.0, 6.0, 8.0],
            "nonprivate_width": [1.0, 1.0, 1.0, 5.0],
            "guarantee_epsilon": 1.0,
        }
    )
    cell = intervals.aggregate(rows).iloc[0]
    assert cell["replicates"] == 4
    assert cell["coverage"] == pytest.approx(0.75)
    assert cell["se"] == pytest.approx(np.std([1, 0, 1, 1], ddof=1) / 2)  # 0.25
    assert (cell["covered"], cell["total"]) == (3, 4)
    assert cell["relative_width"] == pytest.approx(20 / 8)  # not the mean of ratios, 3.4
    # several intervals per dataset: covered counts intervals
    several = rows.assign(trials=5, coverage=[0.2, 0.6, 0.8, 1.0])
    cell = intervals.aggregate(several).iloc[0]
    assert (cell["covered"], cell["total"]) == (13, 20)
    assert cell["coverage"] == pytest.approx(0.65)


def test_the_table_shows_the_cell_formulas(tmp_path: Path) -> None:
    summary = grid([BASELINE, DP], 4, epsilons=(1.0,))
    dp = at(summary, mechanism=DP)
    summary.loc[dp, "coverage"] = [1.0, 0.0, 1.0, 1.0]
    summary.loc[dp, "mean_width"] = [2.0, 4.0, 6.0, 8.0]
    summary.loc[dp, "nonprivate_width"] = [1.0, 1.0, 1.0, 5.0]
    text = intervals.report(cells_of(tmp_path, summary))
    row = f"| N(0, 1) | n=100 | 0.05 | {NAMES[DP]} | 1 | 0.750 ± 0.250 | 2.50× |"
    assert row in text, text
    assert f"| {NAMES[BASELINE]} | ∞ (not private) | 1.000 ± 0.000 | 1× |" in text
    assert "R = 4 independent datasets" in text


# ------------------------------------------------------------------------ below nominal


def planted(replicates: int = 200) -> pd.DataFrame:
    """At ε = 1: ExpMech misses 30% of the time (coverage 0.70 at nominal 0.95), DP order
    statistics cover 190/200 (0.95 exactly), subsample-and-aggregate 180/200 (p ≈ 0.0027:
    below 0.01 but not below 0.01 / 7, the Bonferroni threshold over the 7 tested cells)."""
    summary = grid([BASELINE, DP, EXPMECH, SUBSAMPLE], replicates)
    for label, misses in ((EXPMECH, 60), (DP, 10), (SUBSAMPLE, 20)):
        cell = at(summary, mechanism=label, epsilon=1.0) & (summary["replicate"] < misses)
        summary.loc[cell, "coverage"] = 0.0
    return summary


def test_an_under_covering_method_is_flagged_and_a_covering_one_is_not(tmp_path: Path) -> None:
    cells = cells_of(tmp_path, planted())
    tested = cells.tested.set_index(["mechanism", "epsilon"])
    assert len(tested) == 7  # 3 methods × 2 ε, and the baseline once (at ε = ∞)
    assert tested.loc[(BASELINE, math.inf), "replicates"] == 200
    flagged = set(tested.index[tested["below"]])
    assert flagged == {(EXPMECH, 1.0)}
    assert tested.loc[(EXPMECH, 1.0), "p_value"] == pytest.approx(stats.binom.cdf(140, 200, 0.95))
    assert 0.01 / 7 < tested.loc[(SUBSAMPLE, 1.0), "p_value"] < 0.01  # Bonferroni spares it
    text = intervals.report(cells)
    assert text.count("**below nominal**") == 1
    assert f"{NAMES[EXPMECH]} | 1 | 0.700 ± 0.032 |" in text
    assert "< 0.01 / 7 (Bonferroni over the 7 tested cells" in text
    sentence = f"1 of the 7 tested cells (all α) fall below nominal: {NAMES[EXPMECH]}, N(0, 1), "
    assert sentence + "n=100, ε = 1, α = 0.05." in text


def test_nothing_is_flagged_when_every_method_covers(tmp_path: Path) -> None:
    cells = cells_of(tmp_path, grid([BASELINE, DP], 50))
    assert not cells.tested["below"].any()
    assert "None of the 3 tested cells (all α) falls below nominal." in intervals.report(cells)


def test_several_intervals_per_dataset_are_not_tested(tmp_path: Path) -> None:
    summary = grid([BASELINE, EXPMECH], 20, trials=10)
    summary.loc[at(summary, mechanism=EXPMECH), "coverage"] = 0.3  # far below, yet dependent
    cells = cells_of(tmp_path, summary)
    assert not cells.independent and not cells.tested["below"].any()
    text = intervals.report(cells)
    assert "Below nominal: not tested: trials > 1" in text
    assert text.count("| not tested |") == len(cells.tested) == 3
    assert "Coverage is not tested against nominal" in text


# ------------------------------------------------------------------------- README block


def readme_block(text: str) -> str:
    start, end = text.index(intervals.README_START), text.index(intervals.README_END)
    return text[start + len(intervals.README_START) : end].strip()


def test_the_readme_block_gives_the_lowest_coverage_and_the_mean_width(tmp_path: Path) -> None:
    summary = grid(
        [BASELINE, DP], 4, datasets=("normal", "uniform"), alphas=(0.05, 0.1), epsilons=(1.0, 2.0)
    )
    dp = at(summary, mechanism=DP, statistic="median_interval(0.05)", epsilon=1.0)
    normal = dp & (summary["dataset"] == "normal")
    summary.loc[normal & (summary["replicate"] == 0), "coverage"] = 0.0  # 0.75 on N(0, 1)
    summary.loc[normal, "mean_width"] = 2.0
    summary.loc[dp & (summary["dataset"] == "uniform"), "mean_width"] = 4.0
    at_tenth = at(summary, mechanism=DP, statistic="median_interval(0.1)")
    summary.loc[at_tenth, ["coverage", "mean_width"]] = [0.5, 9.0]  # not in the block
    block = readme_block(intervals.report(cells_of(tmp_path, summary)))
    lines = block.splitlines()
    assert lines[0] == "| method | n | ε = 1 | ε = 2 |"
    assert lines[2] == f"| {NAMES[BASELINE]} | n=100 | 1.000 / 1× | 1.000 / 1× |"
    assert lines[3] == f"| {NAMES[DP]} | n=100 | 0.750 / 3.00× | 1.000 / 1× |"
    assert lines[-1] == "None of the 12 tested cells (all α) falls below nominal."
    assert len(lines) == 6  # header, separator, two rows, blank, the sentence
    cell = re.compile(r"^\d\.\d{3} / [\d.]+×$")
    assert all(cell.match(text.strip()) for line in lines[2:4] for text in line.split("|")[3:-1])


def test_relative_widths_keep_three_significant_digits() -> None:
    assert [intervals.ratio_text(v) for v in (1.0, 1.6, 2.3125, 15.49, 123.4, 2345.6)] == [
        "1×",
        "1.60×",
        "2.31×",
        "15.5×",
        "123×",
        "2346×",
    ]


# ------------------------------------------------------------------- figures and command


def test_the_command_writes_the_figures_and_the_table(tmp_path: Path, capsys) -> None:
    results = write(tmp_path / "run", planted(20))
    out = tmp_path / "out"
    assert cli.main(["intervals", str(results), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    stems = ["intervals_coverage_alpha0.05", "intervals_width_alpha0.05"]
    files = [out / f"{stem}.{ext}" for stem in stems for ext in ("png", "pdf")]
    assert all(path.stat().st_size > 0 for path in files)
    table = (out / "intervals_table.md").read_text(encoding="utf-8")
    assert printed.startswith(table)
    assert printed.splitlines()[-1] == "wrote " + ", ".join(
        map(str, [*files, out / "intervals_table.md"])
    )
    again = tmp_path / "again"
    assert cli.main(["intervals", str(results), "--out", str(again)]) == 0
    assert all(path.read_bytes() == (again / path.name).read_bytes() for path in files)


def test_a_run_without_interval_rows_is_refused(tmp_path: Path, capsys) -> None:
    summary = grid([DP], 2).assign(statistic="median")
    results = write_results(tmp_path / "median", summary)
    assert cli.main(["intervals", str(results)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "has no median_interval statistic" in error
    assert not (results / "intervals_table.md").exists()


def test_a_non_private_method_that_changes_with_epsilon_is_refused(tmp_path: Path) -> None:
    summary = grid([BASELINE, DP], 3)
    summary.loc[at(summary, mechanism=BASELINE, epsilon=1.0), "mean_width"] = 2.0
    with pytest.raises(ReportError, match="non-private method 'nonprivate_order_statistic'"):
        cells_of(tmp_path, summary)


def test_a_real_run_of_the_harness(tmp_path: Path) -> None:
    """The columns the harness writes are the ones the report reads (ε = ∞ baseline)."""
    normal = {
        "name": "normal",
        "_target_": "experiments.data.datasets.SyntheticDataset",
        "options": {
            "distribution": "normal",
            "params": {"loc": 0.0, "scale": 1.0},
            "bounds": [-10.0, 10.0],
            "sizes": [60],
        },
    }
    statistic = {
        "name": "mi",
        "_target_": "mechanisms.statistics.MedianInterval",
        "options": {"alpha": [0.1]},
    }
    config = {
        "seed": 5,
        "n": 60,
        "replicates": 3,
        "trials": 1,
        "epsilons": [1.0, 2.0],
        "datasets": [normal],
        "statistics": [statistic],
        "mechanisms": [BASELINE, DP],
    }
    results = run(config, results_dir=tmp_path / "run", n_jobs=1)
    cells = intervals.summarise(results_reader.load(results))
    assert list(cells.tested["epsilon"]) == [math.inf, 1.0, 2.0]
    assert cells.tested["relative_width"].iloc[0] == 1.0
    assert cells.independent and list(cells.tested["replicates"]) == [3, 3, 3]
    assert cli.main(["intervals", str(results)]) == 0
