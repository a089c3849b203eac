"""How often the mechanisms' theoretical error bounds hold, on a results directory.

``duff-plot bounds RESULTS_DIR [--eta 0.05] [--out DIR] [--scale 1]``.

Input: a run with ``keep_estimates=true``, read by
:func:`experiments.harness.results_reader.load` (``run.json``, ``summary.csv`` and the
row-aligned ``estimates.npz``).  The datasets are regenerated from the run's
config (:func:`experiments.harness.plan.build_plan`; refused unless the rebuilt config
hash equals the run's, so they are the data the mechanisms saw) and each
mechanism is rebuilt from its entry with the row's ε and δ.

For every ``ok`` median row of a mechanism with a known bound
(:mod:`mechanisms.median.error_bounds`) and every such bound, on that dataset:

* ``covered``: the number of trials whose bounded quantity (absolute error, or
  rank error for the quantile EM) stayed ``<=`` the bound, and ``abs_covered``
  the same for the bound converted to data units;
* ``exact``: ``P(quantity <= bound)`` from the release's exact cdf;
* ``q95`` / ``abs_q95``: the empirical 95% quantile of the quantity / of
  ``|M − T|`` over the trials, and ``ratio = value / q95`` (how loose the bound is);
* ``vacuous``: the bound is at least ``max(T − a, b − T)``, the largest error possible.

Written: ``bounds.csv`` (those rows) and ``bounds_coverage.md`` (per mechanism,
bound, distribution and ε: pooled coverage, the binomial probability of seeing
so few covered trials if the coverage were exactly ``1 − η``, the smallest exact
coverage over datasets, the median ratio, and a verdict: the bound *holds* when
every dataset's exact coverage is ``>= 1 − η`` and that binomial probability is
``>= 0.001``).  A valid bound gives each dataset coverage ``>= 1 − η``, so the
covered count dominates a Binomial(trials, ``1 − η``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import mechanisms
from experiments.data.datasets import Dataset, DatasetError
from experiments.harness import results_reader
from experiments.harness.plan import ConfigError, MechanismEntry, Plan, build_plan
from experiments.harness.results import RUN_FILE
from experiments.reports.selection import ReportError, median_rows, results_arguments
from experiments.reports.tables import digits, markdown_table
from mechanisms.core import bound_checks
from mechanisms.core import bounds as core_bounds
from mechanisms.median import error_bounds as theory

QUANTILE = 0.95
P_VALUE_FLOOR = 1e-3
EXACT_TOLERANCE = 1e-9
BOUNDS_CSV = "bounds.csv"
COVERAGE_MD = "bounds_coverage.md"
HELP = "coverage of the mechanisms' theoretical error bounds (needs keep_estimates=true)"


# --------------------------------------------------------------------------- input


def load_run(results_dir: Path, *, estimates: bool = True) -> tuple[Plan, results_reader.Results]:
    """The run's plan (rebuilt from ``run.json``'s config, hash-checked) and its results,
    with the estimates if ``estimates``."""
    results = results_reader.load(results_dir, estimates=estimates)
    run_file = results.directory / RUN_FILE
    config = results.manifest.get("config")
    if not isinstance(config, Mapping):
        raise ReportError(f"{run_file}: no config to regenerate the datasets from")
    try:
        plan = build_plan(config)
    except (ConfigError, DatasetError, ValueError) as err:
        raise ReportError(f"{run_file}: its config cannot be rebuilt: {err}") from None
    if plan.config_hash != results.config_hash:
        raise ReportError(
            f"{run_file}: the config rebuilt from the current conf/ files has another hash "
            "than the run's; the regenerated datasets might differ from the ones used"
        )
    return plan, results


# --------------------------------------------------------------------- evaluation


def cell_coverage(
    bound: core_bounds.Bound,
    release: mechanisms.Release,
    sorted_x: np.ndarray,
    estimates: np.ndarray,
) -> dict[str, Any]:
    """Coverage of one bound on one dataset: counts over ``estimates`` and the exact value."""
    abs_errors = np.abs(estimates - release.true_value)
    if bound.quantity == core_bounds.RANK_ERROR:
        quantity = theory.rank_error(sorted_x, estimates, bound.details["alpha"])
    else:
        quantity = abs_errors
    q95 = float(np.quantile(quantity, QUANTILE))
    abs_q95 = float(np.quantile(abs_errors, QUANTILE))
    largest = max(release.true_value - release.lower, release.upper - release.true_value)
    return {
        "bound": bound.name,
        "quantity": bound.quantity,
        "eta": bound.eta,
        "value": bound.value,
        "abs_error": bound.abs_error,
        "trials": int(estimates.size),
        "covered": int((quantity <= bound.value).sum()),
        "abs_covered": int((abs_errors <= bound.abs_error).sum()),
        "exact": bound_checks.exact_coverage(release, bound, sorted_x),
        "q95": q95,
        "abs_q95": abs_q95,
        "ratio": bound.value / q95 if q95 > 0 else math.inf,
        "abs_ratio": bound.abs_error / abs_q95 if abs_q95 > 0 else math.inf,
        "vacuous": bool(bound.abs_error >= largest),
        "assumption_holds": bound.details.get("assumption_holds", math.nan),
    }


def row_coverage(
    entry: MechanismEntry,
    dataset: Dataset,
    data: np.ndarray,
    row: pd.Series,
    estimates: np.ndarray,
    bounds: tuple[float, float],
) -> list[dict[str, Any]]:
    """:func:`cell_coverage` of every bound (η, scale: ``bounds``) of one summary ``row``,
    with the row's keys; the mechanism is rebuilt from ``entry`` at the row's ε and δ."""
    eta, scale = bounds
    epsilon = float(row["epsilon"])
    mechanism = entry.configure(epsilon, float(row["delta"]) if entry.takes_delta else None)
    release = mechanism.release(data, dataset.bounds)
    if release.true_value != row["true_value"]:
        raise ReportError(
            f"dataset {dataset.id} replicate {row['replicate']}: regenerated true value "
            f"{release.true_value!r} differs from the stored {row['true_value']!r}"
        )
    sorted_x = bound_checks.bounded_sorted(mechanism, data, dataset.bounds)[0]
    keys = {"dataset": row["dataset"], "subset": row["subset"], "replicate": row["replicate"]}
    keys |= {"mechanism": entry.label, "registry_name": entry.name, "epsilon": epsilon}
    keys |= {"n": int(sorted_x.size), "true_value": release.true_value}
    records = []
    for bound in bound_checks.mechanism_bounds(mechanism, data, dataset.bounds, eta):
        if scale != 1.0:
            bound = dataclasses.replace(
                bound, value=bound.value * scale, abs_error=bound.abs_error * scale
            )
        records.append({**keys, **cell_coverage(bound, release, sorted_x, estimates)})
    return records


def evaluate(
    plan: Plan, results: results_reader.Results, eta: float, scale: float = 1.0
) -> pd.DataFrame:
    """One row per (ok median row of a mechanism with a known bound, bound): the
    :func:`row_coverage` of the row's stored estimates.

    ``scale`` multiplies every bound before the check (1 for the real check; a
    value below 1 makes the bounds deliberately too tight, to see them fail).
    """
    core_bounds.check_eta(eta)
    if results.estimates is None:
        raise ReportError(f"{results.directory}: the results were read without their estimates")
    estimates = results.estimates["estimates"]
    datasets = {d.id: d for d in plan.datasets}
    entries = {m.label: m for m in plan.mechanisms}
    bounded = [m.label for m in plan.mechanisms if bound_checks.declares_bounds(m.cls)]
    summary = median_rows(results.summary)
    rows = summary.loc[summary["mechanism"].isin(bounded) & (summary["status"] == "ok")]
    records = []
    for (name, subset, replicate), group in rows.groupby(
        ["dataset", "subset", "replicate"], sort=False
    ):
        dataset = datasets[f"{name}/{subset}" if subset else name]
        data = dataset.data(plan.settings.seed, int(replicate))
        for index, row in group.iterrows():
            entry = entries[row["mechanism"]]
            records += row_coverage(entry, dataset, data, row, estimates[index], (eta, scale))
    if not records:
        raise ReportError(
            "no ok rows of a mechanism whose class declares error bounds "
            "(Mechanism.error_bounds) in the estimates"
        )
    return pd.DataFrame.from_records(records)


def summarise(rows: pd.DataFrame, eta: float) -> pd.DataFrame:
    """Per (mechanism, bound, dataset, ε): pooled coverage, exact minimum, looseness, verdict."""
    keys = ["mechanism", "bound", "quantity", "dataset", "epsilon"]
    grouped = rows.groupby(keys, sort=False)
    table = grouped.agg(
        datasets=("replicate", "size"),
        trials=("trials", "sum"),
        covered=("covered", "sum"),
        abs_covered=("abs_covered", "sum"),
        exact_min=("exact", "min"),
        exact_mean=("exact", "mean"),
        ratio_median=("ratio", "median"),
        ratio_min=("ratio", "min"),
        abs_ratio_median=("abs_ratio", "median"),
        bound_mean=("abs_error", "mean"),
        value_mean=("value", "mean"),
        vacuous=("vacuous", "mean"),
        assumption_holds=("assumption_holds", "mean"),
    ).reset_index()
    table["coverage"] = table["covered"] / table["trials"]
    table["abs_coverage"] = table["abs_covered"] / table["trials"]
    table["p_value"] = stats.binom.cdf(table["covered"], table["trials"], 1.0 - eta)
    table["holds"] = (table["exact_min"] >= 1.0 - eta - EXACT_TOLERANCE) & (
        table["p_value"] >= P_VALUE_FLOOR
    )
    return table


def coverage(
    results_dir: Path, eta: float, scale: float = 1.0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(rows, table)``: :func:`evaluate` and :func:`summarise` of a results directory."""
    plan, results = load_run(results_dir)
    rows = evaluate(plan, results, eta, scale)
    return rows, summarise(rows, eta)


