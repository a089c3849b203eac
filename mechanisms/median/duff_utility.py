"""The dataset-distance utility of the α-quantile, for add/remove and replace-one neighbours.

Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility Function
Family for the Exponential Mechanism", Definition 8, with ``T = T_α``:

    u(x, S) = -min{ d(S, S') : T_α(S') = x },     T_α(S) = x_(ceil(α·n)),  T_α(∅) = a,

``α·n`` read exactly (:func:`mechanisms.core.quantiles.exact_alpha`).  With ``d`` the
add/remove distance this is Duff for the α-quantile; with the Hamming distance
between datasets of the same size (replace-one) it is the inverse sensitivity
mechanism of Asi & Duchi, "Instance-optimality in differential privacy via
approximate inverse sensitivity mechanisms" (NeurIPS 2020), whose ``len_f(y; S)``
is ``-u``.  Either way ``|u(x, S) - u(x, S')| <= d(S, S') = 1`` for neighbours
(triangle inequality), so ``exp(ε·u/2)`` is ε-DP for that neighbouring.

Notation: ``L``, ``t``, ``R`` points of ``S`` below, at and above ``x``,
``n = L + t + R``, ``k = ceil(α·n)``, ``c0 = [t = 0]``, and, for integers ``m``,
``F(m) = floor(m/α)`` and ``G(m) = ceil(m·α/(1 - α))``.

Add/remove.  ``T_α(S') = x`` for ``S'`` with ``L', t' >= 1, R'`` points
(``n' >= 1``) iff ``L' < ceil(α·n') <= L' + t'``, i.e. iff the slacks
``s_lo = α·n' - L' > 0`` and ``s_up = L' + t' - α·n' >= 0`` (``s_lo + s_up = t'``).
``d(S, S') >= |L' - L| + |t' - t| + |R' - R|``, with equality for the edits used
below (add copies of ``x``, remove data points; possible at ``x = a`` and ``x = b``
too).  One edit changes
``(s_lo, s_up)`` by: add ``x`` ``(α, 1-α)``, add below ``(α-1, 1-α)``, add above
``(α, -α)``, remove ``x`` ``(-α, α-1)``, remove below ``(1-α, α-1)``, remove above
``(-α, α)``; effects add up, and an addition and a removal in the same class
cancel.  Adding ``x`` beats adding below by ``(1, 0)`` and adding above by
``(0, 1)``, and removing a copy of ``x`` lowers both slacks, so an optimal edit
adds ``c >= c0`` copies of ``x`` and removes ``p`` points below and ``r`` above.
At most one constraint fails on ``S`` (their slacks sum to ``t >= 0``):

* ``s_up < 0`` (``L + t < k``: ``x`` below the quantile), ``V = α·n - L - t``.
  Without ``(lo)``, removing below only hurts, so ``p = 0`` and the condition is
  ``(1-α)·c + α·r >= V``.  The least ``r`` for a given ``c`` also meets ``(lo)``:
  if ``r = 0``, ``α·n' >= α·n > L + t >= L``; else one removal fewer violates
  ``(up)``, so ``α·n' > L + t + c - α > L``; and ``r <= R`` (with ``r = R``,
  ``(up)`` reads ``α·(L + t + c) <= L + t + c``).  ``(1-α)·c + α·r`` is at most
  ``(1-α)·(c + r)`` if ``α <= 1/2`` and at most ``(1-α)·c0 + α·(c - c0 + r)`` if
  ``α >= 1/2``; these bounds are attained by copies only, resp. ``c0`` copies then
  removals, so the distance is ``max(c0, G(R) - L - t)`` for ``α <= 1/2`` and
  ``c0 + max(0, n + c0 - F(L + t + c0))`` for ``α >= 1/2``.
* ``s_lo <= 0`` (``L >= k``: ``x`` above the quantile), ``W = L - α·n``.
  Symmetrically ``r = 0`` and the condition is ``α·c + (1-α)·p > W``.  The least
  ``p`` for a given ``c`` meets ``(up)`` (``s_up >= t`` on ``S`` and copies raise
  it; after a last needed removal ``α·n' <= L' + 1 - α < L' + t'``) and is at most
  ``L`` (``L' = 0`` gives ``s_lo = α·n' > 0``).  ``α·c + (1-α)·p`` is at most
  ``α·(c + p)`` if ``α >= 1/2`` and at most ``α·c0 + (1-α)·(c - c0 + p)`` if
  ``α <= 1/2``, so the distance is ``F(L) - n + 1`` (copies only, ``>= 1 >= c0``)
  for ``α >= 1/2`` and ``c0 + max(0, L + 1 - G(t + R + c0))`` for ``α <= 1/2``.
* neither: ``x = T_α(S)`` and the distance is 0.

The empty dataset adds one candidate: ``T_α(∅) = a``, so at ``x = a`` the
distance is at most ``n`` (this matters when ``a`` is not a data point and
``α > 1/2``).

On the interior of gap ``i`` (``L = i``, ``t = 0``, ``R = n - i``; for
``α = 1/2`` both rows hold):

* ``α <= 1/2``: ``u = -max(1, G(n - i) - i)`` for ``i < k`` and
  ``u = -1 - max(0, i + 1 - G(n - i + 1))`` for ``i >= k``;
* ``α >= 1/2``: ``u = -1 - max(0, n + 1 - F(i + 1))`` for ``i < k`` and
  ``u = -(F(i) - n + 1)`` for ``i >= k``.

Each is monotone in ``i`` on each side of ``k``, so ``u`` is unimodal; its
maximum ``-1`` is on gap ``ceil(α·(n + 1)) - 1`` alone (one added copy of ``x``
then has rank ``i + 1 = ceil(α·(n + 1))``; one removal leaves no copy of ``x``).
For ``α = 1/2``, ``F(m) = 2m`` and with ``D = 2i - n`` the second row is
``-1 - max(0, -D - 1)`` and ``-(D + 1)``: the median's closed form of
:mod:`mechanisms.median.duff`.

Replace-one.  ``n`` is fixed, so ``T_α(S') = x`` iff ``L' <= k - 1`` and
``R' <= n - k``.  A replacement moves one point between the classes below / at /
above, so it lowers ``L`` or ``R`` by at most one, and the two conditions cannot
both fail (``L + R <= n``); moving excess points onto ``x`` attains

    -u = max(0, L - k + 1, R - n + k),   on gap i: max(i - k + 1, k - i) >= 1,

largest (``u = -1``) on gaps ``k - 1`` and ``k``.  For ``n = 0`` the only dataset
of that size is ∅: ``u(a, ∅) = 0`` and ``-∞`` elsewhere.  ∅ then has no other
neighbour, so any output distribution is private; the mechanism uses the
constant gap utility, i.e. the uniform distribution on ``[a, b]``.

:class:`QuantileDistance` evaluates these formulas (both neighbourings) on
integer arrays of counts, without a loop over gaps.

Exact arithmetic.  ``α = P/Q`` exactly, so ``G(m) = ceil(m·P/(Q - P))`` (ratio
at most 1, used for ``α <= 1/2``) and ``F(m) = floor(m·Q/P)`` (ratio in
``(1, 2)``, used for ``α > 1/2``), with ``0 <= m <= n + 1``.  ``Q`` can be
``10**17`` (``α = 0.30000000000000004``), so ``m·P`` overflows int64;
:class:`Multiples` replaces the fractional part of the ratio by a fraction of
denominator at most ``2·(n + 1)`` with the same floors and ceilings for all such
``m`` (a Farey mediant), so every product is below ``6·(n + 1)**2`` and exact in
int64 for ``n < 10**9``.  Every distance is an integer in ``0..n + 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.quantiles import exact_alpha, quantile_rank

if TYPE_CHECKING:
    pass


def _farey_mediant(fraction: Fraction, order: int) -> Fraction:
    """For ``fraction`` in (0, 1) with denominator above ``order``: the mediant of its
    two neighbours in the Farey sequence of that order.

    No fraction of denominator ``<= order`` lies between ``fraction`` and the
    mediant (nor equals either), so ``floor(m·r)`` and ``ceil(m·r)`` agree for both
    for every integer ``0 <= m <= order``.  Stern–Brocot descent, taking each run
    of equal steps at once.
    """
    p, q = fraction.numerator, fraction.denominator
    a, b, c, d = 0, 1, 1, 1  # a/b < p/q < c/d, adjacent (b·c - a·d = 1)
    while b + d <= order:
        if (a + c) * q < p * (b + d):  # mediant below p/q: raise a/b by k steps
            k = min((order - b) // d, (p * b - q * a - 1) // (q * c - p * d))
            a, b = a + k * c, b + k * d
        else:  # mediant above p/q (never equal: its denominator is <= order < q)
            k = min((order - d) // b, (q * c - p * d - 1) // (p * b - q * a))
            c, d = c + k * a, d + k * b
    return Fraction(a + c, b + d)


@dataclass(frozen=True)
class Multiples:
    """Exact ``floor(m·ratio)`` and ``ceil(m·ratio)`` for int64 arrays ``m`` with values in
    ``0..order``, for a non-negative rational ``ratio``.

    ``ratio`` is replaced by ``numerator/denominator``: its whole part plus an
    equivalent fractional part of denominator ``<= 2·order``
    (:func:`_farey_mediant`), so ``m·numerator <= (ratio + 1)·2·order**2``
    (int64 for ``order < 10**9`` and the ratios of this module, at most 2).
    """

    numerator: int
    denominator: int

    @classmethod
    def of(cls, ratio: Fraction, order: int) -> Multiples:
        whole = math.floor(ratio)
        part = ratio - whole
        if part.denominator > order:
            part = _farey_mediant(part, order)
        equivalent = whole + part
        return cls(equivalent.numerator, equivalent.denominator)

    def floor(self, m: np.ndarray) -> np.ndarray:
        return m * self.numerator // self.denominator

    def ceil(self, m: np.ndarray) -> np.ndarray:
        return (m * self.numerator + (self.denominator - 1)) // self.denominator


@dataclass(frozen=True)
class QuantileDistance:
    """``min{d(S, S') : T_α(S') = x}`` for a size-``n`` dataset ``S``, from the counts of
    points below and at ``x`` (module docstring); the constants are computed once.

    The add/remove distance leaves out the empty dataset (the caller adds it at
    ``x = a``); the replace-one distance needs ``n >= 1``.
    """

    n: int
    alpha: float
    neighbouring: Neighbouring
    rank: int
    """``k = ceil(α·n)``."""
    lower_half: bool
    """``α <= 1/2``: the distance uses ``G``, else ``F``."""
    multiples: Multiples
    """``G(m) = ceil(m·α/(1 - α))`` (``lower_half``) or ``F(m) = floor(m/α)``."""

    @classmethod
    def of(cls, n: int, alpha: float, neighbouring: Neighbouring) -> QuantileDistance:
        exact = exact_alpha(alpha)
        lower_half = exact <= Fraction(1, 2)
        ratio = exact / (1 - exact) if lower_half else 1 / exact
        return cls(
            n,
            alpha,
            neighbouring,
            quantile_rank(n, alpha),
            lower_half,
            Multiples.of(ratio, n + 1),
        )

    def __call__(self, below: np.ndarray, ties: np.ndarray) -> np.ndarray:
        """The distance (int64) at points with ``below``/``ties`` data points below/at them."""
        n, k = self.n, self.rank
        below = np.asarray(below, dtype=np.int64)
        not_above = below + np.asarray(ties, dtype=np.int64)
        above = n - not_above
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return np.maximum(np.maximum(below - (k - 1), above - (n - k)), 0)
        c0 = (not_above == below).astype(np.int64)  # no copy of x yet
        if self.lower_half:
            g = self.multiples.ceil
            low = np.maximum(c0, g(above) - not_above)
            high = c0 + np.maximum(0, below + 1 - g(n - below + c0))
        else:
            f = self.multiples.floor
            low = c0 + np.maximum(0, n + c0 - f(not_above + c0))
            high = f(below) - n + 1
        return np.where(not_above < k, low, np.where(below >= k, high, 0))

    def gap_utility(self, gaps: np.ndarray) -> np.ndarray:
        """``u`` on the interior of gap ``i`` (int array ``gaps``), as float64 (exact integers
        of magnitude ``<= n + 1``): :meth:`__call__` with ``t = 0``, in fewer passes.

        Replace-one: ``max(i - k + 1, k - i) = |i - k + 1/2| + 1/2`` (``-1`` on the
        only gap of ∅: uniform).  Add/remove: ``-u = 1 + max(0, z)`` with
        ``z = G(n - i) - i - 1`` (``i < k``) or ``i + 1 - G(n - i + 1)`` (``i >= k``)
        for ``α <= 1/2``, and ``z = 1 - (F(i + 1) - n)`` or ``F(i) - n`` for ``α > 1/2``.
        """
        i = np.asarray(gaps, dtype=np.int64)
        n, k = self.n, self.rank
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            u = np.subtract(i, k - 0.5, dtype=np.float64)
            np.abs(u, out=u)
            u += 0.5
            return np.negative(u, out=u)
        right = i >= k  # x above the quantile
        if self.lower_half:
            m = n - i
            m += right
            z = self.multiples.ceil(m)
            z -= i + 1
            np.negative(z, out=z, where=right)
        else:
            m = i + 1
            m -= right
            z = self.multiples.floor(m)
            z -= n
            np.subtract(1, z, out=z, where=~right)
        u = np.maximum(z, 0).astype(np.float64)
        u += 1.0
        return np.negative(u, out=u)

    @property
    def mode(self) -> int:
        """A gap where :meth:`gap_utility` is largest: ``ceil(α·(n + 1)) - 1`` (add/remove,
        the only one) or ``k`` (replace-one, tied with ``k - 1``)."""
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return self.rank
        return quantile_rank(self.n + 1, self.alpha) - 1


@lru_cache(maxsize=256)
def quantile_distance(n: int, alpha: float, neighbouring: Neighbouring) -> QuantileDistance:
    """:meth:`QuantileDistance.of`, cached per ``(n, alpha, neighbouring)``: its exact rational
    arithmetic (the Farey descent of :class:`Multiples`) costs more than a whole release of
    a small dataset, and a benchmark releases many datasets of the same size."""
    return QuantileDistance.of(n, alpha, neighbouring)


def gap_utility(n: int, gaps: np.ndarray) -> np.ndarray:
    """``u_d`` on the interior of gap ``i`` (int array ``gaps``, values ``0..n``), size-``n`` data.

    ``-(1 + max(0, D, -D - 1))`` with ``D = 2i - n`` (module docstring), computed
    as ``-(|D + 1/2| + 1/2)`` (equal for integers, exact in float64 for
    ``n < 2**51``, and a single temporary); largest (``-1``) on gap ``n // 2``.
    Only positive-length gaps matter; for a zero-length gap the value is unused.
    :meth:`mechanisms.median.duff_utility.QuantileDistance.gap_utility` with ``alpha = 0.5``
    gives the same array.
    """
    u = np.multiply(gaps, 2.0, dtype=np.float64)
    u -= n - 0.5
    np.abs(u, out=u)
    u += 0.5
    return np.negative(u, out=u)
