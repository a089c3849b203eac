r"""SMOOTHSENS_ε: Cauchy noise scaled to the β-smooth sensitivity, pure ε-DP.

Duff paper, Proposition 3 (combining Lemmas 2.6 and 2.7 of Nissim,
Raskhodnikova & Smith 2007): for ``γ > 1`` and the density
``h(z) ∝ 1/(1 + |z|^γ)``, with ``α = β = ε/(2(γ + 1))``,

    M(S) = T(S) + SS_β(S)/α · Z,  Z ~ h,

is (ε, 0)-DP.  Section 6 uses ``γ = 2``, the standard Cauchy distribution
(density ``1/(π(1 + z²))``), so ``α = β = ε/6`` and the scale is
``6·SS_{ε/6}(S)/ε``.  No tuning: the parameters depend on ε only.

The proposition holds for any statistic ``T`` with its smooth sensitivity; the
option ``alpha`` (the quantile, not the α above, which is reported as the
release parameter ``"alpha"``) picks ``T(S) = x_(ceil(αn))`` and the smooth
sensitivity of that order statistic (:mod:`mechanisms.smooth.sensitivity`).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from mechanisms.core.bounds import Bound
from mechanisms.core.interface import Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.core.sorted_data import SortedData
from mechanisms.median.error_bounds import smooth_cauchy_bound
from mechanisms.noise.additive import Scale
from mechanisms.noise.laws import StandardCauchy
from mechanisms.smooth.selection import SmoothSensitivityMechanism
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity

GAMMA = 2.0


@register
class SmoothCauchy(SmoothSensitivityMechanism):
    """``T(S) + 6·SS_{ε/6}(S)/ε · Cauchy``, ε-DP (Duff paper Prop. 3 with γ = 2).

    Options: ``alpha`` (the quantile, default 0.5), ``neighbours``
    (``"add_remove"``, ``"replace_one"``) and ``clip_output`` (default True);
    see :class:`mechanisms.noise.additive.QuantileNoiseMechanism`.  Released by selection
    (:mod:`mechanisms.smooth.selection`).
    """

    name = "smooth_cauchy"
    display_name = "SmoothSens_ε (Cauchy)"
    figure = FigureStyle("#ff7f0e", "s", 2, smooth=True)

    @property
    def shift_alpha(self) -> float:
        """The α of Prop. 3 (not the quantile): ``α = β = ε/(2(γ + 1)) = ε/6``."""
        return self.epsilon / (2.0 * (GAMMA + 1.0))

    def _log_shift_alpha(self) -> float:
        """``log(ε/6)``, also where ``ε/6`` is subnormal or 0 (ε below ``1.3e-307``).

        ``SS_β`` is then ``SS_0 = b - a`` to the last bit (``βk < 2^-960`` for any
        ``k < 2^63``), so ``β = ε/6`` rounded (possibly to 0) gives the right value.
        """
        if self.shift_alpha >= sys.float_info.min:
            return float(np.log(self.shift_alpha))
        return math.log(self.epsilon) - math.log(2.0 * (GAMMA + 1.0))

    guarantee_source = "Duff paper Prop. 3 (NRS07 Lemmas 2.6, 2.7), gamma = 2: Cauchy noise"

    def smallest_beta(self, n: int) -> float:
        return self.shift_alpha

    def _release_ordered(self, sorted_x: SortedData, lower: float, upper: float) -> Release:
        beta = alpha = self.shift_alpha
        ss = QuantileSmoothSensitivity(sorted_x, lower, upper, self.neighbouring, alpha=self.alpha)
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=self.quantile(sorted_x, lower),
            scale=Scale.exp(float(ss.log(beta) - self._log_shift_alpha())),
            noise=StandardCauchy(),
            parameters={"beta": beta, "alpha": alpha},
        )

    def error_bounds(
        self, sorted_x: np.ndarray, lower: float, upper: float, eta: float
    ) -> list[Bound]:
        """The Duff paper's Proposition 7 (the Cauchy tail of the scale) for any α and
        either neighbouring (:func:`mechanisms.median.error_bounds.smooth_cauchy_bound`)."""
        bound = smooth_cauchy_bound(
            sorted_x,
            lower,
            upper,
            epsilon=self.epsilon,
            eta=eta,
            neighbouring=self.neighbouring,
            alpha=self.alpha,
        )
        return [bound]
