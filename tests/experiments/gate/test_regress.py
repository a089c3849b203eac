"""The accuracy regression gate: it passes a clean run and catches real regressions.

Real runs here are slices of the regression sweep (one dataset, one or two
mechanisms, every ε, the same seed, n, replicates and trials), so their cells
are the committed baseline's cells, computed in-process in a few seconds.  A
regression is simulated by patching ``mechanisms.make``, which the harness
calls for every cell: the config (and so every cell hash) stays the same, as
after a bad code change.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from results_helpers import default_value

import mechanisms
from experiments import regress
from experiments.gate import baseline as gate_baseline
from experiments.gate import verdicts as gate_verdicts
from experiments.harness.plan import build_plan
from experiments.harness.results import SUMMARY_COLUMNS
from experiments.run import run
from mechanisms.intervals.nonprivate import sign_test_rank
from mechanisms.intervals.order_statistic import DPOrderStatistic
from mechanisms.median.duff import Duff
from mechanisms.median.smooth_cauchy import SmoothCauchy

STUDY = {"duff", "quantile_em", "smooth_cauchy", "smooth_laplace", "laplace_ln"}
MEAN_AND_MODE = {"laplace_mean", "gaussian_mean", "trimmed_mean_student_t"} | {
    "count_em",
    "permute_and_flip",
    "report_noisy_max",
    "stability_histogram",
}
INTERVALS = {"dp_order_statistic", "drechsler_expmech"}
MULTI = {"joint_exp", "ind_exp", "app_ind_exp", "approximate_quantiles", "tree_quantiles"}


@pytest.fixture(scope="module")
def baseline() -> pd.DataFrame:
    return regress.read_baseline(regress.BASELINE)


@pytest.fixture(scope="module")
def plan():
    return build_plan(regress.regression_config())


def slice_run(path: Path, dataset: str, labels: list[str]) -> regress.Candidate:
    """Run the regression sweep restricted to one dataset and some mechanisms (their entries
    as the sweep gives them, so that their cells are the baseline's)."""
    cfg = regress.regression_config([f"datasets=[{dataset}]"])
    cfg.mechanisms = [
        entry
        for entry in cfg.mechanisms
        if (entry if isinstance(entry, str) else entry["label"]) in labels
    ]
    out = run(cfg, results_dir=path, n_jobs=1)
    return regress.read_candidate(out)


class HalfEpsilonDuff(Duff):
    """Duff calibrated to half the requested ε: twice the noise, as after a bad change."""

    def __init__(self, *, epsilon: float, delta: float | None = None, **options) -> None:
        super().__init__(epsilon=epsilon / 2, delta=delta, **options)


class UnclippedSmoothCauchy(SmoothCauchy):
    """SmoothSens_ε whose output is no longer clipped to [a, b], as after a bad change."""

    def __init__(self, **arguments) -> None:
        super().__init__(**{**arguments, "clip_output": False})


def patch_class(monkeypatch: pytest.MonkeyPatch, name: str, cls: type) -> None:
    """Resolve registry name ``name`` to ``cls``: the config, and so every cell hash, stays
    the same, as after a bad code change (workers import ``cls`` from this module)."""
    original = mechanisms.get
    monkeypatch.setattr(
        mechanisms, "get", lambda wanted: cls if wanted == name else original(wanted)
    )


def write_candidate(path: Path, baseline: pd.DataFrame, plan, factors=None) -> Path:
    """A baseline-shaped results dir: every replicate of a cell has the baseline's error
    (times ``factors[cell]``), with a run.json of the regression config."""
    factors = factors or {}
    numbers = plan.numbers()
    bounds = {d["id"]: d["bounds"] for d in numbers["datasets"]}
    names = {m["label"]: m["name"] for m in numbers["mechanisms"]}
    rows = []
    for key, cell in baseline.iterrows():
        dataset, subset, statistic, label, epsilon = key
        error = cell["error"] * factors.get((dataset, statistic, label, epsilon), 1.0)
        for replicate in range(int(cell["replicates"])):
            rows.append(
                {
                    **{column: default_value(column) for column in SUMMARY_COLUMNS},
                    "dataset": dataset,
                    "subset": subset,
                    "replicate": replicate,
                    "n": 101,
                    "lower": bounds[dataset][0],
                    "upper": bounds[dataset][1],
                    "mechanism": label,
                    "registry_name": names[label],
                    "statistic": statistic,
                    "epsilon": epsilon,
                    "trials": 50,
                    "mean_abs_error": error,
                    "mean_count_gap": error,
                    "mean_width": error,
                    "total_rank_error": error,
                    "coverage": 1.0,
                    "rmse": error,
                    "guarantee_epsilon": epsilon,
                    "rho": math.nan,
                    "neighbouring": "add_remove",
                    "private": True,
                    "status": "ok",
                }
            )
    path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=SUMMARY_COLUMNS).to_csv(path / "summary.csv", index=False)
    manifest = {"status": "complete", "config_hash": plan.config_hash, "numbers": numbers}
    (path / "run.json").write_text(json.dumps(manifest))
    return path


