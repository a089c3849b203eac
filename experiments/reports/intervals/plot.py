"""The figures of ``duff-plot intervals``: coverage and relative width against ε.

One grid per α and measure (rows datasets, columns n), one line per method as
:mod:`experiments.reports.style` draws it, with a dashed reference line: the nominal
level ``1 − α`` for the coverage (±1.96 SE bars), as in Honaker & Vadhan's CS208
lecture slides "DP Foundations: Exponential and Gaussian Mechanisms" ("Confidence
Interval Construction"), and 1× (the non-private interval) for the width.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from experiments.reports import style

if TYPE_CHECKING:
    from experiments.reports.intervals.cells import Cells

Z95 = 1.96
DODGE = 1.04
"""Sideways step between the methods' points on the log ε axis (a factor)."""
LEGEND_INCHES = 0.6


@dataclass(frozen=True)
class Measure:
    """What one family of figures draws against ε, and its dashed reference line."""

    stem: str
    column: str
    what: str
    log_scale: bool
    reference: str

    def level(self, alpha: float) -> float:
        return 1.0 if self.log_scale else 1.0 - alpha


COVERAGE = Measure("coverage", "coverage", "coverage", False, "nominal 1 − α")
WIDTH = Measure("width", "relative_width", "width / non-private width", True, "1× (non-private)")


def scale_axis(axis: Axes, chosen: pd.DataFrame, alpha: float, measure: Measure) -> None:
    """The y axis of every (shared) panel: log with plain ``×`` labels for the width; for
    the coverage, from below 1 − α and the lowest error bar to just above 1."""
    if measure.log_scale:
        axis.set_yscale("log")
        axis.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
        axis.yaxis.set_minor_locator(NullLocator())
    else:
        axis.set_ylim(coverage_floor(chosen, alpha), 1.005)


def draw_panel(axis: Axes, panel: pd.DataFrame, measure: Measure, palette: style.Palette) -> None:
    """One line per method of ``panel`` against ε (±1.96 SE bars for the coverage), each
    method's points moved sideways by a factor :data:`DODGE` so that their bars stay apart."""
    labels = sorted(pd.unique(panel["mechanism"]), key=palette.sort_key)
    for rank, label in enumerate(labels):
        line = panel.loc[panel["mechanism"] == label]
        look = palette.style(label)
        axis.errorbar(
            line["epsilon"] * DODGE ** (rank - (len(labels) - 1) / 2),
            line[measure.column],
            yerr=Z95 * line["se"] if measure is COVERAGE else None,
            color=look.colour,
            linestyle=look.linestyle,
            marker=look.marker,
            markersize=4,
            capsize=2,
            label=look.name,
        )


def coverage_floor(chosen: pd.DataFrame, alpha: float) -> float:
    """The bottom of the coverage axis: below 1 − α, 0.8 and the lowest error bar."""
    lowest = (chosen["coverage"] - Z95 * chosen["se"].fillna(0.0)).min()
    return max(-0.02, min(0.8, 1.0 - alpha - 0.05, lowest - 0.02))


def figure(cells: Cells, alpha: float, measure: Measure, out: Path) -> list[Path]:
    """A grid (rows datasets, columns n) of ``measure`` against ε at miscoverage ``alpha``,
    with a dashed reference line (the nominal 1 − α, or the non-private width)."""
    palette, chosen = cells.palette, cells.drawn.loc[cells.drawn["alpha"] == alpha]
    datasets, subsets = pd.unique(chosen["dataset"]), pd.unique(chosen["subset"])
    epsilons = sorted(set(chosen["epsilon"]))
    size = (3.0 * len(subsets), 2.4 * len(datasets) + LEGEND_INCHES)
    shape = (len(datasets), len(subsets))
    fig, axes = plt.subplots(*shape, figsize=size, squeeze=False, sharex=True, sharey=True)
    for row, dataset in enumerate(datasets):
        for column, subset in enumerate(subsets):
            axis = axes[row][column]
            panel = chosen.loc[(chosen["dataset"] == dataset) & (chosen["subset"] == subset)]
            draw_panel(axis, panel, measure, palette)
            axis.axhline(measure.level(alpha), color="k", ls="--", lw=0.8, label=measure.reference)
            axis.set_xscale("log")
            axis.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
            axis.xaxis.set_minor_locator(NullLocator())
            axis.set_title(f"{style.dataset_title(dataset)}, {subset}", fontsize=9)
            axis.set_xlabel("ε" if row == len(datasets) - 1 else "")
            axis.set_ylabel(measure.what if column == 0 else "", fontsize=8)
    scale_axis(axes[0][0], chosen, alpha, measure)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=3, fontsize=7)
    fig.suptitle(f"Intervals for the median at 1 − α = {1 - alpha:g}: {measure.what}", fontsize=10)
    fig.tight_layout(rect=(0, LEGEND_INCHES / size[1], 1, 1))
    return style.save_figure(fig, out, f"intervals_{measure.stem}_alpha{alpha:g}")
