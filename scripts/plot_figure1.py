"""Draw the Duff paper's Figure 1 from a results directory and compare its ratios.

Usage::

    python scripts/plot_figure1.py RESULTS_DIR [--out DIR] [--mechanisms LABEL ...]
                                   [--notes PATH] [--tolerance 0.25] [--bounds [--eta 0.05]]

Input: ``RESULTS_DIR/summary.csv`` and ``run.json`` written by the harness,
read by :func:`experiments.results_reader.load`, which refuses (exit 2, one line
naming the file) a summary that is truncated, corrupt, or not one row per
(dataset, replicate, mechanism, ε) of the plan recorded in ``run.json``.
``mean_abs_error`` is a dataset's mean of |T(S) − M(S)| over ``trials`` calls of
the mechanism.  Rows whose ``status`` is not ``"ok"`` are left out and counted on
stderr and in the report.  Names, colours and line styles follow from what each
mechanism is (registry name, options, ``private`` and ``neighbouring`` columns;
:mod:`figure_style`), and so does the reference: the Duff series.

Figure 1 (Duff paper, section 6.1): one panel per source N(0, 1), U(0, 1),
Beta(0.5, 0.5) (datasets ``normal``, ``uniform``, ``beta``); for each mechanism
and ε the mean over datasets of the per-dataset mean error, with error bars of
one standard deviation across datasets (sample standard deviation, ddof = 1),
on a log y-axis.  Written as ``figure1.png`` (150 dpi) and ``figure1.pdf``.

``figure1_ratios.md`` holds, per distribution and ε, each baseline's error
divided by Duff's (ratio of the two means over datasets), next to the ratios
the paper quotes for N(0, 1) (matched to every series of the quoted mechanism
with the paper's tuning, whatever its label and neighbours); the absolute
errors; the privacy guarantee each mechanism actually gives (``guarantee_*``
and ``rho`` columns of the summary);
and a section of notes copied verbatim from ``RESULTS_DIR/figure1_notes.md``
(or ``--notes``).  This script never writes explanations of its own.

``--bounds`` (needs ``run.json`` and ``estimates.npz`` of a ``keep_estimates=true``
run) also writes ``figure1_bounds.png``/``.pdf``: Figure 1 with, as dashed lines
in each mechanism's colour, the mean over datasets of the per-dataset
``(1 − η)``-quantile bound on ``|T(S) − M(S)|`` (:mod:`experiments.bounds`:
Duff's Corollary 1 with C from the data, Proposition 7 for SmoothSens_ε, seed
004's rank bound converted to data units for the quantile EM); and, through
``scripts/bounds_coverage.py``, ``bounds.csv`` and ``bounds_coverage.md``, the
fraction of trials within each bound.  The dashed lines bound a 95% quantile,
the solid ones show a mean: they are not the same statistic.

Exit status: 0 on success, 2 on unusable input (with a message on stderr).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import matplotlib

matplotlib.use("Agg")

import bounds_coverage
import figure_style
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from figure_style import Palette
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments import results_reader
from experiments.results import SUMMARY_FILE

REFERENCE = "duff"
"""The family (:attr:`figure_style.Family.key`) every ratio divides by: Duff."""
FIGURE1_DATASETS = ("normal", "uniform", "beta")
REPORT_FILE = "figure1_ratios.md"
NOTES_FILE = "figure1_notes.md"
SERIES = ["dataset", "mechanism", "delta"]
"""A line of the figure: one mechanism at one requested δ on one dataset."""


class InputError(Exception):
    """The results directory cannot be turned into Figure 1; the message says why."""


@dataclass(frozen=True)
class PaperRatio:
    """A ratio quoted in the Duff paper, section 6.1: baseline error / Duff error."""

    dataset: str
    family: str
    """The quoted mechanism (a :attr:`figure_style.Family.key`), with the paper's
    (oracle) tuning; any neighbours."""
    epsilon: float
    delta_rule: str
    """``"0"`` (δ = 0) or ``"1/n"`` (δ = 1/|S|)."""
    ratio: float


PAPER_RATIOS = (
    PaperRatio("normal", "smooth_cauchy", 0.1, "0", 187.0),
    PaperRatio("normal", "smooth_cauchy", 2.0, "0", 34.0),
    PaperRatio("normal", "smooth_laplace", 0.1, "1/n", 130.0),
    PaperRatio("normal", "smooth_laplace", 2.0, "1/n", 4.0),
    PaperRatio("normal", "laplace_ln", 0.1, "1/n", 4.0),
    PaperRatio("normal", "laplace_ln", 2.0, "1/n", 15.0),
)
"""Section 6.1 quotes these for N(0, 1).  It states δ = 1/|S| = 0.001 for
SmoothSens_ε,δ; it does not state LaplaceLN's δ for Figure 1, and section 6.2
uses δ = 1/n for it, so 1/n is assumed here (the report says so)."""

PAPER_SETUP = {
    "datasets": "100",
    "trials": "100",
    "n": "1000",
    "bounds": {"normal": "[-10, 10]", "uniform": "[0, 1]", "beta": "[0, 1]"},
}
"""Section 6.1: 100 datasets of |S| = 1000 per source, 100 calls per dataset."""


# --------------------------------------------------------------------------- input


def split_failed(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(ok, failed)``: rows with ``status == "ok"`` and all others."""
    is_ok = frame["status"] == "ok"
    return frame.loc[is_ok], frame.loc[~is_ok]


