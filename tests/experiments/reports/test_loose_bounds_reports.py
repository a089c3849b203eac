"""``duff-plot loose-bounds``, ``unbounded`` and ``atoms`` on tiny runs: slopes that say what
each calibration predicts, the clipping bias, infinite bounds end to end, the atoms' table."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from experiments.harness.config import ConfigError
from experiments.harness.plan import build_plan
from experiments.harness.results_reader import load
from experiments.reports import cli
from experiments.reports.loose_bounds import parse_subset, slope
from experiments.run import run

BASE = {"seed": 5, "n": 200, "replicates": 2, "trials": 20, "epsilons": [1.0]}
GRID = {
    "name": "grid",
    "_target_": "experiments.data.bounds_grid.BoundsGrid",
    "options": {"half_widths": [0.5, 10.0, 1.0e4, 1.0e8], "centres": [0.0, 5.0]},
}


@pytest.fixture(scope="module")
def bounds_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    config = {**BASE, "datasets": [GRID], "mechanisms": ["duff", "laplace_global"]}
    results = run(config, results_dir=tmp_path_factory.mktemp("bounds"), n_jobs=1)
    assert cli.main(["loose-bounds", str(results)]) == 0
    return results, (results / "loose_bounds_table.md").read_text(encoding="utf-8")


def test_slopes_say_what_the_calibration_predicts(bounds_run) -> None:
    _, text = bounds_run
    rows = {line.split("|")[3].strip(): line for line in text.splitlines() if "| grid |" in line}
    global_slope = float(rows["laplace_global"].split("|")[4])
    duff_slope = float(rows["Duff (EM)"].split("|")[4])
    assert abs(global_slope - 1.0) < 0.02  # noise ∝ b − a
    assert abs(duff_slope) < 0.1  # the EM's far region has no mass at n = 200, ε = 1


def test_the_clipping_bias_is_measured_where_the_bounds_cut_the_data(bounds_run) -> None:
    results, text = bounds_run
    bias = next(line for line in text.splitlines() if line.startswith("| grid | 5 |"))
    cells = [float(v) for v in bias.strip("|").split("|")[2:]]
    assert cells[0] > 4.0 and cells[1:] == [0.0, 0.0, 0.0]  # [4.5, 5.5] misses N(0,1)'s median
    assert (results / "loose_bounds.png").stat().st_size > 0


def test_parsing_and_fitting() -> None:
    assert parse_subset("R=1e+02,c=5") == (100.0, 5.0)
    assert slope(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0])) == pytest.approx(2.0)
    assert math.isnan(slope(np.array([0.0]), np.array([1.0])))


UNBOUNDED = {
    "name": "cauchy_line",
    "_target_": "experiments.data.datasets.SyntheticDataset",
    "options": {"distribution": "standard_cauchy", "bounds": [-math.inf, math.inf]},
}


def test_infinite_bounds_run_end_to_end_for_the_mechanisms_that_take_them(tmp_path) -> None:
    config = {**BASE, "datasets": [UNBOUNDED], "mechanisms": ["unbounded_quantile"]}
    results = run(config, results_dir=tmp_path / "u", n_jobs=1)
    summary = load(results).summary
    assert (summary["status"] == "ok").all() and np.isinf(summary["lower"]).all()
    assert (summary["mean_rank_error"] < 40).all()
    assert cli.main(["unbounded", str(results)]) == 0
    assert "[-inf, inf]" in (results / "unbounded_table.md").read_text(encoding="utf-8")


def test_a_bounded_mechanism_on_infinite_bounds_is_refused_before_the_sweep() -> None:
    config = {**BASE, "datasets": [UNBOUNDED], "mechanisms": ["duff"]}
    with pytest.raises(ConfigError, match="'duff' needs finite bounds, and datasets cauchy_line"):
        build_plan(config)


def test_the_atoms_table_gives_each_resolution_its_tie_fraction(tmp_path) -> None:
    grid = {
        "name": "atoms",
        "_target_": "experiments.data.rounded.RoundingGrid",
        "options": {"resolutions": [1e-4, 1.0], "bounds": [-10.0, 10.0]},
    }
    config = {**BASE, "datasets": [grid], "mechanisms": ["duff", "smooth_cauchy"]}
    results = run(config, results_dir=tmp_path / "a", n_jobs=1)
    assert cli.main(["atoms", str(results)]) == 0
    text = (results / "atoms_table.md").read_text(encoding="utf-8")
    assert "h=0.0001 (0.00 tied)" in text and "h=1 (0.99 tied)" in text  # n = 200
