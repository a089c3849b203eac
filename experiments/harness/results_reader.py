"""One validating reader of a results directory: ``run.json``, ``summary.csv``, ``estimates.npz``.

:func:`load` reads what the harness wrote (formats: :mod:`experiments.harness.results`)
and refuses, with one :class:`ResultsError` naming the file, what it did not
write whole:

* ``run.json``: a JSON object whose ``numbers`` hash to its ``config_hash`` and
  name the plan (datasets with their replicates, mechanism entries, ε);
* ``summary.csv``: exactly the columns :data:`experiments.harness.results.SUMMARY_COLUMNS`,
  every line complete (a file cut in the middle of a line, or of its last field,
  is truncated), every value of its column's type, and one row per cell of the
  plan, ``datasets × replicates × statistics × mechanisms × ε``, no more and no fewer;
  ``status == "ok"`` rows have finite, non-negative errors (and a finite ``true_value``,
  except the rows of m quantiles at once, whose T(S) is a vector);
* ``estimates.npz`` (when asked for): a ``rows × trials`` matrix whose identity
  arrays (:data:`experiments.harness.results.ESTIMATE_KEYS`) repeat the summary's rows;
* both: the SHA-256 that ``run.json`` records for them (``checksums``), so a value
  edited by hand, rows swapped or a file copied from another run are refused
  (:func:`verify_checksum`).  Runs of harnesses that did not record checksums (the
  committed reference runs of formats 3 to 5) are read unverified
  (:attr:`Results.verified` is False); a ``run.json`` of this harness always has them.

Float columns are parsed by :class:`float` from their text
(:mod:`experiments.harness.csv_tables`), so every number is the one the harness wrote,
bit for bit (the regression gate relies on it).

Usage::

    results = load(Path("results/figure1/2024-01-01_00-00-00"))
    results.summary            # typed DataFrame, plan-complete
    results.mechanisms["duff"] # registry name, options, takes_delta of a label
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments.harness.csv_tables import (
    Check,
    ResultsError,
    TableSpec,
    at_least,
    check_rows,
    finite,
    parse_table,
)
from experiments.harness.interval_metrics import INTERVAL_METRICS
from experiments.harness.metrics import POPULATION_METRICS
from experiments.harness.results import (
    ESTIMATE_KEYS,
    ESTIMATES_FILE,
    RUN_FILE,
    SUMMARY_COLUMNS,
    SUMMARY_FILE,
    file_sha256,
)
from experiments.harness.run_manifest import (
    KEY,
    MechanismInfo,
    expected_cells,
    plan_mechanisms,
    read_manifest,
    statistic_kinds,
)
from experiments.harness.vector_metrics import VECTOR_METRICS
from mechanisms.core.validation import check_integer
from mechanisms.statistics import MedianInterval, Quantiles

TEXT_COLUMNS = (
    "dataset",
    "subset",
    "mechanism",
    "registry_name",
    "statistic",
    "neighbouring",
    "status",
)
INT_COLUMNS = ("replicate", "n", "trials")
BOOL_COLUMNS = ("private", "guarantee_met")
FLOAT_COLUMNS = tuple(
    c for c in SUMMARY_COLUMNS if c not in (*TEXT_COLUMNS, *INT_COLUMNS, *BOOL_COLUMNS)
)
"""Every other column of ``summary.csv`` is a number (a new text column must be named
in :data:`TEXT_COLUMNS`, or the reader refuses its values)."""


@dataclass(frozen=True)
class Results:
    """A checked results directory."""

    directory: Path
    manifest: Mapping[str, Any]
    """``run.json`` as written."""
    summary: pd.DataFrame
    """``summary.csv``, typed, one row per cell of the plan, in the file's order."""
    mechanisms: Mapping[str, MechanismInfo]
    """The plan's mechanism entries by label, in the plan's order."""
    estimates: Mapping[str, np.ndarray] | None = None
    """``estimates.npz`` (its ``estimates`` matrix row-aligned with ``summary``), if read."""
    verified: bool = False
    """Whether the files read matched the checksums of ``run.json`` (False: a run of a
    harness that recorded none, read unverified)."""

    @property
    def numbers(self) -> Mapping[str, Any]:
        """What determines the numbers (``run.json``'s ``numbers``)."""
        return self.manifest["numbers"]

    @property
    def config_hash(self) -> str:
        """``run.json``'s ``config_hash`` (checked against its numbers)."""
        return str(self.manifest["config_hash"])


