r"""Laplace and Gaussian mechanisms for the mean of data bounded to ``[a, b]``.

Option ``neighbours``:

* ``"replace_one"``: ``n`` is treated as public (replace-one neighbours have the
  same size), and the mean of data in ``[a, b]`` moves by at most ``(b - a)/n``
  when one point is replaced (attained by replacing ``a`` with ``b``).  The release
  is ``mean(S) + scale·Z`` (clipped to ``[a, b]`` with ``clip_output``), with an
  exact cdf (:class:`mechanisms.noise.additive.AdditiveNoiseRelease`).  ``n = 0``: ∅ has no
  replace-one neighbour; the scale of ``n = 1`` is used.
* ``"add_remove"`` (default): ``n`` is private.  ε (and δ) are split evenly between
  a noisy *centred* sum and a noisy count (basic composition):

      Σ̃ = Σ (y - c) + σ_s·Z_s,   Ñ = n + σ_c·Z_c,   c = (a + b)/2,
      estimate = c + Σ̃ / max(Ñ, 1),  clipped to [a, b] (``clip_output``).

  Adding or removing a point ``y`` moves the centred sum by ``y - c``, so its
  sensitivity is ``(b - a)/2`` (attained at ``y = a`` and ``y = b``); the plain sum
  ``Σ y`` would have ``max(|a|, |b|) >= (b - a)/2``, larger unless ``a = -b``.  The
  count has sensitivity 1.  Rule for a small noisy count: it is clamped to
  ``>= 1`` (a dataset has at least one point once it has a mean; ``Ñ <= 0`` would
  flip or blow up the ratio), so no draw is ever NaN or infinite.

Laplace: ``Z ~ Lap(1)`` with scale sensitivity/ε (ε-DP; Dwork, McSherry, Nissim &
Smith, "Calibrating noise to sensitivity in private data analysis").  Gaussian:
``Z ~ N(0, 1)`` with the analytic calibration of Balle & Wang, "Improving the
Gaussian mechanism for differential privacy: analytical calibration and optimal
denoising" (ICML 2018, Theorem 8; :func:`mechanisms.noise.gaussian.analytic_gaussian_scale`),
(ε, δ)-DP.

Exact cdf of the ratio (add/remove).  For ``q = x - c`` and ``T = Σ (y - c)``,
``M <= x`` iff ``Σ̃ <= q·max(Ñ, 1)``.  With ``t1 = (1 - n)/σ_c`` (``Ñ <= 1`` iff
``Z_c <= t1``), ``g0 = (q·n - T)/σ_s`` and ``γ = q·σ_c/σ_s``:

    P(M <= x) = F(t1)·F((q - T)/σ_s) + P(Z_s <= g0 + γ·Z_c, Z_c > t1),

``F`` the standard noise cdf.  The second term is in closed form: for the Laplace
(:func:`laplace_joint`) an integral of exponentials over at most three pieces;
for the Gaussian (:func:`gaussian_joint`) a bivariate normal probability, by
Owen's T function (Owen, "Tables for computing bivariate normal probabilities",
1956).  Both are accurate to a few ``1e-16`` absolutely.

Wide bounds.  ``T`` (up to ``n·(b - a)/2``) and ``q·n`` may overflow float64 although
the estimate does not (``(b - a)/2 <= 9e307`` after
:func:`mechanisms.core.validation.check_bounds`); when they could, the release keeps
``T``, ``σ_s`` and ``q`` in units of a power of two ``u`` near ``(b - a)/2``
(:func:`mechanisms.core.data.sum_unit`; ``u = 1`` otherwise): dividing by ``u`` is exact,
so every float is the one computed in data units wherever that one does not overflow,
and the estimate is multiplied back by ``u`` last.  ε (and δ) so small that their halves
underflow to 0, bounds whose half-width underflows, and noise scales that overflow or
underflow are refused with a ``ValueError`` naming them.
"""

from __future__ import annotations

import math
import sys
from abc import abstractmethod
from collections.abc import Callable
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy import special

from mechanisms.core.data import mean_value, sum_unit
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.core.validation import check_rng, check_size
from mechanisms.noise.additive import NoiseMechanism, Scale
from mechanisms.noise.gaussian import analytic_gaussian_scale
from mechanisms.noise.laws import StandardGaussian, StandardLaplace, StandardNoise

JointProbability = Callable[[np.ndarray, np.ndarray, float], np.ndarray]
"""``(g0, γ, t1) -> P(Z_s <= g0 + γ·Z_c, Z_c > t1)`` for independent standard noises."""

