"""The gate's statistics: per-cell error of a run, its standard error and tolerance, and the
baseline file that stores them (see :mod:`experiments.regress` for the test itself).

A *cell* is one (dataset, subset, statistic, mechanism label, ε); its error is the mean over
the ``R`` replicates of the per-replicate error ``e_r`` of its statistic
(:data:`GATE_METRICS`: ``mean_abs_error``; ``total_rank_error`` for m quantiles at once;
``mean_count_gap`` for the mode, whose output is categorical), ``m̄ = (1/R) Σ_r e_r``
(summed exactly, :func:`math.fsum`), with ``SE(ln m̄) ≈ s / (√R · m̄)`` by the delta
method (Casella & Berger, *Statistical Inference*, §5.5.4), ``s`` the replicate-to-replicate
SD.  The baseline stores,
per cell, ``m̄``, ``s``, ``R``, ``SE(ln m̄)``, the tolerance, the cell's config
hash and the sweep's.  Its companion ``<name>_replicates.csv`` (:func:`replicates_path`)
stores, per cell, the ``R`` per-replicate errors ``e_r`` themselves, in replicate order,
which the paired test of :mod:`experiments.gate.verdicts` needs (a baseline without one
is compared by the unpaired test alone).  Both ship with the package
(``experiments/baselines`` installed, ``results/baselines`` in the repository), so
``duff-regress`` runs from any directory.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from experiments.base.atomic_files import write_text_atomic
from experiments.harness import csv_tables, results_reader, run_manifest
from experiments.harness.results import RUN_FILE, SUMMARY_FILE, config_hash
from mechanisms.statistics import MedianInterval


def _baseline_path() -> Path:
    installed = Path(__file__).resolve().parents[1] / "baselines" / "regression.csv"
    repository = Path(__file__).resolve().parents[2] / "results" / "baselines" / "regression.csv"
    return installed if installed.is_file() else repository


BASELINE = _baseline_path()
"""The project's baseline: ``results/baselines/regression.csv`` (shipped with the package)."""
EXPERIMENT = "regression"
"""The Hydra experiment whose sweep the gate runs (``conf/experiment/regression.yaml``)."""
ALPHA = 0.01
"""Family-wise false-alarm rate of the gate (Bonferroni over the cells)."""
MIN_EFFECT = math.log(1.1)
"""Smallest log-ratio that may fail an unpaired cell: a change of the error by less than 10%
never does."""
MIN_PAIRED_EFFECT = math.log(1.02)
"""Smallest log-ratio that may fail a paired cell (:mod:`experiments.gate.verdicts`): a change
of the error by less than 2% never does, so neither do the last bits in which another
CPU's floating point differs (relative changes below 1e-13 in the regression sweep)."""
CELL = ("dataset", "subset", "statistic", "mechanism", "epsilon")
GATE_METRICS = {
    "mode": "mean_count_gap",
    "median_interval": "mean_width",
    "quantiles": "total_rank_error",
}
"""The ``summary.csv`` column a cell's error is read from, by statistic kind (any other kind:
``mean_abs_error``): for a confidence interval, its mean width (its coverage is checked
against the nominal level instead, :func:`experiments.gate.verdicts.compare`)."""
BASELINE_COLUMNS = (
    *CELL,
    "replicates",
    "error",
    "replicate_sd",
    "se_log",
    "tolerance",
    "cell_hash",
    "config_hash",
)
EXACT = ("epsilon", "error", "replicate_sd", "se_log", "tolerance")
"""Float columns of the baseline, parsed by :class:`float` (exact round trip)."""
REPLICATE_COLUMNS = (*CELL, "cell_hash", "errors")
"""Columns of the companion file: a cell, its hash and its per-replicate errors ``e_r``
(``errors``: the shortest exact decimal of each, separated by spaces, in replicate order)."""
REPLICATES = "replicate_errors"
"""Column of a baseline's and a candidate's cells holding the per-replicate errors (a float
array in replicate order), or None where the cell cannot be paired."""
SAME_RUN_RTOL = 1e-9
"""How far the mean of a companion's errors may be from the baseline's ``error`` (relative):
the two come from one run, or from runs of the same code on CPUs whose floating point
differs in the last bits."""


class GateInputError(ValueError):
    """A missing or inconsistent baseline or candidate (exit status 2)."""


