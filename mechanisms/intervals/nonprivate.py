"""The non-private baseline: the distribution-free order-statistic interval for the median.

The sign-test interval of the nonparametric textbooks (e.g. E. L. Lehmann,
"Nonparametrics: Statistical Methods Based on Ranks", 1975).

Derivation.  Let ``m`` be a median of the distribution of the i.i.d. data
(``P(X <= m) >= 1/2`` and ``P(X >= m) >= 1/2``), ``C = #{i : x_i <= m}`` and
``D = #{i : x_i >= m}``.  Each is Binomial(n, p) with ``p >= 1/2``, so it is
stochastically at least ``B ~ Binomial(n, 1/2)``, with equality in law when the
distribution is continuous at ``m``.  For ranks ``1 <= l <= u <= n``:

* ``x_(l) > m`` iff fewer than ``l`` points are ``<= m``: ``C <= l − 1``;
* ``x_(u) < m`` iff fewer than ``n − u + 1`` points are ``>= m``: ``D <= n − u``.

With the symmetric choice ``u = n + 1 − l`` and ``l <= (n + 1)/2`` the two events
are disjoint (``C + D >= n``), so

    P(x_(l) <= m <= x_(u)) = 1 − P(C <= l − 1) − P(D <= l − 1)
                           >= 1 − 2·P(B <= l − 1),

with equality for continuous distributions: the exact coverage of the method.
The rank is the largest ``l`` with ``P(B <= l − 1) <= α/2`` (the narrowest
symmetric pair reaching ``1 − α``).  Such an ``l >= 1`` exists iff
``2^{−n} <= α/2``, i.e. ``n >= log2(2/α)`` (6 points for α = 0.05); for smaller
``n`` no pair of order statistics reaches ``1 − α`` and the method answers
``[a, b]``, which covers every median inside the bounds.  Clipping to ``[a, b]``
keeps ``C`` and ``D`` unchanged for ``m`` in ``[a, b]``, so the claim holds for the
bounded data as well.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats

from mechanisms.core.guarantee import Guarantee, Neighbouring
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.core.validation import check_integer
from mechanisms.intervals.base import (
    IndependentEndpoints,
    IntervalMechanism,
    IntervalRelease,
    PointMass,
    whole_range,
)


def binomial_half_cdf(n: int) -> np.ndarray:
    """``P(B <= c)`` for ``c = 0..n``, ``B ~ Binomial(n, 1/2)`` (made non-decreasing)."""
    cdf = stats.binom.cdf(np.arange(n + 1), n, 0.5)
    return np.maximum.accumulate(cdf)


def largest_count(cdf: np.ndarray, beta: float) -> int:
    """``max{c : cdf[c] <= beta}``; ``-1`` when even ``cdf[0] > beta``."""
    return int(np.searchsorted(cdf, beta, side="right")) - 1


@lru_cache(maxsize=256)
def sign_test_rank(n: int, alpha: float) -> int | None:
    """The largest ``l`` with ``P(B <= l − 1) <= α/2``; ``None`` when no ``l >= 1`` does."""
    n = check_integer(n, "n", minimum=0)
    rank = largest_count(binomial_half_cdf(n), alpha / 2) + 1
    return rank if rank >= 1 else None


def order_statistic_coverage(n: int, rank: int) -> float:
    """``1 − 2·P(B <= rank − 1)``: the coverage of ``[x_(rank), x_(n+1−rank)]`` for the
    median of a continuous distribution (a lower bound for any distribution)."""
    return 1.0 - 2.0 * float(stats.binom.cdf(rank - 1, n, 0.5))


@register
class NonPrivateOrderStatistic(IntervalMechanism):
    """``[x_(l), x_(n+1−l)]`` with the sign-test rank ``l`` (module docstring); not private.

    Takes no ε.  Its :attr:`guarantee` says ε = ∞: the interval is a deterministic
    function of two data points.
    """

    name = "nonprivate_order_statistic"
    display_name = "Non-private order statistics"
    figure = FigureStyle("#333333", "o", 16, fixed_neighbouring=True)
    requires_epsilon = False

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(
            epsilon=math.inf,
            delta=0.0,
            neighbouring=Neighbouring.REPLACE_ONE,
            source="non-private baseline (the sign-test order-statistic interval): no privacy",
        )

    def nominal_coverage(self, n: int) -> float:
        rank = sign_test_rank(n, self.alpha)
        return 1.0 if rank is None else order_statistic_coverage(n, rank)

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> IntervalRelease:
        n = sorted_x.size
        rank = sign_test_rank(n, self.alpha)
        if rank is None:
            return whole_range(sorted_x, lower, upper)
        ends = (PointMass(sorted_x[rank - 1]), PointMass(sorted_x[n - rank]))
        return IndependentEndpoints(sorted_x, lower, upper, ends, order_statistic_coverage(n, rank))