LAPLACE_HORIZON = 1500.0
"""Beyond ``max(t1, 0) + 1500`` (and below ``-1500``) the Laplace density ``e^{-|t|}/2`` is
below ``e^{-1500}``: the integral of :func:`laplace_joint` stops there (the rest is 0 in
float64)."""


def sum_sensitivity(lower: float, upper: float) -> float:
    """``(b - a)/2``: add/remove sensitivity of the centred sum ``Σ (y - (a + b)/2)``."""
    return (upper - lower) / 2


def mean_sensitivity(lower: float, upper: float, n: int) -> float:
    """``(b - a)/max(n, 1)``: replace-one sensitivity of the mean of ``n`` points in ``[a, b]``."""
    return (upper - lower) / max(n, 1)


def _exp_integral(
    log_coef: np.ndarray, rate: np.ndarray, left: np.ndarray, right: np.ndarray
) -> np.ndarray:
    """``∫_left^right exp(log_coef + rate·t) dt`` for finite ``left <= right``, elementwise.

    Factored at the end where the integrand is largest, so only
    ``exp(<= its log maximum)`` and ``expm1`` appear.
    """
    width = np.array(right - left, dtype=np.float64)
    at = np.where(rate > 0, right, left)
    speed = np.abs(rate)
    with np.errstate(over="ignore", invalid="ignore"):
        peak = np.exp(log_coef + rate * at)
        shape = np.divide(-np.expm1(-speed * width), speed, out=width, where=speed > 0)
        return peak * shape


def laplace_joint(shift: np.ndarray, slope: np.ndarray, start: float) -> np.ndarray:
    """``P(Z_s <= shift + slope·Z_c, Z_c > start)`` for independent ``Lap(1)`` variables.

    ``∫_start^∞ e^{-|t|}/2 · F(g(t)) dt`` with ``g(t) = shift + slope·t`` and
    ``F(g) = e^g/2`` (``g < 0``), ``1 - e^{-g}/2`` (``g >= 0``).  Between the break
    points ``0`` and ``-shift/slope`` both signs are constant and the integrand is
    a sum of exponentials of ``t``, integrated exactly (:func:`_exp_integral`).  The
    integral starts at ``-1500`` at the earliest: below, the density is under
    ``e^{-1500}`` (0 in float64), and ``start`` may be ``-inf`` (``σ_c`` near 0).
    """
    g0, gamma = np.broadcast_arrays(
        np.asarray(shift, dtype=np.float64), np.asarray(slope, dtype=np.float64)
    )
    start = max(start, -LAPLACE_HORIZON)
    horizon = max(start, 0.0) + LAPLACE_HORIZON
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        root = np.where(gamma != 0, -g0 / gamma, start)
    root = np.clip(root, start, horizon)
    zero = max(start, 0.0)
    first, second = np.minimum(root, zero), np.maximum(root, zero)
    begin = np.full(g0.shape, start)
    total = np.zeros(g0.shape)
    for left, right in ((begin, first), (first, second), (second, np.full(g0.shape, horizon))):
        sign = np.where(left >= 0, -1.0, 1.0)  # e^{-|t|} = e^{sign·t} on the piece
        with np.errstate(over="ignore"):  # γ·t beyond float64 (huge ε): its sign is kept
            below = g0 + gamma * (0.5 * left + 0.5 * right) < 0  # the sign of g on the piece
        lower_tail = _exp_integral(g0 + math.log(0.25), sign + gamma, left, right)
        upper_tail = _exp_integral(np.full(g0.shape, math.log(0.5)), sign, left, right)
        upper_tail -= _exp_integral(math.log(0.25) - g0, sign - gamma, left, right)
        total += np.where(left < right, np.where(below, lower_tail, upper_tail), 0.0)
    return np.clip(total, 0.0, 1.0)


