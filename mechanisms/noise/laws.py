"""Standardised noise laws: one hierarchy, each with an exact cdf and an exact sampler."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from functools import lru_cache

import numpy as np
from scipy import special


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


_HERMITE_NODES = 320


SIGMA_MAX = 2.0
"""The largest σ of a Laplace-log-normal law evaluated here: its cdf's Gauss–Hermite
quadrature is checked to 1e-10 up to there (:class:`StandardLaplaceLogNormal`)."""


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


class StandardStudentT(StandardNoise):
    """Student's T with ``d`` degrees of freedom: density ∝ ``(1 + z²/d)^{-(d+1)/2}``."""

    name = "student_t"

    def __init__(self, degrees_of_freedom: float) -> None:
        self.degrees_of_freedom = float(degrees_of_freedom)

    def cdf(self, z: np.ndarray) -> np.ndarray:
        return special.stdtr(self.degrees_of_freedom, z)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_t(self.degrees_of_freedom, size)
