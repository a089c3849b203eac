"""The DP order-statistic interval: the sign-test interval's ranks, widened by the EM's
data-independent rank-error bound, released by two buffered rank EMs.

The construction is the one of :mod:`mechanisms.intervals.buffered_em`: ε is split
equally between the two ends (basic composition), each end is the quantile
exponential mechanism at a target rank on data moved ``θ`` away from it (the
public buffer that makes its rank error bounded without looking at the data), and
the interval covers a median ``m`` of the data's distribution unless
``L > m`` or ``U < m``.

Splitting α between sampling and privacy (the union bound).  For the lower end
at rank ``k`` and any integer ``j >= 1``, splitting the sum ``F(k)`` of
:func:`mechanisms.intervals.buffered_em.failure_bound` at ``c = k + j``:

    P(L > m) <= P(B <= k + j − 1) + ρ·e^{−κj}.

The first term is the sampling error of the order statistic ``x_(k+j)`` (the
non-private interval of :mod:`mechanisms.intervals.nonprivate` at miscoverage
``α_s``), the second is the privacy error: the EM lands ``j`` or more ranks beyond
its target with probability at most ``ρe^{−κj}`` (Brown's Claim 1.1 with the
continuous-output constant ``ρ = 1/(2·granularity)`` in place of ``|Y|``).  So the
target is the sign-test rank at level ``α_s`` moved ``j`` ranks outwards, for any
split ``α/2 = α_s/2 + ρe^{−κj}``.  The split is not fixed at ``α/2`` each: the
method takes the ``j`` (hence the split) that maximises ``k``, using only the
public ``n``, ε, α and the granularity (the equal split is one of the
candidates, so this is never wider).  The proven coverage reported as
``nominal_coverage`` is ``1 − 2F(k)``, which is at least the union bound's
``1 − α``.  Treating both errors at once, i.e. choosing ``k`` from ``F`` directly,
is :mod:`mechanisms.intervals.drechsler`.

Guarantee: ε-DP for replace-one neighbours (``n`` is public: the ranks depend on
it).  Target: the population median (coverage ``>= 1 − α`` for every distribution
whose median lies in ``[a, b]``, continuous or not).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.intervals.base import GUARANTEED, POPULATION_MEDIAN
from mechanisms.intervals.buffered_em import BufferedEMInterval
from mechanisms.intervals.nonprivate import binomial_half_cdf


@lru_cache(maxsize=1024)
def union_rank(n: int, alpha: float, *, kappa: float, log_rho: float) -> int | None:
    """The largest ``k = L(α/2 − ρe^{−κj}) − j + 1`` over integers ``j >= 1`` with
    ``ρe^{−κj} < α/2``, where ``L(β) = max{c : P(B <= c) <= β}``; ``None`` if all are < 0.

    Every candidate satisfies ``P(B <= k + j − 1) + ρe^{−κj} <= α/2`` (module docstring).
    """
    threshold = (log_rho - math.log(alpha / 2.0)) / kappa  # ρe^{−κj} < α/2 iff j > threshold
    if threshold >= n + 1:
        return None
    first = max(1, math.floor(threshold) + 1)
    steps = np.arange(first, n + 2)
    with np.errstate(over="ignore"):  # κ·j beyond float64 (huge ε): e^{-inf} = 0
        privacy = np.exp(log_rho - kappa * steps)
    cdf = binomial_half_cdf(n)
    counts = np.searchsorted(cdf, alpha / 2.0 - privacy, side="right") - 1
    best = int(np.max(counts - steps + 1))
    return best if best >= 0 else None


@register
class DPOrderStatistic(BufferedEMInterval):
    """Order statistics at the sign-test ranks widened by the EM's rank-error bound (module
    docstring); ε-DP (replace-one), coverage ``>= 1 − α`` for the population median."""

    name = "dp_order_statistic"
    display_name = "DP order statistics (union bound)"
    figure = FigureStyle("#1b9e77", "s", 17, fixed_neighbouring=True)
    target = POPULATION_MEDIAN
    coverage_claim = GUARANTEED
    guarantee_source = (
        "two buffered rank exponential mechanisms (McSherry-Talwar, utility sensitivity 1 "
        "for replace-one neighbours) at eps/2 each, basic composition; ranks widened by the "
        "EM's rank-error bound (union bound, optimised split of alpha)"
    )

    def lower_rank(self, n: int) -> int | None:
        return union_rank(n, self.alpha, kappa=self.kappa, log_rho=self.log_rho)