def rebuild_hint(results_dir: Path) -> str:
    """The remedy for a broken summary or estimates file: rebuild it from the unit files."""
    return f"rerun the experiment with results_dir={results_dir} to rebuild it from its unit files"


# ---------------------------------------------------------------------- checksums


def verify_checksum(manifest: Mapping[str, Any], path: Path) -> bool:
    """Check ``path`` against the SHA-256 that ``run.json`` (``manifest``) records for it.

    Returns False for a run of a harness that recorded no checksums (no ``checksums``
    and no ``code`` in its ``run.json``: formats 3 to 5), True when the file matches;
    raises :class:`ResultsError` (naming the file and the remedy, in one line) when it
    does not, or when a run that records checksums has none for it (a run not finished).
    A missing file is left to its reader (``no such file``).
    """
    checksums = manifest.get("checksums")
    if checksums is None and "code" not in manifest:
        return False
    if not path.is_file():
        return True
    recorded = checksums.get(path.name) if isinstance(checksums, Mapping) else None
    if not isinstance(recorded, str):
        raise ResultsError(
            f"{path}: run.json records no checksum of it (run status "
            f"{manifest.get('status')!r}: the run did not finish writing it); "
            f"{rebuild_hint(path.parent)}"
        )
    if file_sha256(path) != recorded:
        raise ResultsError(
            f"{path}: its SHA-256 differs from the one run.json records (the file was edited, "
            f"damaged or replaced after the run wrote it); {rebuild_hint(path.parent)}"
        )
    return True


# --------------------------------------------------------------------- summary.csv

SUMMARY_SPEC = TableSpec(
    "this harness's summary.csv", SUMMARY_COLUMNS, FLOAT_COLUMNS, INT_COLUMNS, BOOL_COLUMNS
)
ADDED_IN_FORMAT = {
    4: ("answer_rate", "hit_rate", "mean_count_gap"),
    5: INTERVAL_METRICS,
}
"""Columns each results format added: 4 the mode, the mean and ⊥; 5 the intervals."""
ADDED_WITHIN_FORMAT_5 = (VECTOR_METRICS, POPULATION_METRICS)
"""Groups of columns added to format 5 without a new number (m quantiles at once; the errors
against the population): the format is hashed into every cell of the gate's baseline, and no
number of an existing cell changed, so a format-5 ``summary.csv`` has each group or not, and
its header says which."""
WITHIN_FORMAT_5_COLUMNS = frozenset(c for group in ADDED_WITHIN_FORMAT_5 for c in group)


def _spec_of_format(version: int, present: frozenset[str] = frozenset()) -> TableSpec:
    """The ``summary.csv`` layout a results format wrote (earlier ones lack later columns;
    a format-5 file, the groups of :data:`ADDED_WITHIN_FORMAT_5` not in ``present``)."""
    later = {c for added, columns in ADDED_IN_FORMAT.items() if added > version for c in columns}
    later |= WITHIN_FORMAT_5_COLUMNS - present
    columns = tuple(c for c in SUMMARY_COLUMNS if c not in later)
    return TableSpec(
        f"a format-{version} summary.csv", columns, FLOAT_COLUMNS, INT_COLUMNS, BOOL_COLUMNS
    )


def _groups_in_header(path: Path) -> frozenset[str]:
    """The columns of the groups of :data:`ADDED_WITHIN_FORMAT_5` whose every column the header
    line of ``path`` names (a missing file: all, so that the full layout's reader reports it)."""
    try:
        with open(path, encoding="utf-8") as handle:
            header = set(handle.readline().rstrip("\r\n").split(","))
    except (OSError, UnicodeDecodeError):
        return WITHIN_FORMAT_5_COLUMNS
    return frozenset(c for group in ADDED_WITHIN_FORMAT_5 if set(group) <= header for c in group)


def _read_summary(path: Path, numbers: Mapping[str, Any]) -> pd.DataFrame:
    """``summary.csv`` in the layout of its run's format; an earlier format's file gains the
    columns it lacks, as NaN (no interval rows before format 5, no vector rows and no
    population errors in a format-5 file without those groups of
    :data:`ADDED_WITHIN_FORMAT_5`), except ``answer_rate``, which is 1 on the ok rows of
    format 3 (every mechanism then answered every trial)."""
    version = numbers.get("format")
    present = _groups_in_header(path) if version == 5 else frozenset()
    if version not in (3, 4, 5) or (version == 5 and present == WITHIN_FORMAT_5_COLUMNS):
        return parse_table(path, SUMMARY_SPEC)
    summary = parse_table(path, _spec_of_format(version, present))
    for column in SUMMARY_COLUMNS:
        if column not in summary:
            summary[column] = np.nan
    if version == 3:
        summary["answer_rate"] = np.where(summary["status"] == "ok", 1.0, np.nan)
    return summary[["line", *SUMMARY_COLUMNS]]


