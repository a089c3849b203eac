"""``duff-plot quantiles``: error of every quantile mechanism against α, and who wins where.

Usage::

    duff-plot quantiles RESULTS_DIR [--out DIR]

Input: a run of ``experiment=quantiles`` (statistics ``quantile(α)``), read by
:func:`experiments.harness.results_reader.load`; rows whose ``status`` is not ``"ok"``
are left out and counted.  Errors of one row are the means over its trials of
``|T(S) − M(S)|`` and of the rank error (points strictly between ``T(S)`` and
``M(S)``; Gillenwater, Joseph & Kulesza, "Differentially private quantiles");
a cell averages them over the datasets (replicates) of one distribution, and the
*pooled* rank error averages the cells of the synthetic distributions (all of
size ``n``, so their ranks are comparable).

Written to ``quantiles.png``/``.pdf`` (top: pooled rank error against α, one
panel per ε; bottom: ``|T − M|`` on N(0, 1)) and ``quantiles_table.md``: the
pooled rank error per (ε, α, mechanism); per (ε, α) the best mechanism whose
guarantee is private and met (the ``private`` and ``guarantee_met`` columns),
its margin over the runner-up, and the ratio of the best private
smooth-sensitivity mechanism's error to Duff's; and the same for the Vertebral
Column datasets.  The block between ``<!-- readme -->`` markers is the README's.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from experiments.harness import results_reader
from experiments.reports import style
from experiments.reports.selection import ReportError, results_arguments, split_failed
from experiments.reports.tables import markdown_table, three_digits

HELP = "error against alpha of every quantile mechanism (a run of experiment=quantiles)"
SYNTHETIC = ("normal", "uniform", "beta")
README_START, README_END = "<!-- readme -->", "<!-- /readme -->"


def alphas(results: results_reader.Results) -> dict[str, float]:
    """The α of each ``quantile`` statistic of the run, by statistic id."""
    found = {
        str(s["id"]): float(s["alpha"])
        for s in results.numbers.get("statistics", [])
        if s.get("kind") == "quantile"
    }
    if not found:
        raise ReportError(f"{results.directory}: the run estimates no quantile statistic")
    return found


def cells(ok: pd.DataFrame, alpha_of: dict[str, float], metric: str) -> pd.DataFrame:
    """Mean of ``metric`` per (dataset, α, mechanism, ε) over the dataset's replicates."""
    frame = ok.loc[ok["statistic"].isin(list(alpha_of))].assign(
        alpha=lambda f: f["statistic"].map(alpha_of)
    )
    return frame.groupby(["dataset", "alpha", "mechanism", "epsilon"])[metric].mean()


def pooled(table: pd.Series, datasets: tuple[str, ...]) -> pd.DataFrame:
    """Mean over ``datasets`` of a :func:`cells` series; rows (ε, α), columns mechanisms."""
    chosen = table.loc[table.index.get_level_values("dataset").isin(datasets)]
    means = chosen.groupby(["epsilon", "alpha", "mechanism"]).mean()
    return means.unstack("mechanism")


def eligible(results: results_reader.Results, ok: pd.DataFrame) -> list[str]:
    """Labels whose every ok row is private and meets the requested guarantee."""
    flags = ok.groupby("mechanism")[["private", "guarantee_met"]].all()
    return [
        label for label in results.mechanisms if label in flags.index and flags.loc[label].all()
    ]


def winners(errors: pd.DataFrame, fair: list[str], palette: style.Palette) -> list[list[str]]:
    """Per (ε, α): the best of ``fair``, its margin, Duff's error and smooth sensitivity/Duff."""
    smooth = [label for label in fair if palette.kind(label).family.smooth]
    rows = []
    for (epsilon, alpha), row in errors[fair].iterrows():
        ranked = row.sort_values()
        best, second = ranked.index[0], ranked.index[1]
        duff = row.get("duff", math.nan)
        rows.append(
            [
                f"{epsilon:g}",
                f"{alpha:g}",
                palette.name(best),
                three_digits(ranked.iloc[0]),
                f"{three_digits(ranked.iloc[1] / ranked.iloc[0], '×')} ({palette.name(second)})",
                three_digits(duff),
                three_digits(min(row[s] for s in smooth) / duff, "×") if smooth else "—",
            ]
        )
    return rows


