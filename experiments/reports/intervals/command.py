"""``duff-plot intervals``: coverage and width of the confidence intervals for the median.

Usage::

    duff-plot intervals RESULTS_DIR [--out DIR]

Input: a run of ``experiment=intervals`` (statistics ``median_interval(α)``, the
methods of :mod:`mechanisms.intervals`); rows whose ``status`` is not ``"ok"`` are
left out and counted.  A *cell* is one (dataset, n, α, method, ε) over its ``R`` ok
replicates (independent datasets), each row holding ``trials`` intervals
(:mod:`experiments.harness.interval_metrics`):

* coverage ``c`` = mean of the rows' ``coverage`` (fraction of intervals containing
  the target), ``SE`` = sample SD (ddof 1) of the rows' coverages / √R;
  ``covered`` = round(Σ coverage·trials) of ``total`` = Σ trials intervals;
* relative width ``w`` = Σ mean_width / Σ nonprivate_width (a ratio of means, robust
  to a replicate whose non-private sign-test interval is very narrow);
* below nominal: with one interval per dataset (``trials = 1``, independent
  intervals), ``P(Binomial(total, 1 − α) <= covered) < 0.01 / m``
  (:func:`experiments.harness.interval_metrics.coverage_p_value`; Bonferroni over the ``m``
  tested cells, family-wise level 1%).  With ``trials > 1`` the intervals of one
  dataset are dependent and nothing is tested.

A method whose guarantee is ε = ∞ (the non-private baseline) gives the same
intervals at every ε: it is drawn as a flat line, and tabled and tested once per
(dataset, n, α), at ε = ∞.  Coverage is drawn as in Honaker & Vadhan's CS208
lecture slides "DP Foundations: Exponential and Gaussian Mechanisms" ("Confidence
Interval Construction"), against a dashed line at the nominal level.  Written:
``intervals_coverage_alpha<α>`` and ``intervals_width_alpha<α>`` (``.png``/``.pdf``,
rows datasets, columns n, x = ε) and ``intervals_table.md``, whose block between
``<!-- readme -->`` markers is the README's.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.harness import results_reader
from experiments.harness.interval_metrics import coverage_p_value
from experiments.reports import style
from experiments.reports.intervals import plot as intervals_plot
from experiments.reports.intervals.cells import Cells
from experiments.reports.selection import ReportError, results_arguments, split_failed
from experiments.reports.tables import MISSING, markdown_table

HELP = "coverage and width of the median's confidence intervals (a run of experiment=intervals)"
KIND = "median_interval"
FAMILY_WISE = 0.01
README_ALPHA = 0.05
README_START, README_END = "<!-- readme -->", "<!-- /readme -->"
CELL = ["dataset", "subset", "alpha", "mechanism", "epsilon"]
"""The columns that identify a cell, in the order the table sorts by."""


def alphas(results: results_reader.Results) -> dict[str, float]:
    """The α of each ``median_interval`` statistic of the run, by statistic id."""
    found = {}
    for entry in results.numbers.get("statistics", []):
        if entry.get("kind") != KIND:
            continue
        if not isinstance(entry.get("alpha"), (int, float)):
            raise ReportError(f"{results.directory}: statistic {entry.get('id')!r} has no alpha")
        found[str(entry["id"])] = float(entry["alpha"])
    if not found:
        raise ReportError(f"{results.directory}: the run has no {KIND} statistic")
    return found


def aggregate(ok: pd.DataFrame) -> pd.DataFrame:
    """Per cell (:data:`CELL`, first-appearance order) over its rows: ``replicates`` (R),
    ``coverage``, ``se``, ``covered``, ``total``, ``relative_width``, ``trials`` (the
    largest) and ``guarantee`` (the largest ``guarantee_epsilon``)."""
    frame = ok.assign(covered=ok["coverage"] * ok["trials"])
    cells = frame.groupby(CELL, sort=False).agg(
        replicates=("coverage", "size"),
        coverage=("coverage", "mean"),
        sd=("coverage", "std"),
        covered=("covered", "sum"),
        total=("trials", "sum"),
        width=("mean_width", "sum"),
        reference=("nonprivate_width", "sum"),
        trials=("trials", "max"),
        guarantee=("guarantee_epsilon", "max"),
    )
    cells["se"] = cells["sd"] / np.sqrt(cells["replicates"])
    cells["covered"] = cells["covered"].round().astype(int)
    cells["relative_width"] = cells["width"] / cells["reference"]
    return cells.drop(columns=["sd", "width", "reference"]).reset_index()


def in_run_order(cells: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``cells`` sorted by :data:`CELL`, each column in its order of first appearance in
    ``rows`` (the summary's order: the plan's)."""
    ranks = [
        cells[column].map({value: i for i, value in enumerate(pd.unique(rows[column]))})
        for column in CELL
    ]
    return cells.iloc[np.lexsort(ranks[::-1])].reset_index(drop=True)