# ------------------------------------------------------------ the baseline itself


def test_committed_baseline_covers_the_study_and_detects_a_30_percent_change(
    baseline, plan
) -> None:
    cells = baseline.reset_index()
    assert baseline["config_hash"].iloc[0] == plan.config_hash  # regenerate with --update
    # 7 median mechanisms on the median and the 0.1-quantile, Duff + 3 others on the mean,
    # Duff + 4 others on the mode, 2 interval methods, 5 methods of m = 4 quantiles at once;
    # 3 datasets, 3 epsilons
    assert len(cells) == 3 * 3 * (7 * 2 + 4 + 5 + 2 + 5) and set(cells["dataset"]) == {
        "normal",
        "uniform",
        "beta",
    }
    assert set(cells["statistic"]) == {
        "median",
        "quantile(0.1)",
        "mean",
        "mode",
        "median_interval(0.05)",
        "quantiles(m=4)",
    }
    assert {m.name for m in plan.mechanisms} == STUDY | MEAN_AND_MODE | INTERVALS | MULTI
    assert set(cells["mechanism"]) == {m.label for m in plan.mechanisms}
    assert {0.1, 2.0} <= set(cells["epsilon"])
    assert (cells["replicates"] == plan.datasets[0].replicates).all()
    expected = gate_baseline.tolerances(cells["se_log"].to_numpy(), len(cells))
    np.testing.assert_allclose(cells["tolerance"], expected, rtol=1e-12)
    np.testing.assert_allclose(
        cells["se_log"],
        cells["replicate_sd"] / (np.sqrt(cells["replicates"]) * cells["error"]),
        rtol=1e-12,
    )
    assert cells["tolerance"].min() >= gate_baseline.MIN_EFFECT
    # a wrong mode is rare at n = 101 and eps >= 0.5, so its count gap varies a lot
    tight = cells["statistic"] != "mode"
    assert cells.loc[tight, "tolerance"].max() < math.log(1.3)
    assert cells.loc[~tight & (cells["epsilon"] == 0.1), "tolerance"].max() < math.log(1.35)


def test_tolerance_is_a_bonferroni_z_test_with_a_minimum_effect() -> None:
    # z_{1 − 0.01/(2·63)} = 3.777; SE 0.03 → 3.777·√2·0.03 = 0.1602
    tolerances = gate_baseline.tolerances
    np.testing.assert_allclose(tolerances(np.array([0.03]), 63), [0.16025], atol=1e-4)
    assert tolerances(np.array([0.0, 1e-4]), 63).tolist() == [gate_baseline.MIN_EFFECT] * 2
    assert tolerances(np.array([0.03]), 630)[0] > tolerances(np.array([0.03]), 63)[0]


# ------------------------------------------------------------------- real runs


def test_a_clean_run_passes(baseline, tmp_path) -> None:
    candidate = slice_run(tmp_path, "normal", ["quantile_em", "smooth_laplace_public"])
    report = gate_verdicts.compare(baseline, candidate, require_all=False)
    assert len(report.cells) == 2 * 2 * 3  # mechanisms × statistics × ε
    assert report.passed, gate_verdicts.render(report)
    assert "regression gate PASSED: all 12 cells within tolerance" in gate_verdicts.render(report)


