"""``duff-plot trimmed-median``: is the Duff paper's LaplaceLN a trimmed mean scored as a median?

The Duff paper's Figure 1 quotes LaplaceLN / Duff error ratios on N(0, 1) of 4×
at ε = 0.1 rising to 15× at ε = 2 (:data:`experiments.reports.figure1.data.PAPER_RATIOS`),
the opposite trend of every smooth-sensitivity *median* mechanism we run.  Bun &
Steinke's headline use of Laplace-log-normal noise ("Average-Case Averages:
Private Algorithms for Smooth Sensitivity and Mean Estimation") is the trimmed
*mean*.  Hypothesis: the paper's line is a LaplaceLN trimmed mean whose error was
measured against the median.  A trimmed mean of a symmetric sample differs from
its median by ``O(1/√n)`` whatever ε is, so its error *against the median*
levels off as ε grows while Duff's keeps falling: the ratio would rise with ε.

Input: a run of ``experiment=trimmed_mean_hypothesis`` with ``keep_estimates``:
``duff`` on the median and trimmed-mean mechanisms on the mean, on the same
datasets.  For each trimmed-mean row, the data of its replicate are drawn again
from the run's config (the numbers depend only on the config:
:mod:`experiments.base.seeding`), clipped to the bounds, and its estimates are scored
against the **lower median** of those data: ``mean_t |median(S) − M_t(S)|``.
The ratio to Duff is a ratio of means over the replicates, as in Figure 1.

Written: ``trimmed_median_table.md`` (per dataset and ε, every trimming's ratio
and the paper's quote), the README's block between ``<!-- readme -->`` markers.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.harness import results_reader
from experiments.harness.plan import build_plan
from experiments.reports import style
from experiments.reports.figure1.data import PAPER_RATIOS
from experiments.reports.selection import ReportError, results_arguments, split_failed
from experiments.reports.tables import markdown_table, three_digits
from mechanisms.core.data import lower_median, sorted_bounded

HELP = "LaplaceLN trimmed means scored against the median (the paper's LaplaceLN line?)"
README_START, README_END = "<!-- readme -->", "<!-- /readme -->"
REFERENCE = "duff"


def against_the_median(results: results_reader.Results) -> pd.DataFrame:
    """Per ok row of the mean statistic: ``mean_t |lower median(S) − M_t(S)|`` (column
    ``median_error``), with the row's dataset, replicate, mechanism and ε."""
    if results.estimates is None:
        raise ReportError(f"{results.directory}: run it with keep_estimates=true")
    plan = build_plan(results.manifest["config"])
    datasets = {d.id: d for d in plan.datasets}
    summary = results.summary.reset_index(drop=True)
    chosen = summary.index[(summary["statistic"] == "mean") & (summary["status"] == "ok")]
    if not len(chosen):
        raise ReportError(f"{results.directory}: no successful rows of the mean")
    medians: dict[tuple[str, int], float] = {}
    errors = []
    for i in chosen:
        row = summary.loc[i]
        key = (
            f"{row['dataset']}/{row['subset']}" if row["subset"] else row["dataset"],
            int(row["replicate"]),
        )
        if key not in medians:
            dataset = datasets[key[0]]
            data = sorted_bounded(
                dataset.data(plan.settings.seed, key[1]), dataset.lower, dataset.upper, "clip"
            )
            medians[key] = lower_median(data, dataset.lower)
        estimates = results.estimates["estimates"][i]
        errors.append(float(np.mean(np.abs(estimates - medians[key]))))
    frame = summary.loc[chosen, ["dataset", "replicate", "mechanism", "epsilon"]].copy()
    frame["median_error"] = errors
    return frame


def ratio_table(results: results_reader.Results) -> pd.DataFrame:
    """Per (dataset, mechanism, ε): the trimmed mean's mean error against the median over
    Duff's mean error on the median (ratio of means over the replicates)."""
    ok = split_failed(results.summary)[0]
    duff = ok.loc[(ok["statistic"] == "median") & (ok["mechanism"] == REFERENCE)]
    if duff.empty:
        raise ReportError(f"{results.directory}: no successful Duff rows on the median")
    duff_error = duff.groupby(["dataset", "epsilon"])["mean_abs_error"].mean()
    scored = against_the_median(results)
    trimmed = scored.groupby(["dataset", "mechanism", "epsilon"])["median_error"].mean()
    keys = zip(
        trimmed.index.get_level_values("dataset"),
        trimmed.index.get_level_values("epsilon"),
        strict=True,
    )
    ratio = trimmed / duff_error.reindex(list(keys)).to_numpy()
    return pd.DataFrame({"median_error": trimmed, "ratio": ratio})


def paper_quote(dataset: str, epsilon: float) -> float:
    """The paper's LaplaceLN / Duff ratio at (dataset, ε), NaN where it quotes none."""
    for quote in PAPER_RATIOS:
        if quote.family == "laplace_ln" and quote.dataset == dataset and quote.epsilon == epsilon:
            return quote.ratio
    return math.nan


def trim_name(info: results_reader.MechanismInfo) -> str:
    """How a column names a trimmed-mean entry: its trimming (a fraction or a count)."""
    trim = info.options.get("trim", "default")
    return f"trim {trim:.0%}" if isinstance(trim, float) else f"trim {trim}"


def dataset_block(table: pd.DataFrame, dataset: str, results: results_reader.Results) -> str:
    """Rows ε, columns the trimmed-mean mechanisms' ratios (by trimming), and the paper's
    quote."""
    of_dataset = table.xs(dataset)["ratio"]
    labels = [
        label
        for label in results.mechanisms
        if label in set(of_dataset.index.get_level_values("mechanism"))
    ]
    epsilons = sorted(set(of_dataset.index.get_level_values("epsilon")))
    rows = [
        [
            f"{e:g}",
            *(three_digits(of_dataset[(label, e)], "×") for label in labels),
            three_digits(paper_quote(dataset, e), "×"),
        ]
        for e in epsilons
    ]
    header = ["ε", *(trim_name(results.mechanisms[label]) for label in labels), "paper"]
    return markdown_table(header, rows, ["---:"] * len(header))


def report(results: results_reader.Results) -> str:
    """The Markdown of ``trimmed_median_table.md``."""
    table = ratio_table(results)
    datasets = sorted(set(table.index.get_level_values("dataset")))
    names = sorted(
        {style.palette(results).name(label) for label in table.index.unique("mechanism")}
    )
    parts = [
        "# Is the paper's LaplaceLN line a trimmed mean scored against the median?",
        f"Generated by `duff-plot trimmed-median`. Mechanisms: {', '.join(names)}, in the "
        "run's order of trimmings (each end). Each cell: the trimmed-mean mechanism's "
        "mean |median(S) − M(S)| over Duff's mean |median(S) − M(S)| (ratio of means over "
        "the replicates); 'paper' is the Duff paper's Figure 1 LaplaceLN / Duff ratio.",
    ]
    for dataset in datasets:
        block = dataset_block(table, dataset, results)
        if dataset == "normal":
            block = f"{README_START}\n{block}\n{README_END}"
        parts += [f"## {style.dataset_title(dataset)}", block]
    return "\n\n".join(parts) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    results_arguments(parser, "a results directory of experiment=trimmed_mean_hypothesis")


def command(args: argparse.Namespace) -> int:
    results = results_reader.load(args.results_dir, estimates=True)
    out: Path = args.out or args.results_dir
    out.mkdir(parents=True, exist_ok=True)
    text = report(results)
    path = out / "trimmed_median_table.md"
    path.write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {path}")
    return 0