def cell_hashes(
    numbers: Mapping[str, Any],
) -> dict[tuple[str, str, str, float], tuple[str, int]]:
    """``(dataset id, statistic id, label, ε) → (cell hash, replicates)`` from a run's
    ``numbers``.

    The cell hash covers the format, seed, trials, δ rule, the dataset's, the
    statistic's and the mechanism's entries and ε: everything that determines the
    cell's numbers (:mod:`experiments.base.seeding` keys every stream on the cell's identity).
    """
    try:
        shared = {key: numbers[key] for key in ("format", "seed", "trials", "delta")}
        result = {}
        for dataset, statistic, mechanism, epsilon in itertools.product(
            numbers["datasets"], numbers["statistics"], numbers["mechanisms"], numbers["epsilons"]
        ):
            cell = {**shared, "dataset": dataset, "statistic": statistic, "mechanism": mechanism}
            digest = config_hash({**cell, "epsilon": float(epsilon)})[:16]
            key = (dataset["id"], statistic["id"], mechanism["label"], float(epsilon))
            result[key] = (digest, int(dataset.get("replicates", 1)))
    except (KeyError, TypeError, ValueError) as err:
        raise GateInputError(f"run.json 'numbers' is malformed ({err!r})") from None
    return result


# ---------------------------------------------------------------- candidates


@dataclass(frozen=True)
class Candidate:
    """Per-cell statistics of one run (index: :data:`CELL`) and its sweep's config hash."""

    cells: pd.DataFrame
    config_hash: str


def read_candidate(path: Path) -> Candidate:
    """A complete run's cell statistics: a results directory, or its ``summary.csv``.

    The directory is read by :func:`experiments.harness.results_reader.load`, which refuses
    a ``run.json`` whose numbers do not match its hash and a ``summary.csv`` that is
    truncated, corrupt or not one row per cell of the run's plan.
    """
    path = Path(path)
    directory = path.parent if path.name == SUMMARY_FILE and path.is_file() else path
    if not directory.is_dir():
        raise GateInputError(f"candidate {path}: not a results directory or its {SUMMARY_FILE}")
    results = results_reader.load(directory)
    if results.manifest.get("status") != "complete":
        raise GateInputError(
            f"candidate {directory / RUN_FILE}: the run is not complete (status "
            f"{results.manifest.get('status')!r}); finish it by rerunning with its results_dir"
        )
    return Candidate(cell_statistics(results.summary, results.numbers), results.config_hash)


def cell_statistics(summary: pd.DataFrame, numbers: Mapping[str, Any]) -> pd.DataFrame:
    """One row per cell: replicates, failed rows, m̄ and the replicate SD, cell hash, for
    a confidence interval its mean coverage and nominal level ``1 − α`` (NaN otherwise),
    and the per-replicate errors in replicate order (:data:`REPLICATES`; None when a
    replicate failed or has no error).

    ``summary`` holds one row per replicate of every cell of ``numbers``' plan
    (:func:`experiments.harness.results_reader.load` checks it).
    """
    hashes = cell_hashes(numbers)
    kinds = run_manifest.statistic_kinds(numbers)
    levels = {
        str(s.get("id")): 1.0 - float(s["alpha"])
        for s in numbers.get("statistics", [])
        if s.get("kind") == MedianInterval.kind
    }
    rows = []
    for (dataset, subset, statistic, label, epsilon), group in summary.groupby(
        list(CELL), sort=False
    ):
        dataset_id = f"{dataset}/{subset}" if subset else dataset
        digest, replicates = hashes[(dataset_id, statistic, label, epsilon)]
        group = group.sort_values("replicate")
        ok = (group["status"] == "ok").to_numpy()
        errors = group[GATE_METRICS.get(kinds.get(statistic, ""), "mean_abs_error")]
        errors = errors.to_numpy(dtype=np.float64)[ok]
        pairable = bool(ok.all()) and bool(np.isfinite(errors).all())
        failed = int(np.count_nonzero(~ok))
        mean = math.fsum(errors) / errors.size if errors.size else math.nan
        coverages = group["coverage"].to_numpy()[ok]
        coverage = math.fsum(coverages) / coverages.size if coverages.size else math.nan
        rows.append(
            {
                "dataset": dataset,
                "subset": subset,
                "statistic": statistic,
                "mechanism": label,
                "epsilon": float(epsilon),
                "replicates": replicates,
                "failed": failed,
                "status_example": group["status"].to_numpy()[~ok][0] if failed else "",
                "error": mean,
                "replicate_sd": float(np.std(errors, ddof=1)) if errors.size > 1 else math.nan,
                "cell_hash": digest,
                "coverage": coverage if statistic in levels else math.nan,
                "level": levels.get(statistic, math.nan),
                REPLICATES: errors if pairable else None,
            }
        )
    columns = [*CELL, "replicates", "failed", "status_example", "error", "replicate_sd"]
    table = pd.DataFrame(rows, columns=[*columns, "cell_hash", "coverage", "level", REPLICATES])
    return table.set_index(list(CELL)).sort_index()


