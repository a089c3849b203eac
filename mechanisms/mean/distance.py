"""The dataset-distance utility of the mean: a step function with at most ``n + 1`` levels.

Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility Function
Family for the Exponential Mechanism", Definition 8 and section 4.1 ("Means"),
with ``T`` the mean (``T(∅) = a``, :func:`mechanisms.core.data.mean_value`):

    u(x, S) = -min{ d(S, S') : T(S') = x },    x in [a, b].

The paper leaves the step function to "a dynamic program"; it is derived here in
closed form.  Notation: ``y_(1) <= ... <= y_(n)`` the data in ``[a, b]``,
``Σ`` their sum, ``top_r``/``bot_r`` the sums of the ``r`` largest/smallest,
``z_(i) = y_(i) - a`` (ascending) with prefix sums ``P_j = z_(1) + ... + z_(j)``
(``P_0 = 0``), and ``Q_j`` the same for ``w = b - y`` (the ``j`` largest points).

Add/remove distance.

1. An edit removes a sub-multiset ``R`` (``|R| = r``) and adds ``s`` points ``A``, at
   cost ``d = r + s``, giving the mean ``(Σ - ΣR + ΣA)/(n - r + s)``.  With
   ``s >= 1`` the added sum takes every value of ``[s·a, s·b]``, so for fixed
   ``R`` the reachable means form an interval of length ``s·(b - a)/(n - r + s)``.
2. Union over ``R`` with ``|R| = r`` (contiguity): ``J(r, s) = [(Σ - top_r + s·a)/m,
   (Σ - bot_r + s·b)/m]``, ``m = n - r + s``.  Every ``R``'s interval lies inside it
   (``bot_r <= ΣR <= top_r``).  Conversely, go from the ``r`` smallest points to the
   ``r`` largest by swapping one chosen point at a time for an unchosen one: each
   swap moves ``ΣR`` by at most ``b - a <= s·(b - a)``, so consecutive intervals
   overlap and their union is all of ``J(r, s)``.  (With ``s = 0`` the means are
   isolated points: this is where ``s >= 1`` is needed.)
3. Monotone in ``s``: ``J(r, s) ⊆ J(r, s + 1)`` (add one more point at the target
   ``x``, which is in ``[a, b]``: the mean stays ``x``).  So the means reachable at
   distance ``<= k`` with at least one addition are
   ``I_k = ∪_{r=0}^{min(k-1, n)} J(r, k - r)``.
4. Measure zero.  Edits without additions (removals only; ``S`` itself with
   mean ``μ``, ``∅`` with mean ``a``) reach at most ``2^n`` points.  The EM's base
   measure is the Lebesgue measure, so its density only needs ``u`` almost
   everywhere: ``ũ(x) = -min{k : x in I_k}``.  It equals ``u`` outside a finite
   set, so ``|ũ_S - ũ_S'| <= 1`` almost everywhere for neighbours (``u`` has
   sensitivity 1, the paper's Lemma 1) and the EM with ``ũ`` is the EM with ``u``.
5. ``I_k`` is an interval ``[L_k, U_k]``: for ``n >= 1`` every ``J(r, s)`` contains
   the mean ``μ`` (``top_r >= r·μ >= bot_r`` and ``a <= μ <= b``); for ``n = 0``,
   ``J(0, s) = [a, b]``.  Subtracting ``a`` (``Σ - top_r - (n - r)·a = P_{n-r}``) and
   writing ``j = n - r`` for the number of points kept (the ``j`` smallest):

       L_k = a + min_{j0 <= j <= n} P_j/(2j + k - n),    j0 = max(0, n + 1 - k),
       U_k = b - min_{j0 <= j <= n} Q_j/(2j + k - n),

   the denominator being ``n - r + s >= 1``.  ``j = 0`` is allowed from ``k = n + 1``
   on and gives ``I_{n+1} = [a, b]`` (remove everything, add ``x``): ``n + 1`` levels,
   ``u = -k`` on ``I_k minus I_{k-1}``, i.e. ``[L_k, L_{k-1})`` and ``(U_{k-1}, U_k]``.
   ``L`` is non-increasing and ``U`` non-decreasing in ``k`` (``I_k ⊆ I_{k+1}``).
6. ``O(n log n)``.  Let ``h(j) = P_j/(2(j - x0))`` with ``x0 = (n - k)/2 < j0``.
   For ``j > x0``, ``h(j) <= h(j + 1)`` iff ``P_j <= z_(j+1)·(j - x0)`` iff
   ``x0 <= τ_j := j - P_j/z_(j+1)`` (``τ_j = j`` when ``P_j = 0``, i.e. when the ``j``
   smallest points are at ``a``).  ``τ`` is non-decreasing in ``j``:
   ``τ_{j+1} - τ_j = 1 - P_{j+1}/z_(j+2) + P_j/z_(j+1) >= 0`` because
   ``z_(j+2) >= z_(j+1)`` and ``P_{j+1} = P_j + z_(j+1)``.  So ``h`` strictly
   decreases up to the first ``j`` with ``τ_j >= x0`` and never decreases after it:
   the minimum over ``j0..n`` is at ``max(j0, #{j : τ_j < x0})``, one binary search
   per level.  Both terms fall as ``k`` grows (``x0`` does), so the minimising number
   of removals ``r = n - j`` is non-decreasing in ``k`` (a two-pointer sweep would
   also do; the search vectorises).

Replace-one (Hamming) distance: the inverse sensitivity of Asi & Duchi,
"Instance-optimality in differential privacy via approximate inverse
sensitivity mechanisms".  ``n`` is fixed and ``k`` replacements remove ``r <= k``
points and add ``r`` points.  For ``r >= 1`` the means reachable by one ``R`` form
``[(Σ - ΣR + r·a)/n, (Σ - ΣR + r·b)/n]``; as in 2. their union over ``|R| = r`` is
``[(Σ - top_r + r·a)/n, (Σ - bot_r + r·b)/n]``, which grows with ``r``
(``top_{r+1} - top_r = y_(n-r) >= a``), so

    I_k = [a + P_{n-k}/n, b - Q_{n-k}/n],    k = 1..n,  I_n = [a, b],

``n`` levels (``r = 0`` reaches ``μ`` only: measure zero).  ``n = 0``: ∅ is the only
dataset of its size (``u = 0`` at ``a``, ``-∞`` elsewhere) and has no neighbour,
so any output distribution is private; one level ``[a, b]`` gives the uniform
distribution, as :mod:`mechanisms.median.duff_utility` does for the quantiles.

Floating point: the prefix sums are float64 cumulative sums of non-negative
terms (relative error at most ``j·2**-53`` in ``P_j``), so every end point is
within a relative ``n·2**-52`` of its exact value; ``L`` and ``U`` are made
monotone (a no-op in exact arithmetic) so that rounding never unsorts them.  When
``(n + 1)·(b - a)`` could overflow float64 (bounds near ±1e308), the distances are
first divided by a power of two ``u > (b - a)/2`` (exact) and the shortfalls multiplied
back by it: the same floats, without an overflow of the prefix sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanisms.core.data import read_only, sum_unit
from mechanisms.core.guarantee import Neighbouring


def kept_shortfall(z: np.ndarray, levels: int) -> np.ndarray:
    """``min_{j0 <= j <= n} P_j/(2j + k - n)`` for ``k = 1..levels`` (module docstring, 5.-6.).

    ``z`` holds the distances ``y - a`` of the data to the near bound, ascending
    (non-negative); ``P_j`` are its prefix sums and ``j0 = max(0, n + 1 - k)``.
    The minimiser is ``max(j0, #{j : τ_j < x0})`` with ``x0 = (n - k)/2`` and
    ``τ_j = j - P_j/z_(j+1)`` (``j`` where ``P_j = 0``).
    """
    n = z.size
    prefix = np.zeros(n + 1)
    np.cumsum(z, out=prefix[1:])
    j = np.arange(n, dtype=np.float64)
    positive = prefix[:-1] > 0  # then z_(j+1) >= z_(j) > 0
    tau = j - np.divide(prefix[:-1], z, out=np.zeros(n), where=positive)
    np.maximum.accumulate(tau, out=tau)  # non-decreasing already, up to rounding
    k = np.arange(1, levels + 1)
    start = np.maximum(0, n + 1 - k)
    best = np.maximum(start, np.searchsorted(tau, 0.5 * (n - k), side="left"))
    return prefix[best] / (2 * best + k - n)


@dataclass(frozen=True)
class MeanLevels:
    """The nested intervals ``I_k = [L_k, U_k]``, ``k = 1..K``, of the mean's utility.

    ``lower_ends[k-1] = L_k`` (non-increasing, ``L_K = a``) and
    ``upper_ends[k-1] = U_k`` (non-decreasing, ``U_K = b``), read-only.  Almost
    everywhere on ``[a, b]``, ``u(x) = -min{k : L_k <= x <= U_k}`` (module docstring).
    """

    lower_ends: np.ndarray
    upper_ends: np.ndarray

    @property
    def count(self) -> int:
        """``K``: ``n + 1`` levels for add/remove, ``max(n, 1)`` for replace-one."""
        return int(self.lower_ends.size)

    def level(self, x: np.ndarray | float) -> np.ndarray:
        """``min{k : L_k <= x <= U_k}`` (int64) at points ``x`` of ``[a, b]``: ``-u`` a.e."""
        points = np.asarray(x, dtype=np.float64)
        below = np.searchsorted(-self.lower_ends, -points, side="left")  # #{k : L_k > x}
        above = np.searchsorted(self.upper_ends, points, side="left")  # #{k : U_k < x}
        return np.maximum(below, above) + 1

    def edges(self) -> np.ndarray:
        """``[L_{K-1}, ..., L_1, U_1, ..., U_{K-1}]`` (sorted): with ``x_(0) = a`` and
        ``x_(2K-1) = b``, the piece ``[x_(g), x_(g+1)]`` has level ``|g - (K - 1)| + 1``."""
        return np.concatenate([self.lower_ends[-2::-1], self.upper_ends[:-1]])


def mean_levels(
    sorted_x: np.ndarray,
    lower: float,
    upper: float,
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE,
) -> MeanLevels:
    """The levels of ``u(x, S)`` for the mean of sorted data inside ``[lower, upper]``.

    Add/remove: ``n + 1`` levels, ``L_k = a + kept_shortfall(y - a)``, ``U_k = b -
    kept_shortfall(b - y)``.  Replace-one: ``max(n, 1)`` levels,
    ``L_k = a + P_{n-k}/n`` and ``U_k = b - Q_{n-k}/n``.  ``O(n log n)``.
    """
    x = np.asarray(sorted_x, dtype=np.float64)
    n = x.size
    unit = sum_unit(upper - lower, n)  # 1 unless the prefix sums could overflow
    near_lower = (x - lower) / unit  # ascending
    near_upper = (upper - x[::-1]) / unit  # ascending
    if neighbouring is Neighbouring.ADD_REMOVE:
        low = lower + kept_shortfall(near_lower, n + 1) * unit
        high = upper - kept_shortfall(near_upper, n + 1) * unit
    elif n == 0:
        low, high = np.array([lower]), np.array([upper])
    else:
        kept = np.arange(n - 1, -1, -1)  # n - k for k = 1..n
        low = lower + np.cumsum(np.append(0.0, near_lower))[kept] / n * unit
        high = upper - np.cumsum(np.append(0.0, near_upper))[kept] / n * unit
    low = np.minimum.accumulate(np.clip(low, lower, upper))
    high = np.maximum.accumulate(np.clip(high, lower, upper))
    return MeanLevels(read_only(low), read_only(high))
