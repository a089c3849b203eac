r"""The trimmed mean of data in ``[a, b]`` and its β-smooth sensitivity (replace-one).

Bun & Steinke, "Average-Case Averages: Private Algorithms for Smooth
Sensitivity and Mean Estimation" (NeurIPS 2019, arXiv:1906.02830), propose the
**m-trimmed mean** as a low-sensitivity estimator of the mean: of the sorted
data ``x_1 <= ... <= x_n`` drop the ``m`` smallest and the ``m`` largest and
average the other ``N = n - 2m``,

    T_m(x) = (x_{m+1} + ... + x_{n-m}) / N,

computed here as ``fsum/N`` (the exactly rounded sum, as
:func:`mechanisms.core.data.mean_value`, which it equals for ``m = 0``); ``a`` for
the empty dataset (the convention of :mod:`mechanisms.core.interface`).

Neighbouring: replace-one, as in Bun & Steinke (datasets of the same size
``n``, which is then public, and so is ``m``).  Order statistics are padded
with ``x_i = a`` for ``i <= 0`` and ``x_i = b`` for ``i >= n + 1``.

Local sensitivity at distance k (Bun & Steinke's proposition on the trimmed
mean; re-derived here and checked against brute force in
``tests/test_trimmed_mean.py``).  Replacing one point by ``b`` moves the window
``x_{m+1..n-m}`` up one rank, raising the sum by ``x_{n-m+1} - x_{m+1}``;
replacing one by ``a`` lowers it by ``x_{n-m} - x_m``; no replacement does
more.  ``k`` replacements move at most ``k`` points across the window, so the
largest local sensitivity within distance ``k`` is

    A(k) = max_{0 <= l <= k+1} (x_{n-m+1+k-l} - x_{m+1-l}) / N,
    SS_β(x) = max_{k >= 0} e^{-βk} A(k)

(NRS07's definition of the β-smooth sensitivity, as in
:mod:`mechanisms.smooth.sensitivity`).  With ``i = m + 1 - l`` and
``j = n - m + 1 + k - l`` this is ``max (x_j - x_i) e^{-β(j - i - N)} / N``
over ``i <= m + 1 <= n - m <= j``, ``(i, j) != (m + 1, n - m)``: a maximum of
``log(x_j - x_i)`` (supermodular) minus a cost linear in ``j - i``, found by
the monotone divide and conquer of NRS07 (section 3.1) that
:mod:`mechanisms.smooth.sensitivity` uses for the replace-one median, in
O(W log W) per β on a window of ``W`` ranks at each end that doubles until
``log(b - a) - βW`` cannot beat the best (``W <= m + 2``).  ``SS_0 = (b - a)/N``
(the global sensitivity) and ``SS_∞ = LS``.

Add/remove neighbours are *not* covered: there ``n`` (hence ``m``) changes and
one addition moves the trimmed mean by ``(w - T)/(N + 1)`` (``w`` the added
point clipped to ``[x_m, x_{n-m+1}]``), one removal by ``(v - T)/(N - 1)``
(``v`` a point of the window), so the local sensitivity depends on ``T`` and
not only on two order statistics; its smooth version is not derived here.

The trimming ``m`` (option ``trim`` of the mechanisms): an integer is the count
``m`` itself (capped at ``(n - 1) // 2`` so that ``N >= 1``); a float in
``[0, 1/2)`` is a fraction, ``m = floor(trim·n)`` with ``trim`` read as the
decimal it was written as (:func:`mechanisms.core.quantiles.exact_alpha`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from mechanisms.core.data import exact_mean
from mechanisms.core.quantiles import exact_alpha
from mechanisms.core.sorted_data import monotone_max, order_statistics
from mechanisms.core.validation import check_integer, check_real
from mechanisms.smooth.cost_envelope import (
    MAX_QUADRATIC_COSTS,
    CostEnvelope,
    in_chunks,
    window_log_widths,
)
from mechanisms.smooth.tuning import EvenlySpaced

MAX_TRIM_FRACTION = 0.5


def check_trim(trim: object) -> int | float:
    """``trim`` as a count (``int >= 0``) or a fraction (``float`` in ``[0, 1/2)``).

    ``ValueError`` naming ``trim`` otherwise (``bool`` is neither).
    """
    if isinstance(trim, int | np.integer) and not isinstance(trim, bool | np.bool_):
        return check_integer(trim, "trim", minimum=0)
    return check_real(trim, "trim", minimum=0.0, maximum=MAX_TRIM_FRACTION, open_minimum=False)


def trim_count(trim: int | float, n: int) -> int:
    """The number ``m`` of points dropped at each end of ``n`` (module docstring); ``N >= 1``."""
    if n == 0:
        return 0
    if isinstance(trim, int):
        return min(trim, (n - 1) // 2)
    return math.floor(exact_alpha(trim) * n)  # < n/2 since trim < 1/2


def trimmed_mean(sorted_x: np.ndarray, m: int, lower: float) -> float:
    """``T_m``: the mean of ``x_{m+1..n-m}`` of sorted data, ``fsum/N``; ``lower`` if empty."""
    n = sorted_x.size
    if n == 0:
        return float(lower)
    return exact_mean(sorted_x[m : n - m])


class TrimmedMeanSmoothSensitivity:
    """``SS_β`` of the m-trimmed mean of ``sorted_x ⊂ [lower, upper]`` (replace-one), any β >= 0.

    Uses only ``sorted_x.size`` and indexing by integer arrays (so the public
    reference data :class:`mechanisms.smooth.tuning.EvenlySpaced` works too).
    Requires ``n >= 1`` and ``N = n - 2m >= 1``.
    """

    _FIRST_WINDOW = 64

    def __init__(self, sorted_x: np.ndarray, m: int, lower: float, upper: float) -> None:
        n = sorted_x.size
        if not (n >= 1 and m >= 0 and n - 2 * m >= 1):
            raise ValueError(f"need n >= 1 and 0 <= m <= (n - 1)/2, got n={n}, m={m}")
        self._x, self.m, self.n = sorted_x, int(m), int(n)
        self._lower, self._upper = float(lower), float(upper)
        self._log_width = math.log(self._upper - self._lower)
        self._log_count = math.log(n - 2 * m)
        near = self._at(np.array([m, m + 1, n - m, n - m + 1]))
        count = n - 2 * m
        self.local_sensitivity = float(max(near[3] - near[1], near[2] - near[0]) / count)
        self._lines: CostEnvelope | None = None

    def _at(self, ranks: np.ndarray) -> np.ndarray:
        return order_statistics(self._x, ranks, self._lower, self._upper)

    def envelope(self) -> CostEnvelope | None:
        """The ``ℓ_k = log A(k)``, ``k <= 2m + 1`` (``A(2m + 1) = (b - a)/N``), as one array
        (:mod:`mechanisms.smooth.cost_envelope`): the window ``low = m + 1``,
        ``high = n - m + 1`` of the module docstring's ``A(k)``, less ``log N``."""
        if self._lines is None:
            x, lower, upper, m, n = self._x, self._lower, self._upper, self.m, self.n
            log_count = self._log_count

            def values(start: int, stop: int) -> np.ndarray:  # holds the data, not self
                at = lambda ranks: order_statistics(x, ranks, lower, upper)  # noqa: E731
                return window_log_widths(at, m + 1, n - m + 1, start, stop) - log_count

            self._lines = CostEnvelope(
                in_chunks(values), 2 * m + 2, self._log_width - log_count, MAX_QUADRATIC_COSTS
            )
        return self._lines

    def _log_window(self, width: int, beta: float) -> float:
        """``log max (x_j - x_i) e^{-β(j - i - N)}`` over the pairs within ``width`` of the window:
        ``i >= m + 1 - width`` and ``j <= n - m + width``.

        Rows ``i`` (ranks ``first..m+1``) and columns ``j`` (``n-m..last``) are laid
        side by side in one array: rows ``i <= m`` with every column, row
        ``m + 1`` with the columns ``j >= n - m + 1`` (not the pair ``(m+1, n-m)``).
        """
        m, n = self.m, self.n
        count = n - 2 * m
        rows = np.arange(max(0, m + 1 - width), m + 2)
        cols = np.arange(n - m, min(n + 1, n - m + width) + 1)
        values = self._at(np.concatenate((rows, cols)))
        row_cost = np.concatenate((-rows, np.zeros(cols.size, dtype=np.int64)))
        col_cost = np.concatenate((np.zeros(rows.size, dtype=np.int64), cols - count))
        first_col, last_col, last_row = rows.size, rows.size + cols.size - 1, rows.size - 1
        cells = np.array(
            [[0, last_row - 1, first_col, last_col], [last_row, last_row, first_col + 1, last_col]]
        )
        cells = cells[cells[:, 2] <= cells[:, 3]]  # row m + 1 needs a column j >= n - m + 1
        rectangles = (cells[:, 0], cells[:, 1], cells[:, 2], cells[:, 3])
        return monotone_max(values, row_cost, col_cost, rectangles, beta)

    def _log_one(self, beta: float) -> float:
        width = self._FIRST_WINDOW
        while True:  # width doubles until the window holds every pair: at most log2(m) rounds
            best = self._log_window(width, beta)
            complete = width >= self.m + 1
            # a pair reaching outside the window costs at least `width` replacements
            if complete or self._log_width - beta * width <= best:
                return best - self._log_count
            width *= 2

    def log(self, beta: float | np.ndarray) -> float | np.ndarray:
        """``log SS_β``, elementwise for an array of ``β >= 0``."""
        betas = np.asarray(beta, dtype=np.float64)
        if not (np.isfinite(betas).all() and (betas >= 0).all()):
            raise ValueError(f"beta must be non-negative and finite, got {beta!r}")
        with np.errstate(over="ignore"):  # -β·k may overflow to -inf: the weight is then 0
            result = np.array([self._log_one(float(b)) for b in betas.reshape(-1)])
        result = result.reshape(betas.shape)
        return float(result) if result.ndim == 0 else result

    def __call__(self, beta: float | np.ndarray) -> float | np.ndarray:
        """``SS_β``, elementwise for an array of ``β >= 0``."""
        return np.exp(self.log(beta))


