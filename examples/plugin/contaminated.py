"""A plug-in dataset written outside the package: a normal sample with a contaminating cluster.

Each replicate is ``n`` points: a fraction ``1 − fraction`` from N(0, 1) and the
rest from N(shift, 0.1²), the classic setting where the median is robust and the
mean is not (Huber 1964, "Robust estimation of a location parameter").  The
config entry ``contaminated.yaml`` names this class and its options; the
harness passes the sweep's ``n`` and ``replicates``, and draws replicate ``r``
from :meth:`experiments.datasets.Dataset.rng`, keyed on (dataset id, r), so
every mechanism sees the same data.

    PYTHONPATH=examples/plugin python -m experiments.run --config-dir examples/plugin/conf \\
        experiment=smoke 'datasets=[contaminated]'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from experiments.datasets import Dataset


@dataclass(frozen=True)
class Contaminated(Dataset):
    """``n`` points: N(0, 1) with a fraction ``fraction`` moved to N(``shift``, 0.1²)."""

    n: int = 1000
    fraction: float = 0.1
    shift: float = 5.0

    def data(self, seed: int, replicate: int) -> np.ndarray:
        rng = self.rng(seed, replicate)
        outliers = rng.random(self.n) < self.fraction
        clean = rng.standard_normal(self.n)
        return np.where(outliers, self.shift + 0.1 * clean, clean)
