r"""β-smooth sensitivity of the lower median of data in ``[a, b]``.

Definitions (Duff paper, Definitions 3, 5, 6; Nissim, Raskhodnikova & Smith 2007):
``SS_β(S) = max_{k >= 0} e^{-βk} A(k)`` with ``A(k) = max{LS(S') : d(S, S') <= k}``.
Sorted data ``x_1 <= ... <= x_n`` is padded with ``x_i = a`` for ``i <= 0`` and
``x_i = b`` for ``i >= n + 1``; the lower median of the empty set is ``a``
(see :mod:`mechanisms.base`).

Add/remove neighbours (exact; derived here and checked against brute force in
``tests/test_smooth_sensitivity.py``)
-----------------------------------------------------------------------------
For a dataset ``z`` of size ``n'`` with lower median rank ``ceil(n'/2)``, adding
or removing one point moves the lower median only across *one* gap:

    LS(z) = z_{q+1} - z_q,  q = floor(n'/2)

(for odd ``n'`` the gap below the median, for even ``n'`` the gap above).
To make ``x_i`` and ``x_j`` (``0 <= i < j <= n+1``) the two order statistics
around that gap, the ``j-i-1`` points between them must be removed, and the
counts on either side balanced by adding points at ``a``/``b`` (or removing
extremes) until ``#{<= x_i} - #{>= x_j} ∈ {-1, 0}``, which costs
``dist(i + j - n - 1, {-1, 0})``.  Hence

    A(k) = max{x_j - x_i : c(i, j) <= k},
    c(i, j) = (j - i - 1) + max(0, i + j - n - 1, n - i - j).

For ``i + j <= n`` the cost is ``n - 1 - 2i`` (independent of ``j``, so the best
``j`` is ``n - i``); for ``i + j >= n + 1`` it is ``2j - n - 2`` (the best ``i``
is ``n + 1 - j``).  One candidate remains per cost ``k = 0..n``: a window that
widens by one rank per edit, alternating sides,

    A(k) = x_{floor((n+k)/2) + 1} - x_{floor((n-k)/2)},
    SS_β = max_{0 <= k <= n} e^{-βk} A(k).

Since ``A(k) <= b - a``, terms with ``k > (log(b - a) - log best)/β`` cannot win,
so the maximum is found in O(min(n, log((b-a)/LS)/β)) after sorting, ties
included.

Replace-one neighbours (NRS07, Proposition 3.4)
-----------------------------------------------
``A(k) = max_{0 <= t <= k+1} (x_{m+t} - x_{m+t-k-1})`` with ``m`` the median
rank, i.e. ``SS_β = max{(x_j - x_i) e^{-β(j-i-1)} : 0 <= i <= m <= j <= n+1}``.
The row-wise argmax ``j*(i)`` is non-decreasing in ``i`` because
``log(x_j - x_i)`` is supermodular, so a divide-and-conquer over rows evaluates
it in O(n log n) per β (NRS07, section 3.1), vectorised level by level here,
on a window of ranks around the median that doubles until the ``b - a`` bound
rules out everything outside it.
This bound is valid but looser under add/remove neighbours.

Everything is computed in log space: ``e^{-βk}`` never underflows to a wrong
maximum, and zero gaps (ties) are ``-inf`` without numpy warnings.
"""

from __future__ import annotations

import numpy as np

from mechanisms.base import Neighbouring


def _log_positive(values: np.ndarray) -> np.ndarray:
    """``log(values)`` with ``-inf`` for zeros, and no warning."""
    out = np.full(values.shape, -np.inf)
    np.log(values, out=out, where=values > 0)
    return out


def _order_statistics(sorted_x: np.ndarray, ranks: np.ndarray, lower: float, upper: float):
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


def _monotone_max(window: np.ndarray, first_rank: int, m: int, beta: float) -> float:
    """``log max{(x_j - x_i) e^{-β(j-i-1)} : i <= m <= j}`` over ranks held in ``window``.

    ``window[r]`` is ``x_{first_rank + r}``.  Each level of the recursion handles
    all its row intervals at once: for the middle row of each interval it finds
    the smallest column maximising the log score within the interval's column
    window.  Rows whose window is all ``-inf`` (only when ``x_i = b``, a suffix
    of rows) take the last column, which keeps the argmax non-decreasing.
    """
    last = window.size - 1
    m_pos = m - first_rank
    row_lo, row_hi = np.array([0]), np.array([m_pos])
    col_lo, col_hi = np.array([m_pos]), np.array([last])
    best = -np.inf
    # each level replaces every row interval by its parts left and right of its
    # middle row, so the longest interval halves: at most log2(m) + 2 levels
    while row_lo.size:
        mid = (row_lo + row_hi) // 2
        segment, cols, starts = _concatenated_ranges(col_lo, col_hi + 1)
        rows = mid[segment]
        scores = _log_positive(window[cols] - window[rows]) - beta * (cols - rows - 1)
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


