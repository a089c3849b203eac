"""Draw Figures 2 and 3 (Duff paper, section 6.2 and appendix B) of the Vertebral Column data.

Figure 2 is one row for pelvic incidence; Figure 3 has one row per measurement.
Each row shows normalised histograms over the bounds ``[a, b]`` (shared x-axis):
(1) the data of both classes, (2) LaplaceLN's estimates of each class median,
(3) Duff's; then one panel per further mechanism in the results.  Every panel
marks the true class medians; each mechanism's panel has the MAE of each class
and the probability of the true order (:mod:`experiments.reports.figure2.numbers`)
in its corner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from experiments.data.datasets import FixedDataset
from experiments.data.vertebral import VERTEBRAL_CLASSES
from experiments.reports import style
from experiments.reports.figure2.data import Cell, Figure2Data
from experiments.reports.figure2.numbers import (
    lower_median,
    mean_abs_error,
    measurement_title,
    table_rows,
)
from experiments.reports.tables import probability, three_digits_kept

DATA_BINS = 40
ESTIMATE_BINS = 150


def mechanism_title(data: Figure2Data, mechanism: str) -> str:
    """Panel title: display name and δ (``1/n`` when every class got δ = 1/n).

    A second line warns when the guarantee actually given differs from the
    requested ε (e.g. a zCDP mechanism's converted ε') or when the parameters
    were tuned on the private data.
    """
    cells = [c for c in data.cells.values() if c.mechanism == mechanism]
    title = data.palette.name(mechanism)
    deltas = [c.delta for c in cells]
    if all(math.isclose(c.delta * c.n, 1.0, rel_tol=1e-9) for c in cells):
        title += ", δ = 1/n"
    elif any(d != 0 for d in deltas):
        title += f", δ = {', '.join(sorted({f'{d:.3g}' for d in deltas}))}"
    rows = data.ok.loc[data.ok["mechanism"] == mechanism]
    given = pd.to_numeric(rows["guarantee_epsilon"], errors="coerce")
    notes = []
    if not np.allclose(given, data.epsilon, rtol=1e-9, atol=0):
        low, high = float(given.min()), float(given.max())
        span = f"{low:.2f}" if math.isclose(low, high, rel_tol=5e-3) else f"{low:.2f}–{high:.2f}"
        notes.append(f"guarantee ε' = {span}")
    if not rows["private"].all():
        notes.append("tuned on the data, not private")
    return title + ("\n(" + "; ".join(notes) + ")" if notes else "")


def _histogram(ax: Axes, values: np.ndarray, bins: np.ndarray, colour: str) -> None:
    ax.hist(
        values,
        bins=bins.tolist(),
        density=True,
        histtype="stepfilled",
        facecolor=(colour, 0.35),
        edgecolor=colour,
        linewidth=1.0,
    )


def _medians(ax: Axes, medians: dict[str, float]) -> None:
    # Behind the (translucent) histograms, so a tight histogram around it stays visible.
    for label, median in medians.items():
        ax.axvline(median, color=style.class_colour(label), linewidth=1.4, zorder=0.5)


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


def _estimates_panel(
    ax: Axes, cells: Mapping[str, Cell | None], bins: np.ndarray, p_true_order: float
) -> None:
    """Histograms of one mechanism's estimates of each class median, with their MAE and
    the probability of the true order written in the corner."""
    lines = []
    for label, cell in cells.items():
        if cell is None:
            continue
        colour = style.class_colour(label)
        _histogram(ax, cell.estimates, bins, colour)
        lines.append((f"MAE {label}: {three_digits_kept(mean_abs_error(cell))}", colour))
    if not math.isnan(p_true_order):
        lines.append((f"P(true order): {probability(p_true_order)}", "black"))
    if not lines:
        ax.text(0.5, 0.5, "no estimates", transform=ax.transAxes, ha="center")
    _annotate(ax, lines)


def _draw_row(
    panels: Sequence[Axes],
    data: Figure2Data,
    raw: dict[tuple[str, str], FixedDataset],
    measurement: str,
    table: pd.DataFrame,
) -> None:
    """One measurement: the data's histograms, then one panel per mechanism, x = [a, b]."""
    present = [label for label in VERTEBRAL_CLASSES if (measurement, label) in raw]
    lower, upper = raw[(measurement, present[0])].bounds
    medians = {label: lower_median(raw[(measurement, label)].values) for label in present}
    data_bins = np.linspace(lower, upper, DATA_BINS + 1)
    estimate_bins = np.linspace(lower, upper, ESTIMATE_BINS + 1)
    for label in present:
        colour = style.class_colour(label)
        _histogram(panels[0], raw[(measurement, label)].values, data_bins, colour)
    _medians(panels[0], medians)
    panels[0].set_ylabel(f"{measurement_title(measurement)}\ndensity")
    for ax, mechanism in zip(panels[1:], data.mechanisms, strict=True):
        estimates = {label: data.cells.get((measurement, label, mechanism)) for label in present}
        p = table["p_true_order"].get((measurement, mechanism), math.nan)
        _estimates_panel(ax, estimates, estimate_bins, p)
        _medians(ax, medians)
    for ax in panels:
        ax.set_xlim(lower, upper)
        ax.tick_params(labelsize=8)


def draw_figure(
    data: Figure2Data,
    raw: dict[tuple[str, str], FixedDataset],
    measurements: Sequence[str],
) -> Figure:
    """One row per measurement: data, then one panel per mechanism (shared x = [a, b])."""
    columns = len(data.mechanisms) + 1
    fig, axes = plt.subplots(
        len(measurements),
        columns,
        figsize=(4.0 * columns + 0.6, 2.5 * len(measurements) + 1.3),
        sharex="row",
        squeeze=False,
        layout="constrained",
    )
    table = table_rows(data).set_index(["measurement", "mechanism"])
    for row, measurement in enumerate(measurements):
        _draw_row(axes[row], data, raw, measurement, table)
    axes[0][0].set_title("data", fontsize=10)
    for ax, mechanism in zip(axes[0][1:], data.mechanisms, strict=True):
        ax.set_title(mechanism_title(data, mechanism), fontsize=10)
    sizes = ", ".join(
        f"n_{label} = {next(d.size for k, d in raw.items() if k[1] == label)}"
        for label in VERTEBRAL_CLASSES
        if any(k[1] == label for k in raw)
    )
    fig.suptitle(
        f"Vertebral Column: DP estimates of each class median (ε = {data.epsilon:g}, "
        f"{data.trials} estimates per class; {sizes}; x-axis: bounds [a, b])",
        fontsize=10,
    )
    fig.legend(handles=_class_handles(), loc="outside lower center", ncols=4, fontsize=9)
    return fig


def _class_handles() -> list[Any]:
    """Legend entries: each class's histogram colour and true-median line."""
    handles: list[Any] = []
    for label in VERTEBRAL_CLASSES:
        colour, name = style.class_colour(label), style.class_name(label)
        handles.append(
            Patch(facecolor=colour, edgecolor=colour, alpha=0.5, label=f"{name}: histogram")
        )
        handles.append(
            Line2D([], [], color=colour, linewidth=1.8, label=f"{name}: true (lower) median")
        )
    return handles
