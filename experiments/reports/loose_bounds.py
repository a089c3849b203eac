"""``duff-plot loose-bounds``: how each median mechanism degrades with loose bounds.

Usage::

    duff-plot loose-bounds RESULTS_DIR [--out DIR]

Input: a run of ``experiment=loose_bounds`` (datasets of :class:`experiments.data.bounds_grid.
BoundsGrid`: the same draws under ``[c − R, c + R]``, subset ``"R=…,c=…"``), its plan
rebuilt from ``run.json`` (:func:`experiments.reports.bounds_coverage.load_run`) to redraw the
data.  Per (dataset, c, ε, mechanism) and R, the mean over the replicates of the mean
absolute error |T(S) − M(S)| and of the mean rank error.

**Slopes.**  Over the bounds that contain the data (R ≥ :data:`FIT_FROM`, c = 0), the
least-squares slope of log₁₀(absolute error) against log₁₀ R (1: the error grows like
b − a; 0: it ignores the bounds) and of the rank error per decade of R, each beside the
dependence the mechanism's calibration predicts (:data:`EXPECTED`).

**Clipping bias.**  Where the bounds cut the data, T(S) is the median of the clipped data;
the bias |median(clip(S)) − median(S)| is computed from the same draws (mean over the
replicates) and drawn beside the errors: an error against T(S) that is small while the
bias is large is accurate about the wrong number.

Written to ``loose_bounds.png``/``.pdf`` (a row per (dataset, c), columns: absolute error,
rank error, at the run's smallest ε, log R on the x-axis) and ``loose_bounds_table.md``.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.harness import results_reader
from experiments.harness.plan import Plan
from experiments.reports import style
from experiments.reports.bounds_coverage import load_run
from experiments.reports.selection import ReportError, results_arguments, split_failed
from experiments.reports.tables import markdown_table, three_digits

HELP = "error against the width of the bounds, its slopes, the clipping bias (loose_bounds)"
STEM = "loose_bounds"
FIT_FROM = 10.0
"""The smallest half-width R in the slope fits (N(0, 1) and log-normal(0, 1) data lie in
[−10, 10] in practice)."""
SUBSET = re.compile(r"^R=(?P<R>[^,]+),c=(?P<c>.+)$")
EXPECTED: dict[str, tuple[str, str]] = {
    "laplace_global": ("1", "noise scale (b − a)/ε: error ∝ b − a"),
    "gaussian_global": ("1", "noise scale ∝ (b − a)/ε: error ∝ b − a"),
    "duff": (
        "0 (rank: ≤ 2 ln 10/ε per decade)",
        "base measure b − a: the rank bound grows by (2/ε) ln 10 per decade, but the far "
        "region's mass is (b − a)·e^{−ε n/4}: flat until b − a ~ e^{ε n/4}",
    ),
    "quantile_em": ("0 (rank: ≤ 2 ln 10/ε per decade)", "as `duff`"),
    "diffprivlib_quantile": ("0 (rank: ≤ 2 ln 10/ε per decade)", "as `duff`"),
    "smooth_cauchy": (
        "0, then 1",
        "smooth sensitivity max_k e^{−βk} LS_k: the bounds enter at k ≈ n/2, as "
        "(b − a)·e^{−β n/2}: slope 1 once that term dominates",
    ),
    "smooth_laplace": ("0, then 1", "as `smooth_cauchy`"),
    "laplace_ln": ("0, then 1", "as `smooth_cauchy`"),
    "unbounded_quantile": (
        "1",
        "uses a = c − R only: grid steps near the data are (β − 1)(x − a) ≈ 10⁻³ R",
    ),
    "range_finder_duff": ("0", "its range comes from the data (intersected with [a, b])"),
}
"""Per registered mechanism: the expected log-log slope of the absolute error against R for
bounds that contain the data, and why."""


def parse_subset(subset: str) -> tuple[float, float]:
    """``(R, c)`` of a subset ``"R=1e+02,c=0"``."""
    match = SUBSET.match(subset)
    if match is None:
        raise ReportError(f"subset {subset!r} is not a bounds-grid subset (R=...,c=...)")
    return float(match["R"]), float(match["c"])


def cells(results: results_reader.Results) -> pd.DataFrame:
    """Per (dataset, c, ε, mechanism, R): mean absolute and rank errors over the replicates."""
    ok = split_failed(results.summary)[0]
    if ok.empty or not ok["subset"].str.match(SUBSET.pattern).all():
        raise ReportError(f"{results.directory}: not a run of experiment=loose_bounds")
    parsed = ok["subset"].map(parse_subset)
    frame = ok.assign(R=parsed.map(lambda p: p[0]), c=parsed.map(lambda p: p[1]))
    keys = ["dataset", "c", "epsilon", "mechanism", "R"]
    return frame.groupby(keys)[["mean_abs_error", "mean_rank_error"]].mean()


def clipping_bias(plan: Plan) -> pd.DataFrame:
    """Per (dataset, c, R): the mean over the replicates of |median(clip(S)) − median(S)|
    (the harness's T(S) is the median of the clipped data: ``x_(ceil(n/2))``)."""
    rows = []
    for dataset in plan.datasets:
        R, c = parse_subset(dataset.subset)
        biases = []
        for replicate in range(dataset.replicates):
            x = np.sort(dataset.data(plan.settings.seed, replicate))
            k = math.ceil(x.size / 2) - 1
            clipped = min(max(x[k], dataset.lower), dataset.upper)  # clipping is monotone
            biases.append(abs(clipped - x[k]))
        rows.append({"dataset": dataset.name, "c": c, "R": R, "bias": float(np.mean(biases))})
    return pd.DataFrame(rows).set_index(["dataset", "c", "R"]).sort_index()


def slope(x: np.ndarray, y: np.ndarray) -> float:
    """The least-squares slope of ``y`` against ``x`` (NaN with fewer than two points)."""
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(x[keep], y[keep], 1)[0])


