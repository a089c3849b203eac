"""Draw the Duff paper's Figures 2 and 3 (Vertebral Column) from a results directory.

Usage::

    python scripts/plot_figure2.py RESULTS_DIR [--out DIR] [--measurements NAME ...]
                                   [--epsilon EPS] [--data PATH]

Input (written by ``python -m experiments.run experiment=figure2``), read by
:func:`experiments.results_reader.load`, which refuses (exit 2, one line naming
the file) a ``summary.csv`` or ``estimates.npz`` that is truncated, corrupt, or
not one row per (dataset, replicate, mechanism, ε) of the plan in ``run.json``:

* ``summary.csv``: one row per (dataset, replicate, mechanism, ε); the rows of
  dataset ``vertebral`` have ``subset = "<measurement>/<class>"``, the bounds
  ``[lower, upper]`` (the measurement's range over both classes), ``n``, δ,
  ``true_value`` (the class's lower median) and ``status``.  Rows whose status
  is not ``"ok"`` are left out and listed on stderr and in the table.
* ``estimates.npz``: the ``estimates`` matrix, one row of ``trials`` estimates
  per row of ``summary.csv`` (``keep_estimates: true``).  No pickled object is
  read; its identity arrays (dataset, subset, mechanism, ε, ``true_value``, …)
  must repeat the summary's rows, which checks the row alignment.
* ``run.json``: where the raw data was read from (``datasets[].source``) and
  the SHA-256 of every (measurement, class) subset (``numbers.datasets``).
  The raw data for the first column of panels is loaded again with the
  project's loader (:class:`experiments.vertebral.VertebralColumn`) from
  ``--data``, else from that recorded file, else from the loader's default
  search, and refused unless it is the data the estimates were computed on.

Figure 2 (Duff paper, section 6.2) is one row for pelvic incidence; Figure 3
(appendix B) has one row per measurement.  Each row shows normalised
histograms over the bounds ``[a, b]`` (shared x-axis): (1) the data of both
classes, (2) LaplaceLN's estimates of each class median, (3) Duff's; then one
panel per further mechanism in the results.  Which series is LaplaceLN and
which is Duff follows from what each mechanism is (:mod:`figure_style`), not
from its label.  Every panel marks the true class
medians.  Written as ``figure2.png``/``.pdf`` and ``figure3.png``/``.pdf``
(150 dpi).

``figure2_table.md`` gives, per (measurement, mechanism): each class's true
median, the mean absolute error ``mean |M − T(S)|`` of the estimates of each
class, and the probability that one estimate per class, drawn independently,
comes out in the true order of the two medians — computed exactly over all
pairs of stored estimates (ties count one half):

    P(X > Y) + P(X = Y)/2 = (2·#{(i, j): x_i > y_j} + #{(i, j): x_i = y_j}) / (2·|x|·|y|)

with ``x`` the estimates of the class whose true median is larger; and each
mechanism's MAE divided by LaplaceLN's (so the Duff row reads "Duff MAE /
LaplaceLN MAE").

Exit status: 0 on success, 2 on unusable input (with a message on stderr).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import matplotlib

matplotlib.use("Agg")

import figure_style
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from figure_style import Palette
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from experiments import results_reader
from experiments.datasets import DatasetError, FixedDataset
from experiments.results import SUMMARY_FILE
from experiments.vertebral import VERTEBRAL_CLASSES, VERTEBRAL_MEASUREMENTS, VertebralColumn

DATASET = "vertebral"
FIGURE2_MEASUREMENT = "pelvic_incidence"
BASELINE = "laplace_ln"
DUFF = "duff"
FIRST_FAMILIES = (BASELINE, DUFF)
"""Families (:attr:`figure_style.Family.key`) drawn first and in this order (the
paper's panels 2 and 3); the first series of each is the table's LaplaceLN and Duff."""
TABLE_FILE = "figure2_table.md"
DATA_BINS = 40
ESTIMATE_BINS = 150


class InputError(Exception):
    """The results directory cannot be turned into Figures 2 and 3; the message says why."""


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
class Results:
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
    palette: Palette

    def first(self, family: str) -> str | None:
        """The label of the first drawn series of ``family`` (None when there is none)."""
        labels = [m for m in self.mechanisms if self.palette.kind(m).family.key == family]
        return labels[0] if labels else None


# --------------------------------------------------------------------------- input


def mechanism_order(palette: Palette, label: str) -> tuple[int, tuple]:
    """LaplaceLN, then Duff, then the rest, each in :meth:`figure_style.Palette.sort_key` order."""
    family = palette.kind(label).family.key
    first = FIRST_FAMILIES.index(family) if family in FIRST_FAMILIES else len(FIRST_FAMILIES)
    return (first, palette.sort_key(label))


def _choose_epsilon(rows: pd.DataFrame, epsilon: float | None) -> float:
    present = sorted(set(rows["epsilon"]))
    if epsilon is None:
        if len(present) != 1:
            raise InputError(
                f"the results hold several ε ({', '.join(f'{e:g}' for e in present)}); "
                "choose one with --epsilon"
            )
        return float(present[0])
    match = [e for e in present if math.isclose(e, epsilon, rel_tol=0.0, abs_tol=1e-12)]
    if not match:
        raise InputError(
            f"--epsilon: no rows at ε = {epsilon:g} (present: "
            f"{', '.join(f'{e:g}' for e in present)})"
        )
    return float(match[0])


def vertebral_rows(
    summary: pd.DataFrame, path: Path, measurements: Sequence[str] | None
) -> pd.DataFrame:
    """The vertebral rows of ``summary`` (of the chosen ``measurements``), with their
    ``measurement`` and class ``label`` split out of ``subset``."""
    rows = summary.loc[summary["dataset"] == DATASET]
    if rows.empty:
        raise InputError(
            f"{path} has no rows of dataset '{DATASET}' "
            "(run: python -m experiments.run experiment=figure2)"
        )
    parts = rows["subset"].str.split("/", expand=True, n=1)
    if parts.shape[1] != 2:
        raise InputError(
            f"subset must read '<measurement>/<class>', got {rows['subset'].iloc[0]!r}"
        )
    rows = rows.assign(measurement=parts[0], label=parts[1])
    bad = ~rows["measurement"].isin(VERTEBRAL_MEASUREMENTS) | ~rows["label"].isin(VERTEBRAL_CLASSES)
    if bad.any():
        raise InputError(f"unknown vertebral subset(s): {', '.join(rows.loc[bad, 'subset'])}")
    if measurements is not None:
        absent = [m for m in measurements if m not in set(rows["measurement"])]
        if absent:
            raise InputError(f"--measurements: no rows for {', '.join(absent)}")
        rows = rows.loc[rows["measurement"].isin(measurements)]
    return rows


def _cells(ok: pd.DataFrame, estimates: np.ndarray) -> dict[tuple[str, str, str], Cell]:
    """One :class:`Cell` per ok row; ``estimates`` is row-aligned with the summary."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for index, row in ok.iterrows():
        values = estimates[index]
        if not np.isfinite(values).all():
            raise InputError(f"row {index} ({row['subset']}, {row['mechanism']}): estimates NaN")
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
) -> Results:
    """Read and check the vertebral rows of a results directory at one ε."""
    loaded = results_reader.load(results_dir, estimates=True)
    palette = figure_style.palette(loaded)
    rows = vertebral_rows(loaded.summary, results_dir / SUMMARY_FILE, measurements)
    chosen = _choose_epsilon(rows, epsilon)
    rows = rows.loc[np.isclose(rows["epsilon"], chosen, rtol=0.0, atol=1e-12)]
    is_ok = rows["status"] == "ok"
    ok, failed = rows.loc[is_ok], rows.loc[~is_ok]
    if ok.empty:
        raise InputError(f"no rows with status 'ok' at ε = {chosen:g}")
    for measurement, part in ok.groupby("measurement"):
        if part[["lower", "upper"]].drop_duplicates().shape[0] != 1:
            raise InputError(f"{measurement}: rows disagree on the bounds [lower, upper]")
    present = set(ok["measurement"])
    return Results(
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
    print(f"plot_figure2: excluded {len(failed)} row(s) with status != 'ok':", file=stream)
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


def load_class_data(
    results: Results, explicit: Path | None, stream: TextIO
) -> dict[tuple[str, str], FixedDataset]:
    """The raw (measurement, class) datasets the estimates were computed on.

    Loaded with the project's loader from ``explicit``, else the file recorded
    in run.json, else the loader's default search; each subset's SHA-256 and
    bounds must match run.json and the summary.
    """
    path = explicit
    if path is None:
        path = recorded_source(results.run)
        if path is not None and not path.is_file():
            print(
                f"plot_figure2: the recorded data file {path} is gone; using the loader's "
                "default search",
                file=stream,
            )
            path = None
    try:
        datasets = VertebralColumn.from_config(
            name=DATASET,
            path=None if path is None else str(path),
            measurements=list(results.measurements),
        )
    except (DatasetError, OSError) as err:
        raise InputError(f"cannot load the raw data for the first column: {err}") from None
    recorded = {
        d["id"]: d
        for d in (results.run.get("numbers") or {}).get("datasets") or []
        if isinstance(d, dict) and "id" in d
    }
    by_key: dict[tuple[str, str], FixedDataset] = {}
    for dataset in datasets:
        measurement, label = dataset.subset.split("/")
        digest = recorded.get(dataset.id, {}).get("sha256")
        if digest is not None and digest != dataset.digest:
            raise InputError(
                f"the data in {dataset.source} is not the data the results were computed on "
                f"({dataset.id}: sha256 {dataset.digest[:12]}… != {digest[:12]}… in run.json)"
            )
        for cell in (c for k, c in results.cells.items() if k[:2] == (measurement, label)):
            if (cell.lower, cell.upper) != dataset.bounds:
                raise InputError(
                    f"{dataset.id}: bounds {dataset.bounds} of the data differ from "
                    f"[{cell.lower}, {cell.upper}] in {SUMMARY_FILE}"
                )
        by_key[(measurement, label)] = dataset
    return by_key


# --------------------------------------------------------------------------- numbers


def order_probability(x: np.ndarray, y: np.ndarray) -> float:
    """``P(X > Y) + P(X = Y)/2`` for independent ``X ~ x``, ``Y ~ y`` (empirical laws).

    Exact over all ``|x|·|y|`` pairs: integer pair counts, one final division.
    """
    xs, ys = np.asarray(x, dtype=np.float64), np.sort(np.asarray(y, dtype=np.float64))
    if xs.size == 0 or ys.size == 0:
        raise ValueError("x and y must be non-empty")
    below = np.searchsorted(ys, xs, side="left")
    not_above = np.searchsorted(ys, xs, side="right")
    greater = int(below.sum())
    ties = int((not_above - below).sum())
    return (2 * greater + ties) / (2 * xs.size * ys.size)


def true_order_probability(ab: Cell, no: Cell) -> float:
    """Probability that one estimate per class comes out in the true medians' order.

    NaN when the two true medians are equal (no order to recover).
    """
    if ab.true_value > no.true_value:
        return order_probability(ab.estimates, no.estimates)
    if ab.true_value < no.true_value:
        return order_probability(no.estimates, ab.estimates)
    return math.nan


def mean_abs_error(cell: Cell) -> float:
    """``mean |M − T(S)|`` over the stored estimates (the summary's ``mean_abs_error``)."""
    return float(np.mean(np.abs(cell.estimates - cell.true_value)))


def table_rows(results: Results) -> pd.DataFrame:
    """One row per (measurement, mechanism) with both classes: medians, MAEs, order, ratios."""
    records = []
    for measurement in results.measurements:
        for mechanism in results.mechanisms:
            ab = results.cells.get((measurement, "AB", mechanism))
            no = results.cells.get((measurement, "NO", mechanism))
            if ab is None or no is None:
                continue
            records.append(
                {
                    "measurement": measurement,
                    "mechanism": mechanism,
                    "median_AB": ab.true_value,
                    "median_NO": no.true_value,
                    "mae_AB": mean_abs_error(ab),
                    "mae_NO": mean_abs_error(no),
                    "p_true_order": true_order_probability(ab, no),
                }
            )
    columns = ["measurement", "mechanism", "median_AB", "median_NO", "mae_AB", "mae_NO"]
    table = pd.DataFrame.from_records(records, columns=[*columns, "p_true_order"])
    reference = table["mechanism"] == results.first(BASELINE)
    baseline = table.loc[reference, ["measurement", "mae_AB", "mae_NO"]]
    baseline = baseline.rename(columns={"mae_AB": "base_AB", "mae_NO": "base_NO"})
    table = table.merge(baseline, on="measurement", how="left")
    table["ratio_AB"] = table["mae_AB"] / table["base_AB"]
    table["ratio_NO"] = table["mae_NO"] / table["base_NO"]
    return table.drop(columns=["base_AB", "base_NO"])


# --------------------------------------------------------------------------- figure


def lower_median(values: np.ndarray) -> float:
    """The element of rank ``ceil(n/2)`` of ``values`` (the true median of the results)."""
    return float(np.sort(values)[(values.size - 1) // 2])


def measurement_title(measurement: str) -> str:
    """``"pelvic_incidence"`` -> ``"pelvic incidence"``."""
    return measurement.replace("_", " ")


def mechanism_title(results: Results, mechanism: str) -> str:
    """Panel title: display name and δ (``1/n`` when every class got δ = 1/n).

    A second line warns when the guarantee actually given differs from the
    requested ε (e.g. a zCDP mechanism's converted ε') or when the parameters
    were tuned on the private data.
    """
    cells = [c for c in results.cells.values() if c.mechanism == mechanism]
    title = results.palette.name(mechanism)
    deltas = [c.delta for c in cells]
    if all(math.isclose(c.delta * c.n, 1.0, rel_tol=1e-9) for c in cells):
        title += ", δ = 1/n"
    elif any(d != 0 for d in deltas):
        title += f", δ = {', '.join(sorted({f'{d:.3g}' for d in deltas}))}"
    rows = results.ok.loc[results.ok["mechanism"] == mechanism]
    given = pd.to_numeric(rows["guarantee_epsilon"], errors="coerce")
    notes = []
    if not np.allclose(given, results.epsilon, rtol=1e-9, atol=0):
        low, high = float(given.min()), float(given.max())
        span = f"{low:.2f}" if math.isclose(low, high, rel_tol=5e-3) else f"{low:.2f}–{high:.2f}"
        notes.append(f"guarantee ε' = {span}")
    if not rows["private"].all():
        notes.append("tuned on the data, not private")
    return title + ("\n(" + "; ".join(notes) + ")" if notes else "")


def _histogram(ax: Axes, values: np.ndarray, bins: np.ndarray, colour: str) -> None:
    ax.hist(
        values,
        bins=bins,
        density=True,
        histtype="stepfilled",
        facecolor=(colour, 0.35),
        edgecolor=colour,
        linewidth=1.0,
    )


def _medians(ax: Axes, medians: dict[str, float]) -> None:
    # Behind the (translucent) histograms, so a tight histogram around it stays visible.
    for label, median in medians.items():
        ax.axvline(median, color=figure_style.class_colour(label), linewidth=1.4, zorder=0.5)


def _annotate(ax: Axes, lines: Sequence[tuple[str, str]]) -> None:
    for i, (text, colour) in enumerate(lines):
        ax.text(
            0.98,
            0.95 - 0.11 * i,
            text,
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=8,
            color=colour,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 1.0},
        )


def draw_figure(
    results: Results,
    data: dict[tuple[str, str], FixedDataset],
    measurements: Sequence[str],
) -> Figure:
    """One row per measurement: data, then one panel per mechanism (shared x = [a, b])."""
    columns = len(results.mechanisms) + 1
    fig, axes = plt.subplots(
        len(measurements),
        columns,
        figsize=(4.0 * columns + 0.6, 2.5 * len(measurements) + 1.3),
        sharex="row",
        squeeze=False,
        layout="constrained",
    )
    table = table_rows(results).set_index(["measurement", "mechanism"])
    for row, measurement in enumerate(measurements):
        panels = axes[row]
        present = [label for label in VERTEBRAL_CLASSES if (measurement, label) in data]
        lower, upper = data[(measurement, present[0])].bounds
        medians = {label: lower_median(data[(measurement, label)].values) for label in present}
        data_bins = np.linspace(lower, upper, DATA_BINS + 1)
        estimate_bins = np.linspace(lower, upper, ESTIMATE_BINS + 1)
        for label in present:
            _histogram(
                panels[0],
                data[(measurement, label)].values,
                data_bins,
                figure_style.class_colour(label),
            )
        _medians(panels[0], medians)
        panels[0].set_ylabel(f"{measurement_title(measurement)}\ndensity")
        for ax, mechanism in zip(panels[1:], results.mechanisms, strict=True):
            estimates = {
                label: results.cells.get((measurement, label, mechanism)) for label in present
            }
            p = table["p_true_order"].get((measurement, mechanism), math.nan)
            _estimates_panel(ax, estimates, estimate_bins, p)
            _medians(ax, medians)
        for ax in panels:
            ax.set_xlim(lower, upper)
            ax.tick_params(labelsize=8)
        if row == 0:
            panels[0].set_title("data", fontsize=10)
            for ax, mechanism in zip(panels[1:], results.mechanisms, strict=True):
                ax.set_title(mechanism_title(results, mechanism), fontsize=10)
    sizes = ", ".join(
        f"n_{label} = {next(d.size for k, d in data.items() if k[1] == label)}"
        for label in VERTEBRAL_CLASSES
        if any(k[1] == label for k in data)
    )
    fig.suptitle(
        f"Vertebral Column: DP estimates of each class median (ε = {results.epsilon:g}, "
        f"{results.trials} estimates per class; {sizes}; x-axis: bounds [a, b])",
        fontsize=10,
    )
    fig.legend(handles=_class_handles(), loc="outside lower center", ncols=4, fontsize=9)
    return fig


def _estimates_panel(
    ax: Axes, cells: Mapping[str, Cell | None], bins: np.ndarray, p_true_order: float
) -> None:
    """Histograms of one mechanism's estimates of each class median, with their MAE and
    the probability of the true order written in the corner."""
    lines = []
    for label, cell in cells.items():
        if cell is None:
            continue
        colour = figure_style.class_colour(label)
        _histogram(ax, cell.estimates, bins, colour)
        lines.append((f"MAE {label}: {_number(mean_abs_error(cell))}", colour))
    if not math.isnan(p_true_order):
        lines.append((f"P(true order): {_probability(p_true_order)}", "black"))
    if not lines:
        ax.text(0.5, 0.5, "no estimates", transform=ax.transAxes, ha="center")
    _annotate(ax, lines)


def _class_handles() -> list[Any]:
    """Legend entries: each class's histogram colour and true-median line."""
    handles: list[Any] = []
    for label in VERTEBRAL_CLASSES:
        colour, name = figure_style.class_colour(label), figure_style.class_name(label)
        handles.append(
            Patch(facecolor=colour, edgecolor=colour, alpha=0.5, label=f"{name}: histogram")
        )
        handles.append(
            Line2D([], [], color=colour, linewidth=1.8, label=f"{name}: true (lower) median")
        )
    return handles


# --------------------------------------------------------------------------- report


def _number(value: float) -> str:
    """Three significant digits, trailing zeros kept (``1.00``, ``0.622``, ``123``)."""
    return "—" if math.isnan(value) else f"{value:#.3g}".rstrip(".")


def _probability(value: float) -> str:
    """Four decimals; never rounds up to a certainty that is not exact."""
    if math.isnan(value):
        return "—"
    if value == 1.0 or value == 0.0:
        return f"{value:g}"
    return "> 0.9999" if value > 0.9999 else ("< 0.0001" if value < 0.0001 else f"{value:.4f}")


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def ratio_table(results: Results, table: pd.DataFrame) -> str:
    """Markdown: Duff MAE / LaplaceLN MAE per measurement and class."""
    duff = table.loc[table["mechanism"] == results.first(DUFF)]
    if duff.empty or duff["ratio_AB"].isna().all():
        return "Not available: needs both a Duff and a LaplaceLN series in the results."
    rows = [
        [
            measurement_title(r.measurement),
            _number(r.ratio_AB),
            _number(r.ratio_NO),
            _number(math.sqrt(r.ratio_AB * r.ratio_NO)),
        ]
        for r in duff.itertuples(index=False)
    ]
    note = (
        "Below 1: Duff's mean error is that fraction of LaplaceLN's (0.1 = ten times smaller).\n\n"
    )
    return note + _markdown(["measurement", "AB", "NO", "geometric mean"], rows)


def main_table(results: Results, table: pd.DataFrame) -> str:
    """Markdown: per (measurement, mechanism) medians, MAEs, ordering probability, ratio."""
    rows = []
    for r in table.itertuples(index=False):
        order = (
            "AB > NO"
            if r.median_AB > r.median_NO
            else ("NO > AB" if r.median_AB < r.median_NO else "equal")
        )
        rows.append(
            [
                measurement_title(r.measurement),
                results.palette.name(r.mechanism),
                f"{r.median_AB:g}",
                f"{r.median_NO:g}",
                order,
                _number(r.mae_AB),
                _number(r.mae_NO),
                _probability(r.p_true_order),
                f"{_number(r.ratio_AB)}; {_number(r.ratio_NO)}",
            ]
        )
    header = [
        "measurement",
        "mechanism",
        "true median AB",
        "true median NO",
        "true order",
        "MAE AB",
        "MAE NO",
        "P(true order)",
        "MAE / LaplaceLN MAE (AB; NO)",
    ]
    return _markdown(header, rows)


def _guarantee(row: pd.Series) -> str:
    rho = pd.to_numeric(pd.Series([row["rho"]]), errors="coerce").iloc[0]
    text = f"({float(row['guarantee_epsilon']):.3g}, {float(row['guarantee_delta']):.3g})"
    return text if math.isnan(rho) else f"{text} from {float(rho):.3g}-zCDP"


def setup_table(results: Results) -> str:
    """Markdown: per mechanism and class the requested δ, the guarantee, privacy, time."""
    rows = []
    ok = results.ok
    for mechanism in results.mechanisms:
        part = ok.loc[ok["mechanism"] == mechanism]
        by_class = [
            (label, part.loc[part["label"] == label].iloc[0])
            for label in VERTEBRAL_CLASSES
            if (part["label"] == label).any()
        ]
        rows.append(
            [
                results.palette.name(mechanism),
                f"{results.epsilon:g}",
                "; ".join(f"{label}: {float(row['delta']):.3g}" for label, row in by_class),
                "; ".join(f"{label}: {_guarantee(row)}" for label, row in by_class),
                "; ".join(sorted({str(row["private"]) for _, row in by_class})),
                f"{part['seconds'].sum():.3g}",
            ]
        )
    header = [
        "mechanism",
        "ε (requested)",
        "δ (requested)",
        "guarantee (ε, δ)",
        "private",
        "seconds (all datasets)",
    ]
    return _markdown(header, rows)


def failure_table(failed: pd.DataFrame) -> str:
    """Markdown: excluded rows, or a sentence saying there were none."""
    if failed.empty:
        return "None: every row has status `ok`."
    rows = [
        [str(r.subset), str(r.mechanism), str(r.status).replace("|", "\\|")]
        for r in failed.itertuples(index=False)
    ]
    return _markdown(["subset", "mechanism", "status"], rows)


def build_report(results: Results, table: pd.DataFrame, results_dir: Path) -> str:
    """The full text of ``figure2_table.md``."""
    runtime = results.run.get("runtime_seconds")
    runtime_text = (
        f" The whole run took {runtime:g} s." if isinstance(runtime, (int, float)) else ""
    )
    sections = [
        "# Figures 2 and 3: DP medians of the Vertebral Column classes "
        "(Duff paper, section 6.2 and appendix B)",
        f"Generated by `scripts/plot_figure2.py` from `{results_dir}`: ε = {results.epsilon:g}, "
        f"{results.trials} estimates per (measurement, class, mechanism), bounds [a, b] = the "
        f"measurement's range over both classes.{runtime_text} "
        "True median = the class's lower median (rank ⌈n/2⌉), the statistic every mechanism "
        "estimates (the UCI README's medians average the two middle values instead). "
        "MAE = mean |estimate − true median|. P(true order) = probability that one estimate "
        "per class, drawn independently, comes out in the order of the true medians, computed "
        "exactly over all pairs of stored estimates (ties count one half).",
        "## Duff MAE / LaplaceLN MAE",
        ratio_table(results, table),
        "## Per measurement and mechanism",
        main_table(results, table),
        "## Mechanisms",
        "`private` is false when parameters were tuned on the private data (the paper's "
        "oracle choice for LaplaceLN): the stated guarantee then does not cover the release.",
        setup_table(results),
        "## Excluded rows (status != ok)",
        failure_table(results.failed),
    ]
    return "\n\n".join(sections) + "\n"


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="plot_figure2.py",
        description="Draw the Duff paper's Figures 2 and 3 (Vertebral Column) and their table.",
    )
    parser.add_argument("results_dir", type=Path, help="directory of a figure2 run")
    parser.add_argument("--out", type=Path, help="output directory (default: RESULTS_DIR)")
    parser.add_argument(
        "--measurements",
        nargs="+",
        metavar="NAME",
        choices=VERTEBRAL_MEASUREMENTS,
        help=f"rows of Figure 3 (default: all of {', '.join(VERTEBRAL_MEASUREMENTS)})",
    )
    parser.add_argument(
        "--epsilon", type=float, help="ε to draw (default: the only ε in the results)"
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="column_2C.dat (default: the file recorded in run.json, else the loader's search)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the script; returns the exit status (0, or 2 on unusable input)."""
    args = parse_args(argv)
    try:
        results = load_results(
            args.results_dir, epsilon=args.epsilon, measurements=args.measurements
        )
        report_failed(results.failed, sys.stderr)
        data = load_class_data(results, args.data, sys.stderr)
        table = table_rows(results)
    except (InputError, results_reader.ResultsError) as err:
        print(f"plot_figure2: error: {err}", file=sys.stderr)
        return 2

    out_dir = args.out if args.out is not None else args.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if FIGURE2_MEASUREMENT in results.measurements:
        written += figure_style.save_figure(
            draw_figure(results, data, [FIGURE2_MEASUREMENT]), out_dir, "figure2"
        )
    else:
        print(f"plot_figure2: no {FIGURE2_MEASUREMENT} rows; figure2 not drawn", file=sys.stderr)
    written += figure_style.save_figure(
        draw_figure(results, data, results.measurements), out_dir, "figure3"
    )
    report_path = out_dir / TABLE_FILE
    report_path.write_text(build_report(results, table, args.results_dir), encoding="utf-8")
    written.append(report_path)
    print("## Duff MAE / LaplaceLN MAE\n")
    print(ratio_table(results, table))
    print("\n## Per measurement and mechanism\n")
    print(main_table(results, table))
    print(f"\nwrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
