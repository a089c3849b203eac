"""The paired gate: candidate and baseline share their seeds replicate by replicate, so a 5%
change of a cell's error fails it (issue 26, finding 3).

Before, a cell failed only beyond ``max(ln 1.1, z·√2·SE)``: a noise scale 5% too large
passed every cell.  The baseline's companion (``regression_replicates.csv``) now keeps
each cell's per-replicate errors, and each cell is compared pair by pair
(:mod:`experiments.gate.verdicts`).  The false alarms stay at most α = 0.01 family-wise:
none at all for clean code (bit-identical, or last-bit differences of another CPU), and
a calibrated z-test when the randomness is redrawn.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mechanisms
from experiments import regress
from experiments.gate import baseline as gate_baseline
from experiments.gate import verdicts as gate_verdicts
from experiments.gate.baseline import REPLICATES
from experiments.run import run

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def baseline() -> pd.DataFrame:
    return regress.read_baseline(regress.BASELINE)


def unpaired(baseline: pd.DataFrame) -> pd.DataFrame:
    """The baseline as the gate had it before: no per-replicate errors."""
    return baseline.assign(**{REPLICATES: None})


def slice_run(path: Path, dataset: str, label: str) -> regress.Candidate:
    """The regression sweep restricted to one dataset and one mechanism entry."""
    cfg = regress.regression_config([f"datasets=[{dataset}]"])
    cfg.mechanisms = [
        entry
        for entry in cfg.mechanisms
        if label in (entry if isinstance(entry, str) else entry.get("label", entry.get("extends")),)
    ]
    return regress.read_candidate(run(cfg, results_dir=path, n_jobs=1))


def test_the_committed_baseline_pairs_every_cell(baseline) -> None:
    companion = gate_baseline.replicates_path(regress.BASELINE)
    assert companion.is_file() and companion.parent == regress.BASELINE.parent
    errors = baseline[REPLICATES]
    assert errors.map(lambda e: isinstance(e, np.ndarray)).all()
    assert (errors.map(len) == baseline["replicates"]).all()
    means = errors.map(lambda e: math.fsum(e) / e.size)
    # the same run's numbers, up to another CPU's last bits (the cell statistics are the
    # committed ones, bit for bit)
    np.testing.assert_allclose(means, baseline["error"], rtol=gate_baseline.SAME_RUN_RTOL)
    sds = errors.map(lambda e: float(np.std(e, ddof=1)))
    np.testing.assert_allclose(sds, baseline["replicate_sd"], rtol=1e-9)


def test_a_noise_scale_five_percent_too_large_fails_every_cell(
    baseline, tmp_path, monkeypatch
) -> None:
    monkeypatch.syspath_prepend(str(HERE))  # the workers import the planted class by name
    from planted_mechanisms import planted

    original = mechanisms.get
    cls = planted("laplace_mean", 1.05)
    monkeypatch.setattr(
        mechanisms, "get", lambda wanted: cls if wanted == "laplace_mean" else original(wanted)
    )
    candidate = slice_run(tmp_path, "normal", "laplace_mean")
    report = gate_verdicts.compare(baseline, candidate, require_all=False)
    cells = report.cells
    assert len(cells) == 3 and cells["paired"].all()
    np.testing.assert_allclose(cells["ratio"], 1.05, rtol=0.02)
    assert (cells["verdict"] == "WORSE").all(), gate_verdicts.render(report)
    # Before (the unpaired test): every cell passed.
    before = gate_verdicts.compare(unpaired(baseline), candidate, require_all=False)
    assert (before.cells["verdict"] == "ok").all()
    assert not before.cells["paired"].any()


def test_a_clean_slice_pairs_identically(baseline, tmp_path) -> None:
    report = gate_verdicts.compare(
        baseline, slice_run(tmp_path, "uniform", "laplace_mean"), require_all=False
    )
    cells = report.cells
    assert report.passed and cells["paired"].all() and cells["identical"].all()
    assert (cells["log_ratio"] == 0).all()
    assert "3 cells paired replicate by replicate" in gate_verdicts.render(report)


def as_candidate(baseline: pd.DataFrame, errors: pd.Series, config_hash: str) -> regress.Candidate:
    """A candidate whose cells have ``errors`` replicate by replicate."""
    cells = baseline.assign(
        failed=0,
        status_example="",
        coverage=math.nan,
        level=math.nan,
        error=errors.map(lambda e: math.fsum(e) / e.size),
        **{REPLICATES: errors},
    )
    return regress.Candidate(cells, config_hash)


def test_last_bit_differences_of_another_cpu_never_fail(baseline) -> None:
    rng = np.random.default_rng(26)

    def nudged(errors: np.ndarray) -> np.ndarray:
        moved = errors.copy()
        which = rng.random(errors.size) < 0.3
        ulps = rng.integers(-4, 5, errors.size)
        moved[which] = moved[which] * (1 + ulps[which] * np.finfo(float).eps)
        return moved

    errors = baseline[REPLICATES].map(nudged)
    config = baseline["config_hash"].iloc[0]
    report = gate_verdicts.compare(baseline, as_candidate(baseline, errors, config))
    assert report.passed and report.cells["paired"].all()
    assert report.cells["log_ratio"].abs().max() < 1e-12
    assert not report.cells["identical"].all()


def test_the_paired_test_fails_a_cell_beyond_its_tolerance_only(baseline) -> None:
    config = baseline["config_hash"].iloc[0]
    key = baseline.index[7]
    for factor, verdict in ((1.05, "WORSE"), (0.95, "BETTER?"), (1.015, "ok")):
        errors = baseline[REPLICATES].copy()
        errors[key] = errors[key] * factor
        report = gate_verdicts.compare(baseline, as_candidate(baseline, errors, config))
        cells = report.cells
        assert cells.loc[key, "verdict"] == verdict
        assert (cells.drop(index=key)["verdict"] == "ok").all()
        assert cells.loc[key, "tolerance"] == gate_baseline.MIN_PAIRED_EFFECT  # SE 0


def test_paired_z_test_is_calibrated_when_the_noise_is_redrawn() -> None:
    """Each replicate's data set the scale of both errors (dependent within a pair,
    independent across pairs); the noise is drawn anew: the null of equal expected errors.
    Over 4000 cells, |d| / SE exceeds the two-sided 1% and 5% points as often as it should."""
    rng = np.random.default_rng(2026)
    cells, replicates = 4000, 200
    scale = rng.lognormal(0.0, 0.5, (cells, replicates))  # the data's effect
    before = scale * rng.gamma(4.0, 0.25, (cells, replicates))
    after = scale * rng.gamma(4.0, 0.25, (cells, replicates))
    index = pd.RangeIndex(cells)
    table = gate_verdicts.paired_tests(
        pd.DataFrame({REPLICATES: list(before)}, index=index),
        pd.DataFrame({REPLICATES: list(after)}, index=index),
        cells,
    )
    z = (table["log_ratio"] / table["se"]).abs().to_numpy()
    for level in (0.05, 0.01):
        rate = float(np.mean(z > stats.norm.ppf(1 - level / 2)))
        sd = math.sqrt(level * (1 - level) / cells)
        assert abs(rate - level) < 4 * sd, (level, rate)


def test_update_writes_the_companion_and_a_broken_one_is_refused(baseline, tmp_path) -> None:
    config = baseline["config_hash"].iloc[0]
    candidate = as_candidate(baseline, baseline[REPLICATES], config)
    target = tmp_path / "mine.csv"
    gate_baseline.write_baseline(target, gate_baseline.make_baseline(candidate))
    companion = gate_baseline.replicates_path(target)
    assert companion.name == "mine_replicates.csv"
    written = regress.read_baseline(target)
    assert gate_verdicts.compare(written, candidate).cells["identical"].all()
    lines = companion.read_text().splitlines()
    fields = lines[3].split(",")
    values = fields[-1].split()
    values[0] = repr(float(values[0]) * 2)
    lines[3] = ",".join([*fields[:-1], " ".join(values)])
    companion.write_text("\n".join(lines) + "\n")
    with pytest.raises(regress.GateInputError, match=r"line 4: the errors average .*--update"):
        regress.read_baseline(target)
    companion.write_text("\n".join([*lines[:3], *lines[4:]]) + "\n")  # a cell lost: unpaired
    lines[3] = ",".join([*fields[:-1], " ".join(fields[-1].split()[:-1])])
    companion.write_text("\n".join(lines) + "\n")
    with pytest.raises(regress.GateInputError, match="199 errors for 200 replicates"):
        regress.read_baseline(target)
