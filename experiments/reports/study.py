"""Reports of a study of one statistic: a metric per (dataset, mechanism, ε), a table and a figure.

The mode, mean and propose-test-release studies (``duff-plot mode|mean|ptr``)
are each a :class:`Study`: the statistic whose rows they read, the metric they
report (e.g. ``hit_rate`` for the mode, ``mean_abs_error`` for the mean) and
whether the table shows it as is or as a ratio to Duff's.  Rows whose ``status``
is not ``"ok"`` are left out and counted.

A *cell* is the mean of the metric over the replicates (and, for the Vertebral
Column, the subsets) of one dataset, per mechanism and ε.  Where a mechanism may
answer "no result" (⊥), its metric is over the answered trials (the
``summary.csv`` convention, :mod:`experiments.harness.metrics`) and the table gives the
answer rate beside it: an error over answered trials alone flatters a mechanism
that refuses the hard datasets.

Written: ``<stem>.png``/``.pdf`` (one panel per dataset, the metric against ε)
and ``<stem>_table.md``; the block between ``<!-- readme -->`` markers, the
metric pooled over the datasets (the mean of the cells; for a ratio, the mean of
the per-dataset ratios, as the Duff paper's Figure 1 ratios are), is the README's.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from experiments.harness import results_reader
from experiments.reports import style
from experiments.reports.selection import ReportError, results_arguments, split_failed
from experiments.reports.tables import markdown_table, three_digits

README_START, README_END = "<!-- readme -->", "<!-- /readme -->"
REFERENCE = "duff"
"""The label ratios are taken against."""


@dataclass(frozen=True)
class Study:
    """What one ``duff-plot`` study command reads and reports."""

    stem: str
    """Command name and output file stem."""
    statistic: str
    """The ``statistic`` id of the rows read."""
    metric: str
    """The ``summary.csv`` column reported."""
    what: str
    """How the table and the figure name the metric."""
    ratio: bool
    """Report the metric as a ratio to Duff's (``> 1``: Duff is better)."""
    log_scale: bool
    title: str

    @property
    def HELP(self) -> str:
        return f"{self.what} of every mechanism against ε (a run of experiment={self.stem})"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        results_arguments(parser, f"a results directory of experiment={self.stem}")

    def command(self, args: argparse.Namespace) -> int:
        """Write the figure and the table; print the table."""
        results = results_reader.load(args.results_dir)
        out = args.out or args.results_dir
        out.mkdir(parents=True, exist_ok=True)
        text = report(results, self)
        table_path = out / f"{self.stem}_table.md"
        table_path.write_text(text, encoding="utf-8")
        written = [*figure(results, self, out), table_path]
        print(text)
        print("wrote " + ", ".join(str(path) for path in written))
        return 0


def cells(results: results_reader.Results, study: Study) -> tuple[pd.DataFrame, int]:
    """``(cells, failed)``: per (dataset, mechanism, ε) the means of the metric and of the
    answer rate over the ok rows of the study's statistic; the failed rows' count."""
    rows = results.summary.loc[results.summary["statistic"] == study.statistic]
    if rows.empty:
        raise ReportError(
            f"{results.directory}: the run has no rows of statistic {study.statistic!r}"
        )
    ok, failed = split_failed(rows)
    grouped = ok.groupby(["dataset", "mechanism", "epsilon"])
    table = grouped[[study.metric, "answer_rate"]].mean()
    return table, len(failed)


def shown(table: pd.DataFrame, study: Study) -> pd.Series:
    """The metric as reported: as is, or divided by Duff's in the same (dataset, ε)."""
    values = table[study.metric]
    if not study.ratio:
        return values
    labels = table.index.get_level_values("mechanism")
    if REFERENCE not in set(labels):
        raise ReportError(f"a ratio to Duff needs the mechanism label {REFERENCE!r} in the run")
    reference = values.xs(REFERENCE, level="mechanism")
    keys = zip(
        table.index.get_level_values("dataset"),
        table.index.get_level_values("epsilon"),
        strict=True,
    )
    return values / reference.reindex(list(keys)).to_numpy()


def cell_text(value: float, answer_rate: float, study: Study) -> str:
    """The metric in three digits (``×`` for a ratio), with the answer rate when below 1."""
    text = three_digits(value, "×" if study.ratio else "")
    if not math.isnan(answer_rate) and answer_rate < 1:
        text += f" (answered {answer_rate:.0%})"
    return text


