"""run.json records the SHA-256 of summary.csv and estimates.npz; every reader refuses a file
that does not match (issue 26, finding 2).

Before, a value of summary.csv multiplied by 10, or two of its rows swapped, was read,
plotted and gated as if the harness had written it.  The committed reference runs, whose
run.json predates checksums, are still read (unverified).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import LAPLACE, tiny_overrides

from experiments.gate.baseline import read_candidate
from experiments.harness import results_reader
from experiments.harness.results import ESTIMATES_FILE, RUN_FILE, SUMMARY_FILE, file_sha256
from experiments.reports import cli
from experiments.run import run

PROJECT_ROOT = Path(__file__).resolve().parents[3]
REFERENCE = PROJECT_ROOT / "results" / "reference"
REFUSED = r"SHA-256 differs from the one run\.json records .*rerun the experiment with results_dir="


@pytest.fixture
def sweep(compose_config):
    return compose_config(tiny_overrides(keep_estimates="true"), [LAPLACE])


@pytest.fixture
def results(sweep, tmp_path) -> Path:
    return run(sweep, results_dir=tmp_path / "out")


def edit_lines(path: Path, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(edit(lines)), encoding="utf-8")


def times_ten(lines: list[str]) -> list[str]:
    header = lines[0].rstrip("\n").split(",")
    column = header.index("mean_abs_error")
    fields = lines[3].split(",")
    fields[column] = repr(10 * float(fields[column]))
    return [*lines[:3], ",".join(fields), *lines[4:]]


def swapped(lines: list[str]) -> list[str]:
    return [lines[0], lines[2], lines[1], *lines[3:]]


def test_a_new_run_records_the_checksums_and_reads_verified(results) -> None:
    manifest = json.loads((results / RUN_FILE).read_text())
    assert manifest["checksums"] == {
        SUMMARY_FILE: file_sha256(results / SUMMARY_FILE),
        ESTIMATES_FILE: file_sha256(results / ESTIMATES_FILE),
    }
    assert results_reader.load(results, estimates=True).verified


@pytest.mark.parametrize("edit", [times_ten, swapped], ids=["a value times 10", "rows swapped"])
def test_an_edited_summary_is_refused_by_every_reader(sweep, results, edit, capsys) -> None:
    edit_lines(results / SUMMARY_FILE, edit)
    with pytest.raises(results_reader.ResultsError, match=REFUSED) as refused:
        results_reader.load(results)
    assert "\n" not in str(refused.value) and str(results / SUMMARY_FILE) in str(refused.value)
    with pytest.raises(results_reader.ResultsError, match=REFUSED):
        read_candidate(results)  # the regression gate's reader
    assert cli.main(["figure1", str(results)]) == 2  # duff-plot
    err = capsys.readouterr().err
    assert "SHA-256 differs" in err and err.count("\n") == 1
    run(sweep, results_dir=results)  # the remedy: rebuilt from the unit files
    assert results_reader.load(results).verified


def test_edited_estimates_are_refused(results) -> None:
    path = results / ESTIMATES_FILE
    with np.load(path) as stored:
        arrays = {key: stored[key] for key in stored.files}
    arrays["estimates"][0, 0] += 1.0
    np.savez(path, **arrays)
    results_reader.load(results)  # the summary alone is intact
    with pytest.raises(results_reader.ResultsError, match=REFUSED):
        results_reader.load(results, estimates=True)


def test_a_run_that_never_finished_writing_is_refused(results) -> None:
    manifest = json.loads((results / RUN_FILE).read_text())
    manifest.update(status="running", checksums={})
    (results / RUN_FILE).write_text(json.dumps(manifest))
    with pytest.raises(results_reader.ResultsError, match="records no checksum of it"):
        results_reader.load(results)


@pytest.mark.parametrize(
    "directory", sorted(p.parent.name for p in REFERENCE.glob("*/summary.csv")) or ["none"]
)
def test_reference_runs_are_verified_when_they_record_checksums(directory) -> None:
    """Runs made before checksums existed are read unverified; later ones are verified."""
    path = REFERENCE / directory
    if not (path / SUMMARY_FILE).is_file():
        pytest.skip("no committed reference summary")
    manifest = json.loads((path / RUN_FILE).read_text())
    loaded = results_reader.load(path, estimates=(path / ESTIMATES_FILE).is_file())
    assert loaded.verified == ("checksums" in manifest) and len(loaded.summary)
