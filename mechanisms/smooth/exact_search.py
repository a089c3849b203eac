r"""The exact minimum of ``φ(β) = max_k (ℓ_k - βk) + ψ(β)`` over ``[lo, hi]``.

``log SS_β = max_k (ℓ_k - βk)`` with ``ℓ_k = log A(k)`` (Nissim, Raskhodnikova & Smith
2007, "Smooth sensitivity and sampling in private data analysis", Definition 2.1;
the arrays: :mod:`mechanisms.smooth.cost_envelope`) is the upper envelope of lines of
slopes ``-k``.  The lines on it are the vertices ``k_0 < k_1 < ... < k_m`` of the upper
concave hull of the points ``(k, ℓ_k)`` (:func:`upper_hull`), and line ``k_i`` is the
maximum for ``β`` in ``[s_i, s_{i-1}]``, ``s_i = (ℓ_{k_{i+1}} - ℓ_{k_i})/(k_{i+1} - k_i)``
the hull's slopes (``s_{-1} = ∞``, ``s_m = -∞``).  On that interval ``φ = ℓ_{k_i} - βk_i
+ ψ(β)`` is concave where ``ψ`` is (``β <= β_c``; minimum at an end) and convex above
(minimum at an end or at the stationary point ``ψ'(β) = k_i``,
:attr:`mechanisms.smooth.objective.Penalty.inverse_slope`), so the minimum over
``[lo, hi]`` is the least ``φ`` at the interval ends, ``β_c`` and each line's
stationary point, clipped to its interval: :func:`minimise_lines`, one vectorised
pass over the lines.  Exact up to rounding (no tolerance).

The costs that can be on the envelope grow like ``1/β`` (:mod:`mechanisms.smooth.cost_envelope`),
and ``lo`` is tiny (``1e-12·hi``).  So :func:`minimise_envelope` solves on
``[low, hi]`` from ``low = max(lo, hi/100)`` and proves the rest: on ``[lo, low]``,
``φ >= log SS_low + ψ(lo)`` (``log SS`` is non-increasing and ``ψ`` increasing); while
that bound is below the minimum found, ``low`` falls 16-fold (to ``lo`` at once when every
cost is known).

The hull: a few vectorised passes drop every point on or below the chord of its
neighbours (not on the hull of any superset), then Andrew's monotone chain runs in
Python on what is left (tens of points for real data: 0.05 ms at ``K = 10^3``, 0.3 ms at
``10^4``; concave ``ℓ`` keep every point, 1.7 ms at ``10^4``).
"""

from __future__ import annotations

import numpy as np

from mechanisms.smooth.cost_envelope import CostEnvelope
from mechanisms.smooth.objective import Minimum, Penalty

PRUNING_PASSES = 6
"""Vectorised passes of :func:`upper_hull` before its sequential chain."""
FIRST_LOW = 1e-2
"""The first ``low`` is ``max(lo, hi/100)``."""
LOW_STEP = 16.0
"""``low`` falls 16-fold per round."""


def first_evaluated(lo: float, hi: float) -> float:
    """The smallest β whose lines :func:`minimise_envelope` reads before it needs smaller ones."""
    return max(lo, FIRST_LOW * hi)


def upper_hull(ell: np.ndarray) -> np.ndarray:
    """The costs ``k`` (increasing) of the vertices of the upper concave hull of the points
    ``(k, ℓ_k)`` with ``ℓ_k > -inf``; a point on a chord is not a vertex."""
    costs = np.flatnonzero(ell > -np.inf)
    x, y = costs.astype(np.float64), ell[costs]
    for _ in range(PRUNING_PASSES):
        if x.size <= 2:
            break
        above = (y[1:-1] - y[:-2]) * (x[2:] - x[:-2]) > (y[2:] - y[:-2]) * (x[1:-1] - x[:-2])
        if above.all():
            break
        keep = np.concatenate(([True], above, [True]))
        costs, x, y = costs[keep], x[keep], y[keep]
    hull: list[int] = []
    hx: list[float] = []
    hy: list[float] = []
    for k, xk, yk in zip(costs.tolist(), x.tolist(), y.tolist(), strict=True):
        while len(hx) >= 2 and (hy[-1] - hy[-2]) * (xk - hx[-2]) <= (yk - hy[-2]) * (
            hx[-1] - hx[-2]
        ):
            hull.pop()
            hx.pop()
            hy.pop()
        hull.append(k)
        hx.append(xk)
        hy.append(yk)
    return np.array(hull, dtype=np.int64)


def _active_costs(ell: np.ndarray, lo: float, hi: float) -> tuple[int, int]:
    """``[first, stop)``: the costs from the largest maximiser of ``ℓ_k - hi·k`` to the
    smallest of ``ℓ_k - lo·k``, the only lines on the envelope on ``[lo, hi]``."""
    costs = np.arange(ell.size)
    with np.errstate(over="ignore"):  # β·k = inf: the line is -inf (its weight e^{-βk} is 0)
        at_hi, at_lo = ell - hi * costs, ell - lo * costs
    first = ell.size - 1 - int(np.argmax(at_hi[::-1]))
    return first, max(first, int(np.argmax(at_lo))) + 1


def minimise_lines(ell: np.ndarray, penalty: Penalty, lo: float, hi: float) -> Minimum:
    """The minimum of ``max_k (ℓ_k - βk) + ψ(β)`` over ``[lo, hi]`` (module docstring)."""
    first, stop = _active_costs(ell, lo, hi)
    ks = upper_hull(ell[first:stop]) + first
    heights, costs = ell[ks], ks.astype(np.float64)
    slopes = np.diff(heights) / np.diff(costs)
    left = np.maximum(np.concatenate((slopes, [-np.inf])), lo)
    right = np.minimum(np.concatenate(([np.inf], slopes)), hi)
    on = left <= right
    heights, costs, left, right = heights[on], costs[on], left[on], right[on]
    inflection = np.full(costs.shape, penalty.inflection)
    candidates = np.stack((left, right, penalty.inverse_slope(costs), inflection))
    np.minimum(np.maximum(candidates, left, out=candidates), right, out=candidates)
    with np.errstate(over="ignore"):  # as in _active_costs
        values = heights - candidates * costs + penalty.value(candidates)
        best = np.unravel_index(int(np.argmin(values)), values.shape)
        beta = float(candidates[best])
        log_ss = float(np.max(ell - beta * np.arange(ell.size)))
    return Minimum(beta=beta, log_ss=log_ss, penalty=float(penalty.value(np.array([beta]))[0]))


def minimise_envelope(
    envelope: CostEnvelope, penalty: Penalty, lo: float, hi: float
) -> Minimum | None:
    """The exact minimum of ``log SS_β + ψ(β)`` over ``[lo, hi]`` from the lines of
    ``envelope`` (module docstring), or ``None`` where the envelope declines (too many costs)."""
    low = first_evaluated(lo, hi)
    lowest_penalty = float(penalty.value(np.array([lo]))[0])
    while True:
        ell = envelope.lines(low)
        if ell is None:
            return None
        if envelope.complete:
            low = lo
        found = minimise_lines(ell, penalty, low, hi)
        if low == lo:
            return found
        with np.errstate(over="ignore"):  # as in _active_costs
            bound = float(np.max(ell - low * np.arange(ell.size))) + lowest_penalty
        if found.objective <= bound:
            return found
        low = max(lo, low / LOW_STEP)
