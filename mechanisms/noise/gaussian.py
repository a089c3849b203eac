"""Calibration of the Gaussian mechanism: the analytic and the classical σ for (ε, δ)-DP."""

from __future__ import annotations

import math
import sys
from functools import lru_cache

from scipy import optimize, special

from mechanisms.noise.additive import LOG_FLOAT_MAX, Scale, log_ratio


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