def gaussian_joint(shift: np.ndarray, slope: np.ndarray, start: float) -> np.ndarray:
    """``P(Z_s <= shift + slope·Z_c, Z_c > start)`` for independent ``N(0, 1)`` variables.

    ``W = (Z_s - γ·Z_c)/√(1 + γ²)`` and ``V = -Z_c`` are standard normal with
    correlation ``ρ = γ/√(1 + γ²)``, so this is ``Φ₂(h, k; ρ)`` with
    ``h = g0/√(1 + γ²)``, ``k = -t1``.  Owen's formula:
    ``Φ₂ = Φ(h)/2 + Φ(k)/2 - T(h, a_h) - T(k, a_k) - β`` with
    ``a_h = (k - ρh)/(h√(1 - ρ²)) = (k·(1 + γ²) - γ·g0)/g0``,
    ``a_k = (h - ρk)/(k√(1 - ρ²)) = (g0 - γ·k)/k`` (``±∞`` for a zero denominator,
    ``T(0, ±∞) = ±1/4``), ``β = 1/2`` if ``hk < 0`` or ``hk = 0 > h + k``, else 0;
    and ``Φ₂(0, 0; ρ) = 1/4 + asin(ρ)/(2π)``.
    """
    g0, gamma = np.broadcast_arrays(
        np.asarray(shift, dtype=np.float64), np.asarray(slope, dtype=np.float64)
    )
    norm = np.hypot(1.0, gamma)
    h, k = g0 / norm, -start
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a_h = np.where(g0 != 0, (k * norm * norm - gamma * g0) / g0, math.copysign(np.inf, k))
        a_k = (g0 - gamma * k) / k if k != 0 else np.copysign(np.inf, g0)
        owen = special.owens_t(h, a_h) + special.owens_t(k, a_k)
    beta = np.where((h * k < 0) | ((h * k == 0) & (h + k < 0)), 0.5, 0.0)
    out = 0.5 * special.ndtr(h) + 0.5 * special.ndtr(k) - owen - beta
    origin = (g0 == 0) & (k == 0)
    out = np.where(origin, 0.25 + np.arcsin(gamma / norm) / (2 * np.pi), out)
    return np.clip(out, 0.0, 1.0)


JOINT_PROBABILITIES: dict[str, JointProbability] = {
    StandardLaplace.name: laplace_joint,
    StandardGaussian.name: gaussian_joint,
}
"""The joint probability of the ratio's cdf for each standard noise, by name."""


class RatioMeanRelease(Release):
    """``c + (T + σ_s·Z_s)/max(n + σ_c·Z_c, 1)``, clipped to ``[a, b]`` when ``clip``.

    ``c = (a + b)/2`` and ``T = Σ (y - c)`` (module docstring).  ``sample`` draws
    all ``Z_s`` then all ``Z_c`` from ``rng``; ``cdf`` is exact (closed form).
    ``parameters`` records ``sum_scale`` (σ_s) and ``count_scale`` (σ_c).
    """

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        *,
        sum_scale: float,
        count_scale: float,
        noise: StandardNoise,
        joint: JointProbability,
        clip: bool,
    ) -> None:
        self.lower, self.upper = float(lower), float(upper)
        self.n = int(sorted_x.size)
        self.true_value = mean_value(sorted_x, lower)
        self.centre = self.lower + (self.upper - self.lower) / 2
        # T, σ_s and q in a unit (1, or a power of two near (b - a)/2 when T, up to
        # n·(b - a)/2, or q·n could overflow): exact (module docstring, "Wide bounds")
        self._unit = sum_unit((self.upper - self.lower) / 2, self.n)
        self._unit_sum = math.fsum(((sorted_x - self.centre) / self._unit).tolist())
        self.centred_sum = self._unit_sum * self._unit  # T (inf if it overflows float64)
        self.sum_scale, self.count_scale = float(sum_scale), float(count_scale)
        self._unit_sum_scale = self.sum_scale / self._unit
        self.noise, self.joint, self.clip = noise, joint, bool(clip)
        self.parameters = MappingProxyType(
            {"sum_scale": self.sum_scale, "count_scale": self.count_scale}
        )

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        noisy_sum = self._unit_sum + self._unit_sum_scale * self.noise.sample(size, rng)
        count = self.n + self.count_scale * self.noise.sample(size, rng)
        np.maximum(count, 1.0, out=count)
        with np.errstate(over="ignore"):  # beyond float64: ±inf, which the clip maps to a, b
            noisy_sum /= count
            noisy_sum *= self._unit
            out = self.centre + noisy_sum
        return np.clip(out, self.lower, self.upper) if self.clip else out

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """``F(t1)·F((q - T)/σ_s) + joint(g0, γ, t1)`` at ``q = x - c`` (module docstring)."""
        points = np.asarray(x, dtype=np.float64)
        finite = np.isfinite(points)
        q = np.where(finite, points - self.centre, 0.0)
        with np.errstate(over="ignore", divide="ignore"):  # ±inf: the limits F(±inf)
            unit_q = q / self._unit
            start = (1 - self.n) / self.count_scale
            standard = (unit_q - self._unit_sum) / self._unit_sum_scale
            shift = (unit_q * self.n - self._unit_sum) / self._unit_sum_scale
            slope = q * (self.count_scale / self.sum_scale)
        clamped = self.noise.cdf(np.array(start)) * self.noise.cdf(standard)
        values = np.clip(clamped + self.joint(shift, slope, start), 0.0, 1.0)
        values = np.where(finite, values, np.where(points > 0, 1.0, 0.0))
        if self.clip:
            values = np.where(points < self.lower, 0.0, np.where(points >= self.upper, 1.0, values))
        return np.where(np.isnan(points), np.nan, values)