# ------------------------------------------------------------------ baseline


def tolerances(se_log: np.ndarray, cells: int) -> np.ndarray:
    """``max(MIN_EFFECT, z_{1−α/(2C)}·√2·SE)`` for each cell's SE of ``log m̄``."""
    z = stats.norm.ppf(1.0 - ALPHA / (2.0 * cells))
    return np.maximum(MIN_EFFECT, z * math.sqrt(2.0) * np.asarray(se_log, dtype=np.float64))


def make_baseline(candidate: Candidate) -> pd.DataFrame:
    """The baseline table of a complete, failure-free run (one row per cell)."""
    cells = candidate.cells
    if cells.empty:
        raise GateInputError("cannot write a baseline: the candidate has no cells")
    bad = cells[(cells["failed"] > 0) | ~(cells["error"] > 0)]
    if len(bad):
        first = " / ".join(map(str, bad.index[0]))
        raise GateInputError(
            f"cannot write a baseline: {len(bad)} cells have failed rows or zero error "
            f"(e.g. {first}: {bad['status_example'].iloc[0] or 'zero error'})"
        )
    if (cells["replicates"] < 2).any():
        raise GateInputError("cannot write a baseline: every cell needs at least 2 replicates")
    baseline = cells.reset_index()
    baseline["se_log"] = baseline["replicate_sd"] / (
        np.sqrt(baseline["replicates"]) * baseline["error"]
    )
    baseline["tolerance"] = tolerances(baseline["se_log"].to_numpy(), len(baseline))
    baseline["config_hash"] = candidate.config_hash
    return baseline.loc[:, [*BASELINE_COLUMNS, REPLICATES]]