ROW_CHECKS: tuple[Check, ...] = (
    ("status", "empty", lambda f: f["status"] != ""),
    ("lower", "not a number below +inf", lambda f: f["lower"] < np.inf),
    (
        "upper",
        "not a number above lower and -inf",
        lambda f: (f["upper"] > -np.inf) & (f["upper"] >= f["lower"]),
    ),
    at_least("delta"),
    ("trials", "below 1", lambda f: f["trials"] >= 1),
    ("n", "negative", lambda f: f["n"] >= 0),
)
"""Checks of every row of ``summary.csv``."""

TRUTH_CHECKS: tuple[Check, ...] = (("true_value", "not finite", lambda f: finite(f, "true_value")),)
"""Checks of the ok rows of a statistic whose T(S) is a number (NaN for a vector one)."""

OK_CHECKS: tuple[Check, ...] = (
    (
        "answer_rate",
        "not in [0, 1]",
        lambda f: (f["answer_rate"] >= 0) & (f["answer_rate"] <= 1),
    ),
    (
        "mean_abs_error",
        "not NaN although no trial was answered",
        lambda f: (f["answer_rate"] > 0) | f["mean_abs_error"].isna(),
    ),
)
"""Checks of the rows with ``status == "ok"``."""

ANSWERED_CHECKS: tuple[Check, ...] = (
    at_least("mean_abs_error"),
    at_least("rmse"),
    ("mean_error", "not finite", lambda f: finite(f, "mean_error")),
)
"""Checks of the ok point-estimate rows with at least one answer (not ⊥): their errors are
defined."""

INTERVAL_CHECKS: tuple[Check, ...] = (
    ("coverage", "not in [0, 1]", lambda f: (f["coverage"] >= 0) & (f["coverage"] <= 1)),
    at_least("mean_width"),
    at_least("nonprivate_width"),
)
"""Checks of the ok rows of confidence intervals (:mod:`experiments.harness.interval_metrics`)."""

VECTOR_CHECKS: tuple[Check, ...] = (
    at_least("total_rank_error"),
    at_least("max_rank_error"),
    at_least("mean_rank_error"),
)
"""Checks of the ok rows of m quantiles at once (:mod:`experiments.harness.vector_metrics`)."""


def check_cells(
    frame: pd.DataFrame, expected: pd.DataFrame, mechanisms: Mapping[str, MechanismInfo], path: Path
) -> None:
    """One row per cell of the plan (``expected``), each with its entry's registry name."""
    keys = pd.MultiIndex.from_frame(frame[list(KEY)])
    duplicated = keys.duplicated()
    if duplicated.any():
        line = int(frame.loc[duplicated, "line"].iloc[0])
        raise ResultsError(
            f"{path}: line {line} repeats the cell of an earlier row; {rebuild_hint(path.parent)}"
        )
    planned = pd.MultiIndex.from_frame(expected)
    missing, extra = planned.difference(keys, sort=False), keys.difference(planned, sort=False)
    if len(missing) or len(extra):
        parts = [f"{len(frame)} rows where run.json's plan has {len(planned)}"]
        if len(missing):
            parts.append(f"{len(missing)} missing (e.g. {_cell_name(missing[0])})")
        if len(extra):
            parts.append(f"{len(extra)} not in the plan (e.g. {_cell_name(extra[0])})")
        raise ResultsError(f"{path}: {'; '.join(parts)}; {rebuild_hint(path.parent)}")
    names = frame["mechanism"].map({label: m.name for label, m in mechanisms.items()})
    wrong = frame["registry_name"] != names
    if wrong.any():
        row = frame.loc[wrong].iloc[0]
        raise ResultsError(
            f"{path}: line {row['line']}: registry_name {row['registry_name']!r} is not "
            f"{names[wrong].iloc[0]!r}, the name run.json gives label {row['mechanism']!r}"
        )


def _cell_name(key: tuple) -> str:
    dataset, subset, replicate, statistic, label, epsilon = key
    where = f"{dataset}/{subset}" if subset else dataset
    return f"{where} replicate {replicate} {statistic} {label} ε={epsilon:g}"


