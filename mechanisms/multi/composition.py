"""Optimal composition of exponential mechanisms (bounded range), and the per-level ε it allows.

Source: Dong, Durfee & Rogers, "Optimal Differential Privacy Composition for Exponential
Mechanisms" (ICML 2020; arXiv 1909.13830, "... and the Cost of Adaptivity"), Theorem 3, the
formula the authors of "Differentially Private Quantiles" (Gillenwater, Joseph & Kulesza,
ICML 2021) use for their approximate-DP variant of IndExp.

Bounded range (BR; Durfee & Rogers 2019).  A mechanism is ε₀-BR if for all neighbours the
privacy loss ``log p_X(y) / p_X'(y)`` takes values in an interval of length ε₀.  The
exponential mechanism ``p_X(y) ∝ exp(ε₀ u(X, y) / (2Δ))`` is ε₀-BR: the loss is
``ε₀ (u(X, y) - u(X', y)) / (2Δ) + log(Z_X' / Z_X)``, whose first term lies in
``[-ε₀/2, ε₀/2]`` and whose second does not depend on ``y``.

Theorem 3 (non-adaptive, homogeneous composition).  The k-fold composition of ε₀-BR
mechanisms, each run once on the same data with its parameters fixed in advance, is
(ε, δ)-DP for exactly the δ below and no smaller (the bound is tight):

    δ(ε; ε₀, k) = max_{ℓ = 0..k} Σ_{i=0}^{k} C(k, i) p^{k-i} (1 - p)^i [e^{k t - i ε₀} - e^ε]_+,
    t = t_ℓ = clip((ε + (ℓ + 1) ε₀) / (k + 1), 0, ε₀),
    p = p(ε₀, t) = (e^{-t} - e^{-ε₀}) / (1 - e^{-ε₀}).

(The worst pair is k copies of a two-outcome "generalised randomised response" with losses
``t`` and ``t - ε₀``; ``p`` is the neighbour's probability of the outcome of loss ``t``.  The
maximum over ``t ∈ [0, ε₀]`` is attained at one of the ``k + 1`` points ``t_ℓ``.)  The sum is
evaluated in log space (``log C(k, i)`` by ``lgamma``, ``log(e^A - e^ε) = A + log1p(-e^{ε - A})``),
so it neither overflows at large ε nor loses the small terms; its relative error is a few ulps
of the largest exponent ``k ε₀`` (``2e-12`` at ``k ε₀ = 25000``), and δ is capped at 1.

Per-level ε (:func:`per_level_epsilon`): the largest ε₀ with ``δ(ε; ε₀, k) <= δ``, by bisection
on ε₀ ∈ ``[ε/k, ε]``: ``δ(ε; ε/k, k) = 0`` (then ``k t - i ε₀ <= k ε₀ = ε``), and δ does not
decrease in ε₀ (an ε₀-BR mechanism is ε₁-BR for every ε₁ >= ε₀, and the bound is tight, so it
is non-decreasing).  The bisection keeps the lower end, on which ``δ <= δ_target`` was
evaluated, and stops after 100 halvings (or when the bracket is 1e-12 relative): the returned
ε₀ always satisfies the bound as evaluated.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special

from mechanisms.core.validation import check_epsilon, check_integer, check_open_unit

BISECTION_STEPS = 100


def _log_p(epsilon0: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log p`` and ``log(1 - p)`` for ``p = (e^{-t} - e^{-ε₀}) / (1 - e^{-ε₀})``, t in [0, ε₀].

    ``p = (1 - e^{t - ε₀}) e^{-t} / (1 - e^{-ε₀})`` and ``1 - p = (1 - e^{-t}) / (1 - e^{-ε₀})``,
    each with ``expm1`` (exact near 0); ``log 0 = -inf`` without a warning.
    """
    denominator = -math.expm1(-epsilon0)
    num_p = -np.expm1(t - epsilon0) * np.exp(-t)
    num_q = -np.expm1(-t)
    log_p = np.full(t.shape, -np.inf)
    log_q = np.full(t.shape, -np.inf)
    np.log(num_p / denominator, out=log_p, where=num_p > 0)
    np.log(num_q / denominator, out=log_q, where=num_q > 0)
    return log_p, log_q


def composed_delta_at(epsilon: float, epsilon0: float, k: int, t: np.ndarray) -> np.ndarray:
    """``Σ_i C(k, i) p^{k-i} (1 - p)^i [e^{k t - i ε₀} - e^ε]_+`` at each ``t`` in [0, ε₀]
    (the δ of k generalised randomised responses of parameter t; module docstring)."""
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    i = np.arange(k + 1, dtype=np.float64)[:, None]
    log_binom = special.gammaln(k + 1.0) - special.gammaln(i + 1.0) - special.gammaln(k - i + 1.0)
    log_p, log_q = _log_p(epsilon0, t)
    with np.errstate(invalid="ignore"):  # 0 * -inf where an exponent is 0: taken as 0
        part_p = np.where(i == k, 0.0, (k - i) * log_p[None, :])
        part_q = np.where(i == 0, 0.0, i * log_q[None, :])
    log_weight = log_binom + part_p + part_q
    a = k * t[None, :] - i * epsilon0
    positive = a > epsilon
    excess = np.where(positive, a - epsilon, 1.0)
    log_gap = np.where(positive, a + np.log(-np.expm1(-excess)), -np.inf)
    terms = log_weight + log_gap
    top = np.max(terms, axis=0)
    finite = np.isfinite(top)
    safe_top = np.where(finite, top, 0.0)
    total = np.exp(terms - safe_top[None, :]).sum(axis=0)
    return np.where(finite, np.exp(safe_top) * total, 0.0)


def candidate_ts(epsilon: float, epsilon0: float, k: int) -> np.ndarray:
    """The ``k + 1`` points ``t_ℓ = clip((ε + (ℓ + 1) ε₀) / (k + 1), 0, ε₀)`` of Theorem 3."""
    ell = np.arange(k + 1, dtype=np.float64)
    return np.clip((epsilon + (ell + 1.0) * epsilon0) / (k + 1.0), 0.0, epsilon0)


def composed_delta(epsilon: float, epsilon0: float, k: int) -> float:
    """The optimal δ of the k-fold non-adaptive composition of ε₀-BR mechanisms at ε
    (Dong, Durfee & Rogers, Theorem 3; module docstring)."""
    ts = candidate_ts(epsilon, epsilon0, k)
    return min(1.0, float(np.max(composed_delta_at(epsilon, epsilon0, k, ts))))


@lru_cache(maxsize=256)
def per_level_epsilon(epsilon: float, delta: float, k: int) -> float:
    """The largest ε₀ (to 1e-12 relative) such that k ε₀-BR mechanisms composed
    non-adaptively are (ε, δ)-DP by Theorem 3 (bisection; module docstring).  ``k = 1``: ε."""
    epsilon = check_epsilon(epsilon)
    delta = check_open_unit(delta, "delta")
    k = check_integer(k, "k", minimum=1)
    if k == 1:
        return epsilon
    lo, hi = epsilon / k, epsilon
    if composed_delta(epsilon, hi, k) <= delta:
        return hi
    for _ in range(BISECTION_STEPS):
        if hi - lo <= 1e-12 * hi:
            break
        mid = 0.5 * (lo + hi)
        if composed_delta(epsilon, mid, k) <= delta:
            lo = mid
        else:
            hi = mid
    return lo
