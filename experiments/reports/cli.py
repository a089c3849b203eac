"""``duff-plot``: figures and tables from results directories, one subcommand each.

Usage::

    duff-plot figure1 RESULTS_DIR [...]   # the Duff paper's Figure 1 and its ratio table
    duff-plot figure2 RESULTS_DIR [...]   # Figures 2 and 3 (Vertebral Column) and their table
    duff-plot bounds RESULTS_DIR [...]    # coverage of the theoretical error bounds
    duff-plot loose-bounds RESULTS_DIR    # error against loose bounds (experiment=loose_bounds)
    duff-plot unbounded RESULTS_DIR       # the mechanisms without bounds (experiment=unbounded)
    duff-plot atoms RESULTS_DIR           # error against the fraction of ties (experiment=atoms)
    duff-plot peers RESULTS_DIR [...]     # our mechanisms beside OpenDP's and diffprivlib's
    duff-plot quantiles RESULTS_DIR [...] # every quantile mechanism against alpha
    duff-plot multi_quantiles RESULTS_DIR # m quantiles at once: error and time against m
    duff-plot intervals RESULTS_DIR [...] # coverage and width of the median's intervals
    duff-plot mode|mean|ptr RESULTS_DIR   # the studies of experiments.reports.study
    duff-plot trimmed-median RESULTS_DIR  # is the paper's LaplaceLN a trimmed mean?
    duff-plot decomposition RESULTS_DIR   # sampling error of T(S) against privacy error
    duff-plot scoring-pairings RESULTS_DIR # the LaplaceLN line, every pairing of scorings

``duff-plot COMMAND --help`` lists a command's options; each command is a module
of :mod:`experiments.reports` with ``add_arguments(parser)`` and ``command(args)``.
The scripts in ``scripts/`` call :func:`main` with their command's name.

Exit status: 0 on success, 2 on unusable input (one line on stderr naming the
file or option and what is wrong with it; nothing is written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Protocol

import matplotlib

matplotlib.use("Agg")  # files only, no display: before any pyplot import below

from experiments.reports import (
    atoms,
    bounds_coverage,
    decomposition,
    loose_bounds,
    multi_quantiles,
    peers_table,
    quantiles,
    scoring_pairings,
    study,
    trimmed_mean_hypothesis,
    unbounded,
)
from experiments.reports.figure1 import command as figure1
from experiments.reports.figure2 import command as figure2
from experiments.reports.intervals import command as intervals
from experiments.reports.selection import INPUT_ERRORS


class ReportCommand(Protocol):
    """A report module (or a :class:`experiments.reports.study.Study`)."""

    @property
    def HELP(self) -> str: ...

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def command(self, args: argparse.Namespace) -> int: ...


PROG = "duff-plot"
COMMANDS: dict[str, ReportCommand] = {
    "figure1": figure1,
    "figure2": figure2,
    "bounds": bounds_coverage,
    "loose-bounds": loose_bounds,
    "peers": peers_table,
    "quantiles": quantiles,
    "multi_quantiles": multi_quantiles,
    "intervals": intervals,
    "mode": study.MODE,
    "mean": study.MEAN,
    "ptr": study.PTR,
    "trimmed-median": trimmed_mean_hypothesis,
    "decomposition": decomposition,
    "scoring-pairings": scoring_pairings,
    "unbounded": unbounded,
    "atoms": atoms,
}


def parser() -> argparse.ArgumentParser:
    """The ``duff-plot`` parser, one subparser per :data:`COMMANDS` entry."""
    parse = argparse.ArgumentParser(
        prog=PROG, description="Figures and tables from results directories of duff-run."
    )
    commands = parse.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        module.add_arguments(commands.add_parser(name, help=module.HELP, description=module.HELP))
    return parse


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``duff-plot``); returns the exit status."""
    args = parser().parse_args(argv)
    try:
        status: int = COMMANDS[args.command].command(args)
    except INPUT_ERRORS as err:
        print(f"{PROG} {args.command}: error: {err}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
