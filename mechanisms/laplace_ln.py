r"""LAPLACELN: smooth-sensitivity noise from the Laplace log-normal distribution (zCDP).

Bun & Steinke, "Average-Case Averages: Private Algorithms for Smooth
Sensitivity and Mean Estimation" (NeurIPS 2019, arXiv:1906.02830), [7] in the
Duff paper.

Distribution (section 3.1): ``Z = X·e^{σY}`` with ``X ~ Lap(1)``, ``Y ~ N(0, 1)``
independent, written ``LLN(σ)``; ``Var Z = 2e^{2σ²}``.

Privacy (section 3.1, the Laplace log-normal proposition; numbered
Proposition 3 by secondary sources, the paper's text was not available to
check the numbering): if ``g`` is a ``t``-smooth upper
bound on the local sensitivity of ``f`` (``g >= LS_f`` and
``g(x') <= e^t g(x)`` for neighbours; ``g = SS_t`` is one), then

    M(x) = f(x) + g(x)/s · Z,  Z ~ LLN(σ),  is ½ε²-CDP (ρ-zCDP, ρ = ε²/2)
    for  ε = t/σ + e^{3σ²/2}·s.

In the Duff paper's notation (section 6) ``β = t`` and ``α = s``; the paper's
``Y ~ N(0, σ)`` means ``σY`` with ``Y ~ N(0, 1)``.  ``f`` is the α-quantile
``x_(ceil(αn))`` (option ``alpha``, another α) with ``g`` its smooth sensitivity
(:mod:`mechanisms.smooth_sensitivity`).

Parameters (section 3.1.1, also implemented so in Google's dp_multiq
``csmooth.py``): for a target ε, ``s = e^{-3σ²/2}(ε - t/σ)`` and the
noise standard deviation ``√2·e^{σ²}·SS_t/s`` is minimised over σ at the
positive root of ``5(ε/t)σ³ - 5σ² - 1 = 0``; there ``ε - t/σ = ε/(5σ² + 1)``,
so the log noise scale per unit of ``SS_t`` is

    ψ(t) = (5/2)σ² + log(5σ² + 1) - log ε,   ψ'(t) = (5σ + 1/σ)/ε,

concave for ``σ <= 1/√5`` (``t <= ε/(2√5)``) and convex above.  ``t`` minimises
``log SS_t + ψ(t)`` (:func:`mechanisms.tuning.minimise`, within a factor
``e^{1e-9}`` of the optimal scale), over ``σ <= 2``, i.e.
``t <= t_max = 5ε·2³/(5·2² + 1)``: larger σ only pays when ``SS_t`` keeps
falling exponentially (no spread at all around the median), and makes
``e^{σY}`` numerically unusable.  The search starts at ``1e-16·t_max``: below
it ``φ`` can fall by at most ``ψ(1e-16·t_max) - ψ(0+) ≈ 7.5σ² < 1e-10``.

Tiny ε.  When ``1e-16·t_max`` is below float64's normal range (ε below about
``1e-292``), the minimum is the limit ``t → 0``: ``log SS_t`` falls with slope
at most ``n`` (a maximum of lines ``log A(k) - tk``, ``k <= n``) while
``ψ' >= 2√5/ε > 1e292``.  There ``σ → 0`` and ``s → ε`` (``t/σ ≈ (5ε)^{1/3}
t^{2/3} → 0``), ``SS_0 = b - a``, and ``LLN(0) = Lap(1)``: the release is the
Laplace mechanism with scale ``(b - a)/ε``, which is ε-DP and hence
``ε²/2``-zCDP (Bun & Steinke 2016, Proposition 1.4).  Huge ε: a CDP parameter
``ε_c > 1.34e154`` (``target="zcdp"``: ε itself; ``"approx_dp"``: ε above
about ``9e307``) is refused because ``ε_c²`` overflows float64.

Conversion to (ε', δ)-DP ("Lemma 9 of [7]" in the Duff paper, which we take to
be the standard conversion of Bun & Steinke 2016, Proposition 1.3, restated in
[7]'s preliminaries; not verified against [7]'s text): ρ-zCDP implies
``(ρ + 2√(ρ·log(1/δ)), δ)``-DP for every δ > 0.  With ``target="zcdp"``
(default; our reading of the Duff paper, section 6) the given ε is the CDP parameter: the mechanism
is ``ε²/2``-zCDP and **its (ε', δ)-DP guarantee has ε' = ε²/2 + ε√(2 log(1/δ)),
larger than the nominal ε** (e.g. ε = 1, δ = 1e-3 gives ε' ≈ 4.22), which
matters when comparing with (ε, δ)-DP mechanisms at the same nominal ε.  With
``target="approx_dp"`` the CDP parameter ``ε_c = √(2L + 2ε) - √(2L)``
(``L = log(1/δ)``) is chosen so that ε' equals the given ε exactly.

Its cdf: ``P(Z <= z) = E_Y[F_Lap(z e^{-σY})]`` ``= 1 - G(z)/2`` for ``z >= 0``
and ``G(-z)/2`` for ``z < 0``, ``G(u) = E[exp(-u e^{σY})]``, computed by
Gauss–Hermite quadrature with 320 nodes (measured error below 2e-13 for
σ <= 2; the tests check 1e-10 against adaptive quadrature).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from mechanisms.base import Guarantee, Neighbouring, Release
from mechanisms.monotone_search import SortedData
from mechanisms.noise import NoiseMechanism, Scale, StandardNoise, log_ratio
from mechanisms.registry import register
from mechanisms.smooth_sensitivity import QuantileSmoothSensitivity
from mechanisms.tuning import (
    Penalty,
    TunedNoiseMechanism,
    first_evaluated,
    minimise,
    reference_smooth_sensitivity,
)
from mechanisms.validation import check_choice

SIGMA_MAX = 2.0
MAX_CDP_EPSILON = math.sqrt(sys.float_info.max)
"""About 1.34e154: above it ``ε_c²`` (hence ``ρ = ε_c²/2``) overflows float64."""
TARGETS = ("zcdp", "approx_dp")
_HERMITE_NODES = 320


def zcdp_to_dp(rho: float, delta: float) -> float:
    """ε' with ρ-zCDP ⇒ (ε', δ)-DP: ``ρ + 2√(ρ log(1/δ))`` (Bun & Steinke 2016, Prop. 1.3).

    ``inf`` if ε' overflows float64; ``√ρ·√log(1/δ)`` where only the product overflows.
    """
    log_inv_delta = log_ratio(1.0, delta)
    product = rho * log_inv_delta
    root = math.sqrt(product) if product < math.inf else math.sqrt(rho) * math.sqrt(log_inv_delta)
    return rho + 2.0 * root


def cdp_epsilon_for(epsilon: float, delta: float) -> float:
    """The CDP parameter ε_c whose ``ε_c²/2``-zCDP converts to exactly (ε, δ)-DP.

    ``ε_c = 2ε/(√(2L) + √(2L + 2ε))`` (``L = log(1/δ)``), written as
    ``√2·ε/(√L + √(L + ε))`` where ``2ε`` overflows.
    """
    log_inv_delta = log_ratio(1.0, delta)
    if epsilon < sys.float_info.max / 4:
        two_l = 2.0 * log_inv_delta
        return 2.0 * epsilon / (math.sqrt(two_l) + math.sqrt(two_l + 2.0 * epsilon))
    return (
        math.sqrt(2.0) * epsilon / (math.sqrt(log_inv_delta) + math.sqrt(log_inv_delta + epsilon))
    )


def log_cdp_epsilon_for(epsilon: float, delta: float) -> float:
    """``log ε_c`` of :func:`cdp_epsilon_for`, accurate also where ε_c is subnormal."""
    two_l = 2.0 * log_ratio(1.0, delta)
    return math.log(2.0 * epsilon) - math.log(math.sqrt(two_l) + math.sqrt(two_l + 2.0 * epsilon))


class StandardLaplaceLogNormal(StandardNoise):
    """``LLN(σ)``: ``X·e^{σY}``, ``X ~ Lap(1)``, ``Y ~ N(0, 1)`` (module docstring)."""

    name = "laplace_log_normal"

    def __init__(self, sigma: float) -> None:
        if not 0 <= sigma <= SIGMA_MAX:
            raise ValueError(f"sigma must be in [0, {SIGMA_MAX}], got {sigma!r}")
        self.sigma = float(sigma)

    def half_tail(self, u: np.ndarray) -> np.ndarray:
        """``G(u)/2 = E[exp(-u e^{σY})]/2 = P(Z > u)`` for ``u >= 0``."""
        nodes, weights = _hermite()
        factors = np.exp(self.sigma * math.sqrt(2.0) * nodes)
        u = np.minimum(np.asarray(u, dtype=np.float64), 1e250)  # G(1e250) = 0 in floats
        terms = np.exp(-u[..., None] * factors)
        return 0.5 * (terms @ weights) / math.sqrt(math.pi)

    def cdf(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        tail = self.half_tail(np.abs(z))
        return np.where(z < 0, tail, 1.0 - tail)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        laplace = rng.laplace(0.0, 1.0, size)
        return laplace * np.exp(self.sigma * rng.standard_normal(size))


@lru_cache(maxsize=1)
def _hermite() -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.hermite.hermgauss(_HERMITE_NODES)


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


@lru_cache(maxsize=256)  # one object per ε: minimise caches its grid per penalty
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
    return _tuned(ss, epsilon)[0]


def _tuned(
    ss: QuantileSmoothSensitivity, epsilon: float
) -> tuple[LaplaceLogNormalParameters, float | None]:
    """:func:`optimal_parameters` and ``log SS_t`` at the chosen t (``None`` for t = 0)."""
    interval = search_interval(epsilon)
    if interval is None:
        return LaplaceLogNormalParameters(t=0.0, sigma=0.0, s=epsilon), None
    best = minimise(ss.log, _penalty(epsilon), *interval)
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


class ZCDPNoiseMechanism(NoiseMechanism):
    """LaplaceLN noise calibrated in zero-concentrated DP, shared by the median's
    :class:`LaplaceLogNormal` and the trimmed mean's
    :class:`mechanisms.trimmed_mean_noise.TrimmedMeanLaplaceLN`.

    Option ``target``: ``"zcdp"`` (the CDP parameter ``ε_c`` is ``epsilon`` itself,
    ρ = ε_c²/2) or ``"approx_dp"`` (the ``ε_c`` whose zCDP guarantee converts to exactly
    (ε, δ)-DP, :func:`cdp_epsilon_for`); ``ValueError`` when ρ overflows float64.  The
    guarantee is ρ-zCDP reported as (ε', δ)-DP (:func:`zcdp_to_dp`), flagged as not
    covering the release when the parameters are tuned on the private data.
    """

    requires_delta = True
    tuning: str
    zcdp_source: ClassVar[str]
    """The guarantee's ``source``: the noise and the zCDP-to-DP conversion, with references."""

    def __init__(
        self, *, epsilon: float, delta: float | None = None, target: str = "zcdp", **options: Any
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, **options)
        self.target = check_choice(target, TARGETS, "target")
        cdp_epsilon = self.epsilon
        if self.target == "approx_dp":
            cdp_epsilon = cdp_epsilon_for(self.epsilon, self.required_delta)
        if not cdp_epsilon <= MAX_CDP_EPSILON:
            raise ValueError(
                f"epsilon: {self.name}'s zCDP parameter rho = eps_c²/2 overflows float64 for a "
                f"CDP epsilon eps_c above {MAX_CDP_EPSILON:.4g} (target={self.target!r}), "
                f"got epsilon={self.epsilon!r}"
            )
        self.cdp_epsilon = cdp_epsilon

    @property
    def guarantee(self) -> Guarantee:
        rho = 0.5 * self.cdp_epsilon**2
        return Guarantee(
            epsilon=zcdp_to_dp(rho, self.required_delta),
            delta=self.required_delta,
            neighbouring=self.neighbouring,
            rho=rho,
            data_dependent_tuning=self.tuning == "oracle",
            source=self.zcdp_source,
        )


@register
class LaplaceLogNormal(ZCDPNoiseMechanism, TunedNoiseMechanism):
    """``T(S) + SS_t/s · X e^{σY}``: ε_c²/2-zCDP, reported also as (ε', δ)-DP.

    Options: ``target`` (``"zcdp"``: ε is the CDP parameter; ``"approx_dp"``:
    ε is the (ε, δ)-DP target), ``alpha`` (the quantile, default 0.5),
    ``neighbours``, ``clip_output``, ``tuning``, ``reference_size`` (see
    :class:`mechanisms.tuning.TunedNoiseMechanism`).
    """

    name = "laplace_ln"
    zcdp_source = "Bun & Steinke 2019, sec. 3.1 (LLN); zCDP => DP by Bun & Steinke 2016 Prop. 1.3"

    def _limit_scale(self, width: float) -> Scale:
        """``(b - a)/ε_c``: the scale in the tiny-ε limit ``t = 0``, ``s = ε_c`` (``SS_0 = b - a``).

        From ``log ε_c`` when ε_c is a rounded subnormal (``target="approx_dp"``).
        """
        if self.target == "zcdp" or self.cdp_epsilon >= sys.float_info.min:
            return Scale.ratio(width, self.cdp_epsilon)
        return Scale.exp(math.log(width) - log_cdp_epsilon_for(self.epsilon, self.required_delta))

    def smallest_beta(self, n: int) -> float | None:
        if self.tuning == "public":
            return self._public_parameters(n).t or None
        interval = search_interval(self.cdp_epsilon)
        return None if interval is None else first_evaluated(*interval)

    def _public_parameters(self, n: int) -> LaplaceLogNormalParameters:
        return public_parameters(self.cdp_epsilon, self.public_size(n), self.neighbouring)

    def _release_ordered(self, sorted_x: SortedData, lower: float, upper: float) -> Release:
        ss = QuantileSmoothSensitivity(sorted_x, lower, upper, self.neighbouring, alpha=self.alpha)
        log_ss: float | None = None  # log SS_t at the chosen t, if the search has it
        if self.tuning == "oracle":
            params, log_ss = _tuned(ss, self.cdp_epsilon)
        else:
            params = self._public_parameters(sorted_x.size)
        if params.t == 0.0:
            scale = self._limit_scale(upper - lower)
        else:
            log_ss = float(ss.log(params.t)) if log_ss is None else log_ss
            scale = Scale.exp(log_ss - math.log(params.s))
        return self.additive_release(
            sorted_x,
            lower,
            upper,
            true_value=self.quantile(sorted_x, lower),
            scale=scale,
            noise=StandardLaplaceLogNormal(params.sigma),
            parameters={
                "beta": params.t,
                "alpha": params.s,
                "sigma": params.sigma,
                "cdp_epsilon": self.cdp_epsilon,
            },
        )
