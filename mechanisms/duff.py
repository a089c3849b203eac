"""Duff: the exponential mechanism with the dataset-distance utility, for the lower median.

Gillenwater & Muñoz Medina, "Duff" (the seed paper), Definition 8:

    u_d(x, S) = -min{ d(S, S') : T(S') = x },

with ``d`` the add/remove distance (Definition 5) and ``T`` the lower median
(rank ``m = ceil(n/2)``; ``T(∅) = a`` by the convention of
:mod:`mechanisms.base`).  Its sensitivity is 1 (Lemma 1), so the EM density is
``∝ exp(ε·u_d(x, S) / 2)`` (Definition 7) and the mechanism is ε-DP for
add/remove neighbours (Definition 1).

Closed form (derived here, equal to the step function of section 4.1).  Let
``L = #{y < x}``, ``R = #{y > x}``, ``t = #{y = x}`` and ``D = L - R``.  An
edited dataset with ``L'`` points below ``x``, ``R'`` above and ``t' >= 1``
copies of ``x`` has lower median ``x`` iff ``L' < ceil(n'/2) <= L' + t'``
(``n' = L' + t' + R'``), i.e. iff ``-t' <= L' - R' <= t' - 1``.  Reaching it costs
at least ``|L' - L| + |R' - R| + |t' - t| >= |t' - t| + dist(D, [-t', t' - 1])``
and that is attained (add or remove points below/above ``x``, add/remove copies
of ``x``).  Each extra copy of ``x`` costs 1 and widens the interval by 1 on each
side, so it never helps; hence ``t' = max(t, 1)`` and

* ``x`` strictly inside a gap (``t = 0``): ``u_d = -(1 + max(0, D, -D - 1))``;
* ``x`` equal to a data value of multiplicity ``t``:
  ``u_d = -max(0, D - (t - 1), -t - D)``;
* the one exception: ``S = ∅`` and ``x = a``, where ``u_d = 0`` (``T(∅) = a``).

The last two cases have Lebesgue measure zero and do not affect the density.
On the interior of gap ``i`` (``i`` points below, ``n - i`` above, ``D = 2i - n``)
this is, with ``m = ceil(n/2)``: ``u = -(2k - [n odd])`` on gap ``m - k`` and
``u = -(2k - [n even])`` on gap ``m + k - 1`` (``k >= 1``), exactly the paper's
section 4.1 step function.  (The paper's range for the second case,
"``k <= m + 1(k even)``", should read ``k <= n - m + 1``, i.e. ``m + 1(n even)``.)
"""

from __future__ import annotations

import numpy as np

from mechanisms.base import Guarantee, Mechanism, Neighbouring, Release
from mechanisms.registry import register
from mechanisms.sampling import PiecewiseUniformRelease, score_epsilon


def gap_utility(n: int, gaps: np.ndarray) -> np.ndarray:
    """``u_d`` on the interior of gap ``i`` (int array ``gaps``, values ``0..n``), size-``n`` data.

    ``-(1 + max(0, D, -D - 1))`` with ``D = 2i - n`` (module docstring), computed
    as ``-(|D + 1/2| + 1/2)`` (equal for integers, exact in float64 for
    ``n < 2**51``, and a single temporary); largest (``-1``) on gap ``n // 2``.
    Only positive-length gaps matter; for a zero-length gap the value is unused.
    """
    u = np.multiply(gaps, 2.0, dtype=np.float64)
    u -= n - 0.5
    np.abs(u, out=u)
    u += 0.5
    return np.negative(u, out=u)


def utility(sorted_x: np.ndarray, x: np.ndarray | float, lower: float) -> np.ndarray:
    """``u_d(x, S)`` at any points ``x`` in ``[lower, upper]`` (module docstring).

    ``sorted_x`` is the sorted bounded data and ``lower`` the bound ``a``, needed
    only for the empty dataset (whose lower median is ``a``).
    """
    data = np.asarray(sorted_x, dtype=np.float64)
    points = np.asarray(x, dtype=np.float64)
    n = data.size
    below = np.searchsorted(data, points, side="left")
    not_above = np.searchsorted(data, points, side="right")
    ties = not_above - below
    d = below - (n - not_above)
    in_gap = -(1 + np.maximum(np.maximum(d, -d - 1), 0))
    at_value = -np.maximum(np.maximum(d - (ties - 1), -ties - d), 0)
    u = np.where(ties == 0, in_gap, at_value).astype(np.float64)
    if n == 0:
        u = np.where(points == lower, 0.0, u)
    return u


@register
class Duff(Mechanism):
    """EM with the Duff utility for the lower median; ε-DP, add/remove neighbours.

    Density on gap ``i``: ``∝ exp(ε·u_d/2)`` with ``u_d`` from :func:`gap_utility`
    (Duff paper, Definition 8, Lemma 1 (Δu = 1), section 4.1), sampled exactly by
    :class:`mechanisms.sampling.PiecewiseUniformRelease`.
    """

    name = "duff"
    neighbouring = Neighbouring.ADD_REMOVE

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            neighbouring=Neighbouring.ADD_REMOVE,
            source="Duff paper: exponential mechanism (Def. 7) with u_d of sensitivity 1 (Lemma 1)",
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        n = sorted_x.size
        half_epsilon = 0.5 * score_epsilon(self.epsilon, n)

        def log_score(gaps: np.ndarray) -> np.ndarray:
            u = gap_utility(n, gaps)
            u *= half_epsilon
            return u

        return PiecewiseUniformRelease(sorted_x, lower, upper, log_score, mode=n // 2)
