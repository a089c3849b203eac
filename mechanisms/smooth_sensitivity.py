r"""β-smooth sensitivity of the α-quantile of data in ``[a, b]``.

Definitions (Duff paper, Definitions 3, 5, 6; Nissim, Raskhodnikova & Smith
2007, "Smooth sensitivity and sampling in private data analysis", NRS07):
``SS_β(S) = max_{k >= 0} e^{-βk} A(k)`` with ``A(k) = max{LS(S') : d(S, S') <= k}``.
The statistic is ``x_r`` with ``r = ceil(α n)`` (:func:`mechanisms.quantile_em.quantile_rank`:
the lower median for α = 1/2) and ``a`` for the empty set (see :mod:`mechanisms.base`).
Sorted data ``x_1 <= ... <= x_n`` is padded with ``x_i = a`` for ``i <= 0`` and
``x_i = b`` for ``i >= n + 1``; gap ``s`` is ``[x_s, x_{s+1}]``, ``0 <= s <= n``.

Add/remove neighbours (exact; derived here and checked against brute force in
``tests/test_smooth_sensitivity.py`` and ``tests/test_quantile_smooth_sensitivity.py``)
--------------------------------------------------------------------------------------
Local sensitivity.  Let ``z`` have size ``n'``.  Adding a point makes the rank
``ceil(α(n'+1))``: a point added inside gap ``s = ceil(α(n'+1)) - 1`` becomes
the quantile (one added elsewhere moves it to an end of that gap).  Removing one
makes the rank ``ceil(α(n'-1))`` and moves the quantile across gap
``s = ceil(α(n'-1))``.  Both are ``r - 1`` or ``r``; the conditions read
``α - 1 <= s - αn' < α`` and ``-α <= s - αn' < 1 - α``, and with
``μ = max(α, 1 - α)`` their union is

    LS(z) = max{z_{s+1} - z_s : -μ <= s - α n' < μ}.                        (L)

That is one or two gaps: for α = 1/2 only ``s = floor(n'/2)`` (below the median
for odd ``n'``, above it for even ``n'``); for α = 0.1, ``n' = 5`` both gaps
around ``z_1`` (adding lowers the quantile, removing raises it).

Cost of a pair.  For ``x_i < x_j`` (``0 <= i < j <= n + 1``) let
``g0 = (1 - α)i - α(n + 1 - j)`` and

    c(i, j) = (j - i - 1) + max(0, floor(g0/μ), ceil(-g0/μ) - 1),
    A(k) = max{x_j - x_i : c(i, j) <= k}.

Lower bound: let ``[z_s, z_{s+1}]`` (``z_s < z_{s+1}``) be a gap of (L) of a ``z``
at distance ``d``, ``i = #{x <= z_s}`` and ``j = n + 1 - #{x >= z_{s+1}}``; then
``x_i <= z_s < z_{s+1} <= x_j``, the ``j - i - 1`` points of ``x`` strictly
between were removed, and ``P = s`` and ``Q = n' - s`` differ from ``i`` and
``n + 1 - j`` by at most the other edits below and above; (L) asks
``-μ <= (1 - α)P - αQ < μ`` and each edit moves that by ``1 - α`` or ``α``, at
most μ, so ``d >= c(i, j)``.  Attained: remove the points between, then make
steps of exactly μ (adding at ``a`` or ``b``, or removing points from the side
in excess, of which there are enough): they cannot jump over the interval,
whose width is ``2μ``.  Writing ``R = n + 1 - j``: for α >= 1/2 the second term
is ``dist(R, {F(i), F(i) + 1})`` with ``F(i) = floor(ρ i)``, ``ρ = (1 - α)/α``;
for α < 1/2 it is ``dist(i, {G(j) - 1, G(j)})``, ``G(j) = ceil(R α/(1 - α))``,
which after mirroring (ranks ``i ↔ n + 1 - j``, data ``x ↦ -x``) takes the first
form with ``F(i) = ceil(ρ i) - 1``, ``ρ = α/(1 - α)``.  In both ``F`` rises by 0
or 1 per step, and ``c`` is non-decreasing in ``j`` and non-increasing in ``i``.
With ``φ(i) = n + 1 - F(i)`` and ``D(i) = i - F(i)`` (non-decreasing):

* ``j <= φ(i) - 1``: ``c = φ(i) - i - 2``, the same for all such ``j``, so the
  best pair of row ``i`` there is ``(i, φ(i) - 1)``: one candidate per row;
* ``j >= φ(i)``: ``c = 2j - n - 2 - D(i)``.

The median (α = 1/2) has ``F(i) = i``, ``D = 0``: in the second case the cost
does not depend on ``i``, so the smallest ``i`` is best, and one candidate is
left per cost ``k``, a window that widens by one rank per edit, alternating sides:

    A(k) = x_{floor((n+k)/2) + 1} - x_{floor((n-k)/2)},   SS_β = max_{0 <= k <= n} e^{-βk} A(k).

Since ``A(k) <= b - a``, terms with ``k > (log(b - a) - log best)/β`` cannot win,
so the maximum is found in O(min(n, log((b-a)/LS)/β)) after sorting, ties
included, and the ``log A(k)`` are kept for the next β.

For α ≠ 1/2, ``D`` grows and the second case leaves a staircase of O(k)
candidates per cost ``k`` (about ``k/2`` for α = 3/4: a lower ``x_i`` costs as
much as a higher ``x_j``), a genuinely two-dimensional maximum, so ``SS_β`` is
computed for each β directly as ``max (x_j - x_i) e^{-β c(i, j)}``.
The first case is a vector over the rows.  In the second the cost is a function
of ``i`` plus one of ``j`` and ``log(x_j - x_i)`` is supermodular, so on any
rectangle the row argmax is non-decreasing (NRS07, section 3.1); the domain
``φ(i) <= j`` has starts that fall as ``i`` grows, the wrong way for one such
search, so it is cut into rectangles by halving the rows (rows ``m..`` times
columns ``φ(m)..``; then the rows above ``m``, and the rows below ``m`` up to
column ``φ(m) - 1``): ``log2`` levels of column-disjoint rectangles, each
searched in O(size · log).  Only a window of ranks around the zero-cost gap is
searched: a pair reaching below rank ``lo`` costs at least ``c(lo - 1, lo)``,
one reaching above ``hi`` at least ``c(hi, hi + 1)``, and the window grows
until ``log(b - a) - β·min(those) <= best`` (to the half-width
``(log(b - a) - best)/β``, which suffices since ``c(s, s + 1)`` is at least
``t - 1`` at distance ``t`` from the zero-cost gap, or at least doubling).
Cost O(W log² W) per β for a window of ``W = O(min(n, log((b - a)/LS)/β))``
ranks.

Replace-one neighbours (NRS07, Proposition 3.4)
-----------------------------------------------
``A(k) = max_{0 <= t <= k+1} (x_{r+t} - x_{r+t-k-1})``, i.e.
``SS_β = max{(x_j - x_i) e^{-β(j-i-1)} : 0 <= i <= r <= j <= n+1}``.  NRS07 state
it for the median, but the proof only uses that the statistic is the order
statistic of a fixed rank: replacing points keeps ``n``, hence ``r``, and
``k`` replacements can move any ``k`` points across (no more), so ``x_r``'s
neighbours ``x'_{r±1}`` range exactly as for the median.  The row-wise argmax
``j*(i)`` is non-decreasing in ``i`` because ``log(x_j - x_i)`` is
supermodular, so a divide-and-conquer over rows evaluates it in O(n log n) per
β (NRS07, section 3.1), vectorised level by level here, on a window of ranks
around ``r`` that doubles until the ``b - a`` bound rules out everything
outside it.

Everything is computed in log space: ``e^{-βk}`` never underflows to a wrong
maximum, and zero gaps (ties) are ``-inf`` without numpy warnings.

(Over 400 lines because of the derivations above; the code is about 350.)
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from mechanisms.base import Neighbouring
from mechanisms.quantile_em import check_alpha, exact_alpha, quantile_rank

Rectangles = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""``(row_lo, row_hi, col_lo, col_hi)`` position arrays, inclusive, of non-empty rectangles."""


