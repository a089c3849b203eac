r"""Smooth-sensitivity releases by selection: only a window of ranks around the quantile is sorted.

``SS_β(S) = max_k e^{-βk} A(k)`` (:mod:`mechanisms.smooth.sensitivity`) reads the
order statistics at ranks within ``k`` (median, add/remove: ``k/2``) of the
quantile's rank ``r`` only, and only for ``k`` up to where ``e^{-βk}(b - a)``
falls below the maximum found so far, ``K ≈ log((b - a)/SS_β)/β``: the
computation widens its window of ranks until a bound proves that nothing outside
can change the maximum.  So instead of sorting all ``n`` points, the release
reads them through :class:`SelectedOrder`, which sorts the window it is asked
for by selection (:class:`mechanisms.core.selection.OrderStatistics`, ``O(n)``) and
widens it, by another selection, when a read falls outside.  The values read
are those of the full sort, so the release is the same, bit for bit; the window
chosen in advance only decides how fast.  The exception, sorted whole: a quantile
equal to zero, since a selection may order tied ``-0.0`` and ``0.0`` differently
from the sort (equal values, different bits, and the quantile is the release's
centre).

The window chosen in advance (:func:`likely_positions`) holds the costs that
:func:`mechanisms.smooth.median_envelope.likely_costs` expects the smallest β the release
evaluates to need; denser data than it guesses, or ties, only cost another
selection pass.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import cast, overload

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Release
from mechanisms.core.quantiles import quantile_rank
from mechanisms.core.selection import OrderStatistics
from mechanisms.core.sorted_data import SortedData
from mechanisms.noise.additive import QuantileNoiseMechanism
from mechanisms.smooth.median_envelope import likely_costs
from mechanisms.smooth.sensitivity import is_median

MIN_HALF_WIDTH = 64
"""Every smooth-sensitivity computation reads at least 64 ranks on each side."""
WIDENING = 4
"""A read outside the window makes it at least 4 times as wide."""


class SelectedOrder:
    """The sorted bounded data, read through :class:`OrderStatistics` (module docstring).

    Indexing by an ``int`` position or an integer array of positions gives what the
    sorted array gives; the positions read are sorted first, with their neighbours.
    """

    def __init__(self, order: OrderStatistics) -> None:
        self._order = order
        self.size = order.size
        self._start = 0
        self._block = np.empty(0)

    def select(self, start: int, stop: int) -> None:
        """Sort positions ``[start, stop)`` (all data below the selection threshold)."""
        self._order.select(lambda: (start, stop))
        self._start, stop = self._order.window
        self._block = cast(np.ndarray, self._order[self._start : stop])

    @overload
    def __getitem__(self, index: int) -> float: ...
    @overload
    def __getitem__(self, index: np.ndarray) -> np.ndarray: ...
    def __getitem__(self, index: int | np.ndarray) -> float | np.ndarray:
        if isinstance(index, (int, np.integer)):
            if not self._start <= index < self._start + self._block.size:
                self.select(index - MIN_HALF_WIDTH, index + MIN_HALF_WIDTH)
            return float(self._block[index - self._start])
        if not index.size:
            return self._block[:0]
        low, high = int(index.min()), int(index.max()) + 1
        stop = self._start + self._block.size
        if low < self._start or high > stop:
            half = WIDENING * max(self._block.size, MIN_HALF_WIDTH) // 2
            self.select(min(low, self._start - half), max(high, stop + half))
        return self._block[index - self._start]


def likely_positions(
    n: int, alpha: float, neighbouring: Neighbouring, beta: float | None
) -> tuple[int, int]:
    """The positions ``[start, stop)`` that ``SS_β`` of the α-quantile most likely reads
    (module docstring): all of them for β = 0, only the quantile's for ``beta=None``.

    The computations widen their windows of costs by doubling from 64, so the guess is
    rounded up to ``64·2^j``; the median's add/remove costs ``k`` reach ``k/2`` ranks out.
    """
    r = quantile_rank(n, alpha)
    if beta is None:
        return r - 1, r
    costs = min(likely_costs(n, beta), 2.0 * (n + 1))
    costs = MIN_HALF_WIDTH * 2.0 ** math.ceil(
        math.log2(max(costs, MIN_HALF_WIDTH) / MIN_HALF_WIDTH)
    )
    median = is_median(alpha) and neighbouring is Neighbouring.ADD_REMOVE
    half = MIN_HALF_WIDTH + math.ceil(min(costs / 2 if median else costs, n))
    return r - 1 - half, r + half


class SmoothSensitivityMechanism(QuantileNoiseMechanism):
    """A quantile noise mechanism scaled by ``SS_β``, released from the order statistics it
    reads (module docstring).

    :meth:`_release_ordered` builds the release from sorted data or a
    :class:`SelectedOrder`; ``_release(sorted_x)`` stays the hook a subclass may
    replace: one that does gets the fully sorted data, as
    :class:`mechanisms.core.interface.Mechanism` promises.
    """

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return self._release_ordered(sorted_x, lower, upper)

    def _release_from(self, order: OrderStatistics, lower: float, upper: float) -> Release:
        if type(self)._release is not SmoothSensitivityMechanism._release:
            return super()._release_from(order, lower, upper)
        data = SelectedOrder(order)
        n = order.size
        data.select(*likely_positions(n, self.alpha, self.neighbouring, self.smallest_beta(n)))
        # Sorted whole (small data, or a wide window); or the quantile is zero, whose sign
        # bit (-0.0 and 0.0 tie) only the full sort of the data as given reproduces.
        if order.window == (0, n) or data[quantile_rank(n, self.alpha) - 1] == 0.0:
            return self._release_ordered(order.sorted(), lower, upper)
        return self._release_ordered(data, lower, upper)

    @abstractmethod
    def smallest_beta(self, n: int) -> float | None:
        """The smallest β at which a release on ``n`` points evaluates ``SS_β`` (``None``:
        none); only a guess of the window to select, never of the result."""

    @abstractmethod
    def _release_ordered(self, sorted_x: SortedData, lower: float, upper: float) -> Release:
        """Build the release from the sorted data inside ``[lower, upper]``."""