def slopes(table: pd.DataFrame, results: results_reader.Results) -> pd.DataFrame:
    """Per (dataset, ε, mechanism), over c = 0 and R ≥ :data:`FIT_FROM`: the log-log slope of
    the absolute error and the rank error's slope per decade, with the expected one."""
    names = {m.label: m.name for m in results.mechanisms.values()}
    rows = []
    centred = table.xs(0.0, level="c")
    for (dataset, epsilon, label), group in centred.groupby(level=[0, 1, 2]):
        line = group.droplevel([0, 1, 2])
        line = line.loc[line.index >= FIT_FROM]
        log_r = np.log10(line.index.to_numpy(dtype=float))
        with np.errstate(divide="ignore"):
            log_error = np.log10(line["mean_abs_error"].to_numpy())
        name = names.get(label, label)
        expected, why = EXPECTED.get(name, ("—", "no prediction declared"))
        rows.append(
            {
                "name": name,
                "dataset": dataset,
                "epsilon": epsilon,
                "mechanism": label,
                "log_slope": slope(log_r, log_error),
                "rank_slope": slope(log_r, line["mean_rank_error"].to_numpy()),
                "expected": expected,
                "why": why,
            }
        )
    return pd.DataFrame(rows)


def report(
    table: pd.DataFrame, fitted: pd.DataFrame, bias: pd.DataFrame, palette: style.Palette
) -> str:
    """The Markdown of ``loose_bounds_table.md``."""
    slope_rows = [
        [
            str(row.dataset),
            f"{row.epsilon:g}",
            palette.name(row.mechanism),
            three_digits(row.log_slope),
            three_digits(row.rank_slope),
            str(row.expected),
        ]
        for row in fitted.itertuples(index=False)
    ]
    error_rows = []
    for (dataset, c, epsilon, label), group in table.groupby(level=[0, 1, 2, 3]):
        line = group.droplevel([0, 1, 2, 3])
        error_rows.append(
            [str(dataset), f"{c:g}", f"{epsilon:g}", palette.name(label)]
            + [three_digits(v) for v in line["mean_abs_error"]]
        )
    widths = sorted(set(table.index.get_level_values("R")))
    bias_rows = [
        [str(dataset), f"{c:g}"] + [three_digits(v) for v in group["bias"]]
        for (dataset, c), group in bias.groupby(level=[0, 1])
    ]
    why = sorted(
        {(str(r.name), str(r.expected), str(r.why)) for r in fitted.itertuples(index=False)}
    )
    return (
        "\n\n".join(
            [
                "# Loose bounds: error against the half-width R of [c − R, c + R]",
                "Generated by `duff-plot loose-bounds`. Mean over the replicates of each "
                "cell's mean absolute error |T(S) − M(S)| (T(S): the median of the data "
                "clipped to the bounds) and mean rank error.",
                f"## Slopes over R ≥ {FIT_FROM:g}, c = 0",
                "log-log slope: of the absolute error against R (1: ∝ b − a, 0: flat); rank "
                "per decade: the rank error's growth per factor 10 of R.",
                markdown_table(
                    ["dataset", "ε", "mechanism", "log-log slope", "rank per decade", "expected"],
                    slope_rows,
                ),
                "Expected, and why:",
                "\n".join(f"- `{name}` ({expected}): {text}" for name, expected, text in why),
                "## Clipping bias |median(clip(S)) − median(S)| by R",
                markdown_table(["dataset", "c", *(f"R={w:g}" for w in widths)], bias_rows),
                "## Mean absolute error by R",
                markdown_table(
                    ["dataset", "c", "ε", "mechanism", *(f"R={w:g}" for w in widths)],
                    error_rows,
                ),
            ]
        )
        + "\n"
    )


