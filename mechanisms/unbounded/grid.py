"""The geometric grid of candidate values of Durfee's unbounded quantile estimator.

Durfee, "Unbounded Differentially Private Quantile and Maximum Estimation" (NeurIPS 2023):
with a lower bound ``a`` and a public ratio ``β > 1`` the candidates are

    c_i = a - 1 + β^i,   i = 0, 1, 2, ...,

computed as ``a + expm1(i·log β)`` (no cancellation near ``a``).  ``c_0 = a``; the step
``c_{i+1} - c_i = (β - 1)·β^i`` is ``β - 1`` near ``a`` and a relative ``β - 1`` far from it.
The grid is cut at the public upper bound: the candidates are the ``c_i < t`` for the
*terminal value* ``t`` (``b``, or the largest float64 when ``b = inf``: a public cap, so the
cut is post-processing), and ``t`` itself is released when every candidate is passed.
"""

from __future__ import annotations

import math

import numpy as np

LARGEST = float(np.finfo(np.float64).max)
"""The terminal value of a grid without an upper bound."""


class GeometricGrid:
    """Candidates ``c_i = a - 1 + β^i`` below the terminal value ``t`` (module docstring).

    Attributes: ``lower`` (``a``), ``terminal`` (``t``), ``end`` (``K``, the number of
    candidates ``c_i < t``; index ``K`` stands for ``t``).
    """

    def __init__(self, lower: float, upper: float, beta: float) -> None:
        self.lower = float(lower)
        self.log_beta = math.log(beta)
        self.terminal = float(upper) if math.isfinite(upper) else LARGEST
        self._cap = math.ceil((math.log(LARGEST) + 2.0) / self.log_beta) + 2
        """An index whose candidate overflows for every finite ``a``."""
        self.end = int(self._first(np.array([self.terminal]), strict=False)[0])

    def values(self, index: np.ndarray) -> np.ndarray:
        """``c_i`` for each ``i`` of ``index`` (``t`` at ``i >= K``)."""
        i = np.asarray(index, dtype=np.float64)
        with np.errstate(over="ignore"):
            out = self.lower + np.expm1(i * self.log_beta)
        return np.where(i >= self.end, self.terminal, out)

    def _raw(self, index: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.lower + np.expm1(index.astype(np.float64) * self.log_beta)

    def first_index(self, x: np.ndarray, *, strict: bool) -> np.ndarray:
        """The smallest ``i`` with ``c_i > x`` (``strict``) or ``c_i >= x``, exactly for the
        float candidates of :meth:`values`, capped at ``K`` (int64)."""
        return np.minimum(self._first(x, strict=strict), self.end)

    def _first(self, x: np.ndarray, *, strict: bool) -> np.ndarray:
        """:meth:`first_index` without the cap at ``K``."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            guess = np.log1p(np.maximum(x - self.lower, 0.0)) / self.log_beta
        i = np.clip(np.nan_to_num(guess, posinf=self._cap), 0, self._cap).astype(np.int64)

        def beyond(values: np.ndarray) -> np.ndarray:
            return values > x if strict else values >= x

        for _ in range(4):  # the float guess is off by at most a step or two
            lower_ok = (i > 0) & beyond(self._raw(i - 1))
            i = np.where(lower_ok, i - 1, i)
            i = np.where(beyond(self._raw(i)), i, i + 1)
        return i

    def last_at_most(self, x: np.ndarray) -> np.ndarray:
        """The largest ``i`` with ``c_i <= x`` (``-1`` below ``a``; ``>= K`` at ``x >= t``)."""
        x = np.asarray(x, dtype=np.float64)
        below = self.first_index(x, strict=True) - 1
        return np.where(x >= self.terminal, self.end, below)
