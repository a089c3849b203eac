"""Per-cell metrics of a confidence-interval method, and the check of its intervals.

For the ``trials`` intervals ``[lo_t, hi_t]`` of one (dataset, method, ε) cell
(coverage as defined in Honaker & Vadhan's CS208 lecture slides "DP Foundations:
Exponential and Gaussian Mechanisms", "Confidence Interval Construction":
``P(y* ∈ [lo, hi])``, here estimated over the trials and, across replicates,
over the data):

* ``coverage``         = the fraction of intervals with ``lo_t <= y* <= hi_t``, for the
  method's declared target ``y*`` (:func:`coverage_target`);
* ``mean_width``       = mean_t (hi_t − lo_t);
* ``nonprivate_width`` = the width of the non-private sign-test interval at the same
  ``α`` on the same bounded data (:mod:`mechanisms.intervals.nonprivate`), computed
  by the harness, so that reports can give widths relative to it.

The harness computes the target and the reference width itself; a method only
declares which target its coverage claim is about.

Whether a cell's coverage is below its nominal level ``1 − α`` by more than its
sampling error is an exact one-sided binomial test (:func:`coverage_p_value`), valid
when the cell's intervals are independent: one interval per dataset
(``trials = 1``) over independent datasets; with several intervals per dataset the
regression gate uses Hoeffding's bound on the per-dataset coverages
(:func:`hoeffding_margin`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from mechanisms.intervals.base import POPULATION_MEDIAN, SAMPLE_MEDIAN
from mechanisms.intervals.nonprivate import sign_test_rank

INTERVAL_METRICS = ("coverage", "mean_width", "nonprivate_width")


def interval_problem(intervals: object, trials: int, lower: float, upper: float) -> str | None:
    """None if a release's intervals are usable, else a one-line description of what is wrong.

    Usable means: a float array of shape ``(trials, 2)``, all finite, ``lo <= hi`` in
    every row, and inside ``[lower, upper]``.
    """
    if not isinstance(intervals, np.ndarray):
        return f"sample returned {type(intervals).__name__}, not a numpy array"
    if intervals.shape != (trials, 2):
        return f"sample returned shape {intervals.shape}, expected ({trials}, 2) intervals"
    if not np.issubdtype(intervals.dtype, np.floating):
        return f"sample returned dtype {intervals.dtype}, expected a float dtype"
    bad = int(np.count_nonzero(~np.isfinite(intervals).all(axis=1)))
    if bad:
        return f"{bad} of {trials} intervals have a NaN or infinite end"
    reversed_ = int(np.count_nonzero(intervals[:, 0] > intervals[:, 1]))
    if reversed_:
        return f"{reversed_} of {trials} intervals have lo > hi"
    outside = int(np.count_nonzero((intervals[:, 0] < lower) | (intervals[:, 1] > upper)))
    if outside:
        return f"{outside} of {trials} intervals reach outside [{lower:g}, {upper:g}]"
    return None


def coverage_target(target: object, population_median: float | None, sample_median: float) -> float:
    """The value a method's intervals must contain: the population median of the dataset
    (``ValueError`` when it has none, e.g. real data) or the sample median."""
    if target == SAMPLE_MEDIAN:
        return sample_median
    if target == POPULATION_MEDIAN:
        if population_median is None:
            raise ValueError("target: the dataset has no population median (real data)")
        return population_median
    raise ValueError(f"target: {target!r} is neither {POPULATION_MEDIAN!r} nor {SAMPLE_MEDIAN!r}")


def nonprivate_width(sorted_x: np.ndarray, alpha: float, lower: float, upper: float) -> float:
    """``x_(n+1−l) − x_(l)`` for the sign-test rank ``l`` at miscoverage ``alpha``;
    ``upper − lower`` when ``n`` is too small for any pair of order statistics."""
    n = sorted_x.size
    rank = sign_test_rank(n, alpha)
    if rank is None:
        return float(upper - lower)
    return float(sorted_x[n - rank] - sorted_x[rank - 1])


def interval_metrics(intervals: np.ndarray, target: float, reference_width: float) -> dict:
    """The metrics of the module docstring for checked ``intervals`` (shape ``(trials, 2)``)."""
    low, high = intervals[:, 0], intervals[:, 1]
    return {
        "coverage": float(np.count_nonzero((low <= target) & (target <= high)) / low.size),
        "mean_width": float(np.mean(high - low)),
        "nonprivate_width": reference_width,
    }


def coverage_p_value(covered: int, total: int, level: float) -> float:
    """``P(Binomial(total, level) <= covered)``: the p-value of ``covered`` of ``total``
    independent intervals containing the target under the hypothesis that the coverage is
    at least ``level`` (the probability is largest at coverage ``level`` exactly)."""
    if not 0 <= covered <= total:
        raise ValueError(f"covered: {covered!r} is not in [0, total = {total!r}]")
    return float(stats.binom.cdf(covered, total, level))


def hoeffding_margin(replicates: int, tests: int, alpha: float) -> float:
    """``sqrt(ln(tests/alpha) / (2·replicates))``: how far below its expectation the mean of
    ``replicates`` independent values in [0, 1] falls with probability at most
    ``alpha/tests`` (Hoeffding, "Probability inequalities for sums of bounded random
    variables", 1963), so that ``tests`` such one-sided checks raise a false alarm with
    probability at most ``alpha`` (Bonferroni).  Used for cells whose per-replicate
    coverage averages dependent intervals on one dataset (``trials > 1``)."""
    return math.sqrt(math.log(tests / alpha) / (2.0 * replicates))
