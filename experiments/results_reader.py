"""One validating reader of a results directory: ``run.json``, ``summary.csv``, ``estimates.npz``.

:func:`load` reads what the harness wrote (formats: :mod:`experiments.results`)
and refuses, with one :class:`ResultsError` naming the file, what it did not
write whole:

* ``run.json``: a JSON object whose ``numbers`` hash to its ``config_hash`` and
  name the plan (datasets with their replicates, mechanism entries, ε);
* ``summary.csv``: exactly the columns :data:`experiments.results.SUMMARY_COLUMNS`,
  every line complete (a file cut in the middle of a line, or of its last field,
  is truncated), every value of its column's type, and one row per cell of the
  plan, ``datasets × replicates × statistics × mechanisms × ε``, no more and no fewer;
  ``status == "ok"`` rows have finite, non-negative errors;
* ``estimates.npz`` (when asked for): a ``rows × trials`` matrix whose identity
  arrays (:data:`experiments.results.ESTIMATE_KEYS`) repeat the summary's rows.

Float columns are parsed by :class:`float` from their text
(:mod:`experiments.csv_tables`), so every number is the one the harness wrote,
bit for bit (the regression gate relies on it).

Usage::

    results = load(Path("results/figure1/2024-01-01_00-00-00"))
    results.summary            # typed DataFrame, plan-complete
    results.mechanisms["duff"] # registry name, options, takes_delta of a label
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments.csv_tables import (
    Check,
    ResultsError,
    TableSpec,
    at_least,
    check_rows,
    finite,
    parse_table,
)
from experiments.interval_metrics import INTERVAL_METRICS
from experiments.results import (
    ESTIMATE_KEYS,
    ESTIMATES_FILE,
    RUN_FILE,
    SUMMARY_COLUMNS,
    SUMMARY_FILE,
    config_hash,
)
from mechanisms.statistics import MedianInterval
from mechanisms.validation import check_integer

KEY = ("dataset", "subset", "replicate", "statistic", "mechanism", "epsilon")
"""Columns that identify a row of ``summary.csv``: one cell of the plan."""
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
class MechanismInfo:
    """A mechanism entry of ``run.json``: what the label stands for."""

    label: str
    name: str
    """Registry name (:func:`mechanisms.make`)."""
    options: Mapping[str, Any]
    takes_delta: bool
    display_name: str = ""
    """The name the class asks figures and tables to show (``""``: none given)."""
    statistics: tuple[str, ...] = ()
    """The statistic kinds the entry runs on (empty: all of the sweep's)."""


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


# ----------------------------------------------------------------------- run.json


def read_manifest(path: Path) -> dict[str, Any]:
    """``run.json`` as a dict whose ``numbers`` hash to its ``config_hash``."""
    if not path.is_file():
        raise ResultsError(f"{path}: no such file (is {path.parent} a results directory?)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResultsError(f"{path}: not readable as JSON ({err})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("numbers"), dict):
        raise ResultsError(f"{path}: expected a JSON object with a 'numbers' object")
    try:
        consistent = config_hash(manifest["numbers"]) == manifest.get("config_hash")
    except (TypeError, ValueError):
        consistent = False
    if not consistent:
        raise ResultsError(f"{path}: its config_hash does not match its numbers (edited?)")
    return manifest


def plan_mechanisms(
    numbers: Mapping[str, Any], path: Path, display_names: Mapping[str, str] | None = None
) -> dict[str, MechanismInfo]:
    """The mechanism entries of ``numbers`` by label (``path`` names run.json in errors),
    with the classes' display names by label (run.json's ``mechanisms`` list)."""
    display_names = display_names or {}
    entries: dict[str, MechanismInfo] = {}
    for entry in _list(numbers, "mechanisms", path):
        try:
            info = MechanismInfo(
                label=_text(entry["label"]),
                name=_text(entry["name"]),
                options=dict(entry.get("options") or {}),
                takes_delta=bool(entry.get("takes_delta", False)),
                display_name=str(display_names.get(entry["label"]) or ""),
                statistics=tuple(_text(kind) for kind in entry.get("statistics") or ()),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ResultsError(f"{path}: numbers.mechanisms entry {entry!r} ({err!r})") from None
        if info.label in entries:
            raise ResultsError(f"{path}: numbers.mechanisms repeats label {info.label!r}")
        entries[info.label] = info
    return entries


def expected_cells(
    numbers: Mapping[str, Any], mechanisms: Mapping[str, MechanismInfo], path: Path
) -> pd.DataFrame:
    """The rows the plan produces for ``mechanisms`` (columns :data:`KEY`), in the
    harness's order: each entry with the statistics it runs on."""
    try:
        epsilons = [float(e) for e in _list(numbers, "epsilons", path)]
        datasets = [
            (*_split_id(_text(d["id"])), int(d.get("replicates", 1)))
            for d in _list(numbers, "datasets", path)
        ]
        statistics = [
            (_text(s["id"]), _text(s.get("kind", ""))) for s in _list(numbers, "statistics", path)
        ]
    except (KeyError, TypeError, ValueError) as err:
        raise ResultsError(
            f"{path}: numbers.datasets / statistics / epsilons malformed ({err!r})"
        ) from None
    rows = [
        (dataset, subset, replicate, statistic, label, epsilon)
        for dataset, subset, replicates in datasets
        for replicate in range(replicates)
        for statistic, kind in statistics
        for label, info in mechanisms.items()
        if not info.statistics or kind in info.statistics
        for epsilon in epsilons
    ]
    return pd.DataFrame(rows, columns=list(KEY))


def statistic_kinds(numbers: Mapping[str, Any]) -> dict[str, str]:
    """The kind of each statistic id of the plan (``numbers.statistics``)."""
    return {str(s.get("id")): str(s.get("kind")) for s in numbers.get("statistics", [])}


def _list(numbers: Mapping[str, Any], key: str, path: Path) -> list[Any]:
    value = numbers.get(key)
    if not isinstance(value, list) or not value:
        raise ResultsError(f"{path}: numbers.{key} must be a non-empty list")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _split_id(dataset_id: str) -> tuple[str, str]:
    """``"vertebral/pelvic_incidence/AB"`` -> ``("vertebral", "pelvic_incidence/AB")``."""
    name, _, subset = dataset_id.partition("/")
    return name, subset


# --------------------------------------------------------------------- summary.csv

SUMMARY_SPEC = TableSpec(
    "this harness's summary.csv", SUMMARY_COLUMNS, FLOAT_COLUMNS, INT_COLUMNS, BOOL_COLUMNS
)
ADDED_IN_FORMAT = {
    4: ("answer_rate", "hit_rate", "mean_count_gap"),
    5: INTERVAL_METRICS,
}
"""Columns each results format added: 4 the mode, the mean and ⊥; 5 the intervals."""


def _spec_of_format(version: int) -> TableSpec:
    """The ``summary.csv`` layout a results format wrote (earlier ones lack later columns)."""
    later = {c for added, columns in ADDED_IN_FORMAT.items() if added > version for c in columns}
    columns = tuple(c for c in SUMMARY_COLUMNS if c not in later)
    return TableSpec(
        f"a format-{version} summary.csv", columns, FLOAT_COLUMNS, INT_COLUMNS, BOOL_COLUMNS
    )


def _read_summary(path: Path, numbers: Mapping[str, Any]) -> pd.DataFrame:
    """``summary.csv`` in the layout of its run's format; an earlier format's file gains the
    columns it lacks, as NaN (no interval rows before format 5), except ``answer_rate``,
    which is 1 on the ok rows of format 3 (every mechanism then answered every trial)."""
    version = numbers.get("format")
    if version not in (3, 4):
        return parse_table(path, SUMMARY_SPEC)
    summary = parse_table(path, _spec_of_format(version))
    for column in SUMMARY_COLUMNS:
        if column not in summary:
            summary[column] = np.nan
    if version == 3:
        summary["answer_rate"] = np.where(summary["status"] == "ok", 1.0, np.nan)
    return summary[["line", *SUMMARY_COLUMNS]]


ROW_CHECKS: tuple[Check, ...] = (
    ("status", "empty", lambda f: f["status"] != ""),
    ("lower", "not finite", lambda f: finite(f, "lower")),
    (
        "upper",
        "not a finite number >= lower",
        lambda f: finite(f, "upper") & (f["upper"] >= f["lower"]),
    ),
    at_least("delta"),
    ("trials", "below 1", lambda f: f["trials"] >= 1),
    ("n", "negative", lambda f: f["n"] >= 0),
)
"""Checks of every row of ``summary.csv``."""

OK_CHECKS: tuple[Check, ...] = (
    ("true_value", "not finite", lambda f: finite(f, "true_value")),
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
"""Checks of the ok rows of confidence intervals (:mod:`experiments.interval_metrics`)."""


def check_cells(
    frame: pd.DataFrame, expected: pd.DataFrame, mechanisms: Mapping[str, MechanismInfo], path: Path
) -> None:
    """One row per cell of the plan (``expected``), each with its entry's registry name."""
    keys = pd.MultiIndex.from_frame(frame[list(KEY)])
    duplicated = keys.duplicated()
    if duplicated.any():
        line = int(frame.loc[duplicated, "line"].iloc[0])
        raise ResultsError(f"{path}: line {line} repeats the cell of an earlier row")
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
    summary = _read_summary(summary_path, numbers)
    check_cells(summary, expected, mechanisms, summary_path)
    check_rows(summary, ROW_CHECKS, summary_path)
    ok = summary.loc[summary["status"] == "ok"]
    check_rows(ok, OK_CHECKS, summary_path)
    interval = ok["statistic"].map(statistic_kinds(numbers)) == MedianInterval.kind
    check_rows(ok.loc[(ok["answer_rate"] > 0) & ~interval], ANSWERED_CHECKS, summary_path)
    check_rows(ok.loc[interval], INTERVAL_CHECKS, summary_path)
    summary = summary.drop(columns="line")
    arrays = None
    if estimates:
        try:
            trials = check_integer(numbers.get("trials"), "numbers.trials", minimum=1)
        except ValueError as err:
            raise ResultsError(f"{run_path}: {err}") from None
        arrays = read_estimates(results_dir / ESTIMATES_FILE, summary, trials)
    return Results(results_dir, manifest, summary, mechanisms, arrays)
