"""Draw the Duff paper's Figure 1 and its ratio table: ``duff-plot figure1`` (same options).

    python scripts/plot_figure1.py RESULTS_DIR [--out DIR] [--mechanisms LABEL ...]
                                   [--notes PATH] [--tolerance 0.25] [--bounds [--eta 0.05]]

The work is done by :mod:`experiments.reports.figure1.command`.
"""

import sys
from collections.abc import Sequence

from experiments.reports import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``duff-plot figure1 ARGV``; returns the exit status."""
    return cli.main(["figure1", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
