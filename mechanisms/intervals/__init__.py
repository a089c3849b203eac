"""Confidence intervals for the median: interval methods with the shape of the mechanisms.

>>> import numpy as np
>>> from mechanisms.intervals import INTERVALS
>>> method = INTERVALS["drechsler_expmech"](epsilon=1.0, alpha=0.05)
>>> release = method.release(np.random.default_rng(0).normal(size=1000), (-10, 10))
>>> release.sample(3, np.random.default_rng(1)).shape
(3, 2)

Methods (one module each; :mod:`mechanisms.intervals.base` has the interface):

* ``nonprivate_order_statistic``: the distribution-free sign-test interval, not private;
* ``dp_order_statistic``: its DP version, ranks widened by the EM's rank-error bound;
* ``drechsler_expmech``: ExpMech of Drechsler et al., sampling and privacy error jointly;
* ``subsample_aggregate``: any DP median mechanism, on random blocks, aggregated.
"""

from mechanisms.intervals.base import (
    APPROXIMATE,
    GUARANTEED,
    POPULATION_MEDIAN,
    SAMPLE_MEDIAN,
    IntervalMechanism,
    IntervalRelease,
)
from mechanisms.intervals.drechsler import DrechslerExpMech
from mechanisms.intervals.nonprivate import NonPrivateOrderStatistic
from mechanisms.intervals.order_statistic import DPOrderStatistic
from mechanisms.intervals.subsample_aggregate import SubsampleAggregate

INTERVALS: dict[str, type[IntervalMechanism]] = {
    cls.name: cls
    for cls in (NonPrivateOrderStatistic, DPOrderStatistic, DrechslerExpMech, SubsampleAggregate)
}
"""Interval methods by name (kept apart from the mechanism registry)."""

__all__ = [
    "APPROXIMATE",
    "GUARANTEED",
    "INTERVALS",
    "POPULATION_MEDIAN",
    "SAMPLE_MEDIAN",
    "DPOrderStatistic",
    "DrechslerExpMech",
    "IntervalMechanism",
    "IntervalRelease",
    "NonPrivateOrderStatistic",
    "SubsampleAggregate",
]