def test_a_mechanism_run_at_half_epsilon_fails(baseline, tmp_path, monkeypatch) -> None:
    patch_class(monkeypatch, "duff", HalfEpsilonDuff)
    report = gate_verdicts.compare(
        baseline, slice_run(tmp_path, "beta", ["duff"]), require_all=False
    )
    assert not report.passed
    cells = report.cells
    assert (cells["verdict"] == "WORSE").sum() >= 2
    assert (cells["ratio"] > 1.3).sum() >= 2  # twice the noise: far beyond any tolerance
    text = gate_verdicts.render(report)
    assert "regression gate FAILED" in text and "WORSE" in text and "duff" in text


class UnwidenedDPOrderStatistic(DPOrderStatistic):
    """The DP order-statistic interval at the non-private sign-test ranks: the privacy
    widening dropped, as after a bad change."""

    def lower_rank(self, n: int) -> int | None:
        return sign_test_rank(n, self.alpha)


def test_an_interval_without_its_privacy_widening_fails(baseline, tmp_path, monkeypatch):
    patch_class(monkeypatch, "dp_order_statistic", UnwidenedDPOrderStatistic)
    report = gate_verdicts.compare(
        baseline, slice_run(tmp_path, "normal", ["dp_order_statistic"]), require_all=False
    )
    cells = report.cells
    assert len(cells) == 3 and not report.passed
    assert (cells["verdict"] == "UNDERCOVERS").sum() >= 1  # at eps = 0.1
    assert set(cells["verdict"]) <= {"UNDERCOVERS", "BETTER?"}  # and narrower everywhere
    assert "under-covering" in gate_verdicts.render(report)


def test_coverage_margin_is_hoeffding_with_bonferroni(baseline, plan, tmp_path) -> None:
    cells = baseline.reset_index()
    interval = cells["statistic"] == "median_interval(0.05)"
    key = tuple(cells.loc[interval].iloc[0][list(gate_baseline.CELL)])
    candidate = regress.read_candidate(write_candidate(tmp_path / "c", baseline, plan))
    margins = gate_verdicts.coverage_margins(candidate.cells)
    tests = int(interval.sum())
    expected = math.sqrt(math.log(tests / gate_baseline.ALPHA) / (2 * 200))
    np.testing.assert_allclose(margins[np.isfinite(margins)], expected, rtol=1e-12)
    assert np.isnan(margins).sum() == len(cells) - tests
    shifted = candidate.cells.copy()
    for coverage, verdict in (
        (0.95 - expected + 1e-9, "ok"),
        (0.95 - expected - 1e-9, "UNDERCOVERS"),
    ):
        shifted.loc[key, "coverage"] = coverage
        report = gate_verdicts.compare(baseline, regress.Candidate(shifted, candidate.config_hash))
        assert report.cells.loc[key, "verdict"] == verdict


def test_a_noise_mechanism_that_skips_output_clipping_fails(baseline, tmp_path, monkeypatch):
    # Unclipped Cauchy-type noise leaves [0, 1]: its heavy tail multiplies the error.
    patch_class(monkeypatch, "smooth_cauchy", UnclippedSmoothCauchy)
    report = gate_verdicts.compare(
        baseline, slice_run(tmp_path, "uniform", ["smooth_cauchy"]), require_all=False
    )
    assert not report.passed
    assert (report.cells["verdict"] == "WORSE").all()
    assert "regression gate FAILED: 6 of 6 cells (6 worse" in gate_verdicts.render(report)


# --------------------------------------------------------- candidate files, CLI


def test_one_cell_times_1_3_fails_and_a_copy_passes(baseline, plan, tmp_path, capsys):
    same = write_candidate(tmp_path / "same", baseline, plan)
    assert regress.main(["--candidate", str(same)]) == 0
    assert "regression gate PASSED: all 270 cells" in capsys.readouterr().out

    rare = baseline.index.get_level_values("statistic") == "mode"  # documented: wider
    loosest = baseline.loc[~rare, "tolerance"].idxmax()
    for dataset, _, statistic, label, epsilon in [loosest, ("uniform", "", "median", "duff", 0.1)]:
        cell = (dataset, statistic, label, epsilon)
        worse = write_candidate(tmp_path / f"worse-{label}", baseline, plan, {cell: 1.3})
        assert regress.main(["--candidate", str(worse / "summary.csv")]) == 1
        out = capsys.readouterr().out
        assert "FAILED: 1 of 270 cells (1 worse" in out
        row = next(line for line in out.splitlines() if "WORSE" in line).split()
        expected = [dataset, statistic, label, f"{epsilon:g}", *row[4:6], "1.300", *row[7:8]]
        assert row == [*expected, "WORSE"]


