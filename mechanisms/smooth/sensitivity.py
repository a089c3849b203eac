r"""β-smooth sensitivity of the α-quantile of data in ``[a, b]``.

Definitions (Duff paper, Definitions 3, 5, 6; Nissim, Raskhodnikova & Smith
2007, "Smooth sensitivity and sampling in private data analysis", NRS07):
``SS_β(S) = max_{k >= 0} e^{-βk} A(k)`` with ``A(k) = max{LS(S') : d(S, S') <= k}``.
The statistic is ``x_r`` with ``r = ceil(α n)`` (:func:`mechanisms.core.quantiles.quantile_rank`:
the lower median for α = 1/2) and ``a`` for the empty set (see :mod:`mechanisms.core.interface`).
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
With ``φ(i) = n + 1 - F(i)`` and ``D(i) = i - F(i)`` (non-decreasing), a pair with
``j <= φ(i) - 1`` costs ``φ(i) - i - 2`` and one with ``j >= φ(i)`` costs
``2j - n - 2 - D(i)``.  The median (α = 1/2) has ``F(i) = i``, ``D = 0``: in the
second case the cost does not depend on ``i``, so the smallest ``i`` is best, and
one candidate is left per cost ``k``, a window that widens by one rank per edit,
alternating sides:

    A(k) = x_{floor((n+k)/2) + 1} - x_{floor((n-k)/2)},   SS_β = max_{0 <= k <= n} e^{-βk} A(k),

computed for any number of β from one array of ``log A(k)`` by
:mod:`mechanisms.smooth.median_envelope`.  For α ≠ 1/2 there are O(k) candidates per cost
``k``, a two-dimensional maximum searched for each β by
:mod:`mechanisms.smooth.quantile_add_remove`.  For the tuning, every quantile under both
neighbourings also gives all its ``log A(k)`` as one array
(:meth:`QuantileSmoothSensitivity.envelope`, :mod:`mechanisms.smooth.cost_envelope`).

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

Reading the data.  Only ``size`` and indexing by integer arrays of positions are
used, on a window of ranks around ``r``, so the data may be an array sorted only
there (:mod:`mechanisms.smooth.selection`) or computed where read
(:class:`mechanisms.smooth.tuning.EvenlySpaced`).

Everything is computed in log space: ``e^{-βk}`` never underflows to a wrong
maximum, and zero gaps (ties) are ``-inf`` without numpy warnings.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.quantiles import check_alpha, exact_alpha, quantile_rank
from mechanisms.core.sorted_data import SortedData, log_positive, monotone_max, order_statistics
from mechanisms.smooth.cost_envelope import (
    MAX_QUADRATIC_COSTS,
    CostEnvelope,
    in_chunks,
    window_log_widths,
)
from mechanisms.smooth.median_envelope import MedianEnvelope
from mechanisms.smooth.quantile_add_remove import FIRST_WINDOW, QuantileAddRemove

__all__ = [
    "MedianSmoothSensitivity",
    "QuantileSmoothSensitivity",
    "is_median",
    "monotone_max",
    "order_statistics",
]


def is_median(alpha: float) -> bool:
    """Whether α, read as the decimal it was written as, is exactly 1/2."""
    return exact_alpha(alpha) == Fraction(1, 2)


def _ranks_reader(
    sorted_x: SortedData, lower: float, upper: float
) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`order_statistics` of ``sorted_x`` padded with ``lower`` and ``upper``, as a
    function of the ranks."""
    return lambda ranks: order_statistics(sorted_x, ranks, lower, upper)


