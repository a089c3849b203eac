"""Write (or ``--check``) the measured numbers quoted in README.md and the docs pages from
the reference outputs.

    python scripts/readme_numbers.py [--check] [--readme PATH] [--docs DIR] [--root DIR]

The work is done by :mod:`readme_tools.markers`.
"""

import sys

from readme_tools.markers import main

if __name__ == "__main__":
    sys.exit(main())
