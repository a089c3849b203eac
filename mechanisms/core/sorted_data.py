r"""Row-monotone maxima of ``(w_j - w_i) e^{-β(cost_i + cost_j)}`` over rectangles of positions.

NRS07 (Nissim, Raskhodnikova & Smith 2007, "Smooth sensitivity and sampling in
private data analysis", section 3.1): when ``log(w_j - w_i)`` is supermodular
(``w`` sorted) and the cost is a function of the row plus one of the column, the
smallest column maximising a row is non-decreasing in the row on any rectangle,
so a divide and conquer over the rows finds the maximum with O(size · log)
evaluations.  Shared by the smooth sensitivity of order statistics
(:mod:`mechanisms.smooth.sensitivity`, :mod:`mechanisms.smooth.quantile_add_remove`) and
of the trimmed mean (:mod:`mechanisms.smooth.trimmed_mean`).  Everything is in log space:
zero differences (ties) are ``-inf`` without numpy warnings.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

Rectangles = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""``(row_lo, row_hi, col_lo, col_hi)`` position arrays, inclusive, of non-empty rectangles."""


class SortedData(Protocol):
    """Sorted data as read by the smooth-sensitivity computations: ``size`` and order
    statistics by 0-based position (a sorted array, or data sorted only where read:
    :class:`mechanisms.smooth.selection.SelectedOrder`,
    :class:`mechanisms.smooth.tuning.EvenlySpaced`)."""

    @property
    def size(self) -> int: ...

    def __getitem__(self, index: Any, /) -> Any:
        """``x_(index + 1)``: a float for an ``int``, an array for an integer array."""


def log_positive(values: np.ndarray) -> np.ndarray:
    """``log(values)`` with ``-inf`` for zeros, and no warning."""
    out = np.full(values.shape, -np.inf)
    np.log(values, out=out, where=values > 0)
    return out


def order_statistics(
    sorted_x: SortedData, ranks: np.ndarray, lower: float, upper: float
) -> np.ndarray:
    """``x_rank`` for 1-based ranks, padded with ``lower`` below 1 and ``upper`` above n."""
    n = sorted_x.size
    if n == 0:
        return np.where(ranks < 1, lower, upper)
    inside = sorted_x[np.minimum(np.maximum(ranks - 1, 0), n - 1)]  # np.clip is slower
    return np.where(ranks < 1, lower, np.where(ranks > n, upper, inside))


def _concatenated_ranges(
    starts: np.ndarray, stops: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenate ``range(start, stop)`` (all non-empty) over segments.

    Returns ``(segment id, value, offset of each segment)`` for the flat array.
    """
    lengths = stops - starts
    segment = np.repeat(np.arange(starts.size), lengths)
    offsets = np.cumsum(lengths) - lengths
    values = np.arange(lengths.sum()) - np.repeat(offsets - starts, lengths)
    return segment, values, offsets


def monotone_max(
    window: np.ndarray,
    row_cost: np.ndarray,
    col_cost: np.ndarray,
    rectangles: Rectangles,
    beta: float,
) -> float:
    """``log max (w_j - w_i) e^{-β(row_cost_i + col_cost_j)}`` over cells of the rectangles.

    ``window``, ``row_cost`` and ``col_cost`` are indexed by position.  Each
    level of the recursion handles all row intervals of all rectangles at once:
    for the middle row of each interval it finds the smallest column maximising
    the log score within the interval's column window (exact on a rectangle,
    where the argmax is non-decreasing: the score is supermodular).  Rows whose
    window is all ``-inf`` (``w_j <= w_i`` throughout, which then also holds for
    the rows below) take the last column, which keeps the argmax non-decreasing.
    """
    row_lo, row_hi, col_lo, col_hi = rectangles
    last = window.size - 1
    best = -np.inf
    # each level replaces every row interval by its parts left and right of its
    # middle row, so the longest interval halves: at most log2(rows) + 2 levels
    while row_lo.size:
        mid = (row_lo + row_hi) // 2
        segment, cols, starts = _concatenated_ranges(col_lo, col_hi + 1)
        rows = mid[segment]
        cost = np.maximum(row_cost[rows] + col_cost[cols], 0)  # < 0 only where w_j - w_i <= 0
        scores = log_positive(window[cols] - window[rows]) - beta * cost
        seg_max = np.maximum.reduceat(scores, starts)
        best = max(best, float(seg_max.max()))
        hit = (scores == seg_max[segment]) & np.isfinite(scores)
        first = np.minimum.reduceat(np.where(hit, cols, last + 1), starts)
        arg = np.where(first <= last, first, col_hi)
        left = mid > row_lo
        right = mid < row_hi
        row_lo, row_hi, col_lo, col_hi = (
            np.concatenate((row_lo[left], mid[right] + 1)),
            np.concatenate((mid[left] - 1, row_hi[right])),
            np.concatenate((col_lo[left], arg[right])),
            np.concatenate((arg[left], col_hi[right])),
        )
    return best


def staircase_rectangles(starts: np.ndarray, end: int) -> Rectangles:
    """Rectangles covering ``{(i, j) : starts[i] <= j <= end}``, ``starts`` non-increasing.

    Rows ``r0..r1-1`` with column end ``e`` (all rows at first): the middle row
    ``m`` gives the rectangle rows ``m..r1-1`` times columns ``starts[m]..e``;
    the rows above ``m`` keep the end ``e``, the rows below it get
    ``min(e, starts[m] - 1)``.  Rectangles of one level have disjoint columns.
    """
    r0, r1, e = np.array([0]), np.array([starts.size]), np.array([end])
    parts = [(r0[:0], r0[:0], r0[:0], r0[:0])]
    while r0.size:
        live = r0 < r1
        r0, r1, e = r0[live], r1[live], e[live]
        live = starts[r1 - 1] <= e  # the last row has the longest domain
        r0, r1, e = r0[live], r1[live], e[live]
        mid = (r0 + r1) // 2
        start = starts[mid]
        has = start <= e
        parts.append((mid[has], r1[has] - 1, start[has], e[has]))
        r0, r1, e = (
            np.concatenate((r0, mid + 1)),
            np.concatenate((mid, r1)),
            np.concatenate((e, np.minimum(e, start - 1))),
        )
    row_lo, row_hi, col_lo, col_hi = (np.concatenate(column) for column in zip(*parts, strict=True))
    return row_lo, row_hi, col_lo, col_hi