def _median_gaps_reader(
    sorted_x: SortedData, at: Callable[[np.ndarray], np.ndarray]
) -> Callable[[int, int], np.ndarray]:
    """The median's ``A(k) = x_{floor((n+k)/2)+1} - x_{floor((n-k)/2)}`` for
    ``start <= k < stop``, as a function of ``(start, stop)``; ``at`` reads padded ranks."""
    n = sorted_x.size

    def gaps(start: int, stop: int) -> np.ndarray:
        costs = np.arange(start, stop)
        if stop <= n - 1:  # k <= n - 2: both ranks in 1..n, no padding (and shifts are fast)
            return sorted_x[(costs + n) >> 1] - sorted_x[((n - costs) >> 1) - 1]
        return at((n + costs) // 2 + 1) - at((n - costs) // 2)

    return gaps


class QuantileSmoothSensitivity:
    """``SS_β`` of the α-quantile ``x_(ceil(αn))`` of ``sorted_x ⊂ [lower, upper]``, for any β >= 0.

    Construction is O(1) (O(log n) for α ≠ 1/2 under add/remove) and keeps a
    reference to ``sorted_x``, of which only ``size`` and indexing by integer
    arrays are used; each evaluation touches only the ranks that can still win
    (see the module docstring).  For the median under add/remove the
    ``log A(k)`` computed so far are kept, so the many evaluations of a tuning
    search share them (:mod:`mechanisms.smooth.median_envelope`).
    """

    def __init__(
        self,
        sorted_x: SortedData,
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
        n = sorted_x.size
        self.rank = quantile_rank(n, alpha)  # 0 for the empty set, whose quantile is a
        self._median: MedianEnvelope | None = None
        self._quantile: QuantileAddRemove | None = None
        self._lines: CostEnvelope | None = None
        # Readers of the data that do not hold this object: the envelopes keep them, and a
        # bound method there would make a reference cycle that keeps the data alive until
        # the cyclic garbage collector runs (a dataset's worth per release at n = 10^7).
        self._at = _ranks_reader(sorted_x, self._lower, self._upper)
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            r = self.rank
            near = self._at(np.array([r - 1, r, r + 1]))
            self.local_sensitivity = float(max(near[2] - near[1], near[1] - near[0] if r else 0))
        elif is_median(alpha):
            gaps = _median_gaps_reader(sorted_x, self._at)
            self._median = MedianEnvelope(gaps, n, self._log_range)
            self.local_sensitivity = float(gaps(0, 1)[0])
        else:
            self._quantile = QuantileAddRemove(self._at, n, alpha, self._log_range)
            self.local_sensitivity = self._quantile.local_sensitivity

    def envelope(self) -> CostEnvelope:
        """The ``ℓ_k = log A(k)`` as one array (:mod:`mechanisms.smooth.cost_envelope`), for
        ``k <= n`` (``A(n) = b - a``), computed where first asked for and kept."""
        if self._lines is None:
            n = self._x.size
            if self._median is not None:
                gaps = _median_gaps_reader(self._x, self._at)
                self._lines = CostEnvelope(
                    lambda start, stop: log_positive(gaps(start, stop)), n + 1, self._log_range
                )
            else:
                if self._quantile is not None:
                    values = self._quantile.log_widths
                else:
                    at, r = self._at, self.rank
                    values = lambda start, stop: window_log_widths(at, r, r + 1, start, stop)  # noqa: E731
                self._lines = CostEnvelope(
                    in_chunks(values), n + 1, self._log_range, MAX_QUADRATIC_COSTS
                )
        return self._lines

    def _log_replace_one(self, beta: float) -> float:
        n = self._x.size
        r = self.rank
        half = FIRST_WINDOW
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

    def log(self, beta: float | np.ndarray) -> float | np.ndarray:
        """``log SS_β``, elementwise for an array of ``β >= 0``.

        ``SS_0 = max_k A(k) = b - a`` (the global sensitivity): the limit used
        when ε is so small that the smoothness parameter underflows.
        """
        betas = np.asarray(beta, dtype=np.float64)
        flat = betas.reshape(-1)
        if flat.size and not (flat.min() >= 0 and flat.max() < math.inf):  # NaN fails too
            raise ValueError(f"beta must be non-negative and finite, got {beta!r}")
        # -β·k may overflow to -inf for huge β: the weight e^{-βk} is then exactly 0 (the
        # costs and window half-widths multiplied by β stay below 2n + 2·64 + 4)
        largest_cost = 2 * self._x.size + 2 * FIRST_WINDOW + 4
        overflows = flat.size and float(flat.max()) * largest_cost >= sys.float_info.max
        with np.errstate(over="ignore") if overflows else contextlib.nullcontext():
            if self._median is not None:
                result = self._median.log(flat)
            elif self._quantile is not None:
                result = np.array([self._quantile.log(float(b)) for b in flat])
            else:
                result = np.array([self._log_replace_one(float(b)) for b in flat])
        result = result.reshape(betas.shape)
        return float(result) if result.ndim == 0 else result

    def __call__(self, beta: float | np.ndarray) -> float | np.ndarray:
        """``SS_β``, elementwise for an array of ``β >= 0``."""
        return np.exp(self.log(beta))


MedianSmoothSensitivity = QuantileSmoothSensitivity
"""The α = 1/2 default: ``SS_β`` of the lower median (the name of the existing callers)."""
