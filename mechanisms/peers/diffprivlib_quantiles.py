"""IBM diffprivlib's m quantiles at once: ``diffprivlib.tools.quantile`` with an array of levels.

What the library computes (diffprivlib 0.6, ``tools/quantiles.py``): given an array
``quant`` of m quantiles, ``quantile`` calls itself once per level with ``epsilon /
len(quant)`` on the same data and random state and returns the m answers in the order of
``quant``; its documentation: "Differential privacy is achieved over the entire output, with
epsilon split evenly between each output value".  Each level is the exponential mechanism of
:mod:`mechanisms.peers.diffprivlib_quantile` (utility ``-|i - α k|``, sensitivity 1: Smith,
"Privacy-preserving Statistical Estimation with Optimal Convergence Rates", STOC 2011).

ε split and neighbours.  ``"replace_one"`` (default: the library's calibration, Δu = 1 when
one point is replaced; Harvard Privacy Tools Project, "The Exponential Mechanism for
Medians", Theorem 2): the call gets ``ε_lib = ε``, each level ``ε/m``, and basic composition
(Dwork & Roth, Theorem 3.16) gives ε-DP.  ``"add_remove"``: a level at ``ε_lib/m`` is
``max(α_j, 1 - α_j)·ε_lib/m``-DP (that note's Theorem 3), so the call gets
``ε_lib = ε·m / Σ_j max(α_j, 1 - α_j)`` and the m levels' losses add up to ε.  The library
names no neighbouring relation; the second calibration is ours, from its sensitivity.

Output law: the levels draw independently (one ``RandomState`` seeded from the ``rng`` given
to ``sample``, so rows are reproducible), each with the exact piecewise-uniform law of
:class:`mechanisms.peers.diffprivlib_quantile.DiffprivlibRelease` at ``ε_lib/m``; coordinate
j of the sorted row has their order-statistic cdf.  Where the library cannot draw a level
("Can't find a candidate", ties at huge ε: diffprivlib issue #107) the whole call fails; that
row is then drawn level by level from the per-level releases (which draw each such level
from its exact law) and counted in ``library_failures``.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.core.quantiles import sensitivity
from mechanisms.core.registration import register
from mechanisms.multi.base import Levels
from mechanisms.multi.release import QuantilesRelease
from mechanisms.peers import require
from mechanisms.peers.diffprivlib_quantile import MIN_WIDTH, DiffprivlibRelease
from mechanisms.peers.quantiles import PeerQuantiles, PeerQuantilesRelease


@register
class DiffprivlibQuantiles(PeerQuantiles):
    """diffprivlib's ``tools.quantile`` on an array of levels; ε-DP (module docstring).

    Options: ``alphas`` or ``m`` and ``neighbours`` (``"replace_one"``, the library's
    calibration and the default, or ``"add_remove"``).
    """

    name = "diffprivlib_quantiles"
    display_name = "diffprivlib per level"
    library = "diffprivlib"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alphas: Levels = None,
        m: int | None = None,
        neighbours: str = "replace_one",
    ) -> None:
        super().__init__(
            epsilon=epsilon, delta=delta, bounding=bounding, alphas=alphas, m=m,
            neighbours=neighbours,
        )  # fmt: skip
        require(self.library, self.name)
        cost = math.fsum(sensitivity(alpha, self.neighbouring) for alpha in self.alphas)
        self.library_epsilon = self.epsilon * self.m / cost
        if not math.isfinite(self.library_epsilon):
            raise ValueError(
                f"epsilon: diffprivlib's epsilon = epsilon m / {cost:g} overflows float64, "
                f"got epsilon={epsilon!r}"
            )

    def source(self) -> str:
        return (
            f"diffprivlib.tools.quantile(quant=[{self.m} levels], epsilon="
            f"{self.library_epsilon:.6g}): epsilon split evenly, the exponential mechanism "
            "per level with utility -|i - alpha k|, sensitivity 1 (Harvard Privacy Tools "
            'Project, "The Exponential Mechanism for Medians", Theorems 2-3); basic '
            "composition of the levels"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        if upper - lower < MIN_WIDTH:
            raise ValueError(f"bounds: diffprivlib needs b - a >= {MIN_WIDTH:g}")
        per_level = self.library_epsilon / self.m  # the library's own split
        levels = [
            DiffprivlibRelease(sorted_x, lower, upper, alpha, per_level) for alpha in self.alphas
        ]
        diffprivlib = require("diffprivlib", self.name)
        quant = list(self.alphas)

        def rows(size: int, rng: np.random.Generator) -> np.ndarray:
            state = np.random.RandomState(int(rng.integers(2**32)))
            out = np.empty((size, len(quant)))
            for r in range(size):
                try:
                    with np.errstate(all="ignore"):  # exp(-huge) = 0 at huge ε; 0/0 (#107)
                        out[r] = diffprivlib.tools.quantile(
                            sorted_x, quant, epsilon=self.library_epsilon,
                            bounds=(lower, upper), random_state=state,
                            accountant=diffprivlib.BudgetAccountant(),
                        )  # fmt: skip
                except RuntimeError:  # "Can't find a candidate" (module docstring)
                    release.library_failures += 1
                    out[r] = [level.sample(1, rng)[0] for level in levels]
            return out

        release = PeerQuantilesRelease(sorted_x, lower, upper, self.alphas, rows, levels)
        return release
