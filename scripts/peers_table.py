"""Markdown table of a `peers` run: ``duff-plot peers`` (same options).

    python scripts/peers_table.py RESULTS_DIR [--out PATH] [--pair A:B ...]

The work is done by :mod:`experiments.reports.peers_table`.
"""

import sys
from collections.abc import Sequence

from experiments.reports import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``duff-plot peers ARGV``; returns the exit status."""
    return cli.main(["peers", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
