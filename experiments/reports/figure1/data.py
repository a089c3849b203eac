"""The numbers of the Duff paper's Figure 1 (section 6.1), computed from a results directory.

A *series* is one mechanism label at one requested δ on one dataset
(:data:`SERIES`).  ``mean_abs_error`` of a summary row is a dataset's mean of
|T(S) − M(S)| over ``trials`` calls of the mechanism; for each series and ε,
:func:`aggregate` takes the mean over datasets (replicates) of that per-dataset
error and its sample standard deviation (ddof = 1).  :func:`ratios_to_reference`
divides each baseline's mean by Duff's at the same ε (a ratio of means, not a
mean of ratios), and :func:`compare_with_paper` puts beside them the ratios
section 6.1 quotes for N(0, 1) (:data:`PAPER_RATIOS`), matched to every series
of the quoted mechanism with the paper's tuning, whatever its label and
neighbours.  Which series is Duff, and which is a quoted mechanism, follows
from what each mechanism is (:mod:`experiments.reports.style`), not its label.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from experiments.harness import results_reader
from experiments.harness.results import SUMMARY_FILE
from experiments.reports import style
from experiments.reports.selection import ReportError, median_rows, split_failed
from experiments.reports.tables import value_text

REFERENCE = "duff"
"""The family (:attr:`experiments.reports.families.Family.key`) every ratio divides by: Duff."""
FIGURE1_DATASETS = ("normal", "uniform", "beta")
"""The paper's three sources: their panels come first, in this order."""
SERIES = ["dataset", "mechanism", "delta"]
"""A line of the figure: one mechanism at one requested δ on one dataset."""
COMMAND = "duff-plot figure1"
"""How messages on stderr name the command."""


@dataclass(frozen=True)
class PaperRatio:
    """A ratio quoted in the Duff paper, section 6.1: baseline error / Duff error."""

    dataset: str
    family: str
    """The quoted mechanism (a :attr:`experiments.reports.families.Family.key`), with the
    paper's (oracle) tuning; any neighbours."""
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

PAPER_SETUP = {"datasets": "100", "trials": "100", "n": "1000"}
"""Section 6.1: 100 datasets of |S| = 1000 per source, 100 calls per dataset."""
PAPER_BOUNDS = {"normal": "[-10, 10]", "uniform": "[0, 1]", "beta": "[0, 1]"}
"""Section 6.1: the bounds [a, b] of each source."""


# --------------------------------------------------------------------------- input


def failure_counts(failed: pd.DataFrame) -> pd.DataFrame:
    """Number of excluded rows per (dataset, mechanism, ε, δ, status)."""
    keys = ["dataset", "mechanism", "epsilon", "delta", "status"]
    return failed.groupby(keys, sort=True, dropna=False).size().rename("rows").reset_index()


def report_failed(failed: pd.DataFrame, stream: TextIO) -> None:
    """Write the counts of excluded rows to ``stream`` (nothing when there are none)."""
    if failed.empty:
        return
    print(f"{COMMAND}: excluded {len(failed)} row(s) with status != 'ok':", file=stream)
    for row in failure_counts(failed).itertuples(index=False):
        print(
            f"  {row.rows} x dataset={row.dataset} mechanism={row.mechanism} "
            f"epsilon={row.epsilon} delta={row.delta}: {row.status}",
            file=stream,
        )


def reference_label(palette: style.Palette) -> str:
    """The label of the run's one Duff series (:data:`REFERENCE`)."""
    labels = palette.labels(REFERENCE)
    if len(labels) != 1:
        found = f"several ({', '.join(labels)})" if labels else "none"
        raise ReportError(f"the ratios need one Duff series as reference; the run has {found}")
    return labels[0]


OTHER_COMMANDS = {"mode": "mode", "mean": "mean", "median_interval": "intervals"}
"""The ``duff-plot`` command of a run by the kind of its statistics (else ``figure2``)."""