def test_a_sharp_drop_in_error_fails_as_possibly_not_private(baseline, plan, tmp_path, capsys):
    better = write_candidate(
        tmp_path, baseline, plan, {("beta", "median", "laplace_ln_oracle", 0.5): 0.7}
    )
    assert regress.main(["--candidate", str(better)]) == 1
    out = capsys.readouterr().out
    assert "BETTER?" in out and "may have stopped being private" in out


def test_exact_reproduction_is_reported(baseline, plan) -> None:
    cells = baseline.assign(failed=0, status_example="", coverage=math.nan, level=math.nan)
    candidate = regress.Candidate(cells, plan.config_hash)
    assert gate_verdicts.compare(baseline, candidate).cells["identical"].all()
    key = baseline.index[5]
    nudged = cells.copy()
    nudged.loc[key, "error"] = np.nextafter(nudged.loc[key, "error"], 1.0)
    report = gate_verdicts.compare(baseline, regress.Candidate(nudged, plan.config_hash))
    assert report.passed and report.cells["identical"].sum() == 269
    text = gate_verdicts.render(report)
    assert "cells that moved (1 of 270)" in text and "269/270 cells identical" in text


def test_update_writes_a_baseline_that_the_same_run_passes(baseline, plan, tmp_path, capsys):
    source = write_candidate(
        tmp_path / "run", baseline, plan, {("normal", "median", "duff", 0.1): 1.5}
    )
    target = tmp_path / "baseline.csv"
    assert regress.main(["--update", "--candidate", str(source), "--baseline", str(target)]) == 0
    assert "wrote" in capsys.readouterr().out
    written = regress.read_baseline(target)
    assert written.loc[("normal", "", "median", "duff", 0.1), "error"] == pytest.approx(
        1.5 * baseline.loc[("normal", "", "median", "duff", 0.1), "error"], rel=1e-12
    )
    assert regress.main(["--candidate", str(source), "--baseline", str(target)]) == 0
    assert "270/270 cells identical" in capsys.readouterr().out


def _input_error(args: list[str], capsys, match: str) -> str:
    """Exit status 2 with one line on stderr holding ``match``; returns that line."""
    assert regress.main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("duff-regress: error:") and match in captured.err
    assert captured.err.count("\n") == 1, captured.err
    return captured.err


def _rewrite_run(path: Path, manifest: dict, numbers: dict, *, rehash: bool = True) -> None:
    digest = gate_baseline.config_hash(numbers) if rehash else manifest["config_hash"]
    (path / "run.json").write_text(
        json.dumps({**manifest, "numbers": numbers, "config_hash": digest})
    )


