r"""``log SS_β`` of the α-quantile, α ≠ 1/2, under add/remove neighbours: a two-dimensional search.

With the cost ``c(i, j)`` of a pair ``x_i < x_j`` derived in
:mod:`mechanisms.smooth.sensitivity` (``F``, ``φ(i) = n + 1 - F(i)`` and
``D(i) = i - F(i)`` as there),

* ``j <= φ(i) - 1``: ``c = φ(i) - i - 2``, the same for all such ``j``, so the
  best pair of row ``i`` there is ``(i, φ(i) - 1)``: one candidate per row;
* ``j >= φ(i)``: ``c = 2j - n - 2 - D(i)``.

For α ≠ 1/2, ``D`` grows and the second case leaves a staircase of O(k)
candidates per cost ``k`` (about ``k/2`` for α = 3/4: a lower ``x_i`` costs as
much as a higher ``x_j``), a genuinely two-dimensional maximum, so ``SS_β`` is
computed for each β directly as ``max (x_j - x_i) e^{-β c(i, j)}``.
The first case is a vector over the rows.  In the second the cost is a function
of ``i`` plus one of ``j`` and ``log(x_j - x_i)`` is supermodular, so on any
rectangle the row argmax is non-decreasing (NRS07, section 3.1;
:func:`mechanisms.core.sorted_data.monotone_max`); the domain ``φ(i) <= j`` has
starts that fall as ``i`` grows, the wrong way for one such search, so it is cut
into rectangles by halving the rows (rows ``m..`` times columns ``φ(m)..``; then
the rows above ``m``, and the rows below ``m`` up to column ``φ(m) - 1``):
``log2`` levels of column-disjoint rectangles, each searched in O(size · log).
Only a window of ranks around the zero-cost gap is searched: a pair reaching
below rank ``lo`` costs at least ``c(lo - 1, lo)``, one reaching above ``hi`` at
least ``c(hi, hi + 1)``, and the window grows until
``log(b - a) - β·min(those) <= best`` (to the half-width
``(log(b - a) - best)/β``, which suffices since ``c(s, s + 1)`` is at least
``t - 1`` at distance ``t`` from the zero-cost gap, or at least doubling).
Cost O(W log² W) per β for a window of ``W = O(min(n, log((b - a)/LS)/β))`` ranks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from mechanisms.core.quantiles import exact_alpha
from mechanisms.core.sorted_data import log_positive, monotone_max, staircase_rectangles

FIRST_WINDOW = 64
"""Half-width of the first window of ranks searched around the zero-cost gap."""


def _floor_ratio(numerator: int, offset: int, denominator: int, values: np.ndarray) -> np.ndarray:
    """``floor((numerator·v + offset)/denominator)`` exactly for int64 ``values >= 0``.

    In int64 while the product, the offset and the denominator stay below ``2**62``,
    else in Python integers: α written with many digits has a large numerator, and a
    small α (``1/7000`` is ``14285714285714287/10**20``) a denominator beyond int64,
    whatever the data's size.
    """
    largest = numerator * (int(values.max(initial=0)) + 1) + abs(offset)
    if largest < 2**62 and denominator < 2**62:
        return (values * numerator + offset) // denominator
    exact = (values.astype(object) * numerator + offset) // denominator
    return exact.astype(np.int64)


class QuantileAddRemove:
    """``log SS_β`` of the α-quantile under add/remove neighbours by the search above.

    ``at`` maps 1-based ranks to the padded order statistics (``a`` below 1, ``b``
    above ``n``); ``log_range`` is ``log(b - a)``.  Construction reads no data
    beyond the one or two gaps of the local sensitivity.
    """

    def __init__(
        self, at: Callable[[np.ndarray], np.ndarray], n: int, alpha: float, log_range: float
    ) -> None:
        self._at = at
        self._n = n
        self._log_range = log_range
        self._setup_costs(exact_alpha(alpha))
        gaps = np.arange(self.centre, min(self.centre + 2, n + 1))
        gaps = gaps[self._gap_cost(gaps) == 0]  # (L): one or two gaps
        self.local_sensitivity = float(np.max(self._y(gaps + 1) - self._y(gaps)))

    def _setup_costs(self, alpha: Fraction) -> None:
        """``F`` of :mod:`mechanisms.smooth.sensitivity`, the mirroring for α < 1/2, and a
        zero-cost gap.

        ``F(i) = floor((p·i + offset)/q)`` with ``ρ = p/q``: ``floor(ρ i)``, or
        ``ceil(ρ i) - 1 = floor((p·i - 1)/q)`` when mirrored.
        """
        self._mirrored = alpha < Fraction(1, 2)
        ratio = alpha / (1 - alpha) if self._mirrored else (1 - alpha) / alpha
        self._p, self._q = ratio.numerator, ratio.denominator
        self._offset = -1 if self._mirrored else 0
        # The first gap s with n - s - F(s) <= 1: it falls by 1 or 2 per step from
        # n - F(0) >= 0 to -F(n) <= 0, so it is 0 or 1 there and c(s, s + 1) = 0.
        low, high = 0, self._n
        while low < high:
            mid = (low + high) // 2
            if self._n - mid - int(self._f(np.array([mid]))[0]) <= 1:
                high = mid
            else:
                low = mid + 1
        self.centre = low  # a gap of cost 0, where the search starts

    def _f(self, i: np.ndarray) -> np.ndarray:
        return _floor_ratio(self._p, self._offset, self._q, i)

    def _y(self, ranks: np.ndarray) -> np.ndarray:
        """Padded order statistics, of the mirrored data ``-x_{n+1-rank}`` for α < 1/2."""
        if self._mirrored:
            return -self._at(self._n + 1 - ranks)
        return self._at(ranks)

    def _gap_cost(self, gaps: np.ndarray) -> np.ndarray:
        """``c(s, s + 1) = dist(n - s, {F(s), F(s) + 1})``."""
        u = self._n - gaps - self._f(gaps)
        return np.maximum(np.maximum(-u, u - 1), 0)

    def log_widths(self, start: int, stop: int) -> np.ndarray:
        """``ℓ_k = log A(k) = log max{y_j - y_i : c(i, j) <= k}`` for ``start <= k < stop``.

        ``c`` is non-decreasing in ``j`` and the ``y`` are sorted, so each row ``i`` gives
        its pair of largest ``j`` within the cost.  First case: ``(i, φ(i) - 1)`` when
        ``φ(i) - 1 > i``, of cost ``φ(i) - i - 2``; a running maximum over the costs.
        Second case: ``j = floor((k + e_i)/2)`` with ``e_i = n + 2 + D(i)``, valid when
        ``j >= max(φ(i), i + 1)`` (beyond ``n + 1`` the padded ``y`` is ``b``); that is
        ``h + floor(e_i/2)`` with ``h = floor(k/2)`` for even ``e_i`` and ``ceil(k/2)`` for
        odd, so one maximum per parity and ``h``: half the costs.  A row at distance ``t``
        from the centre pays at least ``t - 1`` (module docstring), so only the rows within
        ``stop + 1`` of it are read.
        """
        n = self._n
        rows = np.arange(max(0, self.centre - stop - 1), min(n, self.centre + stop + 1) + 1)
        f = self._f(rows)
        top = n - f  # φ(i) - 1
        half_e, odd = np.divmod(n + 2 + rows - f, 2)
        halves = np.arange(start // 2, (stop + 1) // 2 + 1)
        first = int(rows[0])
        last = max(int(halves[-1] + half_e.max()), int(top.max()), int(rows[-1]))
        y = self._y(np.arange(first, last + 1))
        low = y[rows - first]
        # case 1, by cost
        has_first = top > rows
        first_costs = np.minimum((top - rows - 1)[has_first], stop)
        first_best = np.zeros(stop + 1)
        np.maximum.at(first_best, first_costs, y[top[has_first] - first] - low[has_first])
        ell = np.maximum.accumulate(first_best)[start:stop]
        # case 2, per parity of e_i
        reach = np.maximum(top + 1, rows + 1) - half_e  # the least h giving a valid j
        costs = np.arange(start, stop)
        for parity in (0, 1):
            part = odd == parity
            if not part.any():
                continue
            widths = y[halves[:, None] + half_e[part] - first] - low[part]
            widths = np.where(halves[:, None] >= reach[part], widths, 0.0).max(axis=1)
            ell = np.maximum(ell, widths[(costs + parity) // 2 - halves[0]])
        return log_positive(ell)

    def _log_window(self, lo: int, hi: int, beta: float) -> float:
        """``log max (y_j - y_i) e^{-β c(i, j)}`` over ``lo <= i < j <= hi``, and more."""
        n = self._n
        rows = np.arange(lo, hi)
        f = self._f(rows)
        # j <= φ(i) - 1: the pair (i, φ(i) - 1), of cost φ(i) - i - 2 = n - 1 - i - F(i)
        top = n - f
        mask = top > rows
        costs = (n - 1 - rows - f)[mask]
        firsts = log_positive(self._y(top[mask]) - self._y(rows[mask])) - beta * costs
        # j >= φ(i): cost 2j + (-n - 2 - D(i)).  The rows with φ(i) > i + 1, a
        # prefix, form a staircase φ(i) <= j <= hi; the others have domain
        # i < j <= hi: one rectangle from column y0 + 1 on (cells j <= i are -inf).
        y0 = int(np.count_nonzero(top > rows + 1))
        last = hi - lo
        stairs = staircase_rectangles(top[:y0] + 1 - lo, last)
        rest = (np.array([y0]), np.array([last - 1]), np.array([y0 + 1]), np.array([last]))
        use = int(y0 < last)
        row_lo, row_hi, col_lo, col_hi = (
            np.concatenate((part, extra[:use])) for part, extra in zip(stairs, rest, strict=True)
        )
        ranks = np.arange(lo, hi + 1)
        row_cost = np.zeros(ranks.size, dtype=np.int64)
        row_cost[:-1] = -n - 2 - (rows - f)
        seconds = monotone_max(
            self._y(ranks), row_cost, 2 * ranks, (row_lo, row_hi, col_lo, col_hi), beta
        )
        return max(float(firsts.max(initial=-np.inf)), seconds)

    def log(self, beta: float) -> float:
        """``log SS_β`` for one ``β >= 0``."""
        n = self._n
        half = FIRST_WINDOW
        while True:  # half at least doubles until the window holds all ranks
            lo, hi = max(0, self.centre - half), min(n + 1, self.centre + 1 + half)
            best = self._log_window(lo, hi, beta)
            if lo == 0 and hi == n + 1:
                return best
            # c is non-increasing in i and non-decreasing in j, and c(s, s + 1) is
            # V-shaped around the centre: pairs leaving the window cost at least this
            ends = np.array([lo - 1, hi])[np.array([lo > 0, hi < n + 1])]
            if self._log_range - beta * int(self._gap_cost(ends).min()) <= best:
                return best
            # c(s, s + 1) >= t - 1 at distance t from the centre (n - s - F(s) falls by
            # at least 1 per step), so a half-width of (log(b - a) - best)/β suffices
            # unless best grows, which only makes it more than enough
            needed = (self._log_range - best) / beta if beta > 0 else math.inf
            half = max(2 * half, math.ceil(min(needed, n + 1)))
