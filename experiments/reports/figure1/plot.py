"""Draw the Duff paper's Figure 1 (section 6.1), optionally with the theoretical error bounds.

:func:`draw_figure` makes one panel per dataset (the paper's sources N(0, 1),
U(0, 1), Beta(0.5, 0.5), then any other of the run, a plug-in's): for each
series (mechanism and δ) and ε the mean over datasets of the per-dataset mean
error, with error bars of one standard deviation across datasets, on a log
y-axis; colours, line styles and names from :mod:`experiments.reports.style`.
:func:`draw_bounds` adds, as dashed lines in each mechanism's colour, the mean
over datasets of the per-dataset ``(1 − η)``-quantile bound on ``|T(S) − M(S)|``
(:mod:`mechanisms.median.error_bounds`, evaluated by :mod:`experiments.reports.bounds_coverage`).
The dashed lines bound a 95% quantile, the solid ones show a mean: they are not
the same statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.reports import style
from experiments.reports.figure1.data import REFERENCE, series_order

PLOTTED_BOUNDS = ("corollary1", "proposition7", "attempt3")
"""One bound per mechanism in the figure (Duff's with the paper's C is only tabulated:
its assumption fails on most datasets)."""
BOUND_LINESTYLE = (0, (4, 2))


def series_label(palette: style.Palette, mechanism: str, delta: float) -> str:
    """Legend text: the display name, with δ when it is not zero."""
    name = palette.name(mechanism)
    return name if delta == 0 else f"{name}, δ={delta:g}"


def _markers(
    series: Sequence[tuple[str, float]], palette: style.Palette
) -> dict[tuple[str, float], str]:
    """Each mechanism's own marker for its first δ; further δ of the same mechanism
    (same colour) get the fallback markers so the lines stay distinguishable."""
    seen: dict[str, int] = {}
    markers = {}
    for mechanism, delta in series:
        index = seen.get(mechanism, 0)
        seen[mechanism] = index + 1
        others = style.FALLBACK_MARKERS
        own = palette.style(mechanism).marker
        markers[mechanism, delta] = own if index == 0 else others[(index - 1) % len(others)]
    return markers


def draw_figure(
    agg: pd.DataFrame,
    datasets: Sequence[str],
    palette: style.Palette,
    error: str = "|T(S) − M(S)|",
) -> tuple[Figure, dict[str, Axes]]:
    """One panel per dataset: mean ``error`` against ε with ±1 sd bars, log y-axis.

    Returns the figure and its axes by dataset, so further layers (e.g.
    theoretical bounds) can be drawn on a panel before saving.
    """
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(4.2 * len(datasets), 3.8), layout="constrained", squeeze=False
    )
    panels = dict(zip(datasets, axes[0], strict=True))
    series = series_order(agg, palette)
    markers = _markers(series, palette)
    for dataset, ax in panels.items():
        for mechanism, delta in series:
            line = agg.loc[
                (agg["dataset"] == dataset)
                & (agg["mechanism"] == mechanism)
                & (agg["delta"] == delta)
            ].sort_values("epsilon")
            if line.empty:
                continue
            look = palette.style(mechanism)
            ax.errorbar(
                line["epsilon"],
                line["mean_error"],
                yerr=line["sd_error"].fillna(0.0),
                color=look.colour,
                linestyle=look.linestyle,
                marker=markers[mechanism, delta],
                markersize=4,
                capsize=3,
                label=series_label(palette, mechanism, delta),
                zorder=3 if palette.kind(mechanism).family.key == REFERENCE else 2,  # Duff on top
            )
        ax.set_yscale("log", nonpositive="clip")
        ax.set_title(style.dataset_title(dataset))
        ax.set_xlabel("ε")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel(f"mean {error}")
    figure_legend(fig, panels)
    return fig, panels


def figure_legend(fig: Figure, panels: dict[str, Axes], rows: int = 2) -> None:
    """(Re)draw the figure's legend below the panels: the measured series (error bars)
    first, then plain lines (bounds), in ``rows`` rows, or more if long names would
    make it wider than the figure."""
    for legend in list(fig.legends):
        legend.remove()
    handles: dict[str, Artist] = {}
    for ax in panels.values():
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    order = sorted(handles, key=lambda label: isinstance(handles[label], Line2D))
    for ncols in range(math.ceil(len(handles) / rows), 0, -1):
        legend = fig.legend(
            [handles[label] for label in order], order, loc="outside lower center", ncols=ncols
        )
        if ncols == 1 or legend.get_window_extent().width <= fig.bbox.width:
            return
        legend.remove()


def bound_lines(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean over datasets of the per-dataset bound in data units (``abs_error``).

    One row per (dataset, mechanism, bound, ε) of :data:`PLOTTED_BOUNDS`, from
    the rows of :func:`experiments.reports.bounds_coverage.evaluate`.
    """
    plotted = rows.loc[rows["bound"].isin(PLOTTED_BOUNDS)]
    keys = ["dataset", "mechanism", "bound", "epsilon"]
    return plotted.groupby(keys, sort=True)["abs_error"].mean().rename("bound_mean").reset_index()


def draw_bounds(
    fig: Figure, panels: dict[str, Axes], lines: pd.DataFrame, eta: float, palette: style.Palette
) -> None:
    """Add each mechanism's mean bound as a dashed line in its colour, and redo the legend."""
    for (dataset, mechanism, _), line in lines.groupby(["dataset", "mechanism", "bound"]):
        if dataset not in panels:
            continue
        line = line.sort_values("epsilon")
        panels[dataset].plot(
            line["epsilon"],
            line["bound_mean"],
            color=palette.style(mechanism).colour,
            linestyle=BOUND_LINESTYLE,
            linewidth=1.2,
            label=f"{palette.name(mechanism)}: bound on {1 - eta:g}-quantile",
        )
    figure_legend(fig, panels, rows=4)
