"""Draw the Duff paper's Figures 2 and 3 (Vertebral Column): ``duff-plot figure2`` (same options).

    python scripts/plot_figure2.py RESULTS_DIR [--out DIR] [--measurements NAME ...]
                                   [--epsilon EPS] [--data PATH]

The work is done by :mod:`experiments.reports.figure2.command`.
"""

import sys
from collections.abc import Sequence

from experiments.reports import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``duff-plot figure2 ARGV``; returns the exit status."""
    return cli.main(["figure2", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
