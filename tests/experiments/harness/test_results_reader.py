"""experiments/harness/results_reader.py: a results directory is read whole and exactly, or
refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from results_helpers import write_results

from experiments.harness.results_reader import ResultsError, load

EPSILONS = (0.1, 2.0)


def _summary() -> pd.DataFrame:
    rows = [
        {
            "dataset": dataset,
            "subset": "",
            "replicate": replicate,
            "n": 11,
            "lower": 0.0,
            "upper": 1.0,
            "mechanism": label,
            "registry_name": label,
            "epsilon": epsilon,
            "trials": 3,
            "mean_abs_error": 0.1 + 0.2 * (replicate + 1) / 3,  # not a short decimal
            "rmse": 0.5,
            "neighbouring": "add_remove",
            "status": "ok",
        }
        for dataset in ("normal", "beta")
        for replicate in range(2)
        for label in ("duff", "quantile_em")
        for epsilon in EPSILONS
    ]
    return pd.DataFrame(rows)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    frame = _summary()
    return write_results(
        tmp_path / "run", frame, estimates=np.arange(3.0 * len(frame)).reshape(-1, 3)
    )


def test_a_whole_directory_is_read_typed_and_exact(results: Path) -> None:
    loaded = load(results, estimates=True)
    summary = loaded.summary
    assert len(summary) == 16 and list(loaded.mechanisms) == ["duff", "quantile_em"]
    assert summary["replicate"].dtype == np.int64 and summary["private"].dtype == bool
    expected = _summary()["mean_abs_error"].to_numpy()
    assert np.array_equal(summary["mean_abs_error"].to_numpy(), expected)  # bit for bit
    assert loaded.estimates["estimates"].shape == (16, 3)


def _refused(results: Path, match: str, *, estimates: bool = False) -> str:
    with pytest.raises(ResultsError) as error:
        load(results, estimates=estimates)
    assert match in str(error.value) and "\n" not in str(error.value)
    return str(error.value)


def test_broken_files_are_refused_naming_the_file(results: Path) -> None:
    summary, run = results / "summary.csv", results / "run.json"
    text = summary.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    summary.write_text(text[:-1], encoding="utf-8")
    assert _refused(results, "truncated").startswith(str(summary))
    summary.write_text("".join(lines[:-1]), encoding="utf-8")
    _refused(results, "15 rows where run.json's plan has 16; 1 missing (e.g. beta replicate 1")
    summary.write_text("".join([*lines, lines[3]]), encoding="utf-8")
    _refused(results, "line 18 repeats the cell of an earlier row")
    summary.write_text(text.replace(",duff,duff,", ",duff,laplace_ln,", 1), encoding="utf-8")
    _refused(results, "line 2: registry_name 'laplace_ln' is not 'duff'")
    summary.write_text(text, encoding="utf-8")
    manifest = json.loads(run.read_text(encoding="utf-8"))
    manifest["numbers"]["seed"] = 2
    run.write_text(json.dumps(manifest), encoding="utf-8")
    assert _refused(results, "config_hash does not match its numbers").startswith(str(run))


def test_estimates_must_repeat_the_summary_rows(results: Path) -> None:
    path = results / "estimates.npz"
    with np.load(path) as stored:
        arrays = {key: stored[key] for key in stored.files}
    np.savez(path, **{**arrays, "mechanism": arrays["mechanism"][::-1]})
    _refused(results, "its mechanism column differs from summary.csv's", estimates=True)
    np.savez(path, **{**arrays, "estimates": arrays["estimates"][:, :2]})
    _refused(results, "do not match the 16 rows × 3 trials", estimates=True)
    path.unlink()
    _refused(results, "keep_estimates=true", estimates=True)
