"""The noise laws of the noisy-max selections, and the clamping of their scale.

Report noisy max adds ``Lap(b)`` noise to every count (Dwork & Roth, "The
Algorithmic Foundations of Differential Privacy", Claim 3.9); permute-and-flip is
report noisy max with exponential noise of scale ``b`` (Ding, Kifer, Saghaian N. E.,
Steinke, Wang, Xiao & Zhang, "The Permute-and-Flip Mechanism is Identical to
Report-Noisy-Max with Exponential Noise").  :class:`Noise` gives, per law, what the
draw (:mod:`mechanisms.mode.report_noisy_max`) and the exact integrals
(:mod:`mechanisms.mode.noisy_max_integral`) need: ``log F``, ``log f``, the hazard
``f/F = (log F)'``, ``(log f)'`` and the largest of ``m`` noises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LN2 = math.log(2.0)
SMALLEST_EPSILON = 1e-300
"""ε below this is raised to it: every count difference (below ``2**54``) is then under
``1e-283`` noise scales: every probability is the ``ε -> 0`` limit to ``1e-283``."""
LOG_RANGE = 2.0**40
"""ε above ``2**40/(n + 1)`` is lowered to it (the mechanism then is more private than
claimed).  Log probabilities stay below ``2**40`` in size, so they are resolved to
``2**-12``, far below the ``e^{-50}`` the integration works to; and for ``n < 2**30`` the
cap exceeds 1024, where every level below the top has probability below
``2**54·e^{-1024}``: 0 in float64 at both ε, so samples are those of the given ε."""


def noise_scale(epsilon: float, n: int, factor: float = 1.0) -> float:
    """``factor/ε`` for data of size ``n``, ε clamped to ``[1e-300, 2**40/(n + 1)]``
    (:data:`SMALLEST_EPSILON`, :data:`LOG_RANGE`)."""
    return factor / min(max(epsilon, SMALLEST_EPSILON), LOG_RANGE / (n + 1))


@dataclass(frozen=True)
class Noise:
    """The law of the noise added to each count: ``kind`` ``"laplace"`` or ``"exponential"``.

    Laplace: density ``e^{-|x|/b}/(2b)``; exponential: ``e^{-x/b}/b`` on ``x >= 0`` (``b``
    the ``scale``).  All functions are elementwise on arrays of any shape, each branch by
    the formula that keeps its precision:

    * Laplace: ``log F = log(1 - e^{-x/b}/2)`` (``log1p``) for ``x >= 0``, ``x/b - log 2``
      below; ``f/F = e^{-x⁺/b}/(b(2 - e^{-x⁺/b}))``;
    * exponential (``y = x/b``): ``log F = log(-expm1(-y))`` for ``0 < y < log 2``,
      ``log1p(-e^{-y})`` above, ``-inf`` for ``x <= 0``; ``f/F = e^{-y}/(-b·expm1(-y))``
      for ``x > 0``, ``+inf`` for ``x <= 0`` (where ``F = 0``).

    :meth:`log_terms` and :meth:`slope_terms` evaluate the cheap branches everywhere, for
    the integrals (:mod:`mechanisms.mode.noisy_max_integrand`), under the caller's
    ``np.errstate``; :meth:`log_cdf`, :meth:`log_pdf` and :meth:`largest` raise no
    warnings.
    """

    kind: str
    scale: float

    @property
    def laplace(self) -> bool:
        return self.kind == "laplace"

    def log_terms(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log F(x), log f(x))``.  The branches not taken may overflow or divide by
        zero: call under ``np.errstate(all="ignore")`` (:meth:`log_cdf` and
        :meth:`log_pdf` do)."""
        b = self.scale
        if self.laplace:
            tail = np.abs(x) / -b  # log of e^{-|x|/b}: x/b below 0
            upper = np.log1p(np.exp(tail) * -0.5)
            return np.where(x >= 0, upper, tail - LN2), tail - math.log(2.0 * b)
        y = x / b
        log_cdf = np.where(y >= LN2, np.log1p(-np.exp(-y)), -np.inf)
        small = (x > 0) & (y < LN2)  # y underflowing to 0 gives -inf
        if small.any():
            log_cdf[small] = np.log(-np.expm1(-y[small]))
        return log_cdf, np.where(x >= 0, -y - math.log(b), -np.inf)

    def slope_terms(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | float]:
        """``(f/F(x), (log f)'(x))``, the derivative from the left (at a kink the
        integration looks left); under ``np.errstate`` as :meth:`log_terms`."""
        b = self.scale
        if self.laplace:
            tail = np.exp(np.maximum(x, 0.0) / -b)
            return tail / (b * (2.0 - tail)), np.where(x <= 0, 1.0 / b, -1.0 / b)
        y = -x / b
        hazard = np.where(x > 0, np.exp(y) / (-b * np.expm1(y)), np.inf)
        return hazard, -1.0 / b

    def log_cdf(self, x: np.ndarray) -> np.ndarray:
        """``log F(x)``."""
        with np.errstate(all="ignore"):
            return self.log_terms(np.asarray(x, dtype=np.float64))[0]

    def log_pdf(self, x: np.ndarray) -> np.ndarray:
        """``log f(x)``."""
        with np.errstate(all="ignore"):
            return self.log_terms(np.asarray(x, dtype=np.float64))[1]

    def largest(self, log_u: np.ndarray) -> np.ndarray:
        """``F^{-1}(e^{log_u})``: with ``log_u = log(V)/m`` the largest of ``m`` noises."""
        b = self.scale
        with np.errstate(divide="ignore"):  # log_u = 0 (E = 0) gives +inf: that level wins
            tail = np.log(-np.expm1(log_u))  # log(1 - u)
        if not self.laplace:
            return -b * tail
        return np.where(log_u < -LN2, b * (log_u + LN2), -b * (LN2 + tail))
