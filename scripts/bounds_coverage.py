"""How often the theoretical error bounds hold on a run: ``duff-plot bounds`` (same options).

    python scripts/bounds_coverage.py RESULTS_DIR [--eta 0.05] [--out DIR] [--scale 1]

The work is done by :mod:`experiments.reports.bounds_coverage`.
"""

import sys
from collections.abc import Sequence

from experiments.reports import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``duff-plot bounds ARGV``; returns the exit status."""
    return cli.main(["bounds", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
