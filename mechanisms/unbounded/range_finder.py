"""A private range from a noisy histogram of magnitudes, then Duff on that range.

Range (in the manner of the bounds estimation of Google's differential-privacy library,
which estimates bounds before a bounded aggregation): bins by sign and power of 2 of
``|x|``, ``[2^j, 2^{j+1})`` for ``j`` in ``[J_MIN, J_MAX)`` on each side (``|x| < 2^J_MIN``
in a zero bin, ``|x| >= 2^J_MAX`` in the outermost bins, whose edge is ``±2^J_MAX``), each
count plus ``Lap(s)``.  A bin is *occupied* when its noisy count exceeds
``t = s·log(B / (2·p))`` (``B`` bins, ``p`` = :data:`FALSE_OCCUPIED`: an empty bin passes
with probability ``e^{-t/s}/2 = p/B``, so no empty bin passes with probability
``>= 1 - p``); the range is ``[â, b̂]`` from the lower edge of the lowest occupied bin to the
upper edge of the highest, widened by one bin on each side (a quantile near a bin's edge,
or in a bin just below the threshold, stays inside; a post-processing of the same noisy
histogram), intersected with the public bounds; if no bin is occupied, the public bounds
intersected with ``[−2^16, 2^16]`` (:data:`FALLBACK`; the public bounds themselves if that
is empty).  Not the bin of
the largest noisy count: among ~2 000 bins, at ε_1 n small, an empty bin's noise wins that
contest often enough to send the range to ``2^1020``.  One point
moves one count by 1 under add/remove and two counts under replace-one: ``s = 1/ε_1`` or
``2/ε_1`` gives ``ε_1``-DP (Dwork & Roth, "The Algorithmic Foundations of Differential Privacy",
Theorem 3.6, the Laplace mechanism on a histogram of L1 sensitivity 1 or 2).

Then Duff (Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility Function
Family for the Exponential Mechanism"), reached through the registry (``get("duff")``), at
``ε_2`` on the data clipped to ``[â, b̂]``: ε_2-DP for the same neighbouring, for any
fixed range, so for the private one.  Split: ``ε_1 = ε/4``, ``ε_2 = 3ε/4``: the range only
has to contain the quantile's neighbourhood, which the threshold's margin gives at a
quarter of the budget on data of a few hundred points or more, while Duff's rank error
scales as ``1/ε_2``.  Basic composition (Dwork & Roth, Theorem 3.16): ε-DP.

The release's cdf is not computed (a mixture over the noisy range): it raises
``NotImplementedError`` and the mechanism is audited from samples.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.core.guarantee import Neighbouring, check_neighbours
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.quantiles import check_alpha, quantile_value
from mechanisms.core.registration import configure, get, register
from mechanisms.core.validation import check_rng, check_size

J_MIN, J_MAX = -40, 1020
"""The powers of 2 of the magnitude bins (``2^1020`` keeps ``b̂ - â`` finite)."""
FALSE_OCCUPIED = 1e-6
"""``p``: the probability that some empty bin is taken as occupied.  An empty bin far from
the data stretches the range up to ``2^J_MAX``, where Duff's release lands in the empty
region (its mass ``~ (b̂ − â)·e^{−ε n/4}`` dwarfs the data's), so the failure costs an error
of up to ``2^1020``: ``p`` must be small beside one over the number of releases a study
averages (a sweep cell draws 10³–10⁴; at ``p = 10⁻³`` the reference ``unbounded`` run's
mean errors reached 10²⁵³)."""
FALLBACK = 2.0**16
"""The half-width of the range when no bin is occupied: Duff's error does not grow with the
width ``w`` of its range until ``w e^{−ε_2 n/4}`` reaches the data's gaps (at n = 1000,
ε = 0.1: ``w ~ 10^5``), so a wide data-independent range costs little where the histogram
saw nothing, and a narrow one (``[−1, 1]``) would clip most data sets."""
RANGE_SHARE = 0.25
"""``ε_1 / ε``: the share of the range finder (module docstring)."""


def bin_edges(lower: float, upper: float) -> np.ndarray:
    """The bins' edges, increasing: ``-2^J_MAX, ..., -2^J_MIN, 2^J_MIN, ..., 2^J_MAX``
    (the middle bin is the zero bin), restricted to ``[lower, upper]``."""
    powers = np.ldexp(1.0, np.arange(J_MIN, J_MAX + 1))
    edges = np.concatenate([-powers[::-1], powers])
    low, high = max(lower, edges[0]), min(upper, edges[-1])
    return np.concatenate([[low], edges[(edges > low) & (edges < high)], [high]])


class RangeThenDuffRelease(Release):
    """A noisy range, then Duff's release on it (module docstring); sample only."""

    def __init__(
        self, sorted_x: np.ndarray, lower: float, upper: float, alpha: float, scale: float,
        duff: Mechanism,
    ) -> None:  # fmt: skip
        self.lower, self.upper, self.n = float(lower), float(upper), int(sorted_x.size)
        self.true_value = quantile_value(sorted_x, alpha, lower)
        self._x, self._duff, self.scale = sorted_x, duff, scale
        self.edges = bin_edges(lower, upper)
        clipped = np.clip(sorted_x, self.edges[0], self.edges[-1])
        bins = np.clip(np.searchsorted(self.edges, clipped, side="right") - 1, 0, None)
        self.counts = np.bincount(
            np.minimum(bins, self.edges.size - 2), minlength=self.edges.size - 1
        )
        self.threshold = scale * math.log(self.counts.size / (2.0 * FALSE_OCCUPIED))
        self.fallback = (max(lower, -FALLBACK), min(upper, FALLBACK))
        if not self.fallback[0] < self.fallback[1]:  # public bounds away from the fallback
            self.fallback = (float(self.edges[0]), float(self.edges[-1]))

    def ranges(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` private ranges ``(â, b̂)`` (rows), from independent noisy histograms."""
        out = np.empty((size, 2))
        for row in range(size):
            noisy = self.counts + rng.laplace(0.0, self.scale, self.counts.size)
            occupied = np.flatnonzero(noisy > self.threshold)
            if not occupied.size:  # no bin clears the threshold (small ε·n)
                out[row] = self.fallback
                continue
            low, high = max(occupied[0] - 1, 0), min(occupied[-1] + 2, self.edges.size - 1)
            out[row] = self.edges[low], self.edges[high]
        return out

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        ranges = self.ranges(size, rng)
        out = np.empty(size)
        unique, back = np.unique(ranges, axis=0, return_inverse=True)
        for j, (a, b) in enumerate(unique):
            chosen = back.ravel() == j
            release = self._duff.release(self._x, (a, b))
            out[chosen] = release.sample(int(chosen.sum()), rng)
        return out

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        raise NotImplementedError(
            "range_finder_duff: the cdf of the mixture over ranges is not computed"
        )


@register
class RangeFinderDuff(Mechanism[Release]):
    """A noisy magnitude histogram's range at ε/4, then Duff at 3ε/4; ε-DP (module docstring).

    Options: ``alpha`` (the quantile, in (0, 1)) and ``neighbours`` (``"add_remove"`` or
    ``"replace_one"``, for both steps).  Bounds may be infinite.
    """

    name = "range_finder_duff"
    display_name = "Range finder + Duff"
    figure = FigureStyle("#bcbd22", "*", 31)
    statistics = frozenset({"median", "quantile"})
    accepts_infinite_bounds = True

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alpha: float = 0.5,
        neighbours: str = "add_remove",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.alpha = check_alpha(alpha)
        self.neighbouring = check_neighbours(neighbours)
        self.duff = configure(
            get("duff"),
            epsilon=(1.0 - RANGE_SHARE) * self.epsilon,
            alpha=self.alpha,
            neighbours=self.neighbouring.value,
        )

    def source(self) -> str:
        sensitivity = 2 if self.neighbouring is Neighbouring.REPLACE_ONE else 1
        return (
            "basic composition (Dwork & Roth, 'The Algorithmic Foundations of Differential "
            f"Privacy', Theorem 3.16) of a Laplace histogram of magnitudes (L1 sensitivity "
            f"{sensitivity}, Theorem 3.6) at epsilon/4 and, on its range, "
            f"{self.duff.guarantee.source} at 3 epsilon/4"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        sensitivity = 2.0 if self.neighbouring is Neighbouring.REPLACE_ONE else 1.0
        scale = sensitivity / (RANGE_SHARE * self.epsilon)
        return RangeThenDuffRelease(sorted_x, lower, upper, self.alpha, scale, self.duff)
