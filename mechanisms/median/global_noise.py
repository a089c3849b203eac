r"""Noise scaled to the global sensitivity of the median, ``GS = b - a``.

For data in ``[a, b]`` the lower median moves by at most ``b - a`` when one
point is added, removed or replaced (Duff paper, section 2), and can move by
that much, so ``GS = b - a`` under both neighbouring relations.

* ``laplace_global``: ``T(S) + (b - a)/ε · Lap(1)``, ε-DP (Duff paper,
  Proposition 1; Dwork, McSherry, Nissim & Smith 2006).
* ``gaussian_global``: ``T(S) + σ·N(0, 1)``, (ε, δ)-DP.  Option
  ``calibration``:

  - ``"analytic"`` (default): the smallest σ with
    ``Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ) <= δ`` (``Δ = b - a``), which is
    necessary and sufficient for (ε, δ)-DP (Balle & Wang 2018, "Improving the
    Gaussian Mechanism for Differential Privacy", Theorem 8), found by root
    finding on ``log σ``; valid for every ε > 0.
  - ``"classical"``: ``σ = Δ·√(2 ln(1.25/δ))/ε`` (Dwork & Roth 2014, "The
    Algorithmic Foundations of Differential Privacy", Theorem A.1), whose proof
    needs **ε < 1**: larger ε is rejected.  It is never smaller than the
    analytic σ.

Extreme parameters.  σ beyond float64's range is computed at ``Δ·2^-k`` and
kept as ``σ'·2^k`` (:func:`analytic_gaussian_scale`).  The analytic σ is
refused (``ValueError`` naming epsilon and delta) where float64 cannot
evaluate Theorem 8's δ(σ) to a relative ``2**-20`` (:func:`_delta_error`):
subnormal δ, ``ε ≪ δ ≪ 1e-16`` and ε above about ``2**40``.

We default to the analytic calibration because it is exact (the same privacy
for less noise) and defined for all ε, including the Duff paper's ε = 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mechanisms.core.data import lower_median
from mechanisms.core.interface import Release
from mechanisms.core.registration import register
from mechanisms.core.validation import check_choice
from mechanisms.noise.additive import NoiseMechanism, Scale
from mechanisms.noise.gaussian import (
    analytic_gaussian_scale,
    classical_gaussian_scale,
)
from mechanisms.noise.laws import StandardGaussian, StandardLaplace

CALIBRATIONS = ("analytic", "classical")


@register
class LaplaceGlobal(NoiseMechanism):
    """``T(S) + (b - a)/ε · Lap(1)``: ε-DP (Duff paper, Proposition 1)."""

    name = "laplace_global"

    guarantee_source = "Laplace mechanism (Duff paper Prop. 1) with GS = b - a"

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=lower_median(sorted_x, lower),
            scale=Scale.ratio(upper - lower, self.epsilon),
            noise=StandardLaplace(),
            parameters={},
        )


@register
class GaussianGlobal(NoiseMechanism):
    """``T(S) + σ·N(0, 1)`` with σ calibrated to ``GS = b - a``: (ε, δ)-DP.

    Option ``calibration``: ``"analytic"`` (default) or ``"classical"`` (ε < 1
    only); see the module docstring.
    """

    name = "gaussian_global"
    requires_delta = True

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        calibration: str = "analytic",
        **options: Any,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, **options)
        self.calibration = check_choice(calibration, CALIBRATIONS, "calibration")
        if self.calibration == "classical" and not self.epsilon < 1:
            raise ValueError(
                f"epsilon: the classical Gaussian calibration needs epsilon < 1, got {epsilon!r}"
                " (use calibration='analytic')"
            )

    def sigma(self, sensitivity: float) -> Scale:
        """The noise standard deviation for global sensitivity ``sensitivity``."""
        delta = self.required_delta
        if self.calibration == "classical":
            return classical_gaussian_scale(self.epsilon, delta, sensitivity)
        return analytic_gaussian_scale(self.epsilon, delta, sensitivity)

    def source(self) -> str:
        if self.calibration == "analytic":
            return "Gaussian mechanism, analytic calibration (Balle & Wang 2018, Thm 8), GS = b - a"
        return "Gaussian mechanism, classical calibration (Dwork & Roth Thm A.1), GS = b - a"

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        sigma = self.sigma(upper - lower)
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=lower_median(sorted_x, lower),
            scale=sigma,
            noise=StandardGaussian(),
            parameters={"sigma": float(sigma)},
        )