# ------------------------------------------------------------------ estimates.npz


def read_estimates(path: Path, summary: pd.DataFrame, trials: int) -> dict[str, np.ndarray]:
    """``estimates.npz``, checked to hold ``trials`` estimates for each row of ``summary``."""
    if not path.is_file():
        raise ResultsError(
            f"{path}: no such file; the per-trial estimates are kept only by a run with "
            "keep_estimates=true"
        )
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as stored:
            arrays = {key: stored[key] for key in (*ESTIMATE_KEYS, "estimates")}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        hint = rebuild_hint(path.parent)
        raise ResultsError(f"{path}: unreadable ({err}); {hint}") from None
    shape = (len(summary), trials)
    if arrays["estimates"].shape != shape or arrays["estimates"].dtype != np.float64:
        raise ResultsError(
            f"{path}: estimates of shape {arrays['estimates'].shape} do not match the "
            f"{shape[0]} rows × {trials} trials of {SUMMARY_FILE}; {rebuild_hint(path.parent)}"
        )
    for key in ESTIMATE_KEYS:
        if not _same_column(arrays[key], summary[key].to_numpy()):
            raise ResultsError(
                f"{path}: its {key} column differs from {SUMMARY_FILE}'s (rows misaligned); "
                f"{rebuild_hint(path.parent)}"
            )
    return arrays


def _same_column(stored: np.ndarray, expected: np.ndarray) -> bool:
    """Whether an identity array of ``estimates.npz`` repeats a summary column (NaN = NaN)."""
    if stored.shape != expected.shape:
        return False
    try:
        if expected.dtype.kind == "f":
            return np.array_equal(stored.astype(np.float64), expected, equal_nan=True)
        return bool((stored.astype(str) == expected.astype(str)).all())
    except (TypeError, ValueError):
        return False


# -------------------------------------------------------------------------- load


def load(results_dir: Path, *, estimates: bool = False) -> Results:
    """Read and check ``results_dir`` (and its ``estimates.npz`` if ``estimates``)."""
    results_dir = Path(results_dir)
    run_path, summary_path = results_dir / RUN_FILE, results_dir / SUMMARY_FILE
    manifest = read_manifest(run_path)
    numbers = manifest["numbers"]
    described = manifest.get("mechanisms")
    display_names = {
        str(m.get("label")): str(m.get("display_name") or "")
        for m in (described if isinstance(described, list) else [])
        if isinstance(m, dict)
    }
    mechanisms = plan_mechanisms(numbers, run_path, display_names)
    expected = expected_cells(numbers, mechanisms, run_path)
    verified = verify_checksum(manifest, summary_path)
    try:
        summary = _read_summary(summary_path, numbers)
    except ResultsError as err:  # parse errors name the file and the fault: add the remedy
        if not summary_path.is_file():
            why = (
                "run.json says the run finished: the file was moved or deleted"
                if manifest.get("status") == "complete"
                else "the run did not finish"
            )
            raise ResultsError(
                f"{err} ({why}); rerun the experiment with results_dir={results_dir} to "
                "write it from its unit files"
            ) from None
        raise ResultsError(f"{err}; {rebuild_hint(results_dir)}") from None
    check_cells(summary, expected, mechanisms, summary_path)
    check_rows(summary, ROW_CHECKS, summary_path)
    ok = summary.loc[summary["status"] == "ok"]
    kinds = ok["statistic"].map(statistic_kinds(numbers))
    interval, vector = kinds == MedianInterval.kind, kinds == Quantiles.kind
    check_rows(ok.loc[~vector], TRUTH_CHECKS, summary_path)
    check_rows(ok, OK_CHECKS, summary_path)
    check_rows(ok.loc[(ok["answer_rate"] > 0) & ~interval], ANSWERED_CHECKS, summary_path)
    check_rows(ok.loc[interval], INTERVAL_CHECKS, summary_path)
    check_rows(ok.loc[vector], VECTOR_CHECKS, summary_path)
    summary = summary.drop(columns="line")
    arrays = None
    if estimates:
        try:
            trials = check_integer(numbers.get("trials"), "numbers.trials", minimum=1)
        except ValueError as err:
            raise ResultsError(f"{run_path}: {err}") from None
        estimates_path = results_dir / ESTIMATES_FILE
        verified = verify_checksum(manifest, estimates_path) and verified
        arrays = read_estimates(estimates_path, summary, trials)
    return Results(results_dir, manifest, summary, mechanisms, arrays, verified)
