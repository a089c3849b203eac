"""``duff-plot multi_quantiles``: error and time of the m-quantiles methods against m.

Usage::

    duff-plot multi_quantiles RESULTS_DIR [--out DIR]

Input: a run of ``experiment=multi_quantiles`` (or its add/remove variant; statistics
``quantiles(m=K)``, :class:`mechanisms.statistics.Quantiles`), read by
:func:`experiments.harness.results_reader.load`; rows whose ``status`` is not ``"ok"`` are
left out and counted.  Per (dataset, m, method), the mean over the replicates of

* the error ``total_rank_error / m``: the mean over the levels of the number of data points
  strictly between ``T_j`` and ``M_j``, per trial (Gillenwater, Joseph & Kulesza,
  "Differentially Private Quantiles", ICML 2021, Figure 2 plots its sum, the
  "misclassified points": divided by m it stays comparable across m);
* the time ``seconds``: making the mechanism, one release and all its trials' draws, measured
  over all of them (not google-research ``dp_multiq``'s last trial over the trial count).

Written to ``multi_quantiles.png``/``.pdf`` (one row per dataset: error and time against m,
log scales, one line per method) and ``multi_quantiles_table.md``: per dataset and m, the
best method whose guarantee is private and met and its margin over the runner-up, then every
method's error and time.
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
from mechanisms.statistics import Quantiles

HELP = "error and time against m of the m-quantiles methods (a run of experiment=multi_quantiles)"
STEM = "multi_quantiles"
COLOURS = tuple(plt.get_cmap("tab10").colors)  # type: ignore[attr-defined]
MARKERS = "os^vDP*Xhp"
"""One colour and marker per method, in drawing order (the families of
:mod:`experiments.reports.families` are those of the single-statistic mechanisms)."""


def level_counts(results: results_reader.Results) -> dict[str, int]:
    """The number of levels m of each ``quantiles`` statistic of the run, by statistic id."""
    found = {
        str(s["id"]): len(s["alphas"])
        for s in results.numbers.get("statistics", [])
        if s.get("kind") == Quantiles.kind
    }
    if not found:
        raise ReportError(f"{results.directory}: the run estimates no quantiles statistic")
    return found


def cells(results: results_reader.Results) -> pd.DataFrame:
    """Per (dataset, m, mechanism): ``error`` (mean total rank error / m) and ``seconds``,
    means over the replicates of the ok rows (one ε)."""
    ok = split_failed(results.summary)[0]
    m_of = level_counts(results)
    frame = ok.loc[ok["statistic"].isin(list(m_of))].assign(
        m=lambda f: f["statistic"].map(m_of),
    )
    frame = frame.assign(error=frame["total_rank_error"] / frame["m"])
    return frame.groupby(["dataset", "m", "mechanism"])[["error", "seconds"]].mean()


def eligible(results: results_reader.Results) -> list[str]:
    """Labels whose every ok row is private and meets the requested guarantee."""
    ok = split_failed(results.summary)[0]
    flags = ok.groupby("mechanism")[["private", "guarantee_met"]].all()
    return [
        label for label in results.mechanisms if label in flags.index and flags.loc[label].all()
    ]


def winners(table: pd.DataFrame, fair: list[str], palette: style.Palette) -> list[list[str]]:
    """Per (dataset, m): the best of ``fair`` by error, its error, and the runner-up's ratio."""
    errors = table["error"].unstack("mechanism")
    rows = []
    for (dataset, m), row in errors[[label for label in fair if label in errors]].iterrows():
        ranked = row.dropna().sort_values()
        second = "—"
        if len(ranked) > 1:
            ratio = three_digits(ranked.iloc[1] / ranked.iloc[0], "×")
            second = f"{ratio} ({palette.name(ranked.index[1])})"
        rows.append(
            [dataset, str(m), palette.name(ranked.index[0]), three_digits(ranked.iloc[0]), second]
        )
    return rows


def metric_table(
    table: pd.DataFrame, metric: str, labels: list[str], palette: style.Palette
) -> str:
    """One row per (dataset, m), one column per mechanism: ``metric``."""
    values = table[metric].unstack("mechanism")
    header = ["dataset", "m", *(palette.name(label) for label in labels)]
    rows = [
        [dataset, str(m), *(three_digits(row.get(label, math.nan)) for label in labels)]
        for (dataset, m), row in values.iterrows()
    ]
    return markdown_table(header, rows, ["---", *["---:"] * (len(header) - 1)])


def report(results: results_reader.Results, failed: int) -> str:
    """The Markdown of ``multi_quantiles_table.md``."""
    palette = style.palette(results)
    table = cells(results)
    labels = sorted(results.mechanisms, key=palette.sort_key)
    fair = [label for label in labels if label in eligible(results)]
    trials = int(results.summary["trials"].max())
    return (
        "\n\n".join(
            [
                "# m quantiles at once: error and time against m",
                f"Generated by `duff-plot multi_quantiles`. {failed} rows failed and are left "
                "out. Error = total rank error / m: the mean over the m levels of the number "
                "of data points strictly between T_j(S) and M_j(S), averaged over the trials "
                f"and replicates. Time = seconds to make the mechanism, release and draw "
                f"{trials} outputs, averaged over the replicates. 'best private' ranks the "
                "methods whose guarantee is private and met as requested.",
                "## Best method per dataset and m",
                markdown_table(
                    ["dataset", "m", "best private", "its error", "runner-up ×"],
                    winners(table, fair, palette),
                ),
                "## Error (total rank error / m) of every method",
                metric_table(table, "error", labels, palette),
                f"## Time (seconds per release of {trials} draws) of every method",
                metric_table(table, "seconds", labels, palette),
            ]
        )
        + "\n"
    )


def figure(results: results_reader.Results, out: Path) -> list[Path]:
    """One row per dataset: error against m (left) and time against m (right)."""
    palette = style.palette(results)
    table = cells(results)
    datasets = list(dict.fromkeys(table.index.get_level_values("dataset")))
    fig, axes = plt.subplots(len(datasets), 2, figsize=(8.0, 3.2 * len(datasets)), squeeze=False)
    for row, dataset in enumerate(datasets):
        for column, (metric, what) in enumerate(
            (("error", "total rank error / m"), ("seconds", "seconds per release"))
        ):
            axis = axes[row][column]
            values = table.loc[dataset, metric].unstack("mechanism")
            for index, label in enumerate(sorted(values.columns, key=palette.sort_key)):
                series = values[label]
                axis.plot(
                    series.index,
                    series.to_numpy(),
                    color=COLOURS[index % len(COLOURS)],
                    marker=MARKERS[index % len(MARKERS)],
                    label=palette.name(label),
                )
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.set_xlabel("m (evenly spaced levels)")
            axis.set_ylabel(what)
            axis.set_title(style.dataset_title(dataset), fontsize=9)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=7)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return style.save_figure(fig, out, STEM)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    results_arguments(parser, "a results directory of experiment=multi_quantiles")


def command(args: argparse.Namespace) -> int:
    results = results_reader.load(args.results_dir)
    out = args.out or args.results_dir
    out.mkdir(parents=True, exist_ok=True)
    failed = len(split_failed(results.summary)[1])
    text = report(results, failed)
    table = out / f"{STEM}_table.md"
    table.write_text(text, encoding="utf-8")
    written = [*figure(results, out), table]
    print(text)
    print("wrote " + ", ".join(str(path) for path in written))
    return 0
