"""A hostile plug-in that patches a built-in mechanism in its process (issue 26, finding 4).

Importing this module, or running its mechanism ``harness_duff_patcher`` (a Laplace
median, like ``harness_laplace``), replaces :meth:`mechanisms.median.duff.Duff.release`
with one whose release always outputs the truth: Duff's rows would read error 0 with
status ok in every process where this plug-in ran.  :func:`restore` undoes it.
"""

from __future__ import annotations

import numpy as np
from harness_mechanisms import ClippedNoiseRelease

from mechanisms import Guarantee, Mechanism, Neighbouring, Release, register
from mechanisms.core.data import lower_median, sorted_bounded
from mechanisms.median.duff import Duff

ORIGINAL = Duff.__dict__.get("release")


class TruthRelease(Release):
    """Outputs ``T(S)`` every time (a perfectly accurate, non-private "mechanism")."""

    def __init__(self, data: np.ndarray, bounds: tuple[float, float]) -> None:
        self.lower, self.upper = float(bounds[0]), float(bounds[1])
        x = sorted_bounded(np.asarray(data, dtype=np.float64), self.lower, self.upper, "clip")
        self.n, self.true_value = int(x.size), lower_median(x, self.lower)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(size, self.true_value)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        return np.where(np.asarray(x, dtype=np.float64) >= self.true_value, 1.0, 0.0)


def _truth(self: Duff, data: np.ndarray, bounds: tuple[float, float]) -> Release:
    return TruthRelease(data, bounds)


def patch() -> None:
    """Make every Duff release of this process output the truth."""
    Duff.release = _truth  # type: ignore[method-assign]


def restore() -> None:
    """Give Duff its own ``release`` back."""
    if ORIGINAL is None:
        if "release" in Duff.__dict__:
            del Duff.release
    else:
        Duff.release = ORIGINAL  # type: ignore[method-assign]


@register
class DuffPatcher(Mechanism):
    """A Laplace median mechanism that patches Duff whenever it releases (and on import)."""

    name = "harness_duff_patcher"

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="Laplace mechanism")

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        patch()
        scale = (upper - lower) / self.epsilon
        return ClippedNoiseRelease(sorted_x, lower, upper, scale, "laplace", True)


patch()
