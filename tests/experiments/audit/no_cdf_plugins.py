"""Plug-ins for ``duff-audit --target``: the Laplace mechanism for the median, without a cdf.

:class:`LaplaceNoCdf` adds ``Lap((b − a)/ε)`` to the lower median (ε-DP for either
neighbouring relation: the median moves by at most ``b − a``); :class:`HalfNoiseNoCdf` adds
half that noise (it is 2ε-DP while claiming ε), the planted bug the black-box audit must
catch.  Neither release has a cdf, so only the black-box audit can check them.
"""

from __future__ import annotations

import numpy as np

from mechanisms import Mechanism, Release
from mechanisms.base import lower_median


class NoCdfRelease(Release):
    def __init__(self, sorted_x: np.ndarray, lower: float, upper: float, scale: float) -> None:
        self.lower, self.upper, self.n = lower, upper, sorted_x.size
        self.true_value = lower_median(sorted_x, lower)
        self.scale = scale

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return self.true_value + rng.laplace(0.0, self.scale, size)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        raise NotImplementedError("a sampler without a cdf")


class LaplaceNoCdf(Mechanism[Release]):
    name = "test_laplace_no_cdf"
    guarantee_source = "Laplace mechanism, global sensitivity b - a"
    noise_factor = 1.0

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        scale = self.noise_factor * (upper - lower) / self.epsilon
        return NoCdfRelease(sorted_x, lower, upper, scale)


class HalfNoiseNoCdf(LaplaceNoCdf):
    name = "test_half_noise_no_cdf"
    noise_factor = 0.5