def trimmed_mean_smooth_sensitivity(
    sorted_x: np.ndarray, m: int, beta: float, lower: float, upper: float
) -> float:
    """``SS_β`` of the m-trimmed mean of sorted data in ``[lower, upper]`` (replace-one).

    ``0.0`` for the empty dataset, whose only replace-one neighbour is itself.
    """
    if sorted_x.size == 0:
        return 0.0
    return float(TrimmedMeanSmoothSensitivity(sorted_x, m, lower, upper)(beta))


SEARCHED_REFERENCE_SIZE = 10**5
"""Up to this ``n`` the reference ``SS_β`` is searched like the data's (0.5 s at ``n = 10^5``);
above, it is the closed form :class:`ReferenceSmoothSensitivity` (microseconds)."""


class ReferenceSmoothSensitivity(TrimmedMeanSmoothSensitivity):
    """``SS_β`` of the m-trimmed mean of the reference data ``x_i = (i - 1/2)/n`` in ``[0, 1]``
    in closed form: ``O(1)`` per β instead of the ``O(m log m)`` search.

    On these data a pair ``i <= m + 1 <= n - m <= j`` of width ``w = j - i`` spans at
    most ``w/n`` while ``1 <= i`` and ``j <= n`` are possible (``N <= w <= n - 1``; a
    padded end, 0 or 1, loses half a step), ``(n - 1/2)/n`` at ``w = n`` and ``1`` from
    ``w = n + 1`` on, at cost ``k = w - N``.  So, with ``N = n - 2m``,

        A(k) = (N + k)/(nN) for 0 <= k <= 2m - 1,   (n - 1/2)/(nN) at k = 2m,   1/N beyond,

    and ``log SS_β = max_k log A(k) - βk`` is the largest of the concave
    ``log(N + k) - βk - log(nN)`` at the integers around ``k = 1/β - N`` (clipped to
    ``[0, 2m - 1]``), ``log((n - 1/2)/(nN)) - 2mβ`` and ``-log N - (2m + 1)β``.  The same
    number as the search up to rounding: the tuned parameters agree to ~1e-12
    (relative; ``tests/mechanisms/mean``).
    """

    def __init__(self, n: int, m: int) -> None:
        super().__init__(EvenlySpaced(n), m, 0.0, 1.0)  # type: ignore[arg-type]

    def envelope(self) -> None:
        """None: ``SS_β`` is O(1) per β here, so the tuning evaluates it (branch and bound)."""
        return None

    def _log_one(self, beta: float) -> float:
        n, m = self.n, self.m
        count = n - 2 * m
        candidates = [math.log(n - 0.5) - math.log(n) - 2 * m * beta, -(2 * m + 1) * beta]
        last = 2 * m - 1
        if last >= 0:
            peak = 1.0 / beta - count if beta > 0 else math.inf
            ks = {0, last}
            if 0 < peak < last:
                ks |= {math.floor(peak), math.ceil(peak)}
            candidates += [math.log(count + k) - math.log(n) - beta * k for k in ks]
        return max(candidates) - self._log_count


@lru_cache(maxsize=8)  # keyed by (n, m): the tuned parameters then depend on ε only
def reference_smooth_sensitivity(n: int, m: int) -> TrimmedMeanSmoothSensitivity:
    """``SS`` of the trimmed mean of the public reference data ``(i + 1/2)/n`` in ``[0, 1]``.

    The data :class:`mechanisms.smooth.tuning.EvenlySpaced` of the tuned median
    mechanisms; ``SS_β`` scales with ``b - a``, so parameters tuned on it do not
    depend on the bounds.  Searched (as the data's) up to :data:`SEARCHED_REFERENCE_SIZE`
    points, so that the parameters at the sizes of the experiments are those of the
    search bit for bit; in closed form above (:class:`ReferenceSmoothSensitivity`), where
    the search took 20 s at ``n = 10^7``.
    """
    if n > SEARCHED_REFERENCE_SIZE:
        return ReferenceSmoothSensitivity(n, m)
    return TrimmedMeanSmoothSensitivity(EvenlySpaced(n), m, 0.0, 1.0)  # type: ignore[arg-type]
