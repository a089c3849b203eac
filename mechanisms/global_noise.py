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

import math
import sys
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import optimize, special

from mechanisms.base import Guarantee, Release, lower_median
from mechanisms.noise import (
    LOG_FLOAT_MAX,
    NoiseMechanism,
    Scale,
    StandardGaussian,
    StandardLaplace,
    log_ratio,
)
from mechanisms.registry import register
from mechanisms.validation import check_choice

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
            scale=Scale.ratio(upper - lower, self.epsilon),
            noise=StandardLaplace(),
            parameters={},
        )


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """The exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    ``Φ(a - b) - e^ε Φ(-a - b)`` with ``a = Δ/(2σ)``, ``b = εσ/Δ``; ``σ = 0``
    gives the limit 1 (and ``σ = inf`` gives 0).  Its float64 error is
    bounded by :func:`_delta_error`.
    """
    if sigma == 0:
        return 1.0
    a, b = _shifts(sigma, epsilon, sensitivity)
    log_second = min(epsilon + special.log_ndtr(-a - b), LOG_FLOAT_MAX)  # <= 0 unless garbled
    return float(special.ndtr(a - b) - math.exp(log_second))


def _shifts(sigma: float, epsilon: float, sensitivity: float) -> tuple[float, float]:
    """``a = Δ/(2σ)`` and ``b = εσ/Δ`` (as ``ε·(σ/Δ)`` where ``εσ`` overflows)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    if b == math.inf and sigma < math.inf:
        b = epsilon * (sigma / sensitivity)
    return a, b


def _delta_error(sigma: float, epsilon: float, sensitivity: float) -> float:
    """A first-order bound on the float64 error of :func:`gaussian_delta` at ``σ``.

    ``inf`` where the first order does not hold.  The computed ``a``, ``b`` are
    exact for a σ and an ε off by relative ``2**-52``; since ``e^ε φ(a + b) =
    φ(a - b)`` (``2ab = ε``), ``dδ/d log σ = -2a φ(a - b)`` and
    ``dδ/dε = -e^ε Φ(-a - b)``.  The two terms are rounded to a few ulps, and
    the second, ``exp(ε + log Φ(-a - b))``, also by the rounding of its
    exponent (``2**-52·(|ε + log Φ| - log Φ)`` relative).  Perturbing σ and ε
    by ``2**-52`` moves ``±a - b`` by up to ``2**-52·(a + b)`` and the exponent
    by ``2**-52·(a + b)²``; when these reach ``2**-10`` (ε above about
    ``2**40``: ``a ≈ b ≈ √(ε/2)`` cancel) the bound is ``inf``.  So δ is accurate
    for moderate ε and δ, and not when ``ε ≪ δ ≪ 1e-16`` (both terms near 1/2)
    or when δ is subnormal.
    """
    a, b = _shifts(sigma, epsilon, sensitivity)
    log_phi = float(special.log_ndtr(-a - b))
    log_second = epsilon + log_phi
    if not 2.0**-52 * ((a + b) * (a + b) + epsilon - log_phi) <= 2.0**-10:
        return math.inf
    second = math.exp(min(log_second, LOG_FLOAT_MAX))
    density = math.exp(-0.5 * (a - b) * (a - b)) / math.sqrt(2.0 * math.pi)
    rounding = float(special.ndtr(a - b)) + second * (1.0 + abs(log_second) - log_phi + epsilon)
    return 2.0**-52 * rounding + 2.0**-50 * a * density + 2.0**-1064


_MAX_UNIT_STEPS = 1600
"""Unit steps of ``log σ`` from any start in ``[-750, 750]`` reach ``exp(log σ) = 0``
(below ``-745.2``, δ = 1) or ``inf`` (above ``709.8``, δ = 0), which end the walks."""
_MAX_NUDGES = 1000
_LOG_FLOAT_TINY = math.log(sys.float_info.min)


@lru_cache(maxsize=256)
def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest σ with ``gaussian_delta(σ) <= δ`` (δ(σ) decreases in σ).

    Root finding on ``log σ`` from the classical σ: unit steps bracket the root
    (at most :data:`_MAX_UNIT_STEPS` each), Brent's method narrows it, and
    steps of ``1e-12`` relative land on the private side.  Returns ``0.0`` or
    ``inf`` if σ is below or above float64's normal range (see
    :meth:`GaussianGlobal.sigma`); ``ValueError`` naming epsilon and delta if
    float64 cannot evaluate δ(σ) there to a relative ``2**-20`` (:func:`_delta_error`).
    """

    def excess(log_sigma: float) -> float:
        sigma = math.exp(log_sigma) if log_sigma <= LOG_FLOAT_MAX else math.inf
        return gaussian_delta(sigma, epsilon, sensitivity) - delta

    lo = hi = _log_classical_sigma(epsilon, delta, sensitivity)
    for _ in range(_MAX_UNIT_STEPS):
        if excess(lo) > 0:
            break
        lo -= 1.0
    for _ in range(_MAX_UNIT_STEPS):
        if excess(hi) <= 0:
            break
        hi += 1.0
    if hi > LOG_FLOAT_MAX and excess(LOG_FLOAT_MAX) > 0:
        return math.inf  # δ(σ) > δ at the largest float64
    # bisection alone needs log2(3200/1e-14) < 60 steps; Brent at most a few times that
    root = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=1000)
    if not _LOG_FLOAT_TINY < root < LOG_FLOAT_MAX:
        return 0.0 if root < 0 else math.inf
    sigma = math.exp(root)
    if _delta_error(sigma, epsilon, sensitivity) <= 2.0**-20 * delta:
        for _ in range(_MAX_NUDGES):  # land on the private side
            if gaussian_delta(sigma, epsilon, sensitivity) <= delta:
                return sigma
            sigma *= 1.0 + 1e-12
    raise ValueError(
        f"epsilon, delta: float64 cannot evaluate the Gaussian mechanism's delta(sigma) "
        f"accurately near delta={delta!r} at epsilon={epsilon!r} (Balle & Wang's formula "
        "loses it to rounding when epsilon << delta << 1e-16, epsilon is huge or delta is "
        "subnormal)"
    )


