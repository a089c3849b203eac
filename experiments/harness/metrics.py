"""Per-cell accuracy metrics and the sanity check of a mechanism's estimates.

For the ``trials`` estimates ``M_1..M_T`` of one (dataset, mechanism, ε) cell
and the true median ``T(S)`` (Duff paper, section 6.1: "the average difference
between the true median and the mechanism's estimate, |T(S) − M(S)|"):

* ``mean_abs_error`` = mean_t |M_t − T(S)|  (the paper's per-dataset error)
* ``sd_abs_error``   = sample standard deviation (ddof = 1) of |M_t − T(S)|
* ``rmse``           = sqrt(mean_t (M_t − T(S))²)
* ``mean_error``     = mean_t (M_t − T(S))   (bias; clipping to [a, b] shows here)
* ``mean_rank_error`` = mean_t #{data points strictly between T(S) and M_t}, for an
  order statistic (the median, a quantile; NaN for the mean and the mode, which
  have no ranks): the scale-free error of Gillenwater, Joseph & Kulesza,
  "Differentially private quantiles" (ICML 2021),
  :meth:`mechanisms.statistics.Statistic.rank_errors`
* ``answer_rate``    = the fraction of trials that returned an estimate rather than
  "no result" (⊥: propose-test-release, the stability-based histogram); 1 for
  every other mechanism.  Every other metric is over the answered trials only
  (NaN when none answered).
* ``hit_rate``       = the fraction of answers that are a true mode (count gap 0;
  every value tied at the top count is one), and
* ``mean_count_gap`` = mean_t (n_max − n_{M_t}), for the mode only (NaN otherwise;
  :meth:`mechanisms.statistics.Statistic.count_gaps`).  For the mode the
  |T(S) − M_t| columns measure distance in the integer order of the domain: read
  them only where that order means something (Zipf ranks, rounded measurements).

For a dataset drawn from a known law, θ is the population parameter T(S) estimates (the law's
median, α-quantile, mean, or mode where it is discrete, for the data clipped to [a, b]:
:meth:`experiments.data.datasets.Dataset.population_value`), and the point rows have:

* ``population_value``     = θ
* ``population_abs_error`` = mean_t |M_t − θ|  (the error against the population: privacy
  and sampling together)
* ``sample_abs_error``     = |T(S) − θ|  (the sampling error of T(S) itself, the same in
  every row of a dataset replicate), so that ``mean_abs_error`` is the privacy error and
  ``sample_abs_error`` the sampling error of the decomposition
  |M − θ| ≤ |M − T(S)| + |T(S) − θ|

(:func:`population_metrics`; NaN where the dataset has no law — real data — or the statistic
no θ, and in the interval and vector rows).

The confidence-interval methods' rows have ``answer_rate`` 1, the columns of
:mod:`experiments.harness.interval_metrics` (``coverage``, ``mean_width``,
``nonprivate_width``) and NaN in the others, which are NaN in every other row.  The rows of
m quantiles at once have the columns of :mod:`experiments.harness.vector_metrics`
(``total_rank_error``, ``max_rank_error``, and the errors above over every level), NaN in
every other row.

:func:`estimates_problem` checks a release's sample and :func:`cdf_problem` its
``cdf`` (on a few points, deterministically: it draws no random numbers);
:func:`refusal_problem` checks its ``refusal_probability`` against the sample's ⊥s and
:func:`domain_problem` a mode's sample against its finite domain.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from experiments.harness.interval_metrics import INTERVAL_METRICS
from experiments.harness.vector_metrics import VECTOR_METRICS

POPULATION_METRICS = ("population_value", "population_abs_error", "sample_abs_error")
"""The errors against the population parameter θ (module docstring); the last columns of
:data:`METRICS`."""
METRICS = (
    "mean_abs_error",
    "sd_abs_error",
    "rmse",
    "mean_error",
    "mean_rank_error",
    "answer_rate",
    "hit_rate",
    "mean_count_gap",
    *INTERVAL_METRICS,
    *VECTOR_METRICS,
    *POPULATION_METRICS,
)


def _error_moments(
    errors: np.ndarray, absolute: np.ndarray, size: int
) -> tuple[float, float, float, float]:
    """Mean absolute error, its SD (NaN for one estimate), RMSE and mean error."""
    mean_abs = float(absolute.sum()) / size
    deviations = absolute - mean_abs
    sd = math.sqrt(float((deviations * deviations).sum()) / (size - 1)) if size > 1 else math.nan
    rmse = math.sqrt(float((errors * errors).sum()) / size)
    return mean_abs, sd, rmse, float(errors.sum()) / size


def error_metrics(
    estimates: np.ndarray,
    true_value: float,
    rank_errors: np.ndarray | None = None,
    count_gaps: np.ndarray | None = None,
    *,
    trials: int | None = None,
) -> dict[str, float]:
    """The metrics above for the answered (finite, 1-D) ``estimates`` of ``trials`` trials
    (default: all answered), their rank errors and their count gaps (None: the statistic
    has none)."""
    estimates = np.asarray(estimates, dtype=np.float64)
    asked = estimates.size if trials is None else trials
    metrics = dict.fromkeys(METRICS, math.nan)
    metrics["answer_rate"] = estimates.size / asked if asked else math.nan
    if estimates.size == 0:
        return metrics
    size = estimates.size
    errors = estimates - true_value
    absolute = np.abs(errors)
    # numpy's mean is sum / size and its std(ddof=1) is sqrt(sum((x - mean)²) / (size - 1)),
    # the same float operations in the same order: written out, they cost a third as much.
    with np.errstate(over="ignore"):  # errors near the float range: rescaled below
        moments: tuple[float, ...] = _error_moments(errors, absolute, size)
    if not all(math.isfinite(v) for v in moments if not math.isnan(v)):
        scale = float(absolute.max())
        moments = tuple(
            value * scale for value in _error_moments(errors / scale, absolute / scale, size)
        )
    metrics.update(
        zip(("mean_abs_error", "sd_abs_error", "rmse", "mean_error"), moments, strict=True)
    )
    if rank_errors is not None:
        metrics["mean_rank_error"] = float(rank_errors.mean())
    if count_gaps is not None:
        metrics["mean_count_gap"] = float(count_gaps.mean())
        metrics["hit_rate"] = float(np.count_nonzero(count_gaps == 0) / count_gaps.size)
    return metrics


def population_metrics(
    estimates: np.ndarray, true_value: float, population: float | None
) -> dict[str, float]:
    """θ = ``population``, mean |M_t − θ| over the answered ``estimates`` (NaN for none) and
    |T(S) − θ|; all NaN when ``population`` is None (no law)."""
    if population is None:
        return dict.fromkeys(POPULATION_METRICS, math.nan)
    estimates = np.asarray(estimates, dtype=np.float64)
    error = float(np.abs(estimates - population).mean()) if estimates.size else math.nan
    return {
        "population_value": population,
        "population_abs_error": error,
        "sample_abs_error": abs(true_value - population),
    }


def estimates_problem(
    estimates: object,
    trials: int,
    lower: float,
    upper: float,
    *,
    clipped: bool = True,
    may_refuse: bool = False,
) -> str | None:
    """None if a release's output is usable, else a one-line description of what is wrong.

    Usable means: ``estimates`` is a float array of shape ``(trials,)``, all
    finite (or NaN, meaning ⊥, when the mechanism's class declares ``may_refuse``)
    and, when the release promises clipped output (``clipped``), all in
    ``[lower, upper]``.
    """
    if not isinstance(estimates, np.ndarray):
        return f"sample returned {type(estimates).__name__}, not a numpy array"
    if estimates.shape != (trials,):
        return f"sample returned shape {estimates.shape}, expected ({trials},)"
    if not np.issubdtype(estimates.dtype, np.floating):
        return f"sample returned dtype {estimates.dtype}, expected a float dtype"
    bad = int(np.count_nonzero(np.isinf(estimates) | (np.isnan(estimates) & (not may_refuse))))
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


FAR = 1e300
"""Where the cdf check's points stop inside an infinite bound (the bound itself is the last)."""


def cdf_problem(release: object, lower: float, upper: float, *, clipped: bool = True) -> str | None:
    """None if ``release.cdf`` looks like a cdf, else a one-line description of what is wrong.

    ``release.cdf`` is called once on ``CDF_POINTS`` evenly spaced points of
    ``[lower, upper]`` (both bounds included; an infinite bound is the end point, the
    others spaced from ``±FAR``) and must return as many finite values
    in ``[0, 1]``, nondecreasing, each up to ``CDF_TOLERANCE``.  When the release
    promises clipped output (``clipped``), the cdf at ``upper`` must be
    ``1 - release.refusal_probability`` (1 for a release that never answers ⊥), and
    that probability must lie in ``[0, 1]``.  A cdf
    that raises ``NotImplementedError`` (a release that cannot compute its cdf) is
    not a problem.
    """
    points = np.linspace(max(lower, -FAR), min(upper, FAR), CDF_POINTS)
    points[0], points[-1] = lower, upper  # exactly, whatever linspace's rounding (or ±inf)
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
    refusal = _refusal_probability(release)
    if refusal is None:
        return "refusal_probability is not a number in [0, 1]"
    if clipped and abs(values[-1] - (1 - refusal)) > CDF_TOLERANCE:
        return (
            f"cdf at the upper bound {upper:g} is {float(values[-1])!r}, "
            f"not 1 - refusal_probability = {1 - refusal!r}"
        )
    return None


def _refusal_probability(release: object) -> float | None:
    """``release.refusal_probability`` (0 when absent), or None when it is not in [0, 1]."""
    try:
        value = float(getattr(release, "refusal_probability", 0.0))
    except (TypeError, ValueError):
        return None
    return value if 0.0 <= value <= 1.0 else None


CLAIM_ALPHA = 1e-9
"""Family-wise false-alarm rate, over the cells of a sweep, of the harness's statistical
check of a release's claim (:func:`refusal_problem`, Bonferroni over the cells): a release
whose claim is true fails a row of a sweep with probability at most 1e-9."""


def refusal_problem(release: object, sample: np.ndarray, level: float) -> str | None:
    """None if ``release.refusal_probability`` is a probability that the ⊥s (NaN) of
    ``sample`` agree with, else a one-line description of what is wrong.

    The probability (0 when absent) must be a number in ``[0, 1]`` whatever the cdf
    says.  The number of ⊥ among the ``T`` independent trials is then
    ``Binomial(T, refusal_probability)``: the claim fails when the two-sided exact
    binomial test (Clopper & Pearson's tail sums, :func:`scipy.stats.binomtest`) rejects
    it at ``level``, i.e. with probability at most ``level`` if the claim is true
    (a claim of 0 fails on one ⊥, a claim of 1 on one answer).
    """
    raw = getattr(release, "refusal_probability", 0.0)
    try:
        claimed = float(raw)
    except (TypeError, ValueError):
        claimed = math.nan
    if not 0.0 <= claimed <= 1.0:  # NaN fails too
        return f"refusal_probability {raw!r} is not a number in [0, 1]"
    trials = int(sample.size)
    refused = int(np.count_nonzero(np.isnan(sample)))
    if claimed == 0.0 or claimed == 1.0:
        p_value = 1.0 if refused == round(claimed * trials) else 0.0
    else:
        p_value = float(stats.binomtest(refused, trials, claimed).pvalue)
    if p_value >= level:
        return None
    return (
        f"{refused} of {trials} trials answered ⊥ (NaN) where refusal_probability = "
        f"{claimed:.6g} expects {claimed * trials:.4g} (exact two-sided binomial test: "
        f"p-value {p_value:.3g} < {level:.3g})"
    )


def domain_problem(sample: np.ndarray, lower: float, upper: float) -> str | None:
    """None if every answer (not ⊥) of a mode's ``sample`` is an integer of ``[lower, upper]``
    (the finite domain ``Y``, :mod:`mechanisms.core.domain`), else what is wrong: such an
    output is not an answer at all, whatever the release says about clipping."""
    answered = sample[~np.isnan(sample)]
    outside = (answered != np.rint(answered)) | (answered < lower) | (answered > upper)
    bad = int(np.count_nonzero(outside))
    if not bad:
        return None
    example = float(answered[outside][0])
    return (
        f"{bad} of {sample.size} estimates of the mode are not integers of "
        f"[{lower:g}, {upper:g}] (e.g. {example!r})"
    )
