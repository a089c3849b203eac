"""Additive-noise releases ``T(S) + scale·Z``, optionally clipped to ``[a, b]``.

Shared by every noise-adding mechanism (smooth sensitivity and global
sensitivity; :class:`QuantileNoiseMechanism` adds the option ``alpha`` for those
that estimate any α-quantile).  ``Z`` is a *standardised* noise distribution
with an exact cdf and a sampler; the release is the distribution of

    M(S) = clip(T(S) + scale·Z, a, b)    (or without the clip),

whose cdf is ``0`` below ``a``, ``F((x - T)/scale)`` on ``[a, b)`` (the value at
``a`` is the atom ``P(T + scale·Z <= a)``) and ``1`` from ``b`` on (the jump at
``b`` is the atom ``P(T + scale·Z >= b)``).  Clipping is post-processing, so it
keeps the guarantee (the Duff paper clips every baseline to ``[a, b]``).

A scale that underflows to ``0.0`` (``SS_β`` can be ``(b - a)·e^{-β·n}``) gives
the point mass at ``T(S)``: every float output of ``T + scale·Z`` rounds to
``T`` except with probability far below ``1e-300``.

A scale beyond float64's range (``(b - a)/ε`` with ``ε = 1e-12`` and
``b - a = 2e307``) is kept as ``significand·2**exponent`` (:class:`Scale`),
so the cdf ``F((x - T)/scale)`` stays exact; a draw ``T + scale·Z`` whose
magnitude exceeds float64's range is ``±inf`` (IEEE overflow, the sign being
right), which the clip maps to ``a`` or ``b``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from mechanisms.core.guarantee import check_neighbours
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.quantiles import check_alpha, quantile_value
from mechanisms.core.sorted_data import SortedData
from mechanisms.core.validation import check_flag, check_rng, check_size
from mechanisms.noise.laws import StandardNoise

LOG_FLOAT_MAX = math.log(sys.float_info.max)
"""709.78: ``exp`` of anything larger overflows float64."""


def log_ratio(numerator: float, denominator: float) -> float:
    """``log(numerator/denominator)`` for positive floats, also where the quotient overflows.

    The rounded quotient's log when it is finite (as computed before), else
    ``log(numerator) - log(denominator)`` (``1/δ`` overflows for subnormal δ).
    """
    ratio = numerator / denominator
    if ratio < math.inf:
        return math.log(ratio)
    return math.log(numerator) - math.log(denominator)


@dataclass(frozen=True)
class Scale:
    """A noise scale ``significand·2**exponent``, which may exceed float64's range.

    ``exponent`` is 0 (and ``significand`` the scale itself, rounded once) unless
    the scale overflows float64; then ``significand`` is of order 1.
    """

    significand: float
    exponent: int = 0

    @classmethod
    def ratio(cls, numerator: float, denominator: float) -> Scale:
        """``numerator/denominator`` for positive finite floats, rounded once."""
        quotient = float(numerator) / float(denominator)  # Python floats: inf on overflow
        if math.isfinite(quotient):
            return cls(quotient)
        (top, top_exp), (bottom, bottom_exp) = math.frexp(numerator), math.frexp(denominator)
        return cls(top / bottom, top_exp - bottom_exp)

    @classmethod
    def exp(cls, log_scale: float) -> Scale:
        """``e**log_scale``: ``math.exp`` when it does not overflow (0.0 when it underflows)."""
        if not log_scale < LOG_FLOAT_MAX:
            if math.isnan(log_scale):
                raise ValueError("log_scale must not be NaN")
            exponent = int(log_scale / math.log(2.0))
            return cls(math.exp(log_scale - exponent * math.log(2.0)), exponent)
        return cls(math.exp(log_scale))

    @classmethod
    def ldexp(cls, significand: float, exponent: int) -> Scale:
        """``significand·2**exponent``, as a float (0.0 if it underflows) unless it overflows."""
        try:
            return cls(math.ldexp(significand, exponent))
        except OverflowError:
            return cls(significand, exponent)

    def __float__(self) -> float:
        """The scale as a float64: ``inf`` if it overflows."""
        try:
            return math.ldexp(self.significand, self.exponent)
        except OverflowError:
            return math.inf

    def times(self, z: np.ndarray) -> np.ndarray:
        """``scale·z`` elementwise; ``±inf`` where the product overflows float64, and ``±0``
        for a scale that underflowed to 0 (also where ``z`` is infinite: Student's T with
        a tiny ``d`` draws ``±inf``)."""
        if self.significand == 0.0:
            z = np.where(np.isinf(z), 0.0, z)
        with np.errstate(over="ignore"):
            out = self.significand * z
            return np.ldexp(out, self.exponent) if self.exponent else out

    def divide(self, x: np.ndarray) -> np.ndarray:
        """``x/scale`` elementwise (``±inf`` where it overflows; the scale is positive)."""
        with np.errstate(over="ignore"):
            out = x / self.significand
            return np.ldexp(out, -self.exponent) if self.exponent else out


class AdditiveNoiseRelease(Release):
    """The distribution of ``C + scale·Z``, clipped to ``[lower, upper]`` when ``clip``.

    ``C`` is the ``centre`` the noise is added to: the statistic ``true_value`` itself,
    unless the mechanism estimates it through another one (Bun & Steinke's trimmed
    mean for the mean: ``centre`` the trimmed mean, ``true_value`` the mean).

    ``scale`` is a float or a :class:`Scale` (for scales beyond float64's range).
    ``parameters`` records the chosen mechanism parameters (``scale``, ``beta``,
    ``alpha``, ``sigma``, ...) for reports; ``scale`` is also an attribute (a
    float, ``inf`` if it overflows; :attr:`exact_scale` keeps it exactly).
    """

    def __init__(
        self,
        *,
        true_value: float,
        scale: float | Scale,
        noise: StandardNoise,
        lower: float,
        upper: float,
        n: int,
        clip: bool,
        parameters: Mapping[str, float] | None = None,
        centre: float | None = None,
    ) -> None:
        self.exact_scale = scale if isinstance(scale, Scale) else Scale(float(scale))
        self.true_value = float(true_value)
        self.centre = self.true_value if centre is None else float(centre)
        self.noise = noise
        self.lower, self.upper = float(lower), float(upper)
        self.n = int(n)
        self.clip = bool(clip)
        self.parameters = MappingProxyType({"scale": self.scale, **(parameters or {})})

    @property
    def exact_scale(self) -> Scale:
        """The scale, exactly (also beyond float64's range)."""
        return self._scale

    @exact_scale.setter
    def exact_scale(self, value: Scale) -> None:
        if not (math.isfinite(value.significand) and value.significand >= 0):
            raise ValueError(f"scale must be finite and >= 0, got {float(value)!r}")
        self._scale = value

    @property
    def scale(self) -> float:
        """The scale as a float (``inf`` if it overflows float64)."""
        return float(self._scale)

    @scale.setter
    def scale(self, value: float) -> None:
        self.exact_scale = Scale(float(value))

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size = check_size(size)
        rng = check_rng(rng)
        with np.errstate(over="ignore"):  # ±inf beyond float64's range; the clip maps it to a, b
            values = self.centre + self._scale.times(self.noise.sample(size, rng))
        return np.clip(values, self.lower, self.upper) if self.clip else values

    def _noise_cdf(self, x: np.ndarray) -> np.ndarray:
        """``P(C + scale·Z <= x)``."""
        if self._scale.significand == 0.0:
            return (x >= self.centre).astype(np.float64)
        with np.errstate(over="ignore"):  # a subnormal scale sends z to ±inf, the right limit
            z = self._scale.divide(x - self.centre)
        return self.noise.cdf(z)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        points = np.asarray(x, dtype=np.float64)
        values = self._noise_cdf(points)
        if self.clip:
            values = np.where(points < self.lower, 0.0, np.where(points >= self.upper, 1.0, values))
        return values


class NoiseMechanism(Mechanism[Release]):
    """A mechanism releasing ``T(S) + scale·Z``; options ``neighbours`` and ``clip_output``.

    ``neighbours`` (``"add_remove"`` by default, or ``"replace_one"``) sets
    :attr:`neighbouring`, the relation the guarantee is stated for;
    ``clip_output`` (default True) clips the output to ``[a, b]``.
    """

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        neighbours: str = "add_remove",
        clip_output: bool = True,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.neighbouring = check_neighbours(neighbours)
        self.clip_output = check_flag(clip_output, "clip_output")

    def additive_release(
        self,
        sorted_x: SortedData,
        lower: float,
        upper: float,
        *,
        true_value: float,
        scale: float | Scale,
        noise: StandardNoise,
        parameters: Mapping[str, float],
        centre: float | None = None,
    ) -> AdditiveNoiseRelease:
        """The release ``centre + scale·noise`` (``centre``: ``true_value`` unless given) with
        this mechanism's clipping."""
        return AdditiveNoiseRelease(
            true_value=true_value,
            centre=centre,
            scale=scale,
            noise=noise,
            lower=lower,
            upper=upper,
            n=sorted_x.size,
            clip=self.clip_output,
            parameters=parameters,
        )


class QuantileNoiseMechanism(NoiseMechanism):
    """A :class:`NoiseMechanism` for the α-quantile; option ``alpha`` (default 1/2).

    The statistic is ``x_(ceil(αn))`` (:func:`mechanisms.core.quantiles.quantile_rank`,
    α read as the decimal it was written as), the lower median for α = 1/2, and
    ``a`` for the empty dataset.
    """

    statistics: ClassVar[frozenset[str]] = frozenset({"median", "quantile"})

    def __init__(
        self, *, epsilon: float, delta: float | None = None, alpha: float = 0.5, **options: Any
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, **options)
        self.alpha = check_alpha(alpha)

    def quantile(self, sorted_x: SortedData, lower: float) -> float:
        """``x_(ceil(αn))`` of the sorted bounded data, ``lower`` if it is empty."""
        return quantile_value(sorted_x, self.alpha, lower)