def _log_classical_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """``log`` of :func:`classical_gaussian_sigma`, also where that over- or underflows."""
    sigma = classical_gaussian_sigma(epsilon, delta, sensitivity)
    if 0 < sigma < math.inf:
        return math.log(sigma)
    return math.log(sensitivity) + 0.5 * math.log(2.0 * log_ratio(1.25, delta)) - math.log(epsilon)


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """``Δ·√(2 ln(1.25/δ))/ε`` (Dwork & Roth 2014, Theorem A.1; (ε, δ)-DP for ε < 1).

    ``inf`` if it overflows float64.
    """
    return sensitivity * math.sqrt(2.0 * log_ratio(1.25, delta)) / epsilon


def classical_gaussian_scale(epsilon: float, delta: float, sensitivity: float) -> Scale:
    """:func:`classical_gaussian_sigma`, in log space where it leaves float64's normal range."""
    sigma = classical_gaussian_sigma(epsilon, delta, sensitivity)
    if sys.float_info.min <= sigma < math.inf:
        return Scale(sigma)
    return Scale.exp(_log_classical_sigma(epsilon, delta, sensitivity))


def analytic_gaussian_scale(epsilon: float, delta: float, sensitivity: float) -> Scale:
    """:func:`analytic_gaussian_sigma`, also where σ leaves float64's normal range.

    σ is linear in ``Δ = sensitivity``: δ(σ) depends on ``σ/Δ`` only, and a
    power-of-two rescaling of Δ and σ leaves ``a = Δ/(2σ)`` and ``b = εσ/Δ``
    bit for bit.  So where σ or the classical σ (the search's start) is outside
    the normal range, σ is computed as ``2^k·σ(Δ·2^-k)`` with ``Δ·2^-k`` in
    ``[1/2, 1)`` (0.0 if it underflows).
    """
    if sys.float_info.min <= classical_gaussian_sigma(epsilon, delta, sensitivity) < math.inf:
        sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
        if sys.float_info.min <= sigma < math.inf:
            return Scale(sigma)
    exponent = math.frexp(sensitivity)[1]
    unit = analytic_gaussian_sigma(epsilon, delta, math.ldexp(sensitivity, -exponent))
    if not unit < math.inf:
        raise ValueError(
            f"epsilon, delta: the analytic Gaussian sigma/(b - a) exceeds float64 at "
            f"epsilon={epsilon!r}, delta={delta!r}"
        )
    return Scale.ldexp(unit, exponent)


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

    @property
    def guarantee(self) -> Guarantee:
        source = (
            "Gaussian mechanism, analytic calibration (Balle & Wang 2018, Thm 8), GS = b - a"
            if self.calibration == "analytic"
            else "Gaussian mechanism, classical calibration (Dwork & Roth Thm A.1), GS = b - a"
        )
        return Guarantee(
            epsilon=self.epsilon,
            delta=self.required_delta,
            neighbouring=self.neighbouring,
            source=source,
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
            parameters={"sigma": float(sigma)},
        )