def failure_counts(failed: pd.DataFrame) -> pd.DataFrame:
    """Number of excluded rows per (dataset, mechanism, ε, δ, status)."""
    keys = ["dataset", "mechanism", "epsilon", "delta", "status"]
    return failed.groupby(keys, sort=True, dropna=False).size().rename("rows").reset_index()


def report_failed(failed: pd.DataFrame, stream: TextIO) -> None:
    """Write the counts of excluded rows to ``stream`` (nothing when there are none)."""
    if failed.empty:
        return
    print(f"plot_figure1: excluded {len(failed)} row(s) with status != 'ok':", file=stream)
    for row in failure_counts(failed).itertuples(index=False):
        print(
            f"  {row.rows} x dataset={row.dataset} mechanism={row.mechanism} "
            f"epsilon={row.epsilon} delta={row.delta}: {row.status}",
            file=stream,
        )


def reference_label(palette: Palette) -> str:
    """The label of the run's one Duff series (:data:`REFERENCE`)."""
    labels = palette.labels(REFERENCE)
    if len(labels) != 1:
        found = f"several ({', '.join(labels)})" if labels else "none"
        raise InputError(f"the ratios need one Duff series as reference; the run has {found}")
    return labels[0]


def select(
    frame: pd.DataFrame,
    datasets: Sequence[str],
    mechanisms: Sequence[str] | None,
    reference: str,
) -> pd.DataFrame:
    """Rows of the Figure 1 ``datasets`` and, if given, of ``mechanisms`` (plus ``reference``)."""
    rows = frame.loc[frame["dataset"].isin(datasets)]
    if rows.empty:
        raise InputError(f"summary has no rows for dataset(s) {', '.join(datasets)}")
    if mechanisms is not None:
        unknown = sorted(set(mechanisms) - set(rows["mechanism"]))
        if unknown:
            present = ", ".join(sorted(set(rows["mechanism"])))
            raise InputError(
                f"--mechanisms: no rows for {', '.join(unknown)} (summary has: {present})"
            )
        rows = rows.loc[rows["mechanism"].isin([*mechanisms, reference])]
    return rows


# --------------------------------------------------------------------------- aggregation