def once_per_epsilon(cells: pd.DataFrame, directory: Path) -> pd.DataFrame:
    """The cells tabled and tested: a non-private method's (guarantee ε = ∞) once per
    (dataset, n, α), at ε = ∞; ``ReportError`` if its intervals change with ε."""
    fixed = np.isinf(cells["guarantee"])
    same = ["dataset", "subset", "alpha", "mechanism"]
    varying = cells.loc[fixed].groupby(same)[["covered", "total", "relative_width"]].nunique()
    if (varying > 1).any(axis=None):
        label = varying.index[(varying > 1).any(axis=1)][0][3]
        raise ReportError(
            f"{directory}: non-private method {label!r} has different intervals at different ε"
        )
    keep = ~fixed | ~cells[same].duplicated()
    tested = cells.loc[keep].copy()
    tested.loc[fixed[keep], "epsilon"] = math.inf
    return tested.reset_index(drop=True)


def flag_below(tested: pd.DataFrame, independent: bool) -> pd.DataFrame:
    """``tested`` with ``p_value`` (NaN when not tested) and ``below``: p-value below the
    Bonferroni threshold :data:`FAMILY_WISE` / (number of cells)."""
    if not independent:
        return tested.assign(p_value=math.nan, below=False)
    p_values = [
        coverage_p_value(int(covered), int(total), 1.0 - alpha)
        for covered, total, alpha in zip(
            tested["covered"], tested["total"], tested["alpha"], strict=True
        )
    ]
    threshold = FAMILY_WISE / len(tested)
    return tested.assign(p_value=p_values, below=np.asarray(p_values) < threshold)


def summarise(results: results_reader.Results) -> Cells:
    """The :class:`Cells` of the run's ``median_interval`` rows."""
    alpha_of = alphas(results)
    rows = results.summary.loc[results.summary["statistic"].isin(list(alpha_of))]
    ok, failed = split_failed(rows)
    if ok.empty:
        raise ReportError(f"{results.directory}: the run has no ok {KIND} rows")
    ok = ok.assign(alpha=ok["statistic"].map(alpha_of))
    drawn = in_run_order(aggregate(ok), rows.assign(alpha=rows["statistic"].map(alpha_of)))
    independent = bool((drawn["trials"] == 1).all())
    tested = flag_below(once_per_epsilon(drawn, results.directory), independent)
    return Cells(drawn, tested, len(failed), independent, style.palette(results))


# ------------------------------------------------------------------------- text


def ratio_text(value: float) -> str:
    """A relative width: three significant digits kept (``2.30×``), never in exponent
    form; exactly 1 (the non-private interval itself) is ``1×``."""
    if math.isnan(value):
        return MISSING
    if value == 1.0:
        return "1×"
    return f"{value:#.3g}×".replace(".×", "×") if abs(value) < 1000 else f"{value:.0f}×"


def epsilon_text(epsilon: float) -> str:
    return "∞ (not private)" if math.isinf(epsilon) else f"{epsilon:g}"


def coverage_text(coverage: float, se: float) -> str:
    return f"{coverage:.3f} ± {MISSING if math.isnan(se) else f'{se:.3f}'}"


def where(cell: pd.Series, palette: style.Palette) -> str:
    """A cell named for a reader: method, dataset, n, ε, α."""
    return (
        f"{palette.name(cell['mechanism'])}, {style.dataset_title(cell['dataset'])}, "
        f"{cell['subset']}, ε = {epsilon_text(cell['epsilon'])}, α = {cell['alpha']:g}"
    )


def flag_text(cell: pd.Series, independent: bool) -> str:
    if not independent:
        return "not tested"
    return f"**below nominal** (p = {cell['p_value']:.2g})" if cell["below"] else ""


def full_table(cells: Cells, palette: style.Palette) -> str:
    """Every tested cell: coverage ± SE, relative width and the below-nominal flag."""
    rows = [
        [
            style.dataset_title(cell["dataset"]),
            cell["subset"],
            f"{cell['alpha']:g}",
            palette.name(cell["mechanism"]),
            epsilon_text(cell["epsilon"]),
            coverage_text(cell["coverage"], cell["se"]),
            ratio_text(cell["relative_width"]),
            flag_text(cell, cells.independent),
        ]
        for _, cell in cells.tested.iterrows()
    ]
    header = ["dataset", "n", "α", "method", "ε", "coverage ± SE", "relative width", "flag"]
    return markdown_table(header, rows, ["---"] * 5 + ["---:"] * 2 + ["---"])


def readme_alpha(tested: pd.DataFrame) -> float:
    """:data:`README_ALPHA` if the run has it, else its smallest α."""
    values = set(tested["alpha"])
    return README_ALPHA if README_ALPHA in values else min(values)


