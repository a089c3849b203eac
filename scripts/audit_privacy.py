"""Audit median mechanisms for privacy on neighbouring datasets: ``duff-audit`` (same options).

    python scripts/audit_privacy.py [--mechanism SPEC ...] [--target CLASS_SPEC ...]
                                    [--epsilons 0.01,0.1,1,5] [--output audit.json] ...

The work is done by :mod:`experiments.audit.cli`; the record names this script.
"""

import sys

from experiments.audit.cli import main

if __name__ == "__main__":
    sys.exit(main(command=("python", "scripts/audit_privacy.py")))
