"""A plug-in mechanism written outside the package: randomised response on the median's bin.

Split the public range ``[a, b]`` into ``k`` bins of width ``w = (b - a)/k``, find
the bin ``j*`` of the lower median, report it with probability
``e^ε / (e^ε + k - 1)`` and each other bin with probability ``1 / (e^ε + k - 1)``
(``k``-ary randomised response; Warner 1965, Kairouz et al. 2016), then output a
uniform point of the reported bin.

Guarantee: ε-DP for *any* pair of datasets, hence for add/remove and
replace-one neighbours alike: the reported bin's probabilities under any two
values of ``j*`` differ by a factor of at most ``e^ε``, and the uniform draw
inside the bin is post-processing.  (It is a teaching example: its error is at
least ``w/4`` on average, far worse than the exponential mechanisms'.)

Run it in a sweep without touching the package, with this directory on
``PYTHONPATH`` and its config directory (``conf/mechanism/binned_rr.yaml``) added
to Hydra's search path::

    PYTHONPATH=examples/plugin python -m experiments.run --config-dir examples/plugin/conf \\
        experiment=smoke 'mechanisms=[duff,binned_rr]'
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms import Guarantee, Mechanism, Neighbouring, Release
from mechanisms.base import lower_median
from mechanisms.validation import check_rng, check_size


class BinnedRRRelease(Release):
    """Bin ``j*`` w.p. ``p_true``, any other bin w.p. ``p_other``; uniform inside the bin."""

    def __init__(
        self, sorted_x: np.ndarray, lower: float, upper: float, epsilon: float, bins: int
    ) -> None:
        self.lower, self.upper, self.n = lower, upper, int(sorted_x.size)
        self.true_value = lower_median(sorted_x, lower)
        self.bins, self.width = bins, (upper - lower) / bins
        self.true_bin = min(int((self.true_value - lower) / self.width), bins - 1)
        # e^ε/(e^ε + k - 1) written with e^-ε, which cannot overflow
        self.p_other = math.exp(-epsilon) / (1.0 + (bins - 1) * math.exp(-epsilon))
        self.p_true = 1.0 - (bins - 1) * self.p_other

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        other = rng.integers(self.bins - 1, size=size)
        other += other >= self.true_bin  # uniform over the bins other than true_bin
        chosen = np.where(rng.random(size) < self.p_true, self.true_bin, other)
        out = self.lower + (chosen + rng.random(size)) * self.width
        return np.minimum(out, self.upper, out=out)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        points = np.asarray(x, dtype=np.float64)
        q = np.clip(np.nan_to_num(points, nan=self.lower), self.lower, self.upper)
        position = (q - self.lower) / self.width  # bins passed, with the fraction of the current
        whole = np.minimum(np.floor(position), self.bins - 1)
        mass = np.where(np.arange(self.bins) == self.true_bin, self.p_true, self.p_other)
        before = np.concatenate([[0.0], np.cumsum(mass)])
        index = whole.astype(np.int64)
        out = np.minimum(before[index] + mass[index] * (position - whole), 1.0)
        return np.where(np.isnan(points), np.nan, out)  # NaN in, NaN out, as scipy.stats does


class BinnedRR(Mechanism):
    """k-ary randomised response on the bin of the lower median; ε-DP (any neighbours)."""

    name = "binned_rr"
    neighbouring = Neighbouring.ADD_REMOVE

    def __init__(self, *, epsilon: float, delta: float | None = None, bins: int = 16) -> None:
        super().__init__(epsilon=epsilon, delta=delta)
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
            raise ValueError(f"bins must be an integer >= 2, got {bins!r}")
        self.bins = bins

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(
            self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="k-ary randomised response"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return BinnedRRRelease(sorted_x, lower, upper, self.epsilon, self.bins)