def pooled_text(of: pd.DataFrame, epsilon: float) -> str:
    """``"c / w×"`` of one method and n at ``epsilon`` (at ε = ∞ for a non-private method)."""
    key = math.inf if math.inf in of.index else epsilon
    if key not in of.index:
        return MISSING
    return f"{of.loc[key, 'coverage']:.3f} / {ratio_text(of.loc[key, 'width'])}"


def readme_table(tested: pd.DataFrame, palette: style.Palette, epsilons: list[float]) -> str:
    """At :func:`readme_alpha`, rows method × n, columns ε: ``"c / w×"``, c the lowest
    coverage over the datasets and w the mean of their relative widths (a method with
    ε = ∞ shows its one cell in every column)."""
    chosen = tested.loc[tested["alpha"] == readme_alpha(tested)]
    pooled = chosen.groupby(["mechanism", "subset", "epsilon"]).agg(
        coverage=("coverage", "min"), width=("relative_width", "mean")
    )
    rows = []
    for label in pd.unique(chosen["mechanism"]):
        for subset in pd.unique(chosen["subset"]):
            if (label, subset) not in pooled.index.droplevel("epsilon"):
                continue
            of = pooled.loc[(label, subset)]
            row = [palette.name(label), subset]
            rows.append([*row, *(pooled_text(of, epsilon) for epsilon in epsilons)])
    header = ["method", "n", *(f"ε = {e:g}" for e in epsilons)]
    return markdown_table(header, rows, ["---", "---", *["---:"] * len(epsilons)])


def verdict(cells: Cells, palette: style.Palette) -> str:
    """One sentence: how many cells (all α) fall below nominal, and which."""
    if not cells.independent:
        return "Coverage is not tested against nominal (trials > 1: dependent intervals)."
    below = cells.tested.loc[cells.tested["below"]]
    tested = len(cells.tested)
    if below.empty:
        return f"None of the {tested} tested cells (all α) falls below nominal."
    named = "; ".join(where(cell, palette) for _, cell in below.iterrows())
    return f"{len(below)} of the {tested} tested cells (all α) fall below nominal: {named}."


def report(cells: Cells) -> str:
    """The Markdown of ``intervals_table.md``."""
    palette, tested = cells.palette, cells.tested
    alpha = readme_alpha(tested)
    low, high = int(tested["replicates"].min()), int(tested["replicates"].max())
    replicates = str(low) if low == high else f"{low}–{high}"
    test = (
        "Below nominal: the exact one-sided binomial test of coverage ≥ 1 − α, "
        f"P(Binomial(total, 1 − α) ≤ covered) < {FAMILY_WISE:g} / {len(tested)} "
        f"(Bonferroni over the {len(tested)} tested cells: family-wise {FAMILY_WISE:.0%})."
        if cells.independent
        else "Below nominal: not tested: trials > 1 (the intervals of one dataset are dependent)."
    )
    parts = [
        "# Confidence intervals for the median: coverage and width",
        f"Generated by `duff-plot intervals`. {cells.failed} rows failed and are left out. "
        "Target: the population median of the distribution the data are drawn from. "
        f"Each cell is one (dataset, n, α, method, ε) over R = {replicates} "
        "independent datasets (replicates). Coverage = the fraction of intervals that "
        "contain the target (nominal 1 − α), ± SE = sample SD of the replicates' coverages "
        "/ √R. Relative width = Σ mean width / Σ width of the non-private sign-test "
        "interval on the same data, over the replicates (1× = as wide as the non-private "
        "interval). A non-private method (ε = ∞) gives the same intervals at every ε: one "
        f"cell per (dataset, n, α). {test}",
        verdict(cells, palette),
        full_table(cells, palette),
        f"## α = {alpha:g}: lowest coverage over the datasets / mean relative width",
        README_START,
        readme_table(tested, palette, sorted(set(cells.drawn["epsilon"]))),
        verdict(cells, palette),
        README_END,
    ]
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------- command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    results_arguments(parser, "a results directory of experiment=intervals")


def command(args: argparse.Namespace) -> int:
    """Write the figures and the table; print the table."""
    results = results_reader.load(args.results_dir)
    cells = summarise(results)
    text = report(cells)
    out = args.out or args.results_dir
    out.mkdir(parents=True, exist_ok=True)
    table_path = out / "intervals_table.md"
    table_path.write_text(text, encoding="utf-8")
    written = [
        path
        for alpha in pd.unique(cells.drawn["alpha"])
        for measure in (intervals_plot.COVERAGE, intervals_plot.WIDTH)
        for path in intervals_plot.figure(cells, float(alpha), measure, out)
    ]
    print(text)
    print("wrote " + ", ".join(str(path) for path in [*written, table_path]))
    return 0
