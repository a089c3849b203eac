r"""Choosing the smoothness parameter of a smooth-sensitivity mechanism.

Both tuned mechanisms minimise, over the smoothness parameter ``β > 0``,

    φ(β) = log SS_β(S) + ψ(β),

the log of their noise scale (``smooth_laplace``: ``ψ = -log α(β)``;
``laplace_ln``: ``ψ`` = the log noise standard deviation per unit of ``SS``
at the best ``σ`` for that ``β``).  ``E(β) = log SS_β`` is a maximum of lines
``log A(k) - βk`` (``k >= 0``), hence **convex and non-increasing**.  ``ψ`` is known
in closed form: increasing, concave on ``(0, β_c]`` and convex on
``[β_c, ∞)`` (``β_c = 0`` for ``smooth_laplace``).

:func:`tune` finds the minimum over ``[lo, hi]`` exactly from the lines themselves where
the smooth sensitivity has them as one array (:mod:`mechanisms.smooth.cost_envelope`:
every quantile under both neighbourings, and the trimmed mean): the upper hull of the
points ``(k, log A(k))`` gives the lines of ``E`` and the interval of each, and the
minimum is the least ``φ`` at the intervals' ends, ``β_c`` and each line's stationary
point (:mod:`mechanisms.smooth.exact_search`).  Where there are no such arrays, or they
would hold more than :data:`mechanisms.smooth.cost_envelope.MAX_QUADRATIC_COSTS` costs
of an O(K²) source (huge ``n`` at a tiny ε), or ``SS_β`` is in closed form
(:class:`mechanisms.smooth.trimmed_mean.ReferenceSmoothSensitivity`), the fallback is
the branch and bound :func:`minimise`, which treats ``E`` as a black box
(``QuantileSmoothSensitivity.log``), asked once per round for all new points.

:func:`minimise` is a branch and bound over cells ``[p, q]`` of a grid on
``[lo, hi]`` (8 geometric points on ``[hi/100, hi]``, plus ``lo`` and ``β_c``).
On a cell, ``E`` is at least the chord through the two evaluated points on its
left, extended to the right, and at least the chord through the two on its
right, extended to the left (convexity), or ``E(q)`` on the last cell (``E``
non-increasing).  The cell bound is the exact minimum of ``max(chords) + ψ``
on ``[p, q]``: on each side of the chords' crossing, ``line + ψ`` is concave
(minimum at an end; no cell straddles ``β_c``) or convex (minimum at an end or
where ``ψ' = -slope``, given in closed form by ``Penalty.inverse_slope``).
Cells whose bound is not below ``best - tol`` are dropped; the others are split
at their geometric midpoint (at most a factor 16 from ``q``) and at the point
where their bound is attained, until no cell is left.  The result is within
``tol`` (absolute, in log scale: a factor ``e^{tol}`` in the noise scale) of
the global minimum over ``[lo, hi]``, deterministic, and typically found after
3 to 6 rounds of 2 to 8 evaluations of ``E``: once a cell lies on one line of
``E`` its bound is exact and attained at the true minimiser.  The left end
``lo`` is never evaluated (its cell's bound needs only points to its right),
so it can be tiny at no cost.  The grid and ``ψ`` on it depend on ``(penalty, lo, hi)``
only and are kept (per :class:`Penalty` object, which the mechanisms keep per ε).

Public tuning (:func:`reference_smooth_sensitivity`): the parameters are chosen
on the public data set of ``n`` evenly spaced points (the ``n`` quantiles
``(i - 1/2)/n`` of the uniform distribution on ``[0, 1]``), which depends on
``(ε, δ, n)`` only; smooth sensitivity scales with ``b - a``, so the chosen
``β``, ``α``, ``σ`` do not depend on the bounds.  Privacy does not depend on how
well the reference data stands in for the real data (the parameters are
public), only the noise does.

The reference ``SS_β`` is the same for every quantile (every rank ``r``), so
the public parameters of the α-quantile are those of the median.  Its ``A(k)``
(:mod:`mechanisms.smooth.sensitivity`) is ``(k + 1)/n`` for ``k <= n - 2``,
``(n - 1/2)/n`` for ``k = n - 1`` and ``1`` from ``k = n`` on, whatever α:
a pair ``x_i < x_j`` spans ``(j - i)/n`` at most (less when it reaches the
half-gaps at 0 or 1) and costs at least ``j - i - 1``; for ``k <= n - 2`` the
pairs of width ``k`` inside ``1..n`` whose balance term is 0 are the ``i`` with
``-μ <= i - α(n - k) < μ``, an interval of length ``2μ >= 1`` that always holds
an integer in ``[1, n - k - 1]``; ``(0, n)`` costs ``n - 1`` for every α; and
``(0, n + 1)`` costs ``n``.  Under replace-one the windows of ``k + 2``
consecutive ranks around ``r`` give the same values for any ``1 <= r <= n``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.validation import check_choice, check_integer
from mechanisms.smooth.cost_envelope import CostEnvelope
from mechanisms.smooth.exact_search import first_evaluated, minimise_envelope
from mechanisms.smooth.objective import Minimum, Penalty
from mechanisms.smooth.selection import SmoothSensitivityMechanism
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity

TUNINGS = ("public", "oracle")
DEFAULT_TOLERANCE = 1e-9
_GRID = 8  # the initial grid spans [first_evaluated, hi]; cells below it open on demand
_MAX_SPLIT_RATIO = 16.0  # a wide cell [p, q] is split at q/16 rather than at sqrt(pq)


def _cell_bounds(t: np.ndarray, e: np.ndarray, penalty: Penalty) -> tuple[np.ndarray, np.ndarray]:
    """Lower bound of ``E + ψ`` on every cell ``[t_i, t_{i+1}]``, and where it is attained.

    ``E >= max(line_a, line_b)`` on the cell (module docstring), so the bound is
    the minimum of ``max(line_a, line_b) + ψ``.  Between the lines' crossing and
    the cell ends each ``line + ψ`` is concave (minimum at an end) or convex
    (minimum at the end or where ``ψ' = -slope``), so that minimum is attained
    at one of ``p``, ``q``, the crossing or the two stationary points.
    """
    p, q = t[:-1], t[1:]
    cells = p.size
    # E lines through (q, E(q)) with the slope on the right, or flat for the last
    # cell; and through (p, E(p)) with the slope on the left (if E there is known).
    slope_a = np.zeros(cells)
    slope_a[:-1] = (e[2:] - e[1:-1]) / (t[2:] - t[1:-1])
    slope_b = np.full(cells, np.nan)
    slope_b[1:] = (e[1:-1] - e[:-2]) / (t[1:-1] - t[:-2])
    has_b = np.isfinite(slope_b)
    slope_b = np.where(has_b, slope_b, slope_a)
    point_b = np.where(has_b, p, q)
    value_b = np.where(has_b, e[:-1], e[1:])
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = (value_b - e[1:] + slope_a * q - slope_b * point_b) / (slope_a - slope_b)
    candidates = np.empty((cells, 5))
    candidates[:, 0] = p
    candidates[:, 1] = q
    candidates[:, 2] = np.where(np.isfinite(crossing), crossing, p)
    candidates[:, 3] = penalty.inverse_slope(-slope_a)
    candidates[:, 4] = penalty.inverse_slope(-slope_b)
    # np.clip, without its Python wrapper
    np.minimum(np.maximum(candidates, p[:, None], out=candidates), q[:, None], out=candidates)
    model = np.maximum(
        e[1:, None] + slope_a[:, None] * (candidates - q[:, None]),
        value_b[:, None] + slope_b[:, None] * (candidates - point_b[:, None]),
    ) + penalty.value(candidates)
    best = model.argmin(axis=1)
    rows = np.arange(cells)
    return model[rows, best], candidates[rows, best]


LogSS = Callable[[np.ndarray], "np.ndarray | float"]
"""Maps an array of β to ``log SS_β`` (an array, or a float for a single β)."""


def _log_ss_at(log_ss: LogSS, betas: np.ndarray) -> np.ndarray:
    """``log_ss`` at each β, as a float64 array."""
    return np.atleast_1d(np.asarray(log_ss(betas), dtype=np.float64))


def minimise(
    log_ss: LogSS,
    penalty: Penalty,
    lo: float,
    hi: float,
    tol: float = DEFAULT_TOLERANCE,
) -> Minimum:
    """Global minimum of ``log_ss(β) + penalty(β)`` over ``[lo, hi]`` to within ``tol``.

    ``log_ss`` maps an array of β to ``log SS_β`` and must be convex and
    non-increasing in β; see the module docstring for the method and the guarantee.
    """
    if not 0 < lo < hi:
        raise ValueError(f"need 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    t, psi = _initial_grid(penalty, lo, hi)
    e = np.where(t > lo, 0.0, np.nan)
    e[t > lo] = _log_ss_at(log_ss, t[t > lo])
    active = np.ones(t.size - 1, dtype=bool)
    # Terminates: every cell active in round r is one of the parts of a cell split
    # in round r - 1, at a point strictly inside it (``_split_points``), so
    # ``log(q/p)`` falls by a factor 2 (geometric midpoint) or by ``log 16`` (when
    # ``p < q/256``) per round; from at most ``log(hi/lo) < 40`` it reaches the
    # ``1e-13`` of ``resolvable`` within about 60 rounds, and unresolvable cells
    # are dropped.
    while True:
        phi = e + psi
        best = np.fmin.reduce(phi)  # np.nanmin (phi is NaN at lo only), without its wrapper
        bound, where = _cell_bounds(t, e, penalty)
        resolvable = t[1:] - t[:-1] > 1e-13 * t[1:]
        active &= (bound < best - tol) & resolvable
        if not active.any():
            break
        p, q, guess = t[:-1][active], t[1:][active], where[active]
        inside = (guess > p) & (guess < q)
        mids = np.unique(np.concatenate((_split_points(p, q), guess[inside])))
        order = np.argsort(np.concatenate((t, mids)), kind="stable")
        t = np.concatenate((t, mids))[order]
        e = np.concatenate((e, _log_ss_at(log_ss, mids)))[order]
        psi = np.concatenate((psi, penalty.value(mids)))[order]
        is_new = order >= order.size - mids.size
        # a cell stays active if it is new (both halves of a split cell)
        active = is_new[1:] | is_new[:-1]
    k = int(np.nanargmin(phi))
    return Minimum(beta=float(t[k]), log_ss=float(e[k]), penalty=float(psi[k]))


class SmoothSensitivity(Protocol):
    """What the tuning reads of a smooth sensitivity: ``log SS_β`` and, where it has them,
    the lines ``ℓ_k`` (:class:`mechanisms.smooth.cost_envelope.CostEnvelope`)."""

    def log(self, beta: np.ndarray) -> np.ndarray | float: ...

    def envelope(self) -> CostEnvelope | None: ...


def tune(ss: SmoothSensitivity, penalty: Penalty, lo: float, hi: float) -> Minimum:
    """The minimum of ``log SS_β + ψ(β)`` over ``[lo, hi]``: exact from the lines of ``SS``
    (:func:`mechanisms.smooth.exact_search.minimise_envelope`), or by the branch and bound
    :func:`minimise` where ``ss`` has no lines or they would be too many
    (:data:`mechanisms.smooth.cost_envelope.MAX_QUADRATIC_COSTS`)."""
    if not 0 < lo < hi:
        raise ValueError(f"need 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    envelope = ss.envelope()
    found = None if envelope is None else minimise_envelope(envelope, penalty, lo, hi)
    return minimise(ss.log, penalty, lo, hi) if found is None else found


@lru_cache(maxsize=64)  # the grid and its ψ depend on (ε, δ) only: once per mechanism
def _initial_grid(penalty: Penalty, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The grid of :func:`minimise` (8 geometric points on ``[first_evaluated, hi]``, plus
    ``lo`` and ``ψ``'s inflection) and ``ψ`` there, read-only."""
    grid = np.geomspace(first_evaluated(lo, hi), hi, _GRID)
    if lo < grid[0] < hi:
        grid = np.concatenate(([lo], grid))
    if lo < penalty.inflection < hi:
        grid = np.union1d(grid, [penalty.inflection])
    psi = penalty.value(grid)
    grid.flags.writeable = psi.flags.writeable = False
    return grid, psi


def _split_points(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``max(√(pq), q/16)``, strictly inside each resolvable cell ``[p, q]``.

    ``√p·√q`` where ``pq`` leaves float64's normal range (``β`` below 1e-154
    or ``t`` above 1e154), so the point stays inside the cell.
    """
    with np.errstate(over="ignore"):
        product = p * q
    normal = (product >= np.finfo(np.float64).tiny) & (product < np.inf)
    geometric = np.where(normal, np.sqrt(product), np.sqrt(p) * np.sqrt(q))
    return np.maximum(geometric, q / _MAX_SPLIT_RATIO)


MAX_REFERENCE_SIZE = 10**7
"""Largest option ``reference_size`` (a ``ValueError`` above it): at a tiny ε the tuning
reads every rank of the reference data, about 60 bytes each (0.6 GB and 5 s at 10^7; a
``MemoryError`` at 2^52, and int64 overflows beyond 2^62).  Without the option the
reference data have the size of the data, which are in memory already."""


class EvenlySpaced:
    """The sorted reference data ``(i + 1/2)/n``, ``i = 0..n-1``, computed where read.

    Stands in for the array in :class:`QuantileSmoothSensitivity`, which only
    reads ``size`` and order statistics at integer arrays of indices, so the
    public tuning at ``n = 10^7`` does not hold 80 MB per cached ``n``.  Entry
    ``i`` is ``(float(i) + 0.5) / n``, the same float as in the materialised array.
    """

    def __init__(self, n: int) -> None:
        self.size = n
        self._n = max(n, 1)

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        return (np.asarray(index, dtype=np.float64) + 0.5) / self._n


@lru_cache(maxsize=8)  # each holds the log A(k) its evaluations computed (k << n)
def reference_smooth_sensitivity(n: int, neighbouring: Neighbouring) -> QuantileSmoothSensitivity:
    """``SS`` of the public reference data, ``(i - 1/2)/n`` in ``[0, 1]``, for every quantile.

    Computed for the median, the fastest; it is the same for every α (module docstring).
    """
    return QuantileSmoothSensitivity(EvenlySpaced(n), 0.0, 1.0, neighbouring)


class TunedNoiseMechanism(SmoothSensitivityMechanism):
    """A smooth-sensitivity mechanism with tuned parameters: options ``tuning``,
    ``reference_size`` (and ``alpha`` and those of :class:`NoiseMechanism`).

    ``tuning="public"`` (default) fixes the parameters on the public reference
    data of size ``reference_size`` (default: the size of the bounded data,
    which is then treated as public, as in the Duff paper's experiments with
    ``|S| = 1000``; under add/remove neighbours ``n`` is not strictly public, so
    pass ``reference_size`` for a guarantee that does not lean on it).
    ``tuning="oracle"`` optimises on the private data (the Duff paper's choice):
    the guarantee then has ``data_dependent_tuning=True``.  Releases read only a
    window of order statistics (:mod:`mechanisms.smooth.selection`).
    """

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        tuning: str = "public",
        reference_size: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, **options)
        self.tuning = check_choice(tuning, TUNINGS, "tuning")
        self.reference_size = reference_size
        if reference_size is not None:
            self.reference_size = check_integer(
                reference_size, "reference_size", minimum=1, maximum=MAX_REFERENCE_SIZE
            )

    @property
    def tuned_on_data(self) -> bool:
        return self.tuning == "oracle"

    def public_size(self, n: int) -> int:
        """The size of the public reference data set for a release on ``n`` points."""
        return n if self.reference_size is None else self.reference_size