class MedianSmoothSensitivity:
    """``SS_β`` of the lower median of ``sorted_x ⊂ [lower, upper]``, for any ``β > 0``.

    Construction is O(1) and keeps a reference to ``sorted_x``; each evaluation
    touches only the ranks that can still win (see the module docstring).  Under
    add/remove neighbours the ``log A(k)`` computed so far are kept, so the many
    evaluations of a tuning search share them.
    """

    _FIRST_WINDOW = 64

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        neighbouring: Neighbouring = Neighbouring.ADD_REMOVE,
    ) -> None:
        self.neighbouring = Neighbouring(neighbouring)
        self._x = sorted_x
        self._lower, self._upper = float(lower), float(upper)
        self._log_range = float(np.log(self._upper - self._lower))
        self._log_gaps = np.empty(0)  # log A(k) for k = 0, 1, ... (add/remove only)
        n = sorted_x.size
        if self.neighbouring is Neighbouring.ADD_REMOVE:
            self.local_sensitivity = float(self._add_remove_gaps(np.array([0]))[0])
        else:
            m = (n + 1) // 2  # rank of the lower median (0 for the empty set, whose median is a)
            near = self._at(np.array([m - 1, m, m + 1]))
            self.local_sensitivity = float(max(near[2] - near[1], near[1] - near[0] if m else 0))

    def _at(self, ranks: np.ndarray) -> np.ndarray:
        return _order_statistics(self._x, ranks, self._lower, self._upper)

    def _add_remove_gaps(self, costs: np.ndarray) -> np.ndarray:
        """A(k) = x_{floor((n+k)/2)+1} - x_{floor((n-k)/2)} for each cost k."""
        n = self._x.size
        return self._at((n + costs) // 2 + 1) - self._at((n - costs) // 2)

    def _log_gaps_below(self, count: int) -> np.ndarray:
        """``log A(k)`` for ``k < count`` (``count <= n + 1``), from a cache grown by doubling."""
        have = self._log_gaps.size
        if have < count:
            size = min(self._x.size + 1, max(count, 2 * have))
            more = _log_positive(self._add_remove_gaps(np.arange(have, size)))
            self._log_gaps = np.concatenate((self._log_gaps, more))
        return self._log_gaps[:count]

    def _log_add_remove(self, betas: np.ndarray) -> np.ndarray:
        """All β at once: gaps for costs ``0..K``, ``K`` doubling for each β until it cannot gain.

        Each doubling scores only the new costs ``K_old + 1..K`` of the β still
        open (the maximum of a union is the maximum of the parts' maxima).
        """
        n = self._x.size
        best = np.full(betas.size, -np.inf)
        open_ = np.arange(betas.size)
        start, stop = 0, min(n + 1, self._FIRST_WINDOW)
        while True:  # stop doubles until n + 1: at most log2(n + 1) rounds
            costs = np.arange(start, stop)
            part = self._log_gaps_below(stop)[start:][None, :] - np.outer(betas[open_], costs)
            best[open_] = np.maximum(best[open_], part.max(axis=1))
            if stop == n + 1:
                return best
            # costs >= stop score at most log(b - a) - β·stop
            open_ = open_[self._log_range - betas[open_] * stop > best[open_]]
            if not open_.size:
                return best
            start, stop = stop, min(n + 1, 2 * stop)

    def _log_replace_one(self, beta: float) -> float:
        n = self._x.size
        m = (n + 1) // 2
        half = self._FIRST_WINDOW
        while True:  # half doubles until the window holds all ranks: at most log2(n) rounds
            first, stop = max(0, m - half), min(n + 1, m + half)
            best = _monotone_max(self._at(np.arange(first, stop + 1)), first, m, beta)
            # a pair reaching outside the window spans more than `half` ranks
            if (first == 0 and stop == n + 1) or self._log_range - beta * half <= best:
                return best
            half *= 2

    def log(self, beta: float | np.ndarray) -> float | np.ndarray:
        """``log SS_β``, elementwise for an array of ``β >= 0``.

        ``SS_0 = max_k A(k) = b - a`` (the global sensitivity): the limit used
        when ε is so small that the smoothness parameter underflows.
        """
        betas = np.asarray(beta, dtype=np.float64)
        if not (np.isfinite(betas).all() and (betas >= 0).all()):
            raise ValueError(f"beta must be non-negative and finite, got {beta!r}")
        flat = betas.reshape(-1)
        # -β·k may overflow to -inf for huge β: the weight e^{-βk} is then exactly 0
        with np.errstate(over="ignore"):
            if self.neighbouring is Neighbouring.ADD_REMOVE:
                result = self._log_add_remove(flat)
            else:
                result = np.array([self._log_replace_one(float(b)) for b in flat])
        result = result.reshape(betas.shape)
        return float(result) if result.ndim == 0 else result

    def __call__(self, beta: float | np.ndarray) -> float | np.ndarray:
        """``SS_β``, elementwise for an array of ``β > 0``."""
        return np.exp(self.log(beta))