def readme_block(errors: pd.DataFrame, fair: list[str], palette: style.Palette) -> str:
    """One row per α, one column per ε: the best private mechanism, its margin over the
    runner-up, and the best private smooth-sensitivity mechanism's error over Duff's."""
    found = {(row[0], row[1]): row for row in winners(errors, fair, palette)}
    epsilons = sorted({epsilon for epsilon, _ in errors.index})
    alphas_ = sorted({alpha for _, alpha in errors.index})
    rows = [
        [
            f"{alpha:g}",
            *(
                "{2}, by {4}; SS/Duff {6}".format(*found[(f"{e:g}", f"{alpha:g}")])
                for e in epsilons
            ),
        ]
        for alpha in alphas_
    ]
    return markdown_table(["α", *(f"ε = {e:g}" for e in epsilons)], rows)


def error_table(errors: pd.DataFrame, labels: list[str], palette: style.Palette) -> str:
    header = ["ε", "α", *(palette.name(label) for label in labels)]
    rows = [
        [f"{epsilon:g}", f"{alpha:g}", *(three_digits(row[label]) for label in labels)]
        for (epsilon, alpha), row in errors[labels].iterrows()
    ]
    return markdown_table(header, rows, ["---:"] * len(header))


WINNER_HEADER = ["ε", "α", "best private", "its error", "runner-up ×", "Duff", "best SS / Duff"]


def report(results: results_reader.Results, failed: int) -> str:
    """The Markdown of ``quantiles_table.md``."""
    palette = style.palette(results)
    ok = split_failed(results.summary)[0]
    alpha_of = alphas(results)
    labels = sorted(results.mechanisms, key=palette.sort_key)
    fair = [label for label in labels if label in eligible(results, ok)]
    ranks = cells(ok, alpha_of, "mean_rank_error")
    synthetic = pooled(ranks, SYNTHETIC)
    datasets = sorted(set(ok["dataset"]) - set(SYNTHETIC))
    parts = [
        "# Quantiles: every mechanism against α",
        f"Generated by `duff-plot quantiles`. {failed} rows failed and are left out. "
        "Rank error = mean number of data points strictly between T(S) and M(S). "
        "'best private' ranks the mechanisms whose guarantee is private and met as requested "
        "(oracle tuning and LaplaceLN's zCDP guarantee are not); 'best SS / Duff' is the "
        "best such smooth-sensitivity mechanism's error over Duff's (> 1: Duff is better).",
        f"## Rank error, pooled over {', '.join(SYNTHETIC)} (n = {int(ok['n'].max())})",
        README_START,
        readme_block(synthetic, fair, palette),
        README_END,
        markdown_table(WINNER_HEADER, winners(synthetic, fair, palette)),
        "## Rank error of every mechanism, pooled synthetic",
        error_table(synthetic, labels, palette),
    ]
    if datasets:
        parts += [
            f"## Rank error on the Vertebral Column datasets ({len(datasets)} pooled subsets)",
            markdown_table(WINNER_HEADER, winners(pooled(ranks, tuple(datasets)), fair, palette)),
        ]
    return "\n\n".join(parts) + "\n"


def figure(results: results_reader.Results, out: Path) -> list[Path]:
    """Top: pooled rank error against α per ε; bottom: |T − M| on N(0, 1)."""
    palette = style.palette(results)
    ok = split_failed(results.summary)[0]
    alpha_of = alphas(results)
    top = pooled(cells(ok, alpha_of, "mean_rank_error"), SYNTHETIC)
    bottom = pooled(cells(ok, alpha_of, "mean_abs_error"), ("normal",))
    epsilons = sorted(set(top.index.get_level_values("epsilon")))
    fig, axes = plt.subplots(2, len(epsilons), figsize=(3.2 * len(epsilons), 6.4), squeeze=False)
    for column, epsilon in enumerate(epsilons):
        for row, (errors, what) in enumerate(
            ((top, "rank error (points)"), (bottom, "|T(S) − M(S)|, N(0, 1)"))
        ):
            axis = axes[row][column]
            for label in sorted(errors.columns, key=palette.sort_key):
                style.plot_line(axis, errors.loc[epsilon, label], palette.style(label))
            axis.set_yscale("log")
            axis.set_xlabel("α")
            axis.set_title(f"ε = {epsilon:g}", fontsize=9)
            if column == 0:
                axis.set_ylabel(what)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=7)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return style.save_figure(fig, out, "quantiles")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    results_arguments(parser, "a results directory of experiment=quantiles")


def command(args: argparse.Namespace) -> int:
    results = results_reader.load(args.results_dir)
    out = args.out or args.results_dir
    out.mkdir(parents=True, exist_ok=True)
    failed = len(split_failed(results.summary)[1])
    text = report(results, failed)
    (out / "quantiles_table.md").write_text(text, encoding="utf-8")
    written = [*figure(results, out), out / "quantiles_table.md"]
    print(text)
    print("wrote " + ", ".join(str(path) for path in written))
    return 0
