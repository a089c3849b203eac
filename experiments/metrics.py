"""Per-cell accuracy metrics and the sanity check of a mechanism's estimates.

For the ``trials`` estimates ``M_1..M_T`` of one (dataset, mechanism, ε) cell
and the true median ``T(S)`` (Duff paper, section 6.1: "the average difference
between the true median and the mechanism's estimate, |T(S) − M(S)|"):

* ``mean_abs_error`` = mean_t |M_t − T(S)|  (the paper's per-dataset error)
* ``sd_abs_error``   = sample standard deviation (ddof = 1) of |M_t − T(S)|
* ``rmse``           = sqrt(mean_t (M_t − T(S))²)
* ``mean_error``     = mean_t (M_t − T(S))   (bias; clipping to [a, b] shows here)
* ``mean_rank_error`` = mean_t #{data points strictly between T(S) and M_t}, for an
  order statistic (the median, a quantile; NaN for a statistic without ranks):
  the scale-free error of Gillenwater, Joseph & Kulesza, "Differentially private
  quantiles" (ICML 2021), :meth:`mechanisms.statistics.Statistic.rank_errors`

:func:`estimates_problem` checks a release's sample and :func:`cdf_problem` its
``cdf`` (on a few points, deterministically: it draws no random numbers).
"""

from __future__ import annotations

import math

import numpy as np

METRICS = ("mean_abs_error", "sd_abs_error", "rmse", "mean_error", "mean_rank_error")


def error_metrics(
    estimates: np.ndarray, true_value: float, rank_errors: np.ndarray | None = None
) -> dict[str, float]:
    """The metrics above for valid (finite, 1-D, non-empty) ``estimates`` and their rank
    errors (None: the statistic has no ranks)."""
    errors = estimates - true_value
    absolute = np.abs(errors)
    return {
        "mean_abs_error": float(absolute.mean()),
        "sd_abs_error": float(absolute.std(ddof=1)) if absolute.size > 1 else math.nan,
        "rmse": float(np.sqrt(np.mean(errors * errors))),
        "mean_error": float(errors.mean()),
        "mean_rank_error": math.nan if rank_errors is None else float(rank_errors.mean()),
    }


def estimates_problem(
    estimates: object, trials: int, lower: float, upper: float, *, clipped: bool = True
) -> str | None:
    """None if a release's output is usable, else a one-line description of what is wrong.

    Usable means: ``estimates`` is a float array of shape ``(trials,)``, all
    finite and, when the release promises clipped output (``clipped``), all in
    ``[lower, upper]``.
    """
    if not isinstance(estimates, np.ndarray):
        return f"sample returned {type(estimates).__name__}, not a numpy array"
    if estimates.shape != (trials,):
        return f"sample returned shape {estimates.shape}, expected ({trials},)"
    if not np.issubdtype(estimates.dtype, np.floating):
        return f"sample returned dtype {estimates.dtype}, expected a float dtype"
    bad = int(np.count_nonzero(~np.isfinite(estimates)))
    if bad:
        return f"{bad} of {trials} estimates are NaN or infinite"
    outside = int(np.count_nonzero((estimates < lower) | (estimates > upper)))
    if clipped and outside:
        return f"{outside} of {trials} estimates are outside [{lower:g}, {upper:g}]"
    return None


CDF_POINTS = 5
"""Points of ``[a, b]`` (evenly spaced, both bounds included) the cdf check evaluates."""
CDF_TOLERANCE = 1e-9
"""Slack for floating-point error in the cdf check (sums of many probabilities)."""


def cdf_problem(release: object, lower: float, upper: float, *, clipped: bool = True) -> str | None:
    """None if ``release.cdf`` looks like a cdf, else a one-line description of what is wrong.

    ``release.cdf`` is called once on ``CDF_POINTS`` evenly spaced points of
    ``[lower, upper]`` (both bounds included) and must return as many finite values
    in ``[0, 1]``, nondecreasing, each up to ``CDF_TOLERANCE``.  When the release
    promises clipped output (``clipped``), the cdf at ``upper`` must be 1.  A cdf
    that raises ``NotImplementedError`` (a release that cannot compute its cdf) is
    not a problem.
    """
    points = np.linspace(lower, upper, CDF_POINTS)
    points[-1] = upper  # exactly, whatever linspace's rounding
    try:
        raw = release.cdf(points)  # type: ignore[attr-defined]
    except NotImplementedError:
        return None
    except Exception as err:
        return f"cdf raised {type(err).__name__}: {err}"
    try:
        values = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        return f"cdf returned {type(raw).__name__}, not an array of numbers"
    if values.shape != points.shape:
        return f"cdf returned shape {values.shape} for {points.size} points"
    where = f"at {points.size} points of [{lower:g}, {upper:g}]"
    if not np.isfinite(values).all():
        return f"cdf is NaN or infinite {where}: {values.tolist()}"
    if values.min() < -CDF_TOLERANCE or values.max() > 1 + CDF_TOLERANCE:
        return f"cdf is outside [0, 1] {where}: {values.tolist()}"
    if (np.diff(values) < -CDF_TOLERANCE).any():
        return f"cdf decreases {where}: {values.tolist()}"
    if clipped and values[-1] < 1 - CDF_TOLERANCE:
        return f"cdf at the upper bound {upper:g} is {float(values[-1])!r}, not 1"
    return None
