"""``duff-plot scoring-pairings``: the paper's LaplaceLN line under every pairing of scorings.

The Duff paper quotes LaplaceLN / Duff error ratios on N(0, 1) of 4× at ε = 0.1 and 15× at
ε = 2 (:data:`experiments.reports.figure1.data.PAPER_RATIOS`).  Neither the median LaplaceLN
nor a LaplaceLN trimmed mean scored against the sample median gives both
(:mod:`experiments.reports.trimmed_mean_hypothesis`).  Another way a ratio can rise with ε:
the two lines were scored against *different truths*.  An error measured against the
population centre θ keeps the sampling error |T(S) − θ| of order 1/√n as a floor whatever ε
is, while an error against the sample median falls like 1/(εn).

Input: a run of ``experiment=scoring_pairings`` (the Figure 1 datasets; Duff and the median
LaplaceLN on the median, the trimmed-mean LaplaceLN at three trimmings on the mean, with
every estimate kept).  Scorings, each a mean over the trials:

* ``sample``: against the sample's lower median (the median rows' ``mean_abs_error``; the
  trimmed means' estimates scored by
  :func:`experiments.reports.trimmed_mean_hypothesis.against_the_median`);
* ``population``: against θ, the law's median for the median rows and the law's mean for
  the trimmed means (``population_abs_error``), which coincide on the three symmetric laws
  of Figure 1: the *population centre*.

Each ratio is a LaplaceLN line's mean error under its scoring over Duff's under Duff's
scoring (ratio of means over the replicates, as in Figure 1), for the four pairings of
scorings.  A pairing *fits* when it is within ``tolerance`` (relative) of both quotes.

Written: ``pairings_table.md`` (per Duff scoring and dataset, rows ε, a column per
(LaplaceLN line, its scoring); then the fits at the quoted ε on N(0, 1)).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from experiments.harness import results_reader
from experiments.reports import style
from experiments.reports.selection import ReportError, results_arguments, split_failed
from experiments.reports.tables import markdown_table, three_digits
from experiments.reports.trimmed_mean_hypothesis import against_the_median, paper_quote, trim_name

HELP = "the paper's LaplaceLN line scored against the sample and the population, every pairing"
TABLE_FILE = "pairings_table.md"
REFERENCE = "duff"
MEDIAN_LN = "laplace_ln_oracle"
SCORINGS = ("sample", "population")
TOLERANCE = 0.25
"""Relative distance to a paper quote within which a ratio agrees (Figure 1's default)."""


def errors(results: results_reader.Results) -> pd.DataFrame:
    """Per (dataset, line, ε): the mean over the replicates of each scoring's error, columns
    :data:`SCORINGS`; lines ``duff``, ``laplace_ln_oracle`` and the trimmed-mean labels."""
    ok = split_failed(results.summary)[0]
    medians = ok.loc[(ok["statistic"] == "median") & ok["mechanism"].isin([REFERENCE, MEDIAN_LN])]
    if set(medians["mechanism"]) != {REFERENCE, MEDIAN_LN}:
        raise ReportError(f"{results.directory}: needs ok median rows of duff and {MEDIAN_LN}")
    median_lines = medians.rename(
        columns={"mean_abs_error": "sample", "population_abs_error": "population"}
    )
    trimmed = ok.loc[ok["statistic"] == "mean"].reset_index(drop=True)
    scored = against_the_median(results).reset_index(drop=True)
    trimmed_lines = scored.assign(population=trimmed["population_abs_error"].to_numpy())
    trimmed_lines = trimmed_lines.rename(columns={"median_error": "sample"})
    # Duff runs on the mean too (one entry for both statistics): its line is the median's
    trimmed_lines = trimmed_lines.loc[trimmed_lines["mechanism"] != REFERENCE]
    both = pd.concat([median_lines, trimmed_lines], ignore_index=True)
    if both[list(SCORINGS)].isna().any().any():
        raise ReportError(f"{results.directory}: rows without a population error (rerun it)")
    return both.groupby(["dataset", "mechanism", "epsilon"])[list(SCORINGS)].mean()


def ratios(table: pd.DataFrame, duff_scoring: str) -> pd.DataFrame:
    """Per (dataset, LaplaceLN line, ε): columns :data:`SCORINGS`, each the line's error under
    that scoring over Duff's error under ``duff_scoring``."""
    duff = table.xs(REFERENCE, level="mechanism")[duff_scoring]
    lines = table.drop(index=REFERENCE, level="mechanism")
    keys = list(
        zip(
            lines.index.get_level_values("dataset"),
            lines.index.get_level_values("epsilon"),
            strict=True,
        )
    )
    return lines.div(duff.reindex(keys).to_numpy(), axis=0)


def line_name(label: str, results: results_reader.Results) -> str:
    """``median LN`` or the trimmed mean's trimming."""
    return "median LN" if label == MEDIAN_LN else f"{trim_name(results.mechanisms[label])} LN"


def block(
    ratio: pd.DataFrame, dataset: str, labels: list[str], results: results_reader.Results
) -> str:
    """Rows ε; a column per (line, scoring); the paper's quote."""
    of_dataset = ratio.xs(dataset, level="dataset")
    epsilons = sorted(set(of_dataset.index.get_level_values("epsilon")))
    header = [
        "ε",
        *(f"{line_name(label, results)} vs {scoring}" for label in labels for scoring in SCORINGS),
        "paper",
    ]
    rows = [
        [
            f"{e:g}",
            *(
                three_digits(of_dataset.loc[(label, e), s], "×")
                for label in labels
                for s in SCORINGS
            ),
            three_digits(paper_quote(dataset, e), "×"),
        ]
        for e in epsilons
    ]
    return markdown_table(header, rows, ["---:"] * len(header))


def fits(table: pd.DataFrame, labels: list[str], results: results_reader.Results) -> pd.DataFrame:
    """Per pairing: its ratios on N(0, 1) at the quoted ε and whether both agree."""
    quoted = [0.1, 2.0]
    rows = []
    for duff_scoring in SCORINGS:
        ratio = ratios(table, duff_scoring)
        for label in labels:
            for scoring in SCORINGS:
                values = [float(ratio.loc[("normal", label, e), scoring]) for e in quoted]
                agree = all(
                    abs(v / paper_quote("normal", e) - 1) <= TOLERANCE
                    for v, e in zip(values, quoted, strict=True)
                )
                rows.append((line_name(label, results), scoring, duff_scoring, *values, agree))
    columns = ["line", "line scored vs", "Duff scored vs", "ε = 0.1", "ε = 2", "fits both"]
    return pd.DataFrame(rows, columns=columns)


def report(results: results_reader.Results) -> str:
    """The Markdown of ``pairings_table.md``."""
    table = errors(results)
    labels = [m for m in results.mechanisms if m != REFERENCE]
    datasets = style.dataset_order(table.index.get_level_values("dataset"))
    parts = [
        "# The paper's LaplaceLN line under every pairing of scorings",
        "Generated by `duff-plot scoring-pairings`. Each cell: a LaplaceLN line's mean error "
        "(against the sample median, or against the population centre θ) over Duff's mean "
        "error (against the sample median, or against θ), ratio of means over the replicates; "
        "'paper' is the Duff paper's Figure 1 LaplaceLN / Duff ratio (N(0, 1) only).",
    ]
    for duff_scoring in SCORINGS:
        ratio = ratios(table, duff_scoring)
        for dataset in datasets:
            parts += [
                f"## Duff scored against the {duff_scoring}: {style.dataset_title(dataset)}",
                block(ratio, dataset, labels, results),
            ]
    fit = fits(table, labels, results)
    rows = [
        [*row[:3], three_digits(row[3], "×"), three_digits(row[4], "×"), "yes" if row[5] else "no"]
        for row in fit.itertuples(index=False)
    ]
    parts += [
        f"## Fits on N(0, 1): within {TOLERANCE:.0%} of both 4× (ε = 0.1) and 15× (ε = 2)",
        markdown_table(list(fit.columns), rows, ["---", "---", "---", "---:", "---:", "---"]),
    ]
    return "\n\n".join(parts) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    results_arguments(parser, "a results directory of experiment=scoring_pairings")


def command(args: argparse.Namespace) -> int:
    results = results_reader.load(args.results_dir, estimates=True)
    text = report(results)
    out: Path = args.out or args.results_dir
    out.mkdir(parents=True, exist_ok=True)
    path = out / TABLE_FILE
    path.write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {path}")
    return 0