# ------------------------------------------------------------------------- report

HEADER = [
    "mechanism",
    "bound",
    "on",
    "distribution",
    "ε",
    "coverage",
    "P(≤ covered | 1−η)",
    "min exact P",
    "bound / q95",
    "abs bound / abs q95",
    "mean bound (data units)",
    "vacuous",
    "verdict",
]


def _cells(r: Any) -> list[str]:
    """One row of the coverage table (``r``: a row of :func:`summarise`)."""
    verdict = "holds" if r.holds else "**fails**"
    if not math.isnan(r.assumption_holds) and r.assumption_holds < 1:
        verdict += f" (assumption false on {1 - r.assumption_holds:.0%} of datasets)"
    return [
        r.mechanism,
        theory.BOUND_NAMES.get(r.bound, r.bound),
        "rank error" if r.quantity == core_bounds.RANK_ERROR else "|M − T|",
        r.dataset,
        f"{r.epsilon:g}",
        f"{r.coverage:.4f} ({r.trials})",
        digits(r.p_value, 2),
        f"{r.exact_min:.4f}",
        digits(r.ratio_median),
        digits(r.abs_ratio_median),
        digits(r.bound_mean),
        f"{r.vacuous:.0%}",
        verdict,
    ]


def coverage_markdown(table: pd.DataFrame, eta: float) -> str:
    """The coverage table as markdown, one row per (mechanism, bound, distribution, ε)."""
    rows = [_cells(r) for r in table.itertuples(index=False)]
    intro = (
        f"Coverage of the (1 − η)-quantile bounds, η = {eta:g}: the fraction of trials whose "
        "bounded quantity stayed within the bound (pooled over datasets; must be ≥ "
        f"{1 - eta:g}). `P(≤ covered | 1−η)`: binomial probability of so few covered trials "
        "if every dataset's coverage were exactly 1 − η. `min exact P`: smallest exact "
        "coverage over datasets (release cdf). `bound / q95`: median over datasets of the "
        "bound divided by the empirical 95% quantile of the same quantity (rank error for the "
        "quantile EM; >> 1 means loose). `vacuous`: datasets where the bound is at least the "
        "largest possible error max(T − a, b − T). Verdict: holds when min exact P ≥ 1 − η "
        f"and P(≤ covered | 1−η) ≥ {P_VALUE_FLOOR:g}."
    )
    return intro + "\n\n" + markdown_table(HEADER, rows)


