r"""``log SS_β`` of the median under add/remove neighbours, for any number of β, from one array.

For the median (α = 1/2) under add/remove neighbours (:mod:`mechanisms.smooth.sensitivity`)

    log SS_β = max_{0 <= k <= n} (ℓ_k - βk),   ℓ_k = log A(k),
    A(k) = x_{floor((n+k)/2) + 1} - x_{floor((n-k)/2)},

the upper envelope of the lines ``ℓ_k - βk``.  A tuning search (:mod:`mechanisms.smooth.tuning`)
evaluates it at some 20 β; here the ``ℓ_k`` are computed once, for the costs the
smallest of them needs, and every β is answered from that array.

The floats.  A candidate is ``f_β(k) = fl(ℓ_k - fl(β·k))``, and the value is the
largest ``f_β(k)`` over ``k < S(β)``, where ``S(β)`` is the stop of a scan that
takes the costs in chunks ending at ``s_0 = min(n + 1, 64)``,
``s_{j+1} = min(n + 1, 2 s_j)`` and stops after the first chunk ``j`` whose
running maximum ``best_j`` reaches ``T_j = fl(log(b - a) - fl(β·s_j))`` (since
``A(k) <= b - a``, no later cost can win), or at ``n + 1``.  That scan is how
``SS_β`` was computed before this module, and these are its floats, bit for bit:
not only the same maximum up to rounding but the same candidates, each
computed by the same expression (``tests/test_smooth_selection.py`` compares).

Blocks.  The ``ℓ_k`` are cut into blocks of 64 costs (every ``s_j`` but ``n + 1``
is a multiple of 64) with maxima ``M_b``.  Rounding is monotone, so every cost
``k >= 64b`` of block ``b`` has ``f_β(k) <= U_b = fl(M_b - fl(β·64b))``: an upper
bound with no error term.  For each β, on the costs known so far:

1. ``θ``: the exact maximum of the block of largest ``U_b``; the blocks with
   ``U_b < θ`` hold no value ``>= θ``, so the exact maxima of the others give
   ``best``, the largest ``f_β(k)`` over all known costs, exactly.
2. The stop: the first ``j`` with ``T_j <= best``.  Every ``j`` before it has
   ``best_j <= best < T_j``, so the scan goes on there; if the blocks of step 1
   all lie below ``s_j``, then ``best_j = best >= T_j``: the scan stops at ``j``
   with the value ``best``.
3. Otherwise (a block within ``U_b >= θ`` beyond ``s_j``: only when ``A(k)`` is
   close to ``b - a`` there) the running maxima of all known blocks decide.

The first chunk is one block: when every β stops there (large β), its maximum is the value.
The first costs computed are those :func:`likely_costs` expects the smallest β to need.
When the stop lies beyond the known costs, more are computed (up to the stop
``best`` implies, at most 256 times as many per step; twice as many while no
``A(k) > 0`` is known) and the steps are redone.  Per β this costs O(known/64)
for the bounds plus 64 per block within ``U_b >= θ``: a few around the maximiser.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mechanisms.core.sorted_data import log_positive

BLOCK = 64
"""Costs per block; also the first chunk of the scan."""
GROWTH = 256
"""The known costs grow at most 256-fold per step."""
DENSITY_GUESS = math.log(2.0**10)
""":func:`likely_costs` guesses the data near the quantile at most ``2^10`` times denser than
on average over ``[a, b]``."""


def likely_costs(n: int, beta: float) -> float:
    """A guess of the costs ``k`` that ``SS_β`` reads on ``n`` points:
    ``(log((n + 1)D) - max(0, log(1/β) - 1))/β``, or all (``inf``) when that is not positive.

    ``e^{-βk}(b - a)`` must fall below ``SS_β``.  With data near the quantile at most
    ``D = 2^10`` times denser than on average over ``[a, b]``, ``A(k) >= (k + 1)s`` for
    ``s = (b - a)/((n + 1)D)`` (until ``A(k) = b - a``), so
    ``SS_β >= max_k (k + 1)s e^{-βk} >= s·max(1, 1/(eβ))``; when ``1/(eβ) >= (n + 1)D``
    the maximum is near ``k = n``.  A wrong guess costs time only (more costs, or another
    step), never a different value.
    """
    spread = math.log(n + 1) + DENSITY_GUESS
    growth = max(0.0, -math.log(beta) - 1.0) if beta > 0 else math.inf
    return (spread - growth) / beta if growth < spread else math.inf


class MedianEnvelope:
    """``log SS_β`` of the median, add/remove, for arrays of β (module docstring).

    ``gaps(start, stop)`` is ``A(k)`` for ``start <= k < stop``; ``n`` is the data size and
    ``log_range`` is ``log(b - a)``.  The ``ℓ_k`` computed are kept for later calls.
    """

    def __init__(self, gaps: Callable[[int, int], np.ndarray], n: int, log_range: float) -> None:
        self._gaps = gaps
        self._n = n
        self._log_range = log_range
        stops = [min(n + 1, BLOCK)]
        while stops[-1] < n + 1:
            stops.append(min(n + 1, 2 * stops[-1]))
        self._stops = np.array(stops, dtype=np.int64)
        self._ends = -(-self._stops // BLOCK)  # blocks below each stop
        self._last = self._stops.size - 1
        self._ell = np.empty((0, BLOCK))  # ℓ_k of the known costs, by block, -inf padded
        self._block_max = np.empty(0)
        self._known = -1  # the index of the last stop whose costs are known

    def _learn(self, j: int) -> None:
        """Compute ``ℓ_k`` for the costs below ``s_j`` (those below ``s_known`` are kept)."""
        have = int(self._stops[self._known]) if self._known >= 0 else 0
        values = log_positive(self._gaps(have, int(self._stops[j])))
        blocks = np.full((int(self._ends[j]) - have // BLOCK, BLOCK), -np.inf)
        blocks.reshape(-1)[: values.size] = values
        self._ell = np.concatenate((self._ell, blocks))
        self._block_max = np.concatenate((self._block_max, blocks.max(axis=1)))
        self._costs = np.arange(self._ell.size, dtype=np.float64).reshape(self._ell.shape)
        self._known = j

    def _next_known(self, wanted: int) -> int:
        """The stop to learn up to: ``wanted``, or earlier where the known costs grow 256-fold."""
        limit = GROWTH * int(self._stops[self._known])
        j = self._known + 1
        while j < wanted and self._stops[j] < limit:
            j += 1
        return j

    def log(self, betas: np.ndarray) -> np.ndarray:
        """``log SS_β`` for each ``β >= 0`` of a 1-D array (overflow of ``β·k`` is ``inf``,
        which the caller silences: the weight ``e^{-βk}`` is then exactly 0)."""
        out = np.empty(betas.size)
        todo = np.arange(betas.size)
        if self._known < 0:
            guess = likely_costs(self._n, float(betas.min(initial=math.inf)))
            self._learn(int(np.count_nonzero(self._stops[:-1] < guess)))
        while todo.size:
            values, wanted = self._scan(betas[todo])
            done = wanted <= self._known
            out[todo[done]] = values[done]
            todo = todo[~done]
            if todo.size:
                self._learn(self._next_known(int(wanted[~done].max())))
        return out

    def _block_values(self, betas: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        """``max f_β(k)`` over block ``blocks[i]`` for ``β = betas[i]``."""
        return (
            self._ell.take(blocks, axis=0) - betas[:, None] * self._costs.take(blocks, axis=0)
        ).max(axis=1)

    def _scan(self, betas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Steps 1 to 3: the value of each β whose stop ``j*`` is known, and ``j*`` (else a
        stop beyond the known costs, up to which to learn)."""
        first = self._block_values(betas, np.zeros(betas.size, dtype=np.int64))
        if (first >= self._log_range - betas * self._stops[0]).all():
            return first, np.zeros(betas.size, dtype=np.int64)  # all stop at s_0 (large β)
        bounds = self._block_max - betas[:, None] * self._costs[:, 0]
        probe = bounds.argmax(axis=1)
        row, block = (bounds >= self._block_values(betas, probe)[:, None]).nonzero()
        values = self._block_values(betas[row], block)
        rows = np.arange(betas.size)
        best = np.maximum.reduceat(values, row.searchsorted(rows))  # each row has its probe
        thresholds = self._log_range - betas[:, None] * self._stops
        stop = np.minimum((thresholds > best[:, None]).sum(axis=1), self._last)
        # no positive A(k) known yet (ties): no bound on the stop, double the known costs
        stop[(best == -np.inf) & (stop > self._known)] = self._known + 1
        beyond = block[row.searchsorted(rows, "right") - 1] >= self._ends[stop]
        if beyond.any():
            redo = (beyond & (stop <= self._known)).nonzero()[0]
            best[redo], stop[redo] = self._scan_all(betas[redo], thresholds[redo])
        return best, stop

    def _scan_all(self, betas: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step 3: the scan on the running maxima of every known block."""
        ends = self._ends[: self._known + 1]
        blocks = (self._ell[None] - betas[:, None, None] * self._costs[None]).max(axis=2)
        running = np.maximum.accumulate(blocks, axis=1)[:, ends - 1]
        stop = running >= thresholds[:, : self._known + 1]
        stop[:, -1] |= self._known == self._last  # the scan ends at n + 1
        first = np.where(stop.any(axis=1), stop.argmax(axis=1), self._known + 1)
        return running[np.arange(betas.size), np.minimum(first, self._known)], first