def _log_positive(values: np.ndarray) -> np.ndarray:
    """``log(values)`` with ``-inf`` for zeros, and no warning."""
    out = np.full(values.shape, -np.inf)
    np.log(values, out=out, where=values > 0)
    return out


def order_statistics(
    sorted_x: np.ndarray, ranks: np.ndarray, lower: float, upper: float
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
        scores = _log_positive(window[cols] - window[rows]) - beta * cost
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


def _staircase_rectangles(starts: np.ndarray, end: int) -> Rectangles:
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


def _floor_ratio(numerator: int, offset: int, denominator: int, values: np.ndarray) -> np.ndarray:
    """``floor((numerator·v + offset)/denominator)`` exactly for int64 ``values >= 0``.

    In int64 while the product stays below ``2**62``, else in Python integers
    (α written with many digits has a large numerator).
    """
    if numerator * (int(values.max(initial=0)) + 1) < 2**62:
        return (values * numerator + offset) // denominator
    exact = (values.astype(object) * numerator + offset) // denominator
    return exact.astype(np.int64)


class QuantileSmoothSensitivity:
    """``SS_β`` of the α-quantile ``x_(ceil(αn))`` of ``sorted_x ⊂ [lower, upper]``, for any β >= 0.

    Construction is O(1) (O(log n) for α ≠ 1/2 under add/remove) and keeps a
    reference to ``sorted_x``, of which only ``size`` and indexing by integer
    arrays are used; each evaluation touches only the ranks that can still win
    (see the module docstring).  For the median under add/remove the
    ``log A(k)`` computed so far are kept, so the many evaluations of a tuning
    search share them.
    """

    _FIRST_WINDOW = 64

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        neighbouring: Neighbouring = Neighbouring.ADD_REMOVE,
        *,
        alpha: float = 0.5,
    ) -> None:
        self.neighbouring = Neighbouring(neighbouring)
        self.alpha = check_alpha(alpha)
        self._x = sorted_x
        self._lower, self._upper = float(lower), float(upper)
        self._log_range = float(np.log(self._upper - self._lower))
        self._log_gaps = np.empty(0)  # log A(k) for k = 0, 1, ... (median, add/remove)
        n = sorted_x.size
        self.rank = quantile_rank(n, alpha)  # 0 for the empty set, whose quantile is a
        self._median = exact_alpha(alpha) == Fraction(1, 2)
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            r = self.rank
            near = self._at(np.array([r - 1, r, r + 1]))
            self.local_sensitivity = float(max(near[2] - near[1], near[1] - near[0] if r else 0))
        elif self._median:
            self.local_sensitivity = float(self._add_remove_gaps(np.array([0]))[0])
        else:
            self._setup_costs()
            gaps = np.arange(self._centre, min(self._centre + 2, n + 1))
            gaps = gaps[self._gap_cost(gaps) == 0]  # (L): one or two gaps
            self.local_sensitivity = float(np.max(self._y(gaps + 1) - self._y(gaps)))

    def _at(self, ranks: np.ndarray) -> np.ndarray:
        return order_statistics(self._x, ranks, self._lower, self._upper)

    # ------------------------------------------------------------ median, add/remove

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

    # ------------------------------------------------------ any α, add/remove

    def _setup_costs(self) -> None:
        """``F`` of the module docstring, the mirroring for α < 1/2, and a zero-cost gap.

        ``F(i) = floor((p·i + offset)/q)`` with ``ρ = p/q``: ``floor(ρ i)``, or
        ``ceil(ρ i) - 1 = floor((p·i - 1)/q)`` when mirrored.
        """
        alpha = exact_alpha(self.alpha)
        self._mirrored = alpha < Fraction(1, 2)
        ratio = alpha / (1 - alpha) if self._mirrored else (1 - alpha) / alpha
        self._p, self._q = ratio.numerator, ratio.denominator
        self._offset = -1 if self._mirrored else 0
        # The first gap s with n - s - F(s) <= 1: it falls by 1 or 2 per step from
        # n - F(0) >= 0 to -F(n) <= 0, so it is 0 or 1 there and c(s, s + 1) = 0.
        low, high = 0, self._x.size
        while low < high:
            mid = (low + high) // 2
            if self._x.size - mid - int(self._f(np.array([mid]))[0]) <= 1:
                high = mid
            else:
                low = mid + 1
        self._centre = low

    def _f(self, i: np.ndarray) -> np.ndarray:
        return _floor_ratio(self._p, self._offset, self._q, i)

    def _y(self, ranks: np.ndarray) -> np.ndarray:
        """Padded order statistics, of the mirrored data ``-x_{n+1-rank}`` for α < 1/2."""
        if self._mirrored:
            return -self._at(self._x.size + 1 - ranks)
        return self._at(ranks)

    def _gap_cost(self, gaps: np.ndarray) -> np.ndarray:
        """``c(s, s + 1) = dist(n - s, {F(s), F(s) + 1})``."""
        u = self._x.size - gaps - self._f(gaps)
        return np.maximum(np.maximum(-u, u - 1), 0)

    def _log_window(self, lo: int, hi: int, beta: float) -> float:
        """``log max (y_j - y_i) e^{-β c(i, j)}`` over ``lo <= i < j <= hi``, and more."""
        n = self._x.size
        rows = np.arange(lo, hi)
        f = self._f(rows)
        # j <= φ(i) - 1: the pair (i, φ(i) - 1), of cost φ(i) - i - 2 = n - 1 - i - F(i)
        top = n - f
        mask = top > rows
        costs = (n - 1 - rows - f)[mask]
        firsts = _log_positive(self._y(top[mask]) - self._y(rows[mask])) - beta * costs
        # j >= φ(i): cost 2j + (-n - 2 - D(i)).  The rows with φ(i) > i + 1, a
        # prefix, form a staircase φ(i) <= j <= hi; the others have domain
        # i < j <= hi: one rectangle from column y0 + 1 on (cells j <= i are -inf).
        y0 = int(np.count_nonzero(top > rows + 1))
        last = hi - lo
        stairs = _staircase_rectangles(top[:y0] + 1 - lo, last)
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

    def _log_quantile_add_remove(self, beta: float) -> float:
        n = self._x.size
        half = self._FIRST_WINDOW
        while True:  # half at least doubles until the window holds all ranks
            lo, hi = max(0, self._centre - half), min(n + 1, self._centre + 1 + half)
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

    # ------------------------------------------------------------- replace-one

    def _log_replace_one(self, beta: float) -> float:
        n = self._x.size
        r = self.rank
        half = self._FIRST_WINDOW
        while True:  # half doubles until the window holds all ranks: at most log2(n) rounds
            first, stop = max(0, r - half), min(n + 1, r + half)
            ranks = np.arange(first, stop + 1)
            pos = ranks - first
            rectangle = (np.array([0]), np.array([r - first]), np.array([r - first]), pos[-1:])
            best = monotone_max(self._at(ranks), -pos - 1, pos, rectangle, beta)
            # a pair reaching outside the window spans more than `half` ranks
            if (first == 0 and stop == n + 1) or self._log_range - beta * half <= best:
                return best
            half *= 2

    # ------------------------------------------------------------------ public

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
            if self.neighbouring is Neighbouring.REPLACE_ONE:
                result = np.array([self._log_replace_one(float(b)) for b in flat])
            elif self._median:
                result = self._log_add_remove(flat)
            else:
                result = np.array([self._log_quantile_add_remove(float(b)) for b in flat])
        result = result.reshape(betas.shape)
        return float(result) if result.ndim == 0 else result

    def __call__(self, beta: float | np.ndarray) -> float | np.ndarray:
        """``SS_β``, elementwise for an array of ``β >= 0``."""
        return np.exp(self.log(beta))


MedianSmoothSensitivity = QuantileSmoothSensitivity
"""The α = 1/2 default: ``SS_β`` of the lower median (the name of the existing callers)."""