def aggregate(ok: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation across datasets of the per-dataset mean error.

    One row per (dataset, mechanism, δ, ε) with ``mean_error`` (the mean over
    replicates of ``mean_abs_error``), ``sd_error`` (their sample standard
    deviation, ddof = 1; NaN for a single replicate), ``datasets`` (number of
    replicates) and ``delta_is_one_over_n`` (δ·n = 1 on every row).
    """
    if ok.empty:
        raise InputError("no rows with status 'ok' to plot")
    rows = ok.assign(delta_times_n_is_one=np.isclose(ok["delta"] * ok["n"], 1.0, rtol=1e-6))
    grouped = rows.groupby([*SERIES, "epsilon"], sort=True)
    return pd.DataFrame(
        {
            "mean_error": grouped["mean_abs_error"].mean(),
            "sd_error": grouped["mean_abs_error"].std(ddof=1),
            "datasets": grouped["mean_abs_error"].size(),
            "delta_is_one_over_n": grouped["delta_times_n_is_one"].all(),
        }
    ).reset_index()


def ratios_to_reference(agg: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Each baseline's mean error divided by Duff's (label ``reference``), per (dataset, ε).

    Columns: dataset, mechanism, delta, epsilon, ``error`` (baseline),
    ``duff_error`` and ``ratio = error / duff_error`` (NaN where Duff was not
    run at that ε).
    """
    duff = agg.loc[agg["mechanism"] == reference]
    if duff.empty:
        raise InputError(f"no successful '{reference}' rows: the ratios need Duff as reference")
    clash = duff.duplicated(["dataset", "epsilon"])
    if clash.any():
        raise InputError(f"'{reference}' was run at several deltas for the same dataset and ε")
    duff_errors = duff[["dataset", "epsilon", "mean_error"]].rename(
        columns={"mean_error": "duff_error"}
    )
    baselines = agg.loc[agg["mechanism"] != reference, [*SERIES, "epsilon", "mean_error"]]
    merged = baselines.rename(columns={"mean_error": "error"}).merge(
        duff_errors, on=["dataset", "epsilon"], how="left"
    )
    merged["ratio"] = merged["error"] / merged["duff_error"]
    return merged


def quoted_labels(palette: Palette, quote: PaperRatio) -> list[str]:
    """Our series of the quoted mechanism with the paper's (oracle) tuning, any neighbours."""
    return [label for label in palette.labels(quote.family) if palette.kind(label).oracle]


def compare_with_paper(
    agg: pd.DataFrame, ratios: pd.DataFrame, tolerance: float, palette: Palette
) -> pd.DataFrame:
    """The paper's quoted ratios beside ours: one row per quote and matching series.

    A quote matches every series of :func:`quoted_labels` on the same dataset and
    ε (to 1e-9) whose δ follows the quote's rule (δ = 0, or δ·n = 1 on every
    row); a quote nothing matches gets one row with an empty ``mechanism``.
    ``agrees`` is ``|ours / paper − 1| ≤ tolerance``; None where we have no run.
    """
    rule_ok = agg[[*SERIES, "epsilon", "delta_is_one_over_n"]]
    table = ratios.merge(rule_ok, on=[*SERIES, "epsilon"], how="left")
    records = []
    for quote in PAPER_RATIOS:
        one_over_n = table["delta_is_one_over_n"]
        delta_ok = (table["delta"] == 0) if quote.delta_rule == "0" else one_over_n
        match = table.loc[
            (table["dataset"] == quote.dataset)
            & table["mechanism"].isin(quoted_labels(palette, quote))
            & np.isclose(table["epsilon"], quote.epsilon, rtol=0.0, atol=1e-9)
            & delta_ok
            & table["ratio"].notna()
        ]
        found = sorted(
            zip(match["mechanism"], match["delta"], match["ratio"], strict=True),
            key=lambda row: (palette.sort_key(row[0]), row[1]),
        )
        for label, delta, ours in found or [("", math.nan, math.nan)]:
            agrees = bool(abs(ours / quote.ratio - 1) <= tolerance) if label else None
            records.append(
                {
                    "dataset": quote.dataset,
                    "family": quote.family,
                    "mechanism": label,
                    "epsilon": quote.epsilon,
                    "paper_delta": quote.delta_rule,
                    "delta": float(delta),
                    "paper": quote.ratio,
                    "ours": float(ours),
                    "agrees": agrees,
                }
            )
    return pd.DataFrame.from_records(records)


def guarantees(ok: pd.DataFrame) -> pd.DataFrame:
    """The guarantee each (mechanism, ε, δ) reports, with all distinct values joined."""

    def distinct(values: pd.Series) -> str:
        texts = sorted({_format_value(v) for v in values})
        return " / ".join(texts)

    columns = ["guarantee_epsilon", "guarantee_delta", "rho", "neighbouring", "private"]
    grouped = ok.groupby(["mechanism", "delta", "epsilon"], sort=True)[columns]
    return grouped.agg(distinct).reset_index()


def setup_summary(ok: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: number of replicates, trials per dataset, n and bounds actually used."""

    def distinct(values: pd.Series) -> str:
        return " / ".join(_format_value(v) for v in sorted(set(values)))

    rows = []
    for dataset, group in ok.groupby("dataset", sort=False):
        bounds = {
            f"[{_format_value(a)}, {_format_value(b)}]" for a, b in group[["lower", "upper"]].values
        }
        rows.append(
            {
                "dataset": dataset,
                "datasets": distinct(group.groupby(["mechanism", "delta", "epsilon"]).size()),
                "trials": distinct(group["trials"]),
                "n": distinct(group["n"]),
                "bounds": " / ".join(sorted(bounds)),
            }
        )
    return pd.DataFrame.from_records(rows)


# --------------------------------------------------------------------------- figure


def series_label(palette: Palette, mechanism: str, delta: float) -> str:
    """Legend text: the display name, with δ when it is not zero."""
    name = palette.name(mechanism)
    return name if delta == 0 else f"{name}, δ={delta:g}"


def _series_order(agg: pd.DataFrame, palette: Palette) -> list[tuple[str, float]]:
    pairs = agg[["mechanism", "delta"]].drop_duplicates().itertuples(index=False)
    return sorted(((m, float(d)) for m, d in pairs), key=lambda p: (palette.sort_key(p[0]), p[1]))


def _markers(series: Sequence[tuple[str, float]], palette: Palette) -> dict[tuple[str, float], str]:
    """Each mechanism's own marker for its first δ; further δ of the same mechanism
    (same colour) get the fallback markers so the lines stay distinguishable."""
    seen: dict[str, int] = {}
    markers = {}
    for mechanism, delta in series:
        index = seen.get(mechanism, 0)
        seen[mechanism] = index + 1
        others = figure_style.FALLBACK_MARKERS
        own = palette.style(mechanism).marker
        markers[mechanism, delta] = own if index == 0 else others[(index - 1) % len(others)]
    return markers


def draw_figure(
    agg: pd.DataFrame, datasets: Sequence[str], palette: Palette
) -> tuple[Figure, dict[str, Axes]]:
    """One panel per dataset: mean error against ε with ±1 sd bars, log y-axis.

    Returns the figure and its axes by dataset, so further layers (e.g.
    theoretical bounds) can be drawn on a panel before saving.
    """
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(4.2 * len(datasets), 3.8), layout="constrained", squeeze=False
    )
    panels = dict(zip(datasets, axes[0], strict=True))
    series = _series_order(agg, palette)
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
        ax.set_title(figure_style.dataset_title(dataset))
        ax.set_xlabel("ε")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("mean |T(S) − M(S)|")
    figure_legend(fig, panels)
    return fig, panels


def figure_legend(fig: Figure, panels: dict[str, Axes], rows: int = 2) -> None:
    """(Re)draw the figure's legend below the panels: the measured series (error bars)
    first, then plain lines (bounds), in ``rows`` rows, or more if long names would
    make it wider than the figure."""
    for legend in list(fig.legends):
        legend.remove()
    handles: dict[str, object] = {}
    for ax in panels.values():
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    order = sorted(handles, key=lambda label: isinstance(handles[label], Line2D))
    renderer = fig.canvas.get_renderer()
    for ncols in range(math.ceil(len(handles) / rows), 0, -1):
        legend = fig.legend(
            [handles[label] for label in order], order, loc="outside lower center", ncols=ncols
        )
        if ncols == 1 or legend.get_window_extent(renderer).width <= fig.bbox.width:
            return
        legend.remove()


PLOTTED_BOUNDS = ("corollary1", "proposition7", "attempt3")
"""One bound per mechanism in the figure (Duff's with the paper's C is only tabulated:
its assumption fails on most datasets)."""
BOUND_LINESTYLE = (0, (4, 2))


def bound_lines(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean over datasets of the per-dataset bound in data units (``abs_error``).

    One row per (dataset, mechanism, bound, ε) of :data:`PLOTTED_BOUNDS`, from
    the rows of :func:`bounds_coverage.evaluate`.
    """
    plotted = rows.loc[rows["bound"].isin(PLOTTED_BOUNDS)]
    keys = ["dataset", "mechanism", "bound", "epsilon"]
    return plotted.groupby(keys, sort=True)["abs_error"].mean().rename("bound_mean").reset_index()


def draw_bounds(
    fig: Figure, panels: dict[str, Axes], lines: pd.DataFrame, eta: float, palette: Palette
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


# --------------------------------------------------------------------------- report


def _format_value(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


def _format_number(value: float, suffix: str = "") -> str:
    return "—" if math.isnan(value) else f"{value:.3g}{suffix}"


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def paper_table(comparison: pd.DataFrame, tolerance: float, palette: Palette) -> str:
    """Markdown: paper's quoted ratio, ours (each matching series), and whether they agree."""
    rows = []
    for r in comparison.itertuples(index=False):
        paper_delta = "0" if r.paper_delta == "0" else "1/n"
        verdict = "not run" if r.agrees is None else ("yes" if r.agrees else "**no**")
        rows.append(
            [
                figure_style.dataset_title(r.dataset),
                palette.name(r.mechanism) if r.mechanism else figure_style.family(r.family).name,
                _format_value(r.epsilon),
                paper_delta,
                _format_value(r.delta),
                _format_number(r.paper, "×"),
                _format_number(r.ours, "×"),
                _format_number(r.ours / r.paper),
                verdict,
            ]
        )
    header = [
        "distribution",
        "baseline",
        "ε",
        "δ (paper)",
        "δ (ours)",
        "paper",
        "ours",
        "ours / paper",
        f"agrees within {tolerance:.0%}?",
    ]
    return _markdown(header, rows)


def ratio_tables(ratios: pd.DataFrame, datasets: Sequence[str], palette: Palette) -> str:
    """Markdown, one table per dataset: rows ε, columns baselines, cells error / Duff error."""
    parts = []
    series = _series_order(ratios, palette)
    for dataset in datasets:
        part = ratios.loc[ratios["dataset"] == dataset]
        if part.empty:
            continue
        header = ["ε", *(series_label(palette, m, d) for m, d in series)]
        rows = []
        for epsilon in sorted(part["epsilon"].unique()):
            cells = [_format_value(epsilon)]
            for mechanism, delta in series:
                cell = part.loc[
                    (part["epsilon"] == epsilon)
                    & (part["mechanism"] == mechanism)
                    & (part["delta"] == delta),
                    "ratio",
                ]
                cells.append(_format_number(float(cell.iloc[0]), "×") if len(cell) else "—")
            rows.append(cells)
        parts.append(f"**{figure_style.dataset_title(dataset)}**\n\n" + _markdown(header, rows))
    return "\n\n".join(parts)


def error_tables(agg: pd.DataFrame, datasets: Sequence[str], palette: Palette) -> str:
    """Markdown, one table per dataset: mean ± sd of the per-dataset mean error.

    A cell shows ``[k]`` when it averages fewer datasets than the most in that table.
    """
    parts = []
    series = _series_order(agg, palette)
    for dataset in datasets:
        part = agg.loc[agg["dataset"] == dataset]
        if part.empty:
            continue
        most = int(part["datasets"].max())
        header = ["ε", *(series_label(palette, m, d) for m, d in series)]
        rows = []
        for epsilon in sorted(part["epsilon"].unique()):
            cells = [_format_value(epsilon)]
            for mechanism, delta in series:
                cell = part.loc[
                    (part["epsilon"] == epsilon)
                    & (part["mechanism"] == mechanism)
                    & (part["delta"] == delta)
                ]
                if cell.empty:
                    cells.append("—")
                    continue
                r = cell.iloc[0]
                text = f"{_format_number(r['mean_error'])} ± {_format_number(r['sd_error'])}"
                if int(r["datasets"]) < most:
                    text += f" [{int(r['datasets'])}]"
                cells.append(text)
            rows.append(cells)
        title = f"**{figure_style.dataset_title(dataset)}** ({most} datasets per cell"
        title += " unless marked [k])"
        parts.append(title + "\n\n" + _markdown(header, rows))
    return "\n\n".join(parts)


def guarantee_table(table: pd.DataFrame, palette: Palette) -> str:
    """Markdown: requested (ε, δ) beside the guarantee each mechanism reports."""
    order = sorted(
        table.itertuples(index=False),
        key=lambda r: (palette.sort_key(r.mechanism), r.delta, r.epsilon),
    )
    rows = [
        [
            palette.name(r.mechanism),
            _format_value(r.epsilon),
            _format_value(r.delta),
            r.guarantee_epsilon,
            r.guarantee_delta,
            r.rho,
            r.neighbouring,
            r.private,
        ]
        for r in order
    ]
    header = [
        "mechanism",
        "ε (requested)",
        "δ (requested)",
        "guarantee ε",
        "guarantee δ",
        "ρ (zCDP)",
        "neighbouring",
        "private",
    ]
    return _markdown(header, rows)


def setup_table(setup: pd.DataFrame) -> str:
    """Markdown: our replicates, trials, n and bounds beside section 6.1's."""
    rows = [
        [
            figure_style.dataset_title(r.dataset),
            f"{r.datasets} / {PAPER_SETUP['datasets']}",
            f"{r.trials} / {PAPER_SETUP['trials']}",
            f"{r.n} / {PAPER_SETUP['n']}",
            f"{r.bounds} / {PAPER_SETUP['bounds'].get(r.dataset, '—')}",
        ]
        for r in setup.itertuples(index=False)
    ]
    header = ["distribution", "datasets (ours / paper)", "trials per dataset", "n", "[a, b]"]
    return _markdown(header, rows)


def failure_table(failed: pd.DataFrame, palette: Palette) -> str:
    """Markdown: counts of excluded rows, or a sentence saying there were none."""
    if failed.empty:
        return "None: every row has status `ok`."
    rows = [
        [
            figure_style.dataset_title(str(r.dataset)),
            palette.name(str(r.mechanism)),
            _format_value(r.epsilon),
            _format_value(r.delta),
            str(r.rows),
            r.status.replace("|", "\\|").replace("\n", " "),
        ]
        for r in failure_counts(failed).itertuples(index=False)
    ]
    return _markdown(["distribution", "mechanism", "ε", "δ", "rows", "status"], rows)


@dataclass(frozen=True)
class Figure1:
    """What the figure and the report show, computed from one results directory."""

    summary_path: Path
    palette: Palette
    ok: pd.DataFrame
    failed: pd.DataFrame
    datasets: list[str]
    agg: pd.DataFrame
    ratios: pd.DataFrame
    comparison: pd.DataFrame
    tolerance: float


def build_report(figure: Figure1, notes: str | None, notes_path: Path) -> str:
    """The full text of ``figure1_ratios.md``."""
    if notes is None:
        notes_text = (
            f"_No notes file found at `{notes_path}`. This section is written by hand after "
            "the reference run; this script does not generate explanations._"
        )
    else:
        notes_text = notes.strip()
    palette, datasets = figure.palette, figure.datasets
    sections = [
        "# Figure 1: Duff against the baselines (Duff paper, section 6.1)",
        f"Generated by `scripts/plot_figure1.py` from `{figure.summary_path}`. "
        "Error of a mechanism on one dataset = mean of |T(S) − M(S)| over its trials; "
        "the figures below average that over datasets. "
        "Ratio = baseline's mean error / Duff's mean error at the same ε (> 1: Duff is better).",
        "## Setup (ours / paper)",
        setup_table(setup_summary(figure.ok)),
        "## Ratios quoted in the paper",
        "Section 6.1 quotes these for N(0, 1). It gives δ = 1/|S| = 0.001 for SmoothSens_ε,δ; "
        "it does not give LaplaceLN's δ for Figure 1, so δ = 1/n is assumed (section 6.2 uses it). "
        "Each quote is compared with every series of that mechanism tuned as in the paper "
        "(on the data), whatever its neighbours. "
        f'"Agrees" means |ours / paper − 1| ≤ {figure.tolerance:g}.',
        paper_table(figure.comparison, figure.tolerance, palette),
        "## Ratio to Duff at every ε",
        ratio_tables(figure.ratios, datasets, palette),
        "## Mean error (mean ± sd across datasets)",
        error_tables(figure.agg, datasets, palette),
        "## Privacy guarantee actually given",
        "As reported by each mechanism (`guarantee_*`, `rho` columns of the summary). "
        "A zCDP mechanism's (ε, δ) is its conversion, which can be far above the requested ε. "
        "`private` is false when parameters were tuned on the private data.",
        guarantee_table(guarantees(figure.ok), palette),
        "## Excluded rows (status != ok)",
        failure_table(figure.failed, palette),
        "## Where the reproduction disagrees, and why",
        notes_text,
    ]
    return "\n\n".join(sections) + "\n"


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="plot_figure1.py", description="Draw the Duff paper's Figure 1 and its ratio table."
    )
    parser.add_argument("results_dir", type=Path, help="directory holding summary.csv")
    parser.add_argument("--out", type=Path, help="output directory (default: RESULTS_DIR)")
    parser.add_argument(
        "--mechanisms",
        nargs="+",
        metavar="LABEL",
        help="mechanism labels to draw (default: all); duff is always kept as the reference",
    )
    parser.add_argument(
        "--notes",
        type=Path,
        help="text copied into 'Where the reproduction disagrees' "
        "(default: RESULTS_DIR/figure1_notes.md if it exists)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.25,
        help="relative tolerance for 'agrees with the paper' (default: 0.25)",
    )
    parser.add_argument(
        "--bounds",
        action="store_true",
        help="also draw the theoretical error bounds (figure1_bounds.*) and write their "
        "coverage table (needs estimates.npz: run with keep_estimates=true)",
    )
    parser.add_argument(
        "--eta",
        type=bounds_coverage.parse_eta,
        default=0.05,
        help="failure probability of the bounds: the (1 - eta)-quantile is bounded (default: 0.05)",
    )
    return parser.parse_args(argv)


def bound_results(
    args: argparse.Namespace, datasets: Sequence[str], reference: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bound coverage rows and table (:mod:`bounds_coverage`) for the drawn datasets and
    mechanisms (``reference``: the Duff label, always drawn)."""
    rows, _ = bounds_coverage.coverage(args.results_dir, args.eta)
    keep = rows["dataset"].isin(datasets)
    if args.mechanisms is not None:
        keep &= rows["mechanism"].isin([*args.mechanisms, reference])
    rows = rows.loc[keep].reset_index(drop=True)
    if rows.empty:
        raise InputError("--bounds: no mechanism with a known bound among the drawn rows")
    return rows, bounds_coverage.summarise(rows, args.eta)


def _read_notes(explicit: Path | None, default: Path) -> tuple[str | None, Path]:
    if explicit is not None:
        if not explicit.is_file():
            raise InputError(f"--notes: {explicit}: no such file")
        return explicit.read_text(encoding="utf-8"), explicit
    if default.is_file():
        return default.read_text(encoding="utf-8"), default
    return None, default


def compute(args: argparse.Namespace) -> Figure1:
    """Read and check the results directory; aggregate, take ratios, compare with the paper."""
    if not (args.tolerance >= 0):
        raise InputError(f"--tolerance: must be >= 0, got {args.tolerance}")
    results = results_reader.load(args.results_dir)
    palette = figure_style.palette(results)
    reference = reference_label(palette)
    frame = select(results.summary, FIGURE1_DATASETS, args.mechanisms, reference)
    ok, failed = split_failed(frame)
    report_failed(failed, sys.stderr)
    datasets = [d for d in FIGURE1_DATASETS if d in set(ok["dataset"])]
    absent = [d for d in FIGURE1_DATASETS if d not in datasets]
    if absent:
        print(
            f"plot_figure1: no usable rows for {', '.join(absent)}; panel(s) left out",
            file=sys.stderr,
        )
    agg = aggregate(ok)
    ratios = ratios_to_reference(agg, reference)
    comparison = compare_with_paper(agg, ratios, args.tolerance, palette)
    summary_path = args.results_dir / SUMMARY_FILE
    return Figure1(
        summary_path, palette, ok, failed, datasets, agg, ratios, comparison, args.tolerance
    )


def write_bounds(
    figure: Figure1, theory: tuple[pd.DataFrame, pd.DataFrame], out_dir: Path, eta: float
) -> list[Path]:
    """``figure1_bounds.png``/``.pdf`` and the coverage files of :mod:`bounds_coverage`."""
    rows, table = theory
    fig, panels = draw_figure(figure.agg, figure.datasets, figure.palette)
    draw_bounds(fig, panels, bound_lines(rows), eta, figure.palette)
    written = figure_style.save_figure(fig, out_dir, "figure1_bounds")
    return written + bounds_coverage.write_outputs(rows, table, out_dir, eta)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the script; returns the exit status (0, or 2 on unusable input)."""
    args = parse_args(argv)
    try:
        notes, notes_path = _read_notes(args.notes, args.results_dir / NOTES_FILE)
        figure = compute(args)
        reference = reference_label(figure.palette)
        theory = bound_results(args, figure.datasets, reference) if args.bounds else None
    except (InputError, results_reader.ResultsError, bounds_coverage.InputError) as err:
        print(f"plot_figure1: error: {err}", file=sys.stderr)
        return 2

    out_dir = args.out if args.out is not None else args.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, _ = draw_figure(figure.agg, figure.datasets, figure.palette)
    written = figure_style.save_figure(fig, out_dir, "figure1")
    report_path = out_dir / REPORT_FILE
    report_path.write_text(build_report(figure, notes, notes_path), encoding="utf-8")
    written.append(report_path)
    if theory is not None:
        written += write_bounds(figure, theory, out_dir, args.eta)
    print("## Ratios quoted in the paper\n")
    print(paper_table(figure.comparison, args.tolerance, figure.palette))
    print("\n## Ratio to Duff at every ε\n")
    print(ratio_tables(figure.ratios, figure.datasets, figure.palette))
    print(f"\nwrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
