r"""The lines of ``log SS_β`` as one array: ``ℓ_k = log A(k)`` for the costs ``k < K``.

``SS_β(S) = max_{k >= 0} e^{-βk} A(k)`` (Nissim, Raskhodnikova & Smith 2007, "Smooth
sensitivity and sampling in private data analysis", NRS07, Definition 2.1), so

    log SS_β = max_k (ℓ_k - βk),   ℓ_k = log A(k),

the upper envelope of lines; the exact tuning search (:mod:`mechanisms.smooth.exact_search`)
reads the ``ℓ_k`` of the costs that can be on it for ``β >= β_0``.  Since ``A(k) <= b - a``,
a cost ``k >= s`` has ``ℓ_k - βk <= log(b - a) - β_0·s - (β - β_0)k``, while the best of
the costs below ``s`` at ``β_0``, ``m = max_{k<s}(ℓ_k - β_0 k)`` at ``k*``, gives
``m - (β - β_0)k* >= m - (β - β_0)k`` at ``β``: so once ``log(b - a) - β_0·s <= m`` no
cost from ``s`` on is ever above the envelope on ``[β_0, ∞)``.  :class:`CostEnvelope`
grows ``s`` by doubling from 64 (as :mod:`mechanisms.smooth.median_envelope` does) until
that holds or every cost is known.  Everything is in log space (zero widths, ties, are
``-inf``).

Sources of ``A(k)`` (the derivations are in :mod:`mechanisms.smooth.sensitivity` and
:mod:`mechanisms.smooth.trimmed_mean`):

* the median under add/remove: one pair per cost, O(1) per ``k``;
* a window of ranks (:func:`window_log_widths`): the α-quantile under replace-one (NRS07,
  Proposition 3.4) and the trimmed mean (Bun & Steinke 2019, "Average-Case Averages"),
  ``k + 2`` pairs per cost;
* the α-quantile, α ≠ 1/2, under add/remove:
  :meth:`mechanisms.smooth.quantile_add_remove.QuantileAddRemove.log_widths`, one pair
  per row of a window of ``O(k)`` rows.

The last two cost O(K²) in all: beyond :data:`MAX_QUADRATIC_COSTS` costs the envelope
declines (:meth:`CostEnvelope.lines` returns ``None``) and the tuning falls back to the
branch and bound of :mod:`mechanisms.smooth.tuning`, which evaluates ``SS_β`` at some 20 β
in O(W log² W) each.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mechanisms.core.sorted_data import log_positive

FIRST_COSTS = 64
"""The costs computed first; then twice as many per step."""
MAX_QUADRATIC_COSTS = 2048
"""The switch to the branch and bound for the O(K²) sources: beyond 2048 costs (a few
``10^7`` pairs) their arrays take longer than the ~20 evaluations of ``SS_β`` they replace."""
CHUNK = 256
"""Costs per two-dimensional pass of an O(K²) source (bounds its temporary arrays)."""

LogWidths = Callable[[int, int], np.ndarray]
"""``(start, stop) ->`` the ``ℓ_k`` for ``start <= k < stop``."""


def in_chunks(values: LogWidths) -> LogWidths:
    """``values`` asked for at most :data:`CHUNK` costs at a time."""

    def chunked(start: int, stop: int) -> np.ndarray:
        parts = [values(s, min(stop, s + CHUNK)) for s in range(start, stop, CHUNK)]
        return np.concatenate(parts) if parts else np.empty(0)

    return chunked


def window_log_widths(
    at: Callable[[np.ndarray], np.ndarray], low: int, high: int, start: int, stop: int
) -> np.ndarray:
    """``ℓ_k = log max_{0 <= l <= k+1} (x_{high+k-l} - x_{low-l})`` for ``start <= k < stop``.

    ``at`` reads padded order statistics.  Replace-one α-quantile of rank ``r``:
    ``low = r``, ``high = r + 1`` (NRS07 Prop. 3.4 with ``t = k + 1 - l``); the
    m-trimmed mean: ``low = m + 1``, ``high = n - m + 1`` (before the division by ``N``).
    """
    first = low - stop
    values = at(np.arange(first, high + stop))
    shifts = np.arange(stop + 1)
    costs = np.arange(start, stop)[:, None]
    widths = values[high - first + costs - shifts] - values[low - first - shifts]
    widths = np.where(shifts <= costs + 1, widths, 0.0)
    return log_positive(widths.max(axis=1))


class CostEnvelope:
    """``ℓ_k`` for the costs that can be on ``log SS_β`` for ``β >= β_0`` (module docstring).

    ``values(start, stop)`` is ``ℓ_k`` for ``start <= k < stop``; ``costs`` is the number of
    costs that matter (``A(k) = b - a`` from ``costs - 1`` on); ``log_range`` is
    ``log(b - a)``; ``limit`` the most costs computed before the envelope declines
    (``None``: no limit).  The ``ℓ_k`` computed are kept for later calls.
    """

    def __init__(
        self, values: LogWidths, costs: int, log_range: float, limit: int | None = None
    ) -> None:
        self._values = values
        self._costs = costs
        self._log_range = log_range
        self._limit = limit
        self._ell = np.empty(0)

    @property
    def complete(self) -> bool:
        """Whether every cost is known: then the lines hold for every ``β >= 0``."""
        return self._ell.size == self._costs

    def lines(self, beta: float) -> np.ndarray | None:
        """``ℓ_0..ℓ_{K-1}`` with ``log SS_β' = max_{k<K}(ℓ_k - β'k)`` for every ``β' >= beta``,
        or ``None`` when that takes more than ``limit`` costs."""
        while not self.complete:
            known = self._ell.size
            if known and self._log_range - beta * known <= np.max(
                self._ell - beta * np.arange(known)
            ):
                break
            stop = min(self._costs, max(FIRST_COSTS, 2 * known))
            if self._limit is not None and stop > self._limit:
                return None
            self._ell = np.concatenate((self._ell, self._values(known, stop)))
        return self._ell
