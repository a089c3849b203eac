"""Additive-noise releases ``T(S) + scale·Z``, optionally clipped to ``[a, b]``.

Shared by every noise-adding median mechanism (smooth sensitivity and global
sensitivity).  ``Z`` is a *standardised* noise distribution with an exact cdf and
a sampler; the release is the distribution of

    M(S) = clip(T(S) + scale·Z, a, b)    (or without the clip),

whose cdf is ``0`` below ``a``, ``F((x - T)/scale)`` on ``[a, b)`` (the value at
``a`` is the atom ``P(T + scale·Z <= a)``) and ``1`` from ``b`` on (the jump at
``b`` is the atom ``P(T + scale·Z >= b)``).  Clipping is post-processing, so it
keeps the guarantee (the Duff paper clips every baseline to ``[a, b]``).

A scale that underflows to ``0.0`` (``SS_β`` can be ``(b - a)·e^{-β·n}``) gives
the point mass at ``T(S)``: every float output of ``T + scale·Z`` rounds to
``T`` except with probability far below ``1e-300``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
from scipy import special

from mechanisms.base import (
    Mechanism,
    Neighbouring,
    Release,
    check_choice,
    check_rng,
    check_size,
)

NEIGHBOURS = tuple(member.value for member in Neighbouring)


def check_neighbours(value: str) -> Neighbouring:
    """The ``neighbours`` option, ``"add_remove"`` or ``"replace_one"``, as a Neighbouring."""
    return Neighbouring(check_choice(value, NEIGHBOURS, "neighbours"))


def check_flag(value: object, name: str) -> bool:
    """Require a real ``bool`` (``clip_output=1`` or ``"no"`` is an error, not a guess)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


class StandardNoise(ABC):
    """A standardised noise distribution ``Z``: exact cdf and an exact sampler."""

    name: str

    @abstractmethod
    def cdf(self, z: np.ndarray) -> np.ndarray:
        """``P(Z <= z)`` for ``z`` in ``[-inf, inf]``, elementwise."""

    @abstractmethod
    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent draws of ``Z``."""


class StandardLaplace(StandardNoise):
    """``Lap(1)``: density ``e^{-|z|}/2``, cdf ``e^z/2`` (z < 0), ``1 - e^{-z}/2`` (z >= 0)."""

    name = "laplace"

    def cdf(self, z: np.ndarray) -> np.ndarray:
        half_tail = 0.5 * np.exp(-np.abs(z))
        return np.where(z < 0, half_tail, 1.0 - half_tail)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(0.0, 1.0, size)


class StandardCauchy(StandardNoise):
    """Standard Cauchy: density ``1/(π(1 + z²))``, cdf ``1/2 + arctan(z)/π``."""

    name = "cauchy"

    def cdf(self, z: np.ndarray) -> np.ndarray:
        return 0.5 + np.arctan(z) / np.pi

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_cauchy(size)


class StandardGaussian(StandardNoise):
    """``N(0, 1)``, cdf ``Φ``."""

    name = "gaussian"

    def cdf(self, z: np.ndarray) -> np.ndarray:
        return special.ndtr(z)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal(size)


class AdditiveNoiseRelease(Release):
    """The distribution of ``T + scale·Z``, clipped to ``[lower, upper]`` when ``clip``.

    ``parameters`` records the chosen mechanism parameters (``scale``, ``beta``,
    ``alpha``, ``sigma``, ...) for reports; ``scale`` is also an attribute.
    """

    def __init__(
        self,
        *,
        true_value: float,
        scale: float,
        noise: StandardNoise,
        lower: float,
        upper: float,
        n: int,
        clip: bool,
        parameters: Mapping[str, float] | None = None,
    ) -> None:
        if not (np.isfinite(scale) and scale >= 0):
            raise ValueError(f"scale must be finite and >= 0, got {scale!r}")
        self.true_value = float(true_value)
        self.scale = float(scale)
        self.noise = noise
        self.lower, self.upper = float(lower), float(upper)
        self.n = int(n)
        self.clip = bool(clip)
        self.parameters = MappingProxyType({"scale": self.scale, **(parameters or {})})

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size = check_size(size)
        rng = check_rng(rng)
        values = self.true_value + self.scale * self.noise.sample(size, rng)
        return np.clip(values, self.lower, self.upper) if self.clip else values

    def _noise_cdf(self, x: np.ndarray) -> np.ndarray:
        """``P(T + scale·Z <= x)``."""
        if self.scale == 0.0:
            return (x >= self.true_value).astype(np.float64)
        with np.errstate(over="ignore"):  # a subnormal scale sends z to ±inf, the right limit
            z = (x - self.true_value) / self.scale
        return self.noise.cdf(z)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        points = np.asarray(x, dtype=np.float64)
        values = self._noise_cdf(points)
        if self.clip:
            values = np.where(points < self.lower, 0.0, np.where(points >= self.upper, 1.0, values))
        return values


class NoiseMechanism(Mechanism):
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
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        *,
        true_value: float,
        scale: float,
        noise: StandardNoise,
        parameters: Mapping[str, float],
    ) -> AdditiveNoiseRelease:
        """The release ``true_value + scale·noise`` with this mechanism's clipping."""
        return AdditiveNoiseRelease(
            true_value=true_value,
            scale=scale,
            noise=noise,
            lower=lower,
            upper=upper,
            n=sorted_x.size,
            clip=self.clip_output,
            parameters=parameters,
        )
