"""ExpMech of Drechsler, Globus-Harris, McMillan, Sarathy & Smith, "Nonparametric differentially
private confidence intervals for the median" (Journal of Survey Statistics and Methodology,
2022; arXiv:2106.10333).

The paper computes the interval's two ends directly, each with a private
quantile algorithm run at ranks chosen so that the sampling error and the
privacy error *together* stay below α, rather than computing a private point
estimate and deriving its uncertainty, and rather than accounting for the two
errors one after the other (its "Union" variants; here
:mod:`mechanisms.intervals.order_statistic`).  Its exponential-mechanism
algorithm, ExpMech, as in the code released with the paper (repository
``dp-medians``, ``exponential_median.py``; the algorithm names are its figure
labels):

1. ε is split equally between the lower and the upper end.
2. Each end is the exponential mechanism with the rank utility, on the data
   moved ``θ`` (the "granularity") away from the target rank, the released value
   being moved back by ``∓θ``: the buffered rank EM of
   :mod:`mechanisms.intervals.buffered_em`, whose docstring derives its privacy,
   its exact sampler and the bound used in step 3.
3. The ranks: the largest ``k`` such that, with ``B ~ Binomial(n, 1/2)`` the
   number of data points below the population median,

       P(B <= k) + Σ_{c > k} P(B = c)·min(1, ρe^{−κ(c − k)}) <= α/2,

   i.e. the probability that the lower end exceeds the median, averaged over
   the sample (the binomial) and the mechanism (the EM's tail) jointly; the upper
   end uses ``n − k``.  When no ``k >= 0`` satisfies it the answer is ``[a, b]``.

Faithful up to two points, both needed for the bound of step 3 to hold as
stated: the output range is ``[a − θ, b + θ]`` (so the zero-utility set has
measure at least ``2θ`` also when the data sit at a bound; the released code
samples in ``[a, b]``), which makes the constant ``ρ = (b − a)/(2θ)``; and the
EM's rate per rank is ``κ = ε/4`` (ε/2 per end, density ``exp(ε_e·u/2)`` with
``Δu = 1``), used both by the sampler and by the bound.  The granularity is a
fraction of ``b − a`` here (the paper's is in data units).

Guarantee: the released code runs its experiments under zero-concentrated DP
(a budget ρ); the EM is pure, and this implementation states its pure
guarantee: ε-DP for replace-one neighbours (the sample size ``n`` is public, as
the ranks depend on it).  Coverage ``>= 1 − α`` for every distribution whose median lies in
``[a, b]`` (proof: :mod:`mechanisms.intervals.buffered_em`).
"""

from __future__ import annotations

from functools import lru_cache

from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.intervals.base import GUARANTEED, POPULATION_MEDIAN
from mechanisms.intervals.buffered_em import BufferedEMInterval, failure_bound


@lru_cache(maxsize=1024)
def joint_rank(n: int, alpha: float, *, kappa: float, log_rho: float) -> int | None:
    """The largest ``k`` in ``0..n`` with ``F(k) <= α/2`` (step 3; ``F`` is non-decreasing
    in ``k``, so a bisection finds it); ``None`` when ``F(0) > α/2``."""

    def feasible(rank: int) -> bool:
        return failure_bound(n, rank, kappa=kappa, log_rho=log_rho) <= alpha / 2.0

    if not feasible(0):
        return None
    low, high = 0, n  # feasible(low); F(n) = 1 > α/2
    while low < high:
        middle = (low + high + 1) // 2
        if feasible(middle):
            low = middle
        else:
            high = middle - 1
    return low


@register
class DrechslerExpMech(BufferedEMInterval):
    """ExpMech (module docstring): the buffered rank EM at ranks chosen jointly for the
    sampling and the privacy error; ε-DP (replace-one), coverage ``>= 1 − α``."""

    name = "drechsler_expmech"
    display_name = "ExpMech (Drechsler et al.)"
    figure = FigureStyle("#e7298a", "^", 18, fixed_neighbouring=True)
    target = POPULATION_MEDIAN
    coverage_claim = GUARANTEED
    guarantee_source = (
        "Drechsler, Globus-Harris, McMillan, Sarathy & Smith, 'Nonparametric differentially "
        "private confidence intervals for the median', ExpMech: two exponential mechanisms "
        "at eps/2 each (utility sensitivity 1, replace-one neighbours), basic composition"
    )

    def lower_rank(self, n: int) -> int | None:
        return joint_rank(n, self.alpha, kappa=self.kappa, log_rho=self.log_rho)
