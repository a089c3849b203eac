r"""SMOOTHSENS_{ε,δ}: Laplace noise scaled to the β-smooth sensitivity, (ε, δ)-DP.

Duff paper, Proposition 2 (citing Bun & Steinke 2019, Theorem 34): for
``α, β > 0`` with

    ε >= α + (e^β - 1)·log(1/δ) - β,                                    (P2)

``M(S) = T(S) + SS_β(S)/α · Z``, ``Z ~ Lap(1)``, is (ε, δ)-DP, for any statistic
``T`` with its smooth sensitivity: here the α-quantile ``x_(ceil(αn))`` (option
``alpha``; a different α from the one in (P2)), :mod:`mechanisms.smooth.sensitivity`.

Check of (P2) (derived here; the text of [7, Thm 34] was not available).  Let
``x ~ x'`` with scales ``c = SS_β(x)/α`` and ``c' = e^{-τ}c`` (``|τ| <= β``, the
smoothness of ``SS_β``).  The statistics differ by at most
``min(LS(x), LS(x')) <= α·min(c, c')``.  In units of ``c``:

* ``τ >= 0`` (``x'`` less noisy): the privacy loss at ``z`` is at most
  ``α - τ + (e^τ - 1)|z|``, which exceeds ε only if ``|Z| > L = log(1/δ)``
  when ``ε >= α + (e^τ - 1)L - τ``, an event of probability ``δ``; the right
  side is convex in τ and 0 at τ = 0, so τ = β is the worst case, which is (P2)
  (for ``L >= 1``);
* ``τ < 0`` (``x'`` noisier): the loss is at most ``|τ| + α e^{-|τ|} <= α + β``
  everywhere, so ``ε >= α + β`` is needed.

(P2) implies ``ε >= α + β`` when ``(e^β - 1)L >= 2β``, i.e. for every β when
``L >= 2``.  So this module **requires ``δ <= e^{-2} ≈ 0.135``**, where (P2)
alone is sufficient; for larger δ it does not cover the second case.

Parameters (Duff paper, section 6: "α and β are chosen to minimise SS_β/α").
For fixed β the largest α is (P2) at equality,
``α(β) = ε + β - (e^β - 1)L``, positive on ``(0, β_max)``.  The objective
``log SS_β - log α(β)`` is convex (``log SS_β`` is a maximum of lines in β and
``α`` is concave), minimised by :func:`mechanisms.smooth.tuning.tune` (exactly, from the
lines ``log A(k) - βk``; or within a factor ``e^{1e-9}`` of the optimal scale by its
fallback) over ``β ∈ [1e-12·β_hi, β_hi]``,
``β_hi = β_max(1 - 1e-9)``; below ``1e-12·β_hi`` the objective can fall by at
most ``-log(α(1e-12·β_hi)/ε) <= (log(1/δ) - 1)·1e-12 < 1e-9``.
``tuning="oracle"`` minimises on the private data (the paper's choice; not
private itself), ``tuning="public"`` on the public reference data of the same
size (see :mod:`mechanisms.smooth.tuning`).

Tiny ε.  When ``1e-12·β_hi`` is below float64's normal range (ε below about
``1e-293``), the minimum is the limit ``β → 0``, ``α = ε``: ``log SS_β`` falls
with slope at most ``n`` (it is a maximum of lines ``log A(k) - βk``,
``k <= n``) while ``ψ' >= ψ'(0) = (L - 1)/ε > 1e295`` (``α(β_max) = 0`` gives
``ε = L·(e^{β_max} - 1) - β_max ≈ (L - 1)β_max``, ``β_max < 1e-295``).  At ``β = 0``
(P2) reads ``ε >= α``, and ``SS_0 = b - a`` is the global sensitivity: the
release is the Laplace mechanism with scale ``(b - a)/ε``, whatever the data.
Huge ε: ``β_max`` is bracketed without overflowing ``e^β``
(:func:`beta_limit`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import optimize

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.core.sorted_data import SortedData
from mechanisms.noise.additive import LOG_FLOAT_MAX, Scale
from mechanisms.noise.laws import StandardLaplace
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity
from mechanisms.smooth.tuning import (
    Penalty,
    TunedNoiseMechanism,
    first_evaluated,
    reference_smooth_sensitivity,
    tune,
)

MIN_LOG_INV_DELTA = 2.0


@dataclass(frozen=True)
class SmoothLaplaceParameters:
    """``β`` (smoothness) and ``α`` (privacy of the shift), from (P2) at equality."""

    beta: float
    alpha: float


def alpha_at(beta: np.ndarray | float, epsilon: float, log_inv_delta: float) -> np.ndarray:
    """``α(β) = ε + β - (e^β - 1)·log(1/δ)``: (P2) at equality."""
    return epsilon + beta - np.expm1(beta) * log_inv_delta


@lru_cache(maxsize=256)  # about 30 us each; a search asks for it a dozen times
def beta_limit(epsilon: float, log_inv_delta: float) -> float:
    """``β_max``, the root of ``α(β) = 0`` (in ``(0, ε]`` since ``log(1/δ) >= 2``).

    ``α(0) = ε > 0`` and ``α(ε) < 0`` since ``(e^ε - 1)L >= 2(e^ε - 1) > 2ε``.
    When ``e^ε`` overflows (ε >= 709.78) the root is that of the decreasing
    ``log(ε + β + L) - log L - β`` (``α = 0`` written as ``e^β L = ε + β + L``),
    negative at ``1 + log(1 + ε/L) < ε``.  Brent's method needs at most about
    ``log2(hi/(1e-15·β_max)) < 70`` bisections (``β_max >= ε/(2L)``).
    """
    if epsilon < LOG_FLOAT_MAX:
        return optimize.brentq(
            lambda b: float(alpha_at(b, epsilon, log_inv_delta)),
            0.0,
            epsilon,
            xtol=1e-300,
            rtol=1e-15,
            maxiter=1000,
        )
    log_l = math.log(log_inv_delta)
    return optimize.brentq(
        lambda b: math.log(epsilon + b + log_inv_delta) - log_l - b,
        0.0,
        1.0 + math.log1p(epsilon / log_inv_delta),
        xtol=1e-300,
        rtol=1e-15,
        maxiter=1000,
    )


ORDINARY_EPSILON = (1e-8, 1e8)
"""ε range of the original root finder of :func:`_stationary_beta`, kept bit for bit."""


def _stationary_beta(k: np.ndarray, epsilon: float, log_inv_delta: float) -> np.ndarray:
    """The β where ``ψ'(β) = (L e^β - 1)/α(β) = k`` (``L = log(1/δ)``), or 0 if ``k <= ψ'(0)``.

    The root of ``h(β) = L(1 + k)e^β - 1 - k(ε + L + β)``, which is convex,
    increasing and positive at ``β_max``: Newton from above decreases
    monotonically to it, on one of two equivalent forms.
    For ε in :data:`ORDINARY_EPSILON`, on ``g = log(L(1 + k)e^β) - log(1 +
    k(ε + L + β))`` (nearly linear, so a few steps), whose rounding noise of
    ``1e-15`` absolute is small against ``β ~ ε/L`` there.  Otherwise on
    ``h/(1 + k)`` (:func:`_newton_ratio_form`), accurate to a relative ``1e-15``
    for tiny β and free of overflow for huge ε.
    """
    k = np.asarray(k, dtype=np.float64)
    has_root = k > (log_inv_delta - 1.0) / epsilon
    beta = np.zeros(k.shape)
    if has_root.any():
        ordinary = ORDINARY_EPSILON[0] <= epsilon <= ORDINARY_EPSILON[1]
        solve = _newton_log_form if ordinary else _newton_ratio_form
        start = beta_limit(epsilon, log_inv_delta)
        beta[has_root] = solve(k[has_root], epsilon, log_inv_delta, start)
    return beta


def _newton_log_form(
    k: np.ndarray, epsilon: float, log_inv_delta: float, start: float
) -> np.ndarray:
    """Newton on ``g(β) = log(L(1 + k)) + β - log(1 + kε + kL + kβ)`` from ``β_max``."""
    offset = 1.0 + k * (epsilon + log_inv_delta)
    log_scale = np.log(log_inv_delta * (1.0 + k))
    beta = np.full(k.shape, start)
    for _ in range(100):
        inner = offset + k * beta
        step = (log_scale + beta - np.log(inner)) / (1.0 - k / inner)
        beta = beta - step
        if (np.abs(step) <= 1e-13 * start).all():  # g has rounding noise ~1e-15
            break
    return beta


def _newton_ratio_form(
    k: np.ndarray, epsilon: float, log_inv_delta: float, start: float
) -> np.ndarray:
    """Newton on ``h/(1 + k) = L·expm1(β) - w(β + ε) + (L - 1)/(1 + k)``, ``w = k/(1 + k)``.

    At the root ``L·expm1(β) <= w(β + ε) <= w(β_max + ε)``, so the start
    ``min(β_max, log(1 + w(β_max + ε)/L))`` lies above it.  Far from the root
    the form grows like ``e^β`` and Newton steps are about 1: at most about
    710 of them (the range of β) before the quadratic phase, within the cap.
    """
    weight = k / (1.0 + k)
    constant = (log_inv_delta - 1.0) / (1.0 + k) - weight * epsilon
    beta = np.minimum(start, np.log1p(weight * (start + epsilon) / log_inv_delta))
    for _ in range(1000):
        value = log_inv_delta * np.expm1(beta) - weight * beta + constant
        step = value / (log_inv_delta * np.exp(beta) - weight)
        beta = beta - step
        if (np.abs(step) <= 1e-15 * beta).all():
            break
    return beta


@lru_cache(maxsize=256)  # one object per ε: the fallback search caches its grid per penalty
def _penalty(epsilon: float, log_inv_delta: float) -> Penalty:
    """``ψ(β) = -log α(β)``: increasing and convex on ``(0, β_max)``."""
    return Penalty(
        value=lambda b: -np.log(alpha_at(b, epsilon, log_inv_delta)),
        inverse_slope=lambda k: _stationary_beta(k, epsilon, log_inv_delta),
    )


def search_interval(epsilon: float, delta: float) -> tuple[float, float] | None:
    """``[1e-12·β_hi, β_hi]``, where β is searched; ``None`` in the tiny-ε limit (module
    docstring)."""
    hi = beta_limit(epsilon, -math.log(delta)) * (1.0 - 1e-9)
    if 1e-12 * hi < sys.float_info.min:
        return None
    return 1e-12 * hi, hi


def optimal_parameters(
    ss: QuantileSmoothSensitivity, epsilon: float, delta: float
) -> SmoothLaplaceParameters:
    """``(β, α)`` minimising ``SS_β/α`` subject to (P2), for the data behind ``ss``.

    ``β = 0, α = ε`` when ε is so small that this limit is the minimum (module
    docstring, "Tiny ε").
    """
    return tuned_parameters(ss, epsilon, delta)[0]


def tuned_parameters(
    ss: QuantileSmoothSensitivity, epsilon: float, delta: float
) -> tuple[SmoothLaplaceParameters, float | None]:
    """:func:`optimal_parameters` and ``log SS_β`` at the chosen β (``None`` for β = 0)."""
    interval = search_interval(epsilon, delta)
    if interval is None:
        return SmoothLaplaceParameters(beta=0.0, alpha=epsilon), None
    log_inv_delta = -math.log(delta)
    best = tune(ss, _penalty(epsilon, log_inv_delta), *interval)
    alpha = float(alpha_at(best.beta, epsilon, log_inv_delta))
    return SmoothLaplaceParameters(best.beta, alpha), best.log_ss


@lru_cache(maxsize=1024)
def public_parameters(
    epsilon: float, delta: float, n: int, neighbouring: Neighbouring
) -> SmoothLaplaceParameters:
    """:func:`optimal_parameters` on the public reference data of size ``n`` (any quantile)."""
    return optimal_parameters(reference_smooth_sensitivity(n, neighbouring), epsilon, delta)


@register
class SmoothLaplace(TunedNoiseMechanism):
    """``T(S) + SS_β/α · Lap(1)``, (ε, δ)-DP (Duff paper Prop. 2; module docstring).

    Options: ``alpha`` (the quantile, default 0.5; not the α of (P2)),
    ``neighbours`` (``"add_remove"``, ``"replace_one"``), ``clip_output``
    (default True), ``tuning`` (``"public"``, ``"oracle"``), ``reference_size``
    (public ``n`` for ``tuning="public"``; default: the size of the bounded
    data, treated as public).
    """

    name = "smooth_laplace"
    display_name = "SmoothSens_ε,δ (Laplace)"
    figure = FigureStyle("#2ca02c", "^", 3, tuned=True, smooth=True)
    requires_delta = True

    def __init__(self, *, epsilon: float, delta: float | None = None, **options: Any) -> None:
        super().__init__(epsilon=epsilon, delta=delta, **options)
        if -math.log(self.required_delta) < MIN_LOG_INV_DELTA:
            raise ValueError(
                f"delta: smooth_laplace needs delta <= e^-2 ≈ 0.1353 (Prop. 2 alone does not "
                f"cover larger delta; see the module docstring), got {delta!r}"
            )

    guarantee_source = (
        "Duff paper Prop. 2 (Bun & Steinke 2019, Thm 34): Laplace noise, SS_beta/alpha"
    )

    def smallest_beta(self, n: int) -> float | None:
        if self.tuning == "public":
            return self._public_parameters(n).beta or None
        interval = search_interval(self.epsilon, self.required_delta)
        return None if interval is None else first_evaluated(*interval)

    def _public_parameters(self, n: int) -> SmoothLaplaceParameters:
        size = self.public_size(n)
        return public_parameters(self.epsilon, self.required_delta, size, self.neighbouring)

    def _release_ordered(self, sorted_x: SortedData, lower: float, upper: float) -> Release:
        ss = QuantileSmoothSensitivity(sorted_x, lower, upper, self.neighbouring, alpha=self.alpha)
        log_ss: float | None = None  # log SS_β at the chosen β, if the search has it
        if self.tuning == "oracle":
            params, log_ss = tuned_parameters(ss, self.epsilon, self.required_delta)
        else:
            params = self._public_parameters(sorted_x.size)
        if params.beta == 0.0:  # the tiny-ε limit: SS_0 = b - a, exactly
            scale = Scale.ratio(upper - lower, params.alpha)
        else:
            log_ss = float(ss.log(params.beta)) if log_ss is None else log_ss
            scale = Scale.exp(log_ss - math.log(params.alpha))
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=self.quantile(sorted_x, lower),
            scale=scale,
            noise=StandardLaplace(),
            parameters={"beta": params.beta, "alpha": params.alpha},
        )
