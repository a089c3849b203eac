"""The parameters (t, σ, s) of Laplace-log-normal noise on a smooth sensitivity.

Bun & Steinke, "Average-Case Averages: Private Algorithms for Smooth Sensitivity and
Mean Estimation" (NeurIPS 2019), section 3.1.1: ``t/σ + e^{3σ²/2}·s = ε`` with σ the
positive root of ``5εσ³ − 5tσ² − t = 0``, and ``t`` minimising the noise's standard
deviation ``√2·e^{σ²}·SS_t/s`` (the derivation is in :mod:`mechanisms.median.laplace_ln`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.noise.laws import SIGMA_MAX
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity
from mechanisms.smooth.tuning import (
    Penalty,
    reference_smooth_sensitivity,
    tune,
)


@dataclass(frozen=True)
class LaplaceLogNormalParameters:
    """``t`` (= β, smoothness), ``sigma`` and ``s`` (= α), with ``t/σ + e^{3σ²/2}s = ε``."""

    t: float
    sigma: float
    s: float


def optimal_sigma(t: np.ndarray | float, epsilon: float) -> np.ndarray:
    """The positive root σ of ``5εσ³ - 5tσ² - t = 0`` (Bun & Steinke 2019, section 3.1.1).

    ``f(σ) = 5εσ³ - 5tσ² - t`` is convex and increasing on ``[t/ε, ∞)``, holds the
    only positive root, and ``f >= 0`` at ``t/ε + (t/(5ε))^{1/3}``: Newton from
    there decreases monotonically to the root.
    """
    t = np.asarray(t, dtype=np.float64)
    sigma = t / epsilon + np.cbrt(t / (5.0 * epsilon))
    five_e, five_t, fifteen_e, ten_t = 5.0 * epsilon, 5.0 * t, 15.0 * epsilon, 10.0 * t
    for _ in range(100):
        square = sigma**2
        f = five_e * sigma**3 - five_t * square - t
        step = f / (fifteen_e * square - ten_t * sigma)
        sigma = sigma - step
        if (np.abs(step) <= 1e-13 * sigma).all():  # f has rounding noise ~1e-16·|terms|
            break
    return sigma


def t_for_sigma(sigma: np.ndarray | float, epsilon: float) -> np.ndarray:
    """The ``t`` whose optimal σ is ``sigma``: ``t = 5εσ³/(5σ² + 1)``.

    ``inf`` where ``5εσ³`` overflows, which happens only far above ``t_max``
    (σ > 1e51 for the admissible ``ε <= 1.34e154``; callers clip to ``t_max``).
    """
    sigma = np.asarray(sigma, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        t = 5.0 * epsilon * sigma**3 / (5.0 * sigma**2 + 1.0)
    return np.where(np.isnan(t), np.inf, t)  # inf/inf for σ = inf


def _stationary_t(k: np.ndarray, epsilon: float) -> np.ndarray:
    """The ``t`` in the convex part where ``ψ'(t) = (5σ + 1/σ)/ε = k``, or 0 if ``ψ' > k``.

    ``5σ² - εkσ + 1 = 0`` has the root ``σ = (εk + √(ε²k² - 20))/10 >= 1/√5``
    when ``εk >= 2√5`` (the minimum of ``ψ'``).
    """
    ek = epsilon * np.asarray(k, dtype=np.float64)
    with np.errstate(over="ignore"):  # εk > 1e154: σ and t are inf, clipped by the caller
        disc = np.maximum(ek * ek - 20.0, 0.0)
    sigma = (ek + np.sqrt(disc)) / 10.0
    return np.where(ek >= 2.0 * math.sqrt(5.0), t_for_sigma(sigma, epsilon), 0.0)


@lru_cache(maxsize=256)  # one object per ε: the fallback search caches its grid per penalty
def _penalty(epsilon: float) -> Penalty:
    def value(t: np.ndarray) -> np.ndarray:
        sigma = optimal_sigma(t, epsilon)
        return 2.5 * sigma**2 + np.log1p(5.0 * sigma**2) - math.log(epsilon)

    return Penalty(
        value=value,
        inverse_slope=lambda k: _stationary_t(k, epsilon),
        inflection=epsilon / (2.0 * math.sqrt(5.0)),
    )


def search_interval(epsilon: float) -> tuple[float, float] | None:
    """``[1e-16·t_max, t_max]``, where t is searched; ``None`` in the tiny-ε limit (module
    docstring)."""
    hi = float(t_for_sigma(SIGMA_MAX, epsilon))
    if 1e-16 * hi < sys.float_info.min:
        return None
    return 1e-16 * hi, hi


def optimal_parameters(ss: QuantileSmoothSensitivity, epsilon: float) -> LaplaceLogNormalParameters:
    """``(t, σ, s)`` minimising the noise standard deviation at CDP parameter ε (section 3.1.1).

    ``t = σ = 0, s = ε`` when ε is so small that this limit is the minimum
    (module docstring, "Tiny ε").
    """
    return tuned_parameters(ss, epsilon)[0]


def tuned_parameters(
    ss: QuantileSmoothSensitivity, epsilon: float
) -> tuple[LaplaceLogNormalParameters, float | None]:
    """:func:`optimal_parameters` and ``log SS_t`` at the chosen t (``None`` for t = 0)."""
    interval = search_interval(epsilon)
    if interval is None:
        return LaplaceLogNormalParameters(t=0.0, sigma=0.0, s=epsilon), None
    best = tune(ss, _penalty(epsilon), *interval)
    t = best.beta
    sigma = min(float(optimal_sigma(t, epsilon)), SIGMA_MAX)  # any σ > t/ε is private
    s = math.exp(-1.5 * sigma**2) * (epsilon - t / sigma)
    return LaplaceLogNormalParameters(t=t, sigma=sigma, s=s), best.log_ss


@lru_cache(maxsize=1024)
def public_parameters(
    epsilon: float, n: int, neighbouring: Neighbouring
) -> LaplaceLogNormalParameters:
    """:func:`optimal_parameters` on the public reference data of size ``n`` (any quantile)."""
    return optimal_parameters(reference_smooth_sensitivity(n, neighbouring), epsilon)
