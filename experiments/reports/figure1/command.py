"""``duff-plot figure1``: the Duff paper's Figure 1 and its ratio table from a results directory.

Usage::

    duff-plot figure1 RESULTS_DIR [--out DIR] [--mechanisms LABEL ...] [--truth sample]
                      [--notes PATH] [--tolerance 0.25] [--bounds [--eta 0.05]]

``--truth population`` scores every estimate against the population median θ of its
dataset's law (``population_abs_error``) instead of the sample median T(S) (refused on real
data, which have no θ).  Reads ``RESULTS_DIR`` with
:func:`experiments.harness.results_reader.load`, which refuses (exit 2, one line naming
the file) a summary that is truncated, corrupt, or not one row per cell of the plan
recorded in ``run.json``.  Rows whose ``status`` is not ``"ok"`` are left out and counted
on stderr and in the report.  Writes into ``--out`` (default ``RESULTS_DIR``):

* ``figure1.png`` (150 dpi) and ``figure1.pdf`` (:mod:`experiments.reports.figure1.plot`);
* ``figure1_ratios.md`` (:mod:`experiments.reports.figure1.report`), whose last
  section is copied verbatim from ``RESULTS_DIR/figure1_notes.md`` (or ``--notes``);
* with ``--bounds`` (a ``keep_estimates=true`` run): ``figure1_bounds.png``/``.pdf``,
  Figure 1 with each mechanism's theoretical error bound dashed, and the files
  of :mod:`experiments.reports.bounds_coverage` (``bounds.csv``,
  ``bounds_coverage.md``).

The paper comparison and the ratio tables are also printed on stdout.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from experiments.reports import bounds_coverage, style
from experiments.reports.figure1.data import TRUTHS, Figure1, compute
from experiments.reports.figure1.plot import bound_lines, draw_bounds, draw_figure
from experiments.reports.figure1.report import build_report, paper_table, ratio_tables
from experiments.reports.selection import ReportError, results_arguments

REPORT_FILE = "figure1_ratios.md"
NOTES_FILE = "figure1_notes.md"
HELP = "the Duff paper's Figure 1 and its ratio table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``duff-plot figure1``."""
    results_arguments(parser, "directory holding summary.csv")
    parser.add_argument(
        "--mechanisms",
        nargs="+",
        metavar="LABEL",
        help="mechanism labels to draw (default: all); duff is always kept as the reference",
    )
    parser.add_argument(
        "--notes",
        type=Path,
        help="text copied into 'Where the reproduction disagrees' "
        "(default: RESULTS_DIR/figure1_notes.md if it exists)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.25,
        help="relative tolerance for 'agrees with the paper' (default: 0.25)",
    )
    parser.add_argument(
        "--truth",
        choices=tuple(TRUTHS),
        default="sample",
        help="score the estimates against the sample median T(S) (the paper's choice, the "
        "default) or against the population median θ of the dataset's law",
    )
    parser.add_argument(
        "--bounds",
        action="store_true",
        help="also draw the theoretical error bounds (figure1_bounds.*) and write their "
        "coverage table (needs estimates.npz: run with keep_estimates=true)",
    )
    parser.add_argument(
        "--eta",
        type=bounds_coverage.parse_eta,
        default=0.05,
        help="failure probability of the bounds: the (1 - eta)-quantile is bounded (default: 0.05)",
    )


def bound_results(
    results_dir: Path,
    eta: float,
    datasets: Sequence[str],
    mechanisms: Sequence[str] | None,
    reference: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bound coverage rows and table (:mod:`bounds_coverage`) for the drawn ``datasets`` and
    ``mechanisms`` (all when None; ``reference``, the Duff label, is always drawn)."""
    rows, _ = bounds_coverage.coverage(results_dir, eta)
    keep = rows["dataset"].isin(datasets)
    if mechanisms is not None:
        keep &= rows["mechanism"].isin([*mechanisms, reference])
    rows = rows.loc[keep].reset_index(drop=True)
    if rows.empty:
        raise ReportError("--bounds: no mechanism with a known bound among the drawn rows")
    return rows, bounds_coverage.summarise(rows, eta)


def read_notes(explicit: Path | None, default: Path) -> tuple[str | None, Path]:
    """The hand-written notes (``explicit`` must exist; ``default`` may not) and their path."""
    if explicit is not None:
        if not explicit.is_file():
            raise ReportError(f"--notes: {explicit}: no such file")
        return explicit.read_text(encoding="utf-8"), explicit
    if default.is_file():
        return default.read_text(encoding="utf-8"), default
    return None, default


def write_bounds(
    figure: Figure1, theory: tuple[pd.DataFrame, pd.DataFrame], out_dir: Path, eta: float
) -> list[Path]:
    """``figure1_bounds.png``/``.pdf`` and the coverage files of :mod:`bounds_coverage`."""
    rows, table = theory
    fig, panels = draw_figure(figure.agg, figure.datasets, figure.palette)
    draw_bounds(fig, panels, bound_lines(rows), eta, figure.palette)
    written = style.save_figure(fig, out_dir, "figure1_bounds")
    return written + bounds_coverage.write_outputs(rows, table, out_dir, eta)


def command(args: argparse.Namespace) -> int:
    """Compute everything first (so unusable input writes nothing), then write the files."""
    notes, notes_path = read_notes(args.notes, args.results_dir / NOTES_FILE)
    figure = compute(
        args.results_dir, mechanisms=args.mechanisms, tolerance=args.tolerance, truth=args.truth
    )
    theory = None
    if args.bounds:
        theory = bound_results(
            args.results_dir, args.eta, figure.datasets, args.mechanisms, figure.reference
        )
    out_dir = args.out if args.out is not None else args.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, _ = draw_figure(figure.agg, figure.datasets, figure.palette, TRUTHS[figure.truth])
    written = style.save_figure(fig, out_dir, "figure1")
    report_path = out_dir / REPORT_FILE
    report_path.write_text(build_report(figure, notes, notes_path), encoding="utf-8")
    written.append(report_path)
    if theory is not None:
        written += write_bounds(figure, theory, out_dir, args.eta)
    print("## Ratios quoted in the paper\n")
    print(paper_table(figure.comparison, args.tolerance, figure.palette))
    print("\n## Ratio to Duff at every ε\n")
    print(ratio_tables(figure.ratios, figure.datasets, figure.palette))
    print(f"\nwrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0