class MeanNoiseMechanism(NoiseMechanism):
    """A noise mechanism for the mean: the replace-one and add/remove estimators above."""

    statistics: ClassVar[frozenset[str]] = frozenset({"mean"})
    noise: ClassVar[StandardNoise]

    @abstractmethod
    def scale(self, epsilon: float, delta: float, sensitivity: float) -> Scale:
        """The noise scale that makes one query of this sensitivity (ε, δ)-DP."""

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        delta = self.delta or 0.0
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            sensitivity = mean_sensitivity(lower, upper, sorted_x.size)  # n is public here
            if sensitivity == 0.0:
                raise ValueError(f"bounds: (b - a)/n underflows float64, got {(lower, upper)}")
            scale = self.scale(self.epsilon, delta, sensitivity)
            return self.additive_release(
                sorted_x,
                lower,
                upper,
                true_value=mean_value(sorted_x, lower),
                scale=scale,
                noise=self.noise,
                parameters={},
            )
        half_epsilon, half_delta = self.epsilon / 2, delta / 2
        if half_epsilon == 0.0 or half_delta == 0.0 < delta:
            which = "epsilon" if half_epsilon == 0.0 else "delta"
            raise ValueError(f"{which}: {which}/2 underflows float64 (the sum and count split it)")
        if sum_sensitivity(lower, upper) == 0.0:
            raise ValueError(f"bounds: (b - a)/2 underflows float64, got {(lower, upper)}")
        sum_scale = float(self.scale(half_epsilon, half_delta, sum_sensitivity(lower, upper)))
        count_scale = float(self.scale(half_epsilon, half_delta, 1.0))
        tiny = sys.float_info.min  # a subnormal scale has lost its precision (and 1/σ overflows)
        normal = tiny <= sum_scale < math.inf and tiny <= count_scale < math.inf
        if not (normal and math.isfinite(count_scale / sum_scale)):  # γ = q·σ_c/σ_s (cdf)
            raise ValueError(
                f"epsilon, bounds: the noise scales of the sum and the count "
                f"({sum_scale!r}, {count_scale!r}) must be normal float64 numbers of a "
                "finite ratio"
            )
        return RatioMeanRelease(
            sorted_x,
            lower,
            upper,
            sum_scale=sum_scale,
            count_scale=count_scale,
            noise=self.noise,
            joint=JOINT_PROBABILITIES[self.noise.name],
            clip=self.clip_output,
        )

    calibration: ClassVar[str]
    """The noise and its calibration, named in the guarantee's source."""

    def source(self) -> str:
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return f"{self.calibration}, mean with public n, sensitivity (b - a)/n"
        return (
            f"{self.calibration} on the centred sum (sensitivity (b - a)/2) and the count "
            "(sensitivity 1), each with half the budget; the ratio is post-processing"
        )


@register
class LaplaceMean(MeanNoiseMechanism):
    """The Laplace mechanism for the mean: ε-DP (module docstring)."""

    name = "laplace_mean"
    display_name = "Laplace mean"
    figure = FigureStyle("#2ca02c", "^", 11)
    noise = StandardLaplace()

    def scale(self, epsilon: float, delta: float, sensitivity: float) -> Scale:
        """``sensitivity/ε`` (δ is not used)."""
        return Scale.ratio(sensitivity, epsilon)

    calibration = "Laplace mechanism"


@register
class GaussianMean(MeanNoiseMechanism):
    """The analytic Gaussian mechanism for the mean: (ε, δ)-DP (module docstring)."""

    name = "gaussian_mean"
    display_name = "Gaussian mean (analytic)"
    figure = FigureStyle("#a6761d", "P", 12)
    requires_delta = True
    noise = StandardGaussian()

    def scale(self, epsilon: float, delta: float, sensitivity: float) -> Scale:
        """The analytic Gaussian σ (Balle & Wang 2018, Theorem 8)."""
        return analytic_gaussian_scale(epsilon, delta, sensitivity)

    calibration = "analytic Gaussian mechanism (Balle & Wang 2018, Thm 8)"
