"""Which tuning choices reproduce the Duff paper's SmoothSens_ε,δ and LaplaceLN ratios?

    python scripts/paper_tuning_study.py [--replicates 25] [--draws 20000] [--out FILE]

The work is done by :mod:`experiments.reports.tuning_study`.
"""

import sys

from experiments.reports.tuning_study import main

if __name__ == "__main__":
    sys.exit(main())
