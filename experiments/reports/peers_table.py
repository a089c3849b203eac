"""``duff-plot peers``: Markdown table of a ``peers`` run, our mechanisms beside OpenDP's and
diffprivlib's.

Usage::

    duff-plot peers RESULTS_DIR [--out PATH] [--pair A:B ...]

Input: a run of ``experiment=peers``, read by :func:`experiments.harness.results_reader.load`.
Rows whose ``status`` is not ``"ok"`` are left out and counted in the output.

Written to ``RESULTS_DIR/peers_table.md`` (or ``--out``) and printed:

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
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.harness import results_reader
from experiments.reports.selection import median_rows
from experiments.reports.tables import markdown_table

DEFAULT_PAIRS = ("quantile_em:opendp_quantile_em", "quantile_em_replace_one:diffprivlib_quantile")
VERSION_KEYS = ("python", "numpy", "scipy", "opendp", "diffprivlib", "scikit-learn", "duff-bench")
TABLE_FILE = "peers_table.md"
HELP = "our mechanisms beside OpenDP's and diffprivlib's (a peers run)"


def error_table(ok: pd.DataFrame, labels: list[str]) -> str:
    """Mean over replicates of ``mean_abs_error``, one row per (dataset, ε)."""
    means = ok.groupby(["dataset", "epsilon", "mechanism"])["mean_abs_error"].mean().unstack()
    rows = []
    for (dataset, epsilon), row in means.iterrows():
        rows.append([dataset, f"{epsilon:g}", *(f"{row.get(m, np.nan):.3g}" for m in labels)])
    align = ["---", "---"] + ["---:"] * len(labels)
    seconds = ok.groupby("mechanism")["seconds"].median()
    times = " | ".join(f"{1e3 * seconds.get(label, np.nan):.3g}" for label in labels)
    table = markdown_table(["dataset", "ε", *labels], rows, align)
    return f"{table}\n| **ms per cell** (median) | | {times} |"


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
    rows = []
    for (dataset, epsilon), cell in both.groupby(["dataset", "epsilon"]):
        replicates = len(cell)
        difference = cell["diff"].mean()
        z = difference / (np.sqrt(cell["var"].sum()) / replicates)
        ratio = cell["mean_abs_error_a"].mean() / cell["mean_abs_error_b"].mean()
        rows.append([dataset, f"{epsilon:g}", f"{ratio:.3f}", f"{difference:.2g}", f"{z:+.2f}"])
    header = ["dataset", "ε", "error ratio", "difference", "z"]
    table = markdown_table(header, rows, ["---", "---", "---:", "---:", "---:"])
    title = f"`{first}` − `{second}` (mean over replicates; z = difference / standard error)"
    return f"{title}\n\n{table}\n"


def render(results_dir: Path, pairs: list[str]) -> str:
    """The whole table of the peers run in ``results_dir`` (``pairs``: ``"A:B"`` labels)."""
    results = results_reader.load(results_dir)
    summary = median_rows(results.summary)
    manifest = results.manifest
    labels = list(dict.fromkeys(summary["mechanism"]))
    ok = summary[summary["status"] == "ok"]
    failed = len(summary) - len(ok)
    versions = manifest.get("versions", {})
    shown = ", ".join(
        f"{key} {versions[key]}" if versions.get(key) else f"{key} (not recorded in run.json)"
        for key in VERSION_KEYS
    )
    out = [
        f"### Peers: DP medians, n = {summary['n'].iloc[0]}, "
        f"{results.numbers.get('trials')} estimates × {summary['replicate'].nunique()} datasets "
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``duff-plot peers``."""
    parser.add_argument("results_dir", type=Path, help="directory of a peers run")
    parser.add_argument("--out", type=Path, help=f"default: RESULTS_DIR/{TABLE_FILE}")
    parser.add_argument(
        "--pair",
        action="append",
        dest="pairs",
        metavar="A:B",
        help=f"two labels that sample the same distribution (default: {' '.join(DEFAULT_PAIRS)})",
    )


def command(args: argparse.Namespace) -> int:
    """Write and print the table; returns the exit status 0."""
    text = render(args.results_dir, args.pairs or list(DEFAULT_PAIRS))
    out = args.out or args.results_dir / TABLE_FILE
    out.write_text(text)
    print(text)
    return 0