def drawn_by(frame: pd.DataFrame) -> str:
    """Which ``duff-plot`` command draws a run that Figure 1 cannot."""
    kinds = {str(statistic).partition("(")[0] for statistic in frame["statistic"]}
    commands = sorted({OTHER_COMMANDS[kind] for kind in kinds if kind in OTHER_COMMANDS})
    if not commands:
        return "a run of the Vertebral Column subsets is drawn by duff-plot figure2"
    return f"this run is drawn by duff-plot {' or duff-plot '.join(commands)}"


def select(frame: pd.DataFrame, mechanisms: Sequence[str] | None, reference: str) -> pd.DataFrame:
    """Rows of the datasets without subsets (one panel each; a dataset split into subsets,
    such as the Vertebral Column's, is Figures 2 and 3's) and, if given, of ``mechanisms``
    (plus ``reference``)."""
    rows = frame.loc[frame["subset"] == ""]
    if rows.empty:
        raise ReportError(
            "summary has no median rows of a dataset without subsets, such as "
            f"{', '.join(FIGURE1_DATASETS)}; {drawn_by(frame)}"
        )
    if mechanisms is not None:
        unknown = sorted(set(mechanisms) - set(rows["mechanism"]))
        if unknown:
            present = ", ".join(sorted(set(rows["mechanism"])))
            raise ReportError(
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
        raise ReportError("no rows with status 'ok' to plot")
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
        raise ReportError(f"no successful '{reference}' rows: the ratios need Duff as reference")
    clash = duff.duplicated(["dataset", "epsilon"])
    if clash.any():
        raise ReportError(f"'{reference}' was run at several deltas for the same dataset and ε")
    duff_errors = duff[["dataset", "epsilon", "mean_error"]].rename(
        columns={"mean_error": "duff_error"}
    )
    baselines = agg.loc[agg["mechanism"] != reference, [*SERIES, "epsilon", "mean_error"]]
    merged = baselines.rename(columns={"mean_error": "error"}).merge(
        duff_errors, on=["dataset", "epsilon"], how="left"
    )
    merged["ratio"] = merged["error"] / merged["duff_error"]
    return merged


def quoted_labels(palette: style.Palette, quote: PaperRatio) -> list[str]:
    """Our series of the quoted mechanism with the paper's (oracle) tuning, any neighbours."""
    return [label for label in palette.labels(quote.family) if palette.kind(label).oracle]


def compare_with_paper(
    agg: pd.DataFrame, ratios: pd.DataFrame, tolerance: float, palette: style.Palette
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


def _distinct(values: pd.Series) -> str:
    """The distinct values of ``values`` as text, sorted, joined by ``" / "``."""
    return " / ".join(sorted({value_text(v) for v in values}))


def guarantees(ok: pd.DataFrame) -> pd.DataFrame:
    """The guarantee each (mechanism, ε, δ) reports, with all distinct values joined."""
    columns = ["guarantee_epsilon", "guarantee_delta", "rho", "neighbouring", "private"]
    grouped = ok.groupby(["mechanism", "delta", "epsilon"], sort=True)[columns]
    return grouped.agg(_distinct).reset_index()


def setup_summary(ok: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: number of replicates, trials per dataset, n and bounds actually used."""

    def distinct(values: pd.Series) -> str:
        return " / ".join(value_text(v) for v in sorted(set(values)))

    rows = []
    for dataset, group in ok.groupby("dataset", sort=False):
        bounds = {
            f"[{value_text(a)}, {value_text(b)}]" for a, b in group[["lower", "upper"]].values
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


def panels(ok: pd.DataFrame) -> list[str]:
    """The datasets of ``ok``, one panel each: the paper's three sources in its order
    (:data:`FIGURE1_DATASETS`), then any other (a plug-in's) in order of appearance."""
    present = list(dict.fromkeys(ok["dataset"]))
    return [d for d in FIGURE1_DATASETS if d in present] + [
        d for d in present if d not in FIGURE1_DATASETS
    ]


def series_order(frame: pd.DataFrame, palette: style.Palette) -> list[tuple[str, float]]:
    """The (mechanism, δ) pairs of ``frame`` in drawing order (:meth:`style.Palette.sort_key`)."""
    pairs = frame[["mechanism", "delta"]].drop_duplicates().itertuples(index=False)
    return sorted(((m, float(d)) for m, d in pairs), key=lambda p: (palette.sort_key(p[0]), p[1]))


# --------------------------------------------------------------------------- all of it


@dataclass(frozen=True)
class Figure1:
    """What the figure and the report show, computed from one results directory."""

    summary_path: Path
    palette: style.Palette
    ok: pd.DataFrame
    failed: pd.DataFrame
    datasets: list[str]
    agg: pd.DataFrame
    ratios: pd.DataFrame
    comparison: pd.DataFrame
    tolerance: float
    truth: str = "sample"
    """What the errors are measured against (a key of :data:`TRUTHS`)."""

    @property
    def reference(self) -> str:
        """The label of the Duff series."""
        return reference_label(self.palette)


TRUTHS = {"sample": "|T(S) − M(S)|", "population": "|θ − M(S)|"}
"""The truths an error can be measured against, and how the figure writes that error: the
sample median T(S) (the paper's choice), or the population median θ of the dataset's law
(``population_abs_error``, :mod:`experiments.harness.metrics`)."""


def scored_against(ok: pd.DataFrame, truth: str) -> pd.DataFrame:
    """``ok`` with ``mean_abs_error`` the error against ``truth``: unchanged for ``sample``,
    ``population_abs_error`` for ``population`` (refused where a row has none: real data, a
    run written before the population errors)."""
    if truth not in TRUTHS:
        raise ReportError(f"--truth: must be one of {', '.join(TRUTHS)}, got {truth!r}")
    if truth == "sample":
        return ok
    missing = ok.loc[ok["population_abs_error"].isna() & (ok["answer_rate"] > 0)]
    if len(missing):
        raise ReportError(
            f"--truth population: {len(missing)} rows have no population error (e.g. dataset "
            f"{missing['dataset'].iloc[0]!r}: real data, or a run written before that column)"
        )
    return ok.assign(mean_abs_error=ok["population_abs_error"])


def compute(
    results_dir: Path,
    *,
    mechanisms: Sequence[str] | None = None,
    tolerance: float = 0.25,
    stream: TextIO | None = None,
    truth: str = "sample",
) -> Figure1:
    """Read and check ``results_dir``; aggregate its median rows scored against ``truth``
    (:data:`TRUTHS`), take ratios, compare with the paper.  Excluded rows and absent panels
    are reported on ``stream`` (stderr)."""
    stream = sys.stderr if stream is None else stream
    if not (tolerance >= 0):
        raise ReportError(f"--tolerance: must be >= 0, got {tolerance}")
    results = results_reader.load(results_dir)
    medians = median_rows(results.summary)
    if medians.empty:
        raise ReportError(f"summary has no median rows; {drawn_by(results.summary)}")
    palette = style.palette(results)
    reference = reference_label(palette)
    frame = select(medians, mechanisms, reference)
    ok, failed = split_failed(frame)
    ok = scored_against(ok, truth)
    report_failed(failed, stream)
    datasets = panels(ok)
    absent = [d for d in FIGURE1_DATASETS if d not in datasets]
    if absent:
        print(f"{COMMAND}: no usable rows for {', '.join(absent)}; panel(s) left out", file=stream)
    agg = aggregate(ok)
    ratios = ratios_to_reference(agg, reference)
    comparison = compare_with_paper(agg, ratios, tolerance, palette)
    summary_path = Path(results_dir) / SUMMARY_FILE
    return Figure1(
        summary_path, palette, ok, failed, datasets, agg, ratios, comparison, tolerance, truth
    )
