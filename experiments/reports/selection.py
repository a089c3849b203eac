"""The rows of a results directory a report draws, and the error a report refuses input with.

Every report reads a results directory through :func:`experiments.harness.results_reader.load`
(the one validating reader) and then narrows its ``summary`` here: the rows of
the median (:func:`median_rows`) and, among them, the rows that succeeded
(:func:`split_failed`).  Every report command takes the same first arguments
(:func:`results_arguments`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from experiments.harness import results_reader

MEDIAN = "median"


class ReportError(Exception):
    """A results directory cannot be turned into the report asked for; the message says why."""


INPUT_ERRORS = (ReportError, results_reader.ResultsError)
"""What a report's command line turns into exit status 2 and one line on stderr."""


def results_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """The arguments every report command takes: ``RESULTS_DIR`` (``what`` it must be) and
    ``--out``, the output directory (default: ``RESULTS_DIR``)."""
    parser.add_argument("results_dir", type=Path, help=what)
    parser.add_argument("--out", type=Path, help="output directory (default: RESULTS_DIR)")


def median_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``summary`` that estimate the median: those whose ``statistic`` column
    is ``"median"``, or every row of a summary without that column (written before
    statistics other than the median existed)."""
    if "statistic" not in summary.columns:
        return summary
    return summary.loc[summary["statistic"] == MEDIAN]


def split_failed(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(ok, failed)``: rows with ``status == "ok"`` and all others."""
    is_ok = frame["status"] == "ok"
    return frame.loc[is_ok], frame.loc[~is_ok]
