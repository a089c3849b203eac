"""Per-cell metrics of an m-quantiles method, and the check of its rows of estimates.

For the ``T`` rows ``M_t = (M_t1, ..., M_tm)`` of one (dataset, method, ε) cell, the true
quantiles ``T(S) = (T_1, ..., T_m)`` (:class:`mechanisms.statistics.Quantiles`) and the rank
error ``r_tj`` = #{data points strictly between ``T_j`` and ``M_tj``}
(:func:`mechanisms.statistics.points_between`; Gillenwater, Joseph & Kulesza,
"Differentially Private Quantiles", ICML 2021, whose code counts these "misclassified
points"):

* ``total_rank_error`` = mean_t Σ_j r_tj   (the paper's error, summed over the levels)
* ``max_rank_error``   = mean_t max_j r_tj (the worst level of each row)
* ``mean_rank_error``  = mean_{t,j} r_tj  (= ``total_rank_error`` / m)
* ``mean_abs_error``   = mean_{t,j} |M_tj − T_j|, and, over the same ``T·m`` errors,
  ``sd_abs_error`` (ddof = 1), ``rmse`` and ``mean_error`` as in
  :mod:`experiments.harness.metrics`;
* ``answer_rate`` = 1 (no method of m quantiles answers ⊥).

``summary.csv`` has no room for the vector T(S): its ``true_value`` is NaN in these rows.
"""

from __future__ import annotations

import math

import numpy as np

VECTOR_METRICS = ("total_rank_error", "max_rank_error")
"""The columns only the m-quantiles rows fill (NaN in every other row)."""


def vector_problem(sample: object, trials: int, m: int, lower: float, upper: float) -> str | None:
    """None if a release's rows are usable, else a one-line description of what is wrong.

    Usable means: a float array of shape ``(trials, m)``, all finite, every row
    non-decreasing, every value in ``[lower, upper]``.
    """
    if not isinstance(sample, np.ndarray):
        return f"sample returned {type(sample).__name__}, not a numpy array"
    if sample.shape != (trials, m):
        return f"sample returned shape {sample.shape}, expected ({trials}, {m}) rows of quantiles"
    if not np.issubdtype(sample.dtype, np.floating):
        return f"sample returned dtype {sample.dtype}, expected a float dtype"
    bad = int(np.count_nonzero(~np.isfinite(sample).all(axis=1)))
    if bad:
        return f"{bad} of {trials} rows have a NaN or infinite value"
    decreasing = int(np.count_nonzero((np.diff(sample, axis=1) < 0).any(axis=1)))
    if decreasing:
        return f"{decreasing} of {trials} rows decrease (quantiles must be non-decreasing)"
    outside = int(np.count_nonzero(((sample < lower) | (sample > upper)).any(axis=1)))
    if outside:
        return f"{outside} of {trials} rows have values outside [{lower:g}, {upper:g}]"
    return None


def vector_metrics(
    sample: np.ndarray, truth: np.ndarray, rank_errors: np.ndarray
) -> dict[str, float]:
    """The metrics of the module docstring for checked rows ``sample`` (shape ``(T, m)``), the
    m true values ``truth`` and the rank errors ``rank_errors`` (shape ``(T, m)``)."""
    errors = sample - truth
    absolute = np.abs(errors)
    size = errors.size
    return {
        "mean_abs_error": float(absolute.mean()),
        "sd_abs_error": float(absolute.std(ddof=1)) if size > 1 else math.nan,
        "rmse": math.sqrt(float((errors * errors).mean())),
        "mean_error": float(errors.mean()),
        "mean_rank_error": float(rank_errors.mean()),
        "answer_rate": 1.0,
        "total_rank_error": float(rank_errors.sum(axis=1).mean()),
        "max_rank_error": float(rank_errors.max(axis=1).mean()),
    }
