"""``duff-plot figure2``: Figures 2 and 3 (Vertebral Column) and their table from a results dir.

Usage::

    duff-plot figure2 RESULTS_DIR [--out DIR] [--measurements NAME ...]
                      [--epsilon EPS] [--data PATH]

Reads a ``duff-run experiment=figure2`` run (:mod:`experiments.reports.figure2.data`)
and writes into ``--out`` (default ``RESULTS_DIR``): ``figure2.png``/``.pdf``
(pelvic incidence, when selected), ``figure3.png``/``.pdf`` (every selected
measurement; :mod:`experiments.reports.figure2.plot`) and ``figure2_table.md``
(:mod:`experiments.reports.figure2.report`); the first two tables are also
printed on stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.data.vertebral import VERTEBRAL_MEASUREMENTS
from experiments.reports import style
from experiments.reports.figure2.data import COMMAND, load_class_data, load_results, report_failed
from experiments.reports.figure2.numbers import table_rows
from experiments.reports.figure2.plot import draw_figure
from experiments.reports.figure2.report import build_report, main_table, ratio_table
from experiments.reports.selection import results_arguments

FIGURE2_MEASUREMENT = "pelvic_incidence"
TABLE_FILE = "figure2_table.md"
HELP = "the Duff paper's Figures 2 and 3 (Vertebral Column) and their table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``duff-plot figure2``."""
    results_arguments(parser, "directory of a figure2 run")
    parser.add_argument(
        "--measurements",
        nargs="+",
        metavar="NAME",
        choices=VERTEBRAL_MEASUREMENTS,
        help=f"rows of Figure 3 (default: all of {', '.join(VERTEBRAL_MEASUREMENTS)})",
    )
    parser.add_argument(
        "--epsilon", type=float, help="ε to draw (default: the only ε in the results)"
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="column_2C.dat (default: the file recorded in run.json, else the loader's search)",
    )


def command(args: argparse.Namespace) -> int:
    """Read and check everything first (so unusable input writes nothing), then write."""
    data = load_results(args.results_dir, epsilon=args.epsilon, measurements=args.measurements)
    report_failed(data.failed, sys.stderr)
    raw = load_class_data(data, args.data, sys.stderr)
    table = table_rows(data)
    out_dir = args.out if args.out is not None else args.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if FIGURE2_MEASUREMENT in data.measurements:
        figure = draw_figure(data, raw, [FIGURE2_MEASUREMENT])
        written += style.save_figure(figure, out_dir, "figure2")
    else:
        print(f"{COMMAND}: no {FIGURE2_MEASUREMENT} rows; figure2 not drawn", file=sys.stderr)
    written += style.save_figure(draw_figure(data, raw, data.measurements), out_dir, "figure3")
    report_path = out_dir / TABLE_FILE
    report_path.write_text(build_report(data, table, args.results_dir), encoding="utf-8")
    written.append(report_path)
    print("## Duff MAE / LaplaceLN MAE\n")
    print(ratio_table(data, table))
    print("\n## Per measurement and mechanism\n")
    print(main_table(data, table))
    print(f"\nwrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0
