r"""SMOOTHSENS_ε: Cauchy noise scaled to the β-smooth sensitivity, pure ε-DP.

Duff paper, Proposition 3 (combining Lemmas 2.6 and 2.7 of Nissim,
Raskhodnikova & Smith 2007): for ``γ > 1`` and the density
``h(z) ∝ 1/(1 + |z|^γ)``, with ``α = β = ε/(2(γ + 1))``,

    M(S) = T(S) + SS_β(S)/α · Z,  Z ~ h,

is (ε, 0)-DP.  Section 6 uses ``γ = 2``, the standard Cauchy distribution
(density ``1/(π(1 + z²))``), so ``α = β = ε/6`` and the scale is
``6·SS_{ε/6}(S)/ε``.  No tuning: the parameters depend on ε only.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from mechanisms.base import Guarantee, Release, lower_median
from mechanisms.noise import NoiseMechanism, Scale, StandardCauchy
from mechanisms.registry import register
from mechanisms.smooth_sensitivity import MedianSmoothSensitivity

GAMMA = 2.0


@register
class SmoothCauchy(NoiseMechanism):
    """``T(S) + 6·SS_{ε/6}(S)/ε · Cauchy``, ε-DP (Duff paper Prop. 3 with γ = 2).

    Options: ``neighbours`` (``"add_remove"``, ``"replace_one"``) and
    ``clip_output`` (default True); see :class:`mechanisms.noise.NoiseMechanism`.
    """

    name = "smooth_cauchy"

    @property
    def alpha(self) -> float:
        """``α = β = ε/(2(γ + 1)) = ε/6``."""
        return self.epsilon / (2.0 * (GAMMA + 1.0))

    def _log_alpha(self) -> float:
        """``log(ε/6)``, also where ``ε/6`` is subnormal or 0 (ε below ``1.3e-307``).

        ``SS_β`` is then ``SS_0 = b - a`` to the last bit (``βk < 2^-960`` for any
        ``k < 2^63``), so ``β = ε/6`` rounded (possibly to 0) gives the right value.
        """
        if self.alpha >= sys.float_info.min:
            return float(np.log(self.alpha))
        return math.log(self.epsilon) - math.log(2.0 * (GAMMA + 1.0))

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            neighbouring=self.neighbouring,
            source="Duff paper Prop. 3 (NRS07 Lemmas 2.6, 2.7), gamma = 2: Cauchy noise",
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        beta = alpha = self.alpha
        ss = MedianSmoothSensitivity(sorted_x, lower, upper, self.neighbouring)
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=lower_median(sorted_x, lower),
            scale=Scale.exp(float(ss.log(beta) - self._log_alpha())),
            noise=StandardCauchy(),
            parameters={"beta": beta, "alpha": alpha},
        )