def test_input_errors_exit_2(baseline, plan, tmp_path, capsys) -> None:
    good = write_candidate(tmp_path / "good", baseline, plan)
    _input_error(
        ["--candidate", str(good), "--baseline", str(tmp_path / "none.csv")], capsys, "no baseline"
    )
    # other columns
    other = tmp_path / "columns"
    other.mkdir()
    (other / "run.json").write_text((good / "run.json").read_text())
    pd.read_csv(good / "summary.csv").drop(columns="rmse").to_csv(other / "summary.csv")
    _input_error(["--candidate", str(other)], capsys, "missing: rmse; unexpected: (unnamed)")
    # another config: same cells, another seed
    manifest = json.loads((good / "run.json").read_text())
    numbers = {**manifest["numbers"], "seed": 7}
    reseeded = tmp_path / "reseeded"
    reseeded.mkdir()
    (reseeded / "summary.csv").write_text((good / "summary.csv").read_text())
    _rewrite_run(reseeded, manifest, numbers)
    _input_error(["--candidate", str(reseeded)], capsys, "come from another config")
    # a run.json edited by hand no longer matches its hash
    _rewrite_run(reseeded, manifest, numbers, rehash=False)
    _input_error(["--candidate", str(reseeded)], capsys, "does not match its numbers")
    # an unfinished run
    _rewrite_run(reseeded, {**manifest, "status": "running"}, manifest["numbers"])
    _input_error(["--candidate", str(reseeded)], capsys, "the run is not complete")
    # unreadable files, missing files
    (reseeded / "run.json").write_text("{not json")
    _input_error(["--candidate", str(reseeded)], capsys, "run.json: not readable as JSON")
    (reseeded / "run.json").unlink()
    _input_error(["--candidate", str(reseeded)], capsys, "run.json: no such file")
    _input_error(["--candidate", str(tmp_path / "absent")], capsys, "not a results directory")
    (other / "summary.csv").write_bytes(b"\xff\xfe\x00garbage\n\x00")
    _input_error(["--candidate", str(other)], capsys, "cannot read it as UTF-8")
    # a complete run of another dataset list lacks baseline cells
    summary = pd.read_csv(good / "summary.csv", dtype={"subset": str}, keep_default_na=False)
    summary[summary["dataset"] != "beta"].to_csv(good / "summary.csv", index=False)
    datasets = [d for d in manifest["numbers"]["datasets"] if d["id"] != "beta"]
    _rewrite_run(good, manifest, {**manifest["numbers"], "datasets": datasets})
    _input_error(["--candidate", str(good)], capsys, "lacks 90 of the baseline's 270 cells")
    # a broken baseline
    broken = tmp_path / "broken.csv"
    broken.write_text("dataset,mechanism\nnormal,duff\n")
    _input_error(
        ["--candidate", str(good), "--baseline", str(broken)],
        capsys,
        "missing: subset, statistic, epsilon",
    )


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(lambda text: text[:-8], id="last line cut before its status"),
        pytest.param(lambda text: text[:-2], id="last field cut"),
        pytest.param(lambda text: text[: text.index("\n", len(text) // 2) + 1], id="rows lost"),
        pytest.param(lambda text: text[: len(text) // 2], id="cut mid-file"),
        pytest.param(
            lambda text: "\n".join(text.split("\n")[:100] + text.split("\n")[101:]),
            id="one row lost mid-file",
        ),
    ],
)
def test_a_truncated_candidate_is_an_input_error(baseline, plan, tmp_path, capsys, cut) -> None:
    # Before: a last line cut short read as a failed row (exit 1, "FAILED").
    candidate = write_candidate(tmp_path, baseline, plan)
    summary = candidate / "summary.csv"
    summary.write_text(cut(summary.read_text()))
    line = _input_error(["--candidate", str(candidate)], capsys, str(summary))
    assert "truncated" in line or "rows where run.json's plan has 41400" in line


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("tolerance", "inf", "inf is not a finite number > 0"),
        ("tolerance", "nan", "nan is not a finite number > 0"),
        ("tolerance", "-0.1", "-0.1 is not a finite number > 0"),
        ("tolerance", "1e300", "not max(MIN_EFFECT, z·√2·se_log)"),
        ("error", "inf", "inf is not a finite number > 0"),
        ("replicate_sd", "", "nan is not a finite number >= 0"),
        ("se_log", "0.5", "not replicate_sd / (√replicates · error)"),
        ("epsilon", "-1", "-1.0 is not a finite number > 0"),
        ("replicates", "1", "1 is below 2"),
        ("replicates", "2.5", "'2.5' is not an integer"),
    ],
)
def test_a_baseline_that_would_switch_the_gate_off_is_refused(
    baseline, plan, tmp_path, capsys, column, value, problem
) -> None:
    # Before: a tolerance of inf (or an infinite error) passed the checks and the cell
    # could never fail.
    rows = regress.BASELINE.read_text().splitlines()
    header = rows[0].split(",")
    fields = rows[5].split(",")
    fields[header.index(column)] = value
    rows[5] = ",".join(fields)
    edited = tmp_path / "edited.csv"
    edited.write_text("\n".join(rows) + "\n")
    candidate = write_candidate(tmp_path / "run", baseline, plan)
    line = _input_error(["--candidate", str(candidate), "--baseline", str(edited)], capsys, problem)
    assert f"baseline {edited}: line 6, column {column}:" in line
    assert "regenerate it with --update" in line


def test_usage_errors_exit_2(tmp_path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        regress.main(["--candidate", str(tmp_path), "--results-dir", str(tmp_path)])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        regress.main(["--no-such-option"])
    assert exit_info.value.code == 2
