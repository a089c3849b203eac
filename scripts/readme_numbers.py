"""Write (or ``--check``) the measured numbers quoted in README.md from the reference outputs.

    python scripts/readme_numbers.py [--check] [--readme PATH] [--root DIR]

The work is done by :mod:`experiments.reports.readme_numbers`.
"""

import sys

from experiments.reports.readme_numbers import main

if __name__ == "__main__":
    sys.exit(main())
