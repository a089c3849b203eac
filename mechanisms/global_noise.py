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
  - ``"classical"``: ``σ = Δ·√(2 ln(1.25/δ))/ε`` (seed 002, the CS208 slides;
    Dwork & Roth 2014, Theorem A.1), whose proof needs **ε < 1**: larger ε is
    rejected.  It is never smaller than the analytic σ.

We default to the analytic calibration because it is exact (the same privacy
for less noise) and defined for all ε, including the Duff paper's ε = 2.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import optimize, special

from mechanisms.base import Guarantee, Release, check_choice, lower_median
from mechanisms.noise import NoiseMechanism, StandardGaussian, StandardLaplace
from mechanisms.registry import register

CALIBRATIONS = ("analytic", "classical")


@register
class LaplaceGlobal(NoiseMechanism):
    """``T(S) + (b - a)/ε · Lap(1)``: ε-DP (Duff paper, Proposition 1)."""

    name = "laplace_global"

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            neighbouring=self.neighbouring,
            source="Laplace mechanism (Duff paper Prop. 1) with GS = b - a",
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=lower_median(sorted_x, lower),
            scale=(upper - lower) / self.epsilon,
            noise=StandardLaplace(),
            parameters={},
        )


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """The exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return float(special.ndtr(a - b) - math.exp(epsilon + special.log_ndtr(-a - b)))


@lru_cache(maxsize=256)
def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest σ with ``gaussian_delta(σ) <= δ`` (δ(σ) decreases in σ)."""

    def excess(log_sigma: float) -> float:
        return gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    lo = hi = math.log(classical_gaussian_sigma(epsilon, delta, sensitivity))
    while excess(lo) <= 0:
        lo -= 1.0
    while excess(hi) > 0:
        hi += 1.0
    sigma = math.exp(optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-15))
    while gaussian_delta(sigma, epsilon, sensitivity) > delta:  # land on the private side
        sigma *= 1.0 + 1e-12
    return sigma


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """``Δ·√(2 ln(1.25/δ))/ε`` (seed 002; (ε, δ)-DP for ε < 1)."""
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


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
        **options: object,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, **options)  # type: ignore[arg-type]
        self.calibration = check_choice(calibration, CALIBRATIONS, "calibration")
        if self.calibration == "classical" and not self.epsilon < 1:
            raise ValueError(
                f"epsilon: the classical Gaussian calibration needs epsilon < 1, got {epsilon!r}"
                " (use calibration='analytic')"
            )

    def sigma(self, sensitivity: float) -> float:
        """The noise standard deviation for global sensitivity ``sensitivity``."""
        if self.calibration == "classical":
            return classical_gaussian_sigma(self.epsilon, self.delta, sensitivity)
        return analytic_gaussian_sigma(self.epsilon, self.delta, sensitivity)

    @property
    def guarantee(self) -> Guarantee:
        source = (
            "Gaussian mechanism, analytic calibration (Balle & Wang 2018, Thm 8), GS = b - a"
            if self.calibration == "analytic"
            else "Gaussian mechanism, classical calibration (Dwork & Roth Thm A.1), GS = b - a"
        )
        return Guarantee(
            epsilon=self.epsilon, delta=self.delta, neighbouring=self.neighbouring, source=source
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        sigma = self.sigma(upper - lower)
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=lower_median(sorted_x, lower),
            scale=sigma,
            noise=StandardGaussian(),
            parameters={"sigma": sigma},
        )