def figure(
    table: pd.DataFrame, bias: pd.DataFrame, palette: style.Palette, out: Path
) -> list[Path]:
    """A row per (dataset, c) at the smallest ε (where the bounds matter most): absolute
    error (with the clipping bias, dashed black) and rank error against R."""
    epsilon = min(table.index.get_level_values("epsilon"))
    lines = table.xs(epsilon, level="epsilon")
    groups = sorted({(d, c) for d, c, _, _ in lines.index})
    fig, axes = plt.subplots(len(groups), 2, figsize=(9.0, 3.0 * len(groups) + 0.8), squeeze=False)
    for row, (dataset, c) in enumerate(groups):
        of_group = lines.xs((dataset, c), level=["dataset", "c"])
        for column, (metric, what) in enumerate(
            (("mean_abs_error", "mean |T(S) − M(S)|"), ("mean_rank_error", "mean rank error"))
        ):
            axis = axes[row][column]
            for label in sorted(set(of_group.index.get_level_values(0)), key=palette.sort_key):
                style.plot_line(axis, of_group.xs(label)[metric], palette.style(label))
            if column == 0:
                clip = bias.xs((dataset, c), level=["dataset", "c"])["bias"]
                axis.plot(clip.index, clip.to_numpy(), "k--", label="clipping bias")
            axis.set_xscale("log")
            axis.set_yscale("symlog", linthresh=1e-3)
            axis.set_ylim(bottom=0.0)  # errors are >= 0; symlog would show a negative half
            axis.set_xlabel("R (bounds [c − R, c + R])")
            axis.set_ylabel(what, fontsize=8)
            axis.set_title(f"{dataset}, c = {c:g}, ε = {epsilon:g}", fontsize=9)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=7)
    fig.tight_layout(rect=(0, 0.8 / (3.0 * len(groups) + 0.8) + 0.03, 1, 1))
    return style.save_figure(fig, out, STEM)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    results_arguments(parser, "a results directory of experiment=loose_bounds")


def command(args: argparse.Namespace) -> int:
    plan, results = load_run(args.results_dir, estimates=False)
    out = args.out or args.results_dir
    out.mkdir(parents=True, exist_ok=True)
    palette = style.palette(results)
    table = cells(results)
    bias = clipping_bias(plan)
    fitted = slopes(table, results)
    text = report(table, fitted, bias, palette)
    path = out / f"{STEM}_table.md"
    path.write_text(text, encoding="utf-8")
    written = [*figure(table, bias, palette, out), path]
    print(text)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