def pooled_table(
    table: pd.DataFrame, study: Study, labels: list[str], palette: style.Palette
) -> str:
    """Rows mechanisms, columns ε: the reported metric and answer rate, mean over datasets."""
    values = shown(table, study).groupby(["mechanism", "epsilon"]).mean()
    answers = table["answer_rate"].groupby(["mechanism", "epsilon"]).mean()
    epsilons = sorted(set(values.index.get_level_values("epsilon")))
    rows = [
        [
            palette.name(label),
            *(cell_text(values[(label, e)], answers[(label, e)], study) for e in epsilons),
        ]
        for label in labels
    ]
    header = ["mechanism", *(f"ε = {e:g}" for e in epsilons)]
    return markdown_table(header, rows, ["---", *["---:"] * len(epsilons)])


def dataset_table(
    table: pd.DataFrame, study: Study, dataset: str, labels: list[str], palette: style.Palette
) -> str:
    """Rows ε, columns mechanisms: the reported metric of one dataset."""
    values, answers = shown(table, study).xs(dataset), table["answer_rate"].xs(dataset)
    epsilons = sorted(set(values.index.get_level_values("epsilon")))
    rows = [
        [f"{e:g}", *(cell_text(values[(label, e)], answers[(label, e)], study) for label in labels)]
        for e in epsilons
    ]
    header = ["ε", *(palette.name(label) for label in labels)]
    return markdown_table(header, rows, ["---:"] * len(header))


def report(results: results_reader.Results, study: Study) -> str:
    """The Markdown of ``<stem>_table.md``."""
    palette = style.palette(results)
    table, failed = cells(results, study)
    labels = sorted(set(table.index.get_level_values("mechanism")), key=palette.sort_key)
    datasets = style.dataset_order(table.index.get_level_values("dataset"))
    what = f"{study.what} / Duff's (> 1: Duff is better)" if study.ratio else study.what
    parts = [
        f"# {study.title}",
        f"Generated by `duff-plot {study.stem}`. {failed} rows failed and are left out. "
        f"Each cell: {what}, the mean over a dataset's replicates (and subsets); "
        "'answered' is the fraction of trials that returned an estimate rather than ⊥, "
        "and the metric is over those trials only.",
        f"## Mean over the {len(datasets)} datasets ({', '.join(datasets)})",
        README_START,
        pooled_table(table, study, labels, palette),
        README_END,
    ]
    for dataset in datasets:
        parts += [
            f"## {style.dataset_title(dataset)}",
            dataset_table(table, study, dataset, labels, palette),
        ]
    return "\n\n".join(parts) + "\n"


def figure(results: results_reader.Results, study: Study, out: Path) -> list[Path]:
    """One panel per dataset: the metric (as is, never a ratio) of every mechanism against ε."""
    palette = style.palette(results)
    table, _ = cells(results, study)
    values = table[study.metric]
    datasets = style.dataset_order(values.index.get_level_values("dataset"))
    columns = min(4, len(datasets))
    rows = math.ceil(len(datasets) / columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 2.8 * rows + 0.8), squeeze=False
    )
    for index, (axis, dataset) in enumerate(zip(axes.flat, datasets, strict=False)):
        of_dataset = values.xs(dataset)
        for label in sorted(
            set(of_dataset.index.get_level_values("mechanism")), key=palette.sort_key
        ):
            style.plot_line(axis, of_dataset.xs(label), palette.style(label))
        axis.set_xscale("log")
        if study.log_scale:
            axis.set_yscale("log")
        else:  # a probability
            axis.set_ylim(-0.03, 1.03)
        axis.set_title(style.dataset_title(dataset), fontsize=9)
        axis.set_xlabel("ε")
        if index % columns == 0:  # the first panel of each row
            axis.set_ylabel(study.what, fontsize=8)
    for axis in list(axes.flat)[len(datasets) :]:
        axis.set_visible(False)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=7)
    fig.tight_layout(rect=(0, 0.8 / (2.8 * rows + 0.8) + 0.04, 1, 1))
    return style.save_figure(fig, out, study.stem)


MODE = Study(
    "mode",
    "mode",
    "hit_rate",
    "P(M(S) is a true mode)",
    ratio=False,
    log_scale=False,
    title="The mode: how often each mechanism releases a true mode",
)
MEAN = Study(
    "mean",
    "mean",
    "mean_abs_error",
    "|mean(S) − M(S)|",
    ratio=True,
    log_scale=True,
    title="The mean: error of every mechanism",
)
PTR = Study(
    "ptr",
    "median",
    "mean_abs_error",
    "|T(S) − M(S)| over answered trials",
    ratio=True,
    log_scale=True,
    title="Propose-test-release for the median against Duff",
)
