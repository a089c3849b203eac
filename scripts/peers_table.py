"""Markdown table of a `peers` run: our mechanisms beside OpenDP's and diffprivlib's.

Usage::

    python scripts/peers_table.py RESULTS_DIR [--out PATH] [--pair A:B ...]

Input: ``RESULTS_DIR/summary.csv`` and ``run.json`` of ``experiment=peers``.
Rows whose ``status`` is not ``"ok"`` are left out and counted in the output.

Written to ``RESULTS_DIR/peers_table.md`` (or ``--out``):

* the error table: per dataset and ε, each mechanism's mean over datasets
  (replicates) of the per-dataset mean |T(S) − M(S)| over ``trials`` estimates;
* the time: median over cells of ``seconds`` (configure + release + ``trials``
  estimates; a peer library computes every estimate from scratch, ours sample
  ``trials`` times from one release), in milliseconds;
* agreement of pairs that sample the same distribution (``--pair A:B``;
  default ``quantile_em:opendp_quantile_em`` and
  ``quantile_em_replace_one:diffprivlib_quantile``): per (dataset, ε) the
  paired difference of the mean errors over replicates (same datasets) and its
  z-score, with standard error ``sqrt(Σ_r (sd_A² + sd_B²)/trials)/R`` from the
  ``sd_abs_error`` column (estimates of different mechanisms are independent);
* each mechanism's stated guarantee and the package versions from ``run.json``.

Exit status: 0 on success, 2 on unusable input (with a message on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.results import RUN_FILE, read_summary

DEFAULT_PAIRS = ("quantile_em:opendp_quantile_em", "quantile_em_replace_one:diffprivlib_quantile")
VERSION_KEYS = ("python", "numpy", "scipy", "opendp", "diffprivlib", "scikit-learn", "duff-bench")


def error_table(ok: pd.DataFrame, labels: list[str]) -> str:
    """Mean over replicates of ``mean_abs_error``, one row per (dataset, ε)."""
    means = ok.groupby(["dataset", "epsilon", "mechanism"])["mean_abs_error"].mean().unstack()
    lines = ["| dataset | ε | " + " | ".join(labels) + " |", "|---|---|" + "---:|" * len(labels)]
    for (dataset, epsilon), row in means.iterrows():
        cells = " | ".join(f"{row.get(label, np.nan):.3g}" for label in labels)
        lines.append(f"| {dataset} | {epsilon:g} | {cells} |")
    seconds = ok.groupby("mechanism")["seconds"].median()
    cells = " | ".join(f"{1e3 * seconds.get(label, np.nan):.3g}" for label in labels)
    lines.append(f"| **ms per cell** (median) | | {cells} |")
    return "\n".join(lines)


def agreement(ok: pd.DataFrame, first: str, second: str) -> str:
    """Paired difference of mean errors of ``first`` and ``second`` with its z-score."""
    keys = ["dataset", "replicate", "epsilon"]
    columns = [*keys, "mean_abs_error", "sd_abs_error", "trials"]
    a = ok.loc[ok["mechanism"] == first, columns].set_index(keys)
    b = ok.loc[ok["mechanism"] == second, columns].set_index(keys)
    both = a.merge(b, left_index=True, right_index=True, suffixes=("_a", "_b")).reset_index()
    if both.empty:
        return f"{first} vs {second}: no common cells\n"
    both["diff"] = both["mean_abs_error_a"] - both["mean_abs_error_b"]
    both["var"] = (both["sd_abs_error_a"] ** 2 + both["sd_abs_error_b"] ** 2) / both["trials_a"]
    lines = [
        f"`{first}` − `{second}` (mean over replicates; z = difference / standard error)",
        "",
        "| dataset | ε | error ratio | difference | z |",
        "|---|---|---:|---:|---:|",
    ]
    for (dataset, epsilon), cell in both.groupby(["dataset", "epsilon"]):
        replicates = len(cell)
        difference = cell["diff"].mean()
        z = difference / (np.sqrt(cell["var"].sum()) / replicates)
        ratio = cell["mean_abs_error_a"].mean() / cell["mean_abs_error_b"].mean()
        lines.append(f"| {dataset} | {epsilon:g} | {ratio:.3f} | {difference:.2g} | {z:+.2f} |")
    return "\n".join(lines) + "\n"


def render(results: Path, pairs: list[str]) -> str:
    summary = read_summary(results)
    manifest = json.loads((results / RUN_FILE).read_text())
    labels = list(dict.fromkeys(summary["mechanism"]))
    ok = summary[summary["status"] == "ok"]
    failed = len(summary) - len(ok)
    versions = manifest.get("versions", {})
    shown = ", ".join(
        f"{key} {versions[key]}" if versions.get(key) else f"{key} (not recorded in run.json)"
        for key in VERSION_KEYS
    )
    settings = manifest.get("numbers", {})
    out = [
        f"### Peers: DP medians, n = {summary['n'].iloc[0]}, "
        f"{settings.get('trials')} estimates × {summary['replicate'].nunique()} datasets "
        "per cell",
        "",
        "Mean |T(S) − M(S)| (lower is better).",
        "",
        error_table(ok, labels),
        "",
        f"Rows left out (status not ok): {failed}.  Versions: {shown}.  "
        f"Config hash {manifest.get('config_hash')}, git {manifest.get('git')}.",
        "",
        "Guarantees:",
        "",
    ]
    guarantees = ok.drop_duplicates("mechanism").set_index("mechanism")
    for label in labels:
        if label in guarantees.index:
            row = guarantees.loc[label]
            out.append(f"* `{label}`: ε-DP, {row['neighbouring']} neighbours")
    out.append("")
    for pair in pairs:
        first, _, second = pair.partition(":")
        out.append(agreement(ok, first, second))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--pair", action="append", dest="pairs", metavar="A:B")
    args = parser.parse_args(argv)
    try:
        text = render(args.results, args.pairs or list(DEFAULT_PAIRS))
    except (OSError, KeyError, ValueError, json.JSONDecodeError) as err:
        print(f"peers_table: error: {err}", file=sys.stderr)
        return 2
    out = args.out or args.results / "peers_table.md"
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