def write_outputs(rows: pd.DataFrame, table: pd.DataFrame, out_dir: Path, eta: float) -> list[Path]:
    """Write ``bounds.csv`` and ``bounds_coverage.md`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out_dir / BOUNDS_CSV, out_dir / COVERAGE_MD
    rows.to_csv(csv_path, index=False)
    md_path.write_text(
        "# Theoretical error bounds against the measured errors\n\n"
        + coverage_markdown(table, eta)
        + "\n",
        encoding="utf-8",
    )
    return [csv_path, md_path]


# -------------------------------------------------------------------- command line


def parse_eta(text: str) -> float:
    """``--eta``: a number in (0, 1)."""
    try:
        return core_bounds.check_eta(float(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``duff-plot bounds``."""
    results_arguments(parser, "run directory with estimates.npz")
    parser.add_argument(
        "--eta", type=parse_eta, default=core_bounds.DEFAULT_ETA, help="failure probability η"
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every bound by this factor before the check (default 1; e.g. 0.5 "
        "to see that a too-tight bound is reported as failing)",
    )


def command(args: argparse.Namespace) -> int:
    """Evaluate, write the two files, print the table; returns the exit status 0."""
    if not (math.isfinite(args.scale) and args.scale > 0):
        raise ReportError(f"--scale: must be a positive number, got {args.scale}")
    rows, table = coverage(args.results_dir, args.eta, args.scale)
    paths = write_outputs(rows, table, args.out or args.results_dir, args.eta)
    print(coverage_markdown(table, args.eta))
    print(f"\nwrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0
