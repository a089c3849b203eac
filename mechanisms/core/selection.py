"""Order statistics by selection: bounded data sorted only in the window of ranks a release reads.

A rank-based exponential mechanism (Duff, the quantile EM) needs the order
statistics ``x_(i)`` only in a window of ranks around its mode: outside it every
gap's float64 weight is exactly 0 (:mod:`mechanisms.sampling.piecewise`).  So instead of
sorting all ``n`` points (``O(n log n)``), :class:`OrderStatistics` finds the
window's values in ``O(n)`` and sorts them alone (``O(w log w)``), as in Floyd &
Rivest's selection ("Expected time bounds for selection", 1975):

1. two values ``v_lo <= v_hi`` that probably enclose the window are read off a
   deterministic sample (every ``stride``-th point, ``stride >= 16``, at most about
   ``2**16`` points), at the window's sample ranks widened by 5 standard deviations
   of a sample rank (a window that reaches rank 1 or n is open on that side);
2. one pass counts the points below ``v_lo`` and gathers those in ``[v_lo, v_hi]``;
   if the count shows that they hold every rank of the window, they are sorted and
   kept as the block of ranks ``[below, below + gathered)``;
3. otherwise (an unlucky sample, many ties) the window is selected by
   ``numpy.partition`` (introselect, Musser, "Introspective sorting and selection
   algorithms", 1997) and sorted.

Either way the block holds exactly the values a full sort puts at those ranks, so a
release built on it is the same, bit for bit, as one built on the full sort: the
sample only decides how fast, never what.  Reads outside the block widen it, and
:meth:`OrderStatistics.searchsorted` answers from the block only when that is exact
(points of lower rank are ``<=`` its first value, points of higher rank ``>=`` its
last; with ties at an end that has points beyond it the counts would be ambiguous,
and the whole array is sorted instead).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np

SAMPLE_SIZE = 1 << 16
"""Points of the deterministic sample that locates the window (step 1)."""
MIN_STRIDE = 16
"""At most every 16th point is sampled: the sample's own selection stays cheap."""
MIN_SAMPLED = 1 << 12
"""Below this many points :meth:`OrderStatistics.select` sorts the data whole, and a window
read without it is selected by ``numpy.partition`` directly.

The whole sort of a Duff or quantile EM release (plus 100 draws, ε from 0.1 to 10) costs
less than selection up to about ``2**14`` points; the limit stays at ``2**12`` because
moving it would move numbers: a sort and a selection may put the tied ``-0.0`` and ``0.0``
of the data in different orders (equal values, different bits)."""
MARGIN_SDS = 5.0
"""How many binomial standard deviations of a sample rank the enclosing values are widened by."""


