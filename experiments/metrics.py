"""Per-cell accuracy metrics and the sanity check of a mechanism's estimates.

For the ``trials`` estimates ``M_1..M_T`` of one (dataset, mechanism, ε) cell
and the true median ``T(S)`` (Duff paper, section 6.1: "the average difference
between the true median and the mechanism's estimate, |T(S) − M(S)|"):

* ``mean_abs_error`` = mean_t |M_t − T(S)|  (the paper's per-dataset error)
* ``sd_abs_error``   = sample standard deviation (ddof = 1) of |M_t − T(S)|
* ``rmse``           = sqrt(mean_t (M_t − T(S))²)
* ``mean_error``     = mean_t (M_t − T(S))   (bias; clipping to [a, b] shows here)
"""

from __future__ import annotations

import math

import numpy as np

METRICS = ("mean_abs_error", "sd_abs_error", "rmse", "mean_error")


def error_metrics(estimates: np.ndarray, true_value: float) -> dict[str, float]:
    """The metrics above for valid (finite, 1-D, non-empty) ``estimates``."""
    errors = estimates - true_value
    absolute = np.abs(errors)
    return {
        "mean_abs_error": float(absolute.mean()),
        "sd_abs_error": float(absolute.std(ddof=1)) if absolute.size > 1 else math.nan,
        "rmse": float(np.sqrt(np.mean(errors * errors))),
        "mean_error": float(errors.mean()),
    }


def estimates_problem(
    estimates: object, trials: int, lower: float, upper: float, true_value: object
) -> str | None:
    """None if a release's output is usable, else a one-line description of what is wrong.

    Usable means: ``true_value`` is a finite number in ``[lower, upper]`` and
    ``estimates`` is a float array of shape ``(trials,)``, all finite and in
    ``[lower, upper]``.
    """
    try:
        truth = float(true_value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"true_value is not a number: {true_value!r}"
    if not (math.isfinite(truth) and lower <= truth <= upper):
        return f"true_value {truth!r} is not a finite number in [{lower:g}, {upper:g}]"
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
    if outside:
        return f"{outside} of {trials} estimates are outside [{lower:g}, {upper:g}]"
    return None