def replicates_path(path: Path) -> Path:
    """The companion of baseline ``path``: ``<stem>_replicates.csv`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.stem}_replicates.csv")


def write_baseline(path: Path, baseline: pd.DataFrame) -> None:
    """Write the baseline CSV and, for its cells with per-replicate errors, its companion
    (:func:`replicates_path`), each atomically (floats in their shortest exact form)."""
    path = Path(path)
    errors = baseline[REPLICATES] if REPLICATES in baseline else pd.Series(None, baseline.index)
    rows = baseline.loc[errors.notna(), [*CELL, "cell_hash"]]
    rows["errors"] = [" ".join(map(repr, map(float, e))) for e in errors[errors.notna()]]
    write_text_atomic(replicates_path(path), rows.to_csv(index=False))  # never a stale one
    write_text_atomic(path, baseline.loc[:, list(BASELINE_COLUMNS)].to_csv(index=False))


def _consistent_tolerance(baseline: pd.DataFrame) -> pd.Series:
    """Which rows have the tolerance :func:`tolerances` gives their ``se_log``."""
    expected = tolerances(baseline["se_log"].to_numpy(), len(baseline))
    same = np.isclose(baseline["tolerance"], expected, rtol=1e-12, atol=0.0)
    return pd.Series(same, index=baseline.index)


def _consistent_se_log(baseline: pd.DataFrame) -> pd.Series:
    """Which rows have ``se_log = s / (√R · m̄)`` (delta method, module docstring)."""
    root = np.sqrt(baseline["replicates"].to_numpy(dtype=np.float64))
    expected = baseline["replicate_sd"] / (root * baseline["error"])
    same = np.isclose(baseline["se_log"], expected, rtol=1e-12, atol=0.0)
    return pd.Series(same, index=baseline.index)


BASELINE_SPEC = csv_tables.TableSpec(
    "a regression baseline", BASELINE_COLUMNS, floats=EXACT, ints=("replicates",)
)
BASELINE_CHECKS: tuple[csv_tables.Check, ...] = (
    csv_tables.at_least("epsilon", strict=True),
    ("replicates", "below 2 (no replicate SD)", lambda f: f["replicates"] >= 2),
    csv_tables.at_least("error", strict=True),
    csv_tables.at_least("replicate_sd"),
    csv_tables.at_least("se_log"),
    csv_tables.at_least("tolerance", strict=True),
    ("se_log", "not replicate_sd / (√replicates · error)", _consistent_se_log),
    ("tolerance", "not max(MIN_EFFECT, z·√2·se_log) over these cells", _consistent_tolerance),
    ("cell_hash", "empty", lambda f: f["cell_hash"] != ""),
)
"""Every row of a baseline: numbers :func:`make_baseline` can write, and only those."""


def read_baseline(path: Path) -> pd.DataFrame:
    """Read and check a baseline written by :func:`write_baseline` (index: :data:`CELL`).

    A non-finite, negative or inconsistent number (say a tolerance of ``inf``,
    which would switch the cell's test off) is refused, naming its line and column.
    """
    if not Path(path).is_file():
        raise GateInputError(
            f"no baseline at {path}; create it with: python -m experiments.regress --update"
        )
    remedy = "regenerate it with --update"
    try:
        baseline = csv_tables.parse_table(Path(path), BASELINE_SPEC)
        csv_tables.check_rows(baseline, BASELINE_CHECKS, Path(path))
    except results_reader.ResultsError as err:
        raise GateInputError(f"baseline {err}; {remedy}") from None
    if baseline.empty or baseline["config_hash"].nunique() != 1:
        raise GateInputError(f"baseline {path} is empty or mixes configs; {remedy}")
    duplicated = baseline.duplicated(list(CELL))
    if duplicated.any():
        line = baseline.loc[duplicated, "line"].iloc[0]
        raise GateInputError(f"baseline {path}: line {line} repeats an earlier cell; {remedy}")
    baseline = baseline.drop(columns="line").set_index(list(CELL)).sort_index()
    errors = read_replicates(replicates_path(path), baseline)
    return baseline.assign(**{REPLICATES: [errors.get(key) for key in baseline.index]})


REPLICATES_SPEC = csv_tables.TableSpec(
    "a regression baseline's per-replicate errors", REPLICATE_COLUMNS, floats=("epsilon",)
)


def read_replicates(path: Path, baseline: pd.DataFrame) -> dict[tuple, np.ndarray]:
    """The per-replicate errors of the companion file ``path`` by cell ({} when there is
    none), each checked against its ``baseline`` row: the same cell hash, ``replicates``
    finite errors >= 0 whose mean is the row's ``error`` (to :data:`SAME_RUN_RTOL`)."""
    if not Path(path).is_file():
        return {}
    remedy = "regenerate the baseline with --update"
    try:
        table = csv_tables.parse_table(Path(path), REPLICATES_SPEC)
    except results_reader.ResultsError as err:
        raise GateInputError(f"baseline companion {err}; {remedy}") from None
    found: dict[tuple, np.ndarray] = {}
    for row in table.itertuples(index=False):
        key = tuple(getattr(row, column) for column in CELL)
        where = f"baseline companion {path}: line {row.line}"
        if key not in baseline.index or key in found:
            what = "repeats a cell" if key in found else "is a cell the baseline does not have"
            raise GateInputError(f"{where} {what}; {remedy}")
        cell = baseline.loc[key]
        try:
            errors = np.asarray([float(x) for x in str(row.errors).split()], dtype=np.float64)
        except ValueError:
            raise GateInputError(f"{where}: errors are not numbers; {remedy}") from None
        mean = math.fsum(errors) / errors.size if errors.size else math.nan
        problem: str | None = None
        if row.cell_hash != cell["cell_hash"]:
            problem = f"cell hash {row.cell_hash} is not the baseline's {cell['cell_hash']}"
        elif errors.size != cell["replicates"]:
            problem = f"{errors.size} errors for {cell['replicates']} replicates"
        elif not (np.isfinite(errors).all() and (errors >= 0).all()):
            problem = "an error is not a finite number >= 0"
        elif not abs(mean - cell["error"]) <= SAME_RUN_RTOL * cell["error"]:
            problem = f"the errors average {mean!r}, not the baseline's error {cell['error']!r}"
        if problem:
            raise GateInputError(f"{where}: {problem}; {remedy}")
        errors.setflags(write=False)
        found[key] = errors
    return found