class OrderStatistics:
    """``x_(1) <= ... <= x_(n)`` of bounded data, sorted only where read (module docstring).

    Indexing (an ``int`` position, or a slice with step 1) and ``searchsorted``
    behave as on the sorted array, which :meth:`sorted` returns; ``size`` is ``n``.
    The array passed in is taken over (and may be rearranged).  ``within``, when
    given, is an interval the values are known to lie in (they were bounded to it).
    """

    def __init__(self, values: np.ndarray, within: tuple[float, float] | None = None) -> None:
        if values.ndim != 1 or values.dtype != np.float64:
            raise ValueError("values must be a 1-D float64 array")
        self._x = values
        self.size = int(values.size)
        self.within = within
        self._block = values[:0]  # the sorted values of ranks [start, stop)
        self._start = 0

    @classmethod
    def of_sorted(cls, sorted_x: np.ndarray) -> OrderStatistics:
        """Already sorted data (not copied if float64)."""
        order = cls(np.asarray(sorted_x, dtype=np.float64))
        order._block = order._x
        return order

    @property
    def window(self) -> tuple[int, int]:
        """The ranks (0-based positions) ``[start, stop)`` sorted so far."""
        return self._start, self._start + self._block.size

    def extremes(self) -> tuple[float, float]:
        """``(x_(1), x_(n))`` (one pass each unless the block holds them)."""
        if self._block.size == self.size:
            return float(self._block[0]), float(self._block[-1])
        return float(self._x.min()), float(self._x.max())

    def select(self, likely: Callable[[], tuple[int, int]]) -> None:
        """Sort the ranks ``likely()`` names, before they are read; data below
        :data:`MIN_SAMPLED` points are sorted whole (selection would not pay there)."""
        if self._block.size == self.size:
            return
        if self.size < MIN_SAMPLED:
            self._sort_whole()
        else:
            self.prepare(*likely())

    def prepare(self, start: int, stop: int) -> None:
        """Make the block hold (at least) ranks ``[start, stop)``, clamped to ``[0, n)``."""
        start, stop = max(0, start), min(self.size, stop)
        old_start, old_stop = self.window
        if start >= stop or (old_start <= start and stop <= old_stop):
            return
        if old_stop > old_start:  # the new block covers the old one
            start, stop = min(start, old_start), max(stop, old_stop)
        if stop - start >= self.size // 2:  # selection would not pay: sort everything
            self._sort_whole()
        elif not self._gather(start, stop):
            self._x.partition(sorted({start, stop - 1}))
            self._block, self._start = np.sort(self._x[start:stop]), start

    def _gather(self, start: int, stop: int) -> bool:
        """Steps 1 and 2 of the module docstring; False when the sample missed the window."""
        if self.size < MIN_SAMPLED:
            return False
        stride = max(MIN_STRIDE, self.size // SAMPLE_SIZE)
        sample = self._x[::stride]
        m = sample.size
        margin = MARGIN_SDS * math.sqrt(m) / 2.0 + 2.0
        low = math.floor(start * m / self.size - margin)
        high = math.ceil(stop * m / self.size + margin)
        ranks = [k for k in (low, high) if 0 <= k < m]
        chosen = np.partition(sample, ranks)[ranks] if ranks else ()
        values = dict(zip(ranks, chosen, strict=True))
        v_lo, v_hi = values.get(low, -math.inf), values.get(high, math.inf)
        at_least = self._x >= v_lo
        below = self.size - int(np.count_nonzero(at_least))
        at_least &= self._x <= v_hi
        if below > start:
            return False
        gathered = self._x[at_least]
        if below + gathered.size < stop:
            return False
        gathered.sort()
        self._block, self._start = gathered, below
        return True

    def _sort_whole(self) -> None:
        """Sort the whole array in place and make it the block."""
        self._x.sort()
        self._block, self._start = self._x, 0

    def sorted(self) -> np.ndarray:
        """The whole sorted array (sorts it on first use)."""
        if self._block.size != self.size:
            self._sort_whole()
        return self._block

    def __getitem__(self, index: int | slice) -> float | np.ndarray:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.size)
            if step != 1:
                raise ValueError("OrderStatistics slices must have step 1")
            if stop <= start:
                return self._x[:0]
            self.prepare(start, stop)
            return self._block[start - self._start : stop - self._start]
        position = index + self.size if index < 0 else index
        if not 0 <= position < self.size:
            raise IndexError(f"order statistic {index} of {self.size}")
        self.prepare(position, position + 1)
        return float(self._block[position - self._start])

    def searchsorted(self, value: float, side: Literal["left", "right"] = "left") -> int:
        """``numpy.searchsorted`` on the sorted array, from the block when that is exact: the
        points of lower rank (all ``<= block[0]``) must all count, those of higher rank (all
        ``>= block[-1]``) none."""
        block, start = self._block, self._start
        stop = start + block.size
        lower_ranks_count = start == 0 or (block.size > 0 and block[0] < value)
        higher_ranks_do_not = stop == self.size or (
            block.size > 0 and (value < block[-1] or (side == "left" and value == block[-1]))
        )
        if lower_ranks_count and higher_ranks_do_not:
            return start + int(np.searchsorted(block, value, side=side))
        return int(np.searchsorted(self.sorted(), value, side=side))
