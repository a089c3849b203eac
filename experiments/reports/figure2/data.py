"""What Figures 2 and 3 (Duff paper, section 6.2 and appendix B) need from a results directory.

Input (written by ``duff-run experiment=figure2``), read by
:func:`experiments.harness.results_reader.load` with its estimates, which refuses (one
line naming the file) a ``summary.csv`` or ``estimates.npz`` that is truncated,
corrupt, or not one row per cell of the plan in ``run.json``:

* ``summary.csv``: the median rows of dataset ``vertebral`` have
  ``subset = "<measurement>/<class>"``, the bounds ``[lower, upper]`` (the
  measurement's range over both classes), ``n``, δ, ``true_value`` (the class's
  lower median) and ``status``.  Rows whose status is not ``"ok"`` are left out
  and listed on stderr and in the table.
* ``estimates.npz``: one row of ``trials`` estimates per row of ``summary.csv``.
* ``run.json``: where the raw data was read from (``datasets[].source``) and
  the SHA-256 of every (measurement, class) subset (``numbers.datasets``).
  The raw data for the first column of panels is loaded again with the
  project's loader (:class:`experiments.data.vertebral.VertebralColumn`) from an
  explicit path, else from that recorded file, else from the loader's default
  search, and refused unless it is the data the estimates were computed on.

Which series is LaplaceLN and which is Duff follows from what each mechanism is
(:mod:`experiments.reports.style`), not from its label.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from experiments.data.datasets import DatasetError, FixedDataset
from experiments.data.vertebral import VERTEBRAL_CLASSES, VERTEBRAL_MEASUREMENTS, VertebralColumn
from experiments.harness import results_reader
from experiments.harness.results import SUMMARY_FILE
from experiments.reports import style
from experiments.reports.selection import ReportError, median_rows, split_failed

DATASET = "vertebral"
BASELINE = "laplace_ln"
DUFF = "duff"
FIRST_FAMILIES = (BASELINE, DUFF)
"""Families (:attr:`experiments.reports.families.Family.key`) drawn first and in this order
(the paper's panels 2 and 3); the first series of each is the table's LaplaceLN and Duff."""
COMMAND = "duff-plot figure2"
"""How messages on stderr name the command."""


@dataclass(frozen=True)
class Cell:
    """The stored estimates of one mechanism on one (measurement, class) dataset."""

    measurement: str
    label: str
    mechanism: str
    estimates: np.ndarray
    true_value: float
    lower: float
    upper: float
    n: int
    delta: float
    seconds: float


@dataclass(frozen=True)
class Figure2Data:
    """What the figures and the table need from a results directory."""

    cells: dict[tuple[str, str, str], Cell]
    """Keyed by (measurement, class, mechanism label); status-ok rows only."""
    mechanisms: tuple[str, ...]
    """Mechanism labels in drawing order."""
    measurements: tuple[str, ...]
    """Measurements with rows, in the data file's column order."""
    epsilon: float
    trials: int
    ok: pd.DataFrame
    failed: pd.DataFrame
    run: Mapping[str, Any]
    palette: style.Palette

    def first(self, family: str) -> str | None:
        """The label of the first drawn series of ``family`` (None when there is none)."""
        labels = [m for m in self.mechanisms if self.palette.kind(m).family.key == family]
        return labels[0] if labels else None


# --------------------------------------------------------------------------- results


def mechanism_order(palette: style.Palette, label: str) -> tuple[int, tuple]:
    """LaplaceLN, then Duff, then the rest, each in :meth:`style.Palette.sort_key` order."""
    family = palette.kind(label).family.key
    first = FIRST_FAMILIES.index(family) if family in FIRST_FAMILIES else len(FIRST_FAMILIES)
    return (first, palette.sort_key(label))


def choose_epsilon(rows: pd.DataFrame, epsilon: float | None) -> float:
    """``epsilon`` as it is in ``rows`` (to 1e-12), or their only ε when None."""
    present = sorted(set(rows["epsilon"]))
    if epsilon is None:
        if len(present) != 1:
            raise ReportError(
                f"the results hold several ε ({', '.join(f'{e:g}' for e in present)}); "
                "choose one with --epsilon"
            )
        return float(present[0])
    match = [e for e in present if math.isclose(e, epsilon, rel_tol=0.0, abs_tol=1e-12)]
    if not match:
        raise ReportError(
            f"--epsilon: no rows at ε = {epsilon:g} (present: "
            f"{', '.join(f'{e:g}' for e in present)})"
        )
    return float(match[0])


def vertebral_rows(
    summary: pd.DataFrame, path: Path, measurements: Sequence[str] | None
) -> pd.DataFrame:
    """The vertebral median rows of ``summary`` (of the chosen ``measurements``), with
    their ``measurement`` and class ``label`` split out of ``subset``."""
    summary = median_rows(summary)
    rows = summary.loc[summary["dataset"] == DATASET]
    if rows.empty:
        raise ReportError(
            f"{path} has no rows of dataset '{DATASET}' (run: duff-run experiment=figure2)"
        )
    parts = rows["subset"].str.split("/", expand=True, n=1)
    if parts.shape[1] != 2:
        raise ReportError(
            f"subset must read '<measurement>/<class>', got {rows['subset'].iloc[0]!r}"
        )
    rows = rows.assign(measurement=parts[0], label=parts[1])
    bad = ~rows["measurement"].isin(VERTEBRAL_MEASUREMENTS) | ~rows["label"].isin(VERTEBRAL_CLASSES)
    if bad.any():
        raise ReportError(f"unknown vertebral subset(s): {', '.join(rows.loc[bad, 'subset'])}")
    if measurements is not None:
        absent = [m for m in measurements if m not in set(rows["measurement"])]
        if absent:
            raise ReportError(f"--measurements: no rows for {', '.join(absent)}")
        rows = rows.loc[rows["measurement"].isin(measurements)]
    return rows


def _cells(ok: pd.DataFrame, estimates: np.ndarray) -> dict[tuple[str, str, str], Cell]:
    """One :class:`Cell` per ok row; ``estimates`` is row-aligned with the summary."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for index, row in ok.iterrows():
        values = estimates[index]
        if not np.isfinite(values).all():
            raise ReportError(f"row {index} ({row['subset']}, {row['mechanism']}): estimates NaN")
        cells[(row["measurement"], row["label"], row["mechanism"])] = Cell(
            measurement=row["measurement"],
            label=row["label"],
            mechanism=row["mechanism"],
            estimates=values,
            true_value=float(row["true_value"]),
            lower=float(row["lower"]),
            upper=float(row["upper"]),
            n=int(row["n"]),
            delta=float(row["delta"]),
            seconds=float(row["seconds"]),
        )
    return cells


def load_results(
    results_dir: Path, *, epsilon: float | None = None, measurements: Sequence[str] | None = None
) -> Figure2Data:
    """Read and check the vertebral rows of a results directory at one ε."""
    loaded = results_reader.load(results_dir, estimates=True)
    assert loaded.estimates is not None  # asked for: load raises rather than leave them out
    palette = style.palette(loaded)
    rows = vertebral_rows(loaded.summary, Path(results_dir) / SUMMARY_FILE, measurements)
    chosen = choose_epsilon(rows, epsilon)
    ok, failed = split_failed(rows.loc[np.isclose(rows["epsilon"], chosen, rtol=0.0, atol=1e-12)])
    if ok.empty:
        raise ReportError(f"no rows with status 'ok' at ε = {chosen:g}")
    for measurement, part in ok.groupby("measurement"):
        if part[["lower", "upper"]].drop_duplicates().shape[0] != 1:
            raise ReportError(f"{measurement}: rows disagree on the bounds [lower, upper]")
    present = set(ok["measurement"])
    return Figure2Data(
        cells=_cells(ok, loaded.estimates["estimates"]),
        mechanisms=tuple(
            sorted(set(ok["mechanism"]), key=lambda label: mechanism_order(palette, label))
        ),
        measurements=tuple(m for m in VERTEBRAL_MEASUREMENTS if m in present),
        epsilon=chosen,
        trials=int(ok["trials"].max()),
        ok=ok,
        failed=failed,
        run=loaded.manifest,
        palette=palette,
    )


def report_failed(failed: pd.DataFrame, stream: TextIO) -> None:
    """Write the excluded rows to ``stream`` (nothing when there are none)."""
    if failed.empty:
        return
    print(f"{COMMAND}: excluded {len(failed)} row(s) with status != 'ok':", file=stream)
    for row in failed.itertuples(index=False):
        print(f"  {row.subset} {row.mechanism}: {row.status}", file=stream)


# --------------------------------------------------------------------------- raw data


def recorded_source(run: Mapping[str, Any]) -> Path | None:
    """The data file run.json says the vertebral datasets were read from, if any."""
    sources = {
        entry.get("source")
        for entry in run.get("datasets") or []
        if isinstance(entry, dict) and str(entry.get("id", "")).startswith(f"{DATASET}/")
    }
    sources.discard(None)
    if len(sources) != 1:
        return None
    return Path(str(sources.pop()))


def _check_subset(data: Figure2Data, dataset: FixedDataset, digest: str | None) -> None:
    """``dataset`` has the SHA-256 run.json records and the bounds of its summary rows."""
    if digest is not None and digest != dataset.digest:
        raise ReportError(
            f"the data in {dataset.source} is not the data the results were computed on "
            f"({dataset.id}: sha256 {dataset.digest[:12]}… != {digest[:12]}… in run.json)"
        )
    measurement, label = dataset.subset.split("/")
    for cell in (c for k, c in data.cells.items() if k[:2] == (measurement, label)):
        if (cell.lower, cell.upper) != dataset.bounds:
            raise ReportError(
                f"{dataset.id}: bounds {dataset.bounds} of the data differ from "
                f"[{cell.lower}, {cell.upper}] in {SUMMARY_FILE}"
            )


def load_class_data(
    data: Figure2Data, explicit: Path | None, stream: TextIO
) -> dict[tuple[str, str], FixedDataset]:
    """The raw (measurement, class) datasets the estimates were computed on.

    Loaded with the project's loader from ``explicit``, else the file recorded
    in run.json, else the loader's default search; each subset's SHA-256 and
    bounds must match run.json and the summary.
    """
    path = explicit
    if path is None:
        path = recorded_source(data.run)
        if path is not None and not path.is_file():
            print(
                f"{COMMAND}: the recorded data file {path} is gone; using the loader's "
                "default search",
                file=stream,
            )
            path = None
    try:
        datasets = VertebralColumn.from_config(
            name=DATASET,
            path=None if path is None else str(path),
            measurements=list(data.measurements),
        )
    except (DatasetError, OSError) as err:
        raise ReportError(f"cannot load the raw data for the first column: {err}") from None
    recorded = {
        d["id"]: d
        for d in (data.run.get("numbers") or {}).get("datasets") or []
        if isinstance(d, dict) and "id" in d
    }
    by_key: dict[tuple[str, str], FixedDataset] = {}
    for dataset in datasets:
        _check_subset(data, dataset, recorded.get(dataset.id, {}).get("sha256"))
        measurement, label = dataset.subset.split("/")
        by_key[(measurement, label)] = dataset
    return by_key
