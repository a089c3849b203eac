"""One work unit, computed in a worker: every ε of one mechanism on one dataset replicate.

The harness trusts nothing a mechanism says about itself:

* the truth T(S) is computed here, from the data, as the unit's statistic
  (:mod:`mechanisms.statistics`: the lower median ``x_(ceil(n/2))``, an
  α-quantile, …) of the data bounded to ``[a, b]`` the way the mechanism's
  public ``bounding`` option says (clipped, or with the points outside dropped;
  Duff paper, section 4.1); a release whose ``true_value`` disagrees is recorded
  as a problem, and the rank error is counted on the same bounded data;
* a release's ``refusal_probability`` must be a number in [0, 1], and the ⊥s (NaN) of
  its sample must agree with it: a two-sided exact binomial test at
  :data:`experiments.harness.metrics.CLAIM_ALPHA` = 1e-9 family-wise over the sweep's
  cells (a release that claims 0 fails on its first ⊥); a mode's answers must be
  integers of ``[a, b]`` whatever the release says about clipping;
* the guarantee the mechanism claims is recorded beside the requested (ε, δ):
  ``guarantee_met`` is False when the claim is weaker than the request
  (ε' > ε or δ' > δ, e.g. LaplaceLN's zCDP conversion; ε' = ∞ for a non-private
  reference), and an invalid claim (ε' ≤ 0, NaN, δ' outside [0, 1)) is a problem;
* a confidence-interval method (statistic :class:`mechanisms.statistics.MedianInterval`)
  returns intervals; the harness checks them, computes the target they should
  contain (the dataset's population median, or T(S)) and the non-private
  reference width itself (:mod:`experiments.harness.interval_metrics`);
* a method of m quantiles at once (statistic :class:`mechanisms.statistics.Quantiles`)
  returns rows of m values: each must be finite, non-decreasing and inside ``[a, b]``,
  and its claimed ``true_value`` the harness's vector T(S)
  (:mod:`experiments.harness.vector_metrics`);
* whatever a mechanism does — raise any exception, ``SystemExit`` or
  ``KeyboardInterrupt`` included, return a wrong sample, sleep past the unit's
  time limit — ends up as a ``status`` other than ``ok`` in its rows; a worker
  process that dies (``os._exit``, a segfault) is handled by
  :mod:`experiments.harness.supervisor`, which records the unit as failed from outside;
* a plug-in never shares a worker process with the built-in mechanisms
  (:mod:`experiments.harness.execute`), and each unit file records the identity of the
  code that computed it (:mod:`experiments.harness.code_identity`).

The time limit inside the worker is a ``SIGALRM`` timer (``signal.setitimer``),
which interrupts Python code (a ``time.sleep``, a Python loop); code stuck in C
without returning to the interpreter is stopped by the supervisor's hard limit.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

import mechanisms
from experiments.base.atomic_files import BackgroundSync, Writer, write_bytes_atomic
from experiments.base.seeding import noise_rng
from experiments.harness.code_identity import unit_identity
from experiments.harness.interval_metrics import (
    coverage_target,
    interval_metrics,
    interval_problem,
    nonprivate_width,
)
from experiments.harness.metrics import (
    CLAIM_ALPHA,
    METRICS,
    cdf_problem,
    domain_problem,
    error_metrics,
    estimates_problem,
    population_metrics,
    refusal_problem,
)
from experiments.harness.plan import Settings, Unit
from experiments.harness.results import SUMMARY_COLUMNS, save_unit
from experiments.harness.vector_metrics import vector_metrics, vector_problem
from mechanisms.core.data import sorted_bounded
from mechanisms.statistics import Mode, Quantiles

MAX_STATUS = 300
RELATIVE_SLACK = 1e-9
"""Rounding allowed when comparing a claimed ε or δ with the requested one."""


class UnitTimeout(BaseException):
    """Raised inside a worker when its unit exceeds the time limit (not an ``Exception``,
    so a mechanism's ``except Exception`` cannot swallow it)."""


def guarantee_fields(guarantee: Any, epsilon: float, delta: float | None) -> dict[str, Any]:
    """The claimed guarantee as columns, and whether it is at least as strong as requested.

    ``ε = ∞`` is the claim of a non-private reference method (the sign-test interval):
    it is never ``private`` and never meets a request.  Raises ``ValueError`` for a
    claim that is not a valid (ε, δ) guarantee.
    """
    claimed_epsilon, claimed_delta = float(guarantee.epsilon), float(guarantee.delta)
    if not claimed_epsilon > 0:  # NaN fails too
        raise ValueError(f"guarantee claims epsilon = {claimed_epsilon!r}, not a positive number")
    if not 0.0 <= claimed_delta < 1.0:
        raise ValueError(f"guarantee claims delta = {claimed_delta!r}, not in [0, 1)")
    requested_delta = 0.0 if delta is None else delta
    met = claimed_epsilon <= epsilon * (1 + RELATIVE_SLACK) and claimed_delta <= (
        requested_delta * (1 + RELATIVE_SLACK)
    )
    rho = getattr(guarantee, "rho", None)
    return {
        "guarantee_epsilon": claimed_epsilon,
        "guarantee_delta": claimed_delta,
        "rho": math.nan if rho is None else float(rho),
        "neighbouring": mechanisms.Neighbouring(guarantee.neighbouring).value,
        "private": math.isfinite(claimed_epsilon)
        and not bool(getattr(guarantee, "data_dependent_tuning", False)),
        "guarantee_met": bool(met),
    }


def _outputs_clipped(release: object) -> bool:
    """Whether a release promises estimates inside ``[a, b]`` (an attribute ``clip`` that
    is False, as :class:`mechanisms.noise.additive.AdditiveNoiseRelease` has, says it does not)."""
    return getattr(release, "clip", True) is not False


def _truth_problem(release: Any, truth: float) -> str | None:
    """A release's ``true_value`` claim, if it differs from the harness's T(S)."""
    claimed = getattr(release, "true_value", truth)
    try:
        differs = float(claimed) != truth  # both are the same order statistic: exact
    except (TypeError, ValueError):
        differs = True
    return (
        f"true_value {claimed!r} differs from the harness's T(S) = {truth!r}" if differs else None
    )


def _check_release(
    mechanism: object, release: Any, sample: object, truth: float, unit: Unit, settings: Settings
) -> str | None:
    """The first problem with a point release's sample, its ⊥s against its
    ``refusal_probability``, a mode's domain, its truth claim or its cdf, or None."""
    lower, upper = unit.dataset.lower, unit.dataset.upper
    clipped = _outputs_clipped(release)
    may_refuse = getattr(type(mechanism), "may_refuse", False) is True
    problem = estimates_problem(
        sample, settings.trials, lower, upper, clipped=clipped, may_refuse=may_refuse
    )
    if problem is None and isinstance(sample, np.ndarray):
        problem = refusal_problem(release, sample, CLAIM_ALPHA / max(1, settings.cells))
        if problem is None and unit.statistic.kind == Mode.kind:
            problem = domain_problem(sample, lower, upper)
    if problem is None:
        problem = _truth_problem(release, truth)
    if problem is None:
        cdf = cdf_problem(release, lower, upper, clipped=clipped)
        problem = None if cdf is None else f"{unit.mechanism.name}: {cdf}"
    return problem


def _point_fields(
    unit: Unit, bounded: np.ndarray, truth: float, sample: Any, settings: Settings, bounding: str
) -> dict[str, float]:
    """The error metrics of a checked point release's sample, against T(S) and against the
    dataset's population parameter (:mod:`experiments.harness.metrics`)."""
    statistic = unit.statistic
    answered = sample[~np.isnan(sample)]  # NaN is ⊥ ("no result")
    metrics = error_metrics(
        answered,
        truth,
        statistic.rank_errors(bounded, truth, answered),
        statistic.count_gaps(bounded, answered),
        trials=settings.trials,
    )
    population = unit.dataset.population_value(statistic, bounding)
    return {**metrics, **population_metrics(answered, truth, population)}


def _interval_fields(
    mechanism: Any,
    release: Any,
    sample: object,
    truth: float,
    bounded: np.ndarray,
    unit: Unit,
    trials: int,
) -> tuple[str | None, dict[str, float]]:
    """The first problem with an interval release, else None and its metrics
    (:mod:`experiments.harness.interval_metrics`): coverage of the target the method declares."""
    dataset = unit.dataset
    problem = interval_problem(sample, trials, dataset.lower, dataset.upper)
    problem = problem or _truth_problem(release, truth)
    if problem is not None or not isinstance(sample, np.ndarray):
        return problem, {}
    target = coverage_target(getattr(mechanism, "target", None), dataset.population_median(), truth)
    alpha = float(unit.statistic.mechanism_options()["alpha"])
    reference = nonprivate_width(bounded, alpha, dataset.lower, dataset.upper)
    return None, {"answer_rate": 1.0, **interval_metrics(sample, target, reference)}


def _vector_fields(
    release: Any, sample: object, statistic: Quantiles, bounded: np.ndarray, unit: Unit, trials: int
) -> tuple[str | None, dict[str, float]]:
    """The first problem with the rows of an m-quantiles release (or its ``true_value`` claim,
    compared with the harness's vector T(S)), else None and its metrics
    (:mod:`experiments.harness.vector_metrics`)."""
    lower, upper = unit.dataset.lower, unit.dataset.upper
    problem = vector_problem(sample, trials, statistic.m, lower, upper)
    truth = statistic.values(bounded, lower, upper)
    claimed = getattr(release, "true_value", truth)
    try:
        differs = not np.array_equal(np.asarray(claimed, dtype=np.float64), truth)
    except (TypeError, ValueError):
        differs = True
    if problem is None and differs:
        problem = f"true_value {claimed!r} differs from the harness's T(S) = {truth.tolist()!r}"
    if problem is not None or not isinstance(sample, np.ndarray):
        return problem, {}
    return None, vector_metrics(sample, truth, statistic.level_rank_errors(bounded, truth, sample))


class BoundedData:
    """A unit's data sorted and bounded for the harness's own T(S), once per bounding rule
    (the mechanisms of a unit differ only in ε: one sort serves every cell)."""

    def __init__(self, data: np.ndarray, lower: float, upper: float) -> None:
        self.data, self.lower, self.upper = np.asarray(data, dtype=np.float64), lower, upper
        self._sorted: dict[str, np.ndarray] = {}

    def by(self, bounding: str) -> np.ndarray:
        """The data clipped to (``clip``) or restricted to (``drop``) the bounds, sorted."""
        if bounding not in self._sorted:
            bounded = sorted_bounded(self.data, self.lower, self.upper, bounding)
            bounded.setflags(write=False)
            self._sorted[bounding] = bounded
        return self._sorted[bounding]


def _cell(
    unit: Unit,
    data: np.ndarray,
    bounded_data: BoundedData,
    epsilon: float,
    delta: float | None,
    settings: Settings,
) -> tuple[dict[str, Any], np.ndarray | None]:
    """Release and sample one (unit, ε) cell; never raises for a mechanism's failure."""
    entry, dataset, statistic = unit.mechanism, unit.dataset, unit.statistic
    rng = noise_rng(settings.seed, dataset.id, unit.replicate, entry.label, epsilon, statistic.id)
    fields: dict[str, Any] = dict.fromkeys(
        ("true_value", *METRICS, "guarantee_epsilon", "guarantee_delta", "rho"), math.nan
    )
    fields.update(neighbouring="", private=False, guarantee_met=False)
    estimates = None
    start = time.perf_counter()
    try:
        mechanism = entry.configure(epsilon, delta, statistic)
        fields.update(guarantee_fields(mechanism.guarantee, epsilon, delta))
        release = mechanism.release(data, (dataset.lower, dataset.upper))
        sample = release.sample(settings.trials, rng)
        seconds = time.perf_counter() - start
        bounding = _bounding(mechanism)
        bounded = bounded_data.by(bounding)
        if isinstance(statistic, Quantiles):  # a vector T(S): true_value stays NaN
            problem, measured = _vector_fields(
                release, sample, statistic, bounded, unit, settings.trials
            )
            truth = math.nan
        else:
            truth = statistic.value(bounded, dataset.lower, dataset.upper)
            if statistic.interval:
                problem, measured = _interval_fields(
                    mechanism, release, sample, truth, bounded, unit, settings.trials
                )
            else:
                problem = _check_release(mechanism, release, sample, truth, unit, settings)
                if problem is None:
                    measured, estimates = (
                        _point_fields(unit, bounded, truth, sample, settings, bounding),
                        sample,
                    )
        if problem is None:
            fields.update(true_value=truth, **measured)
    except UnitTimeout:
        raise
    except BaseException as err:  # a failing plug-in is a result, not a crash
        seconds = time.perf_counter() - start
        problem = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    status = "ok" if problem is None else " ".join(problem.split())[:MAX_STATUS]
    return {**fields, "seconds": seconds, "status": status}, estimates


def _bounding(mechanism: object) -> str:
    """The mechanism's public ``bounding`` option; ``clip`` unless it says ``drop``."""
    bounding = getattr(mechanism, "bounding", "clip")
    return "drop" if isinstance(bounding, str) and bounding == "drop" else "clip"


def _identity(unit: Unit, settings: Settings, n: int) -> dict[str, Any]:
    delta = settings.delta_for(n) if unit.mechanism.takes_delta else None
    return {
        "dataset": unit.dataset.name,
        "subset": unit.dataset.subset,
        "replicate": unit.replicate,
        "n": n,
        "lower": unit.dataset.lower,
        "upper": unit.dataset.upper,
        "mechanism": unit.mechanism.label,
        "registry_name": unit.mechanism.name,
        "statistic": unit.statistic.id,
        "delta": 0.0 if delta is None else delta,
        "trials": settings.trials,
    }


def compute_unit(unit: Unit, settings: Settings) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Rows (one per ε, columns of ``summary.csv``) and, if kept, the estimates of a unit."""
    data = unit.dataset.data(settings.seed, unit.replicate)
    data.setflags(write=False)
    identity = _identity(unit, settings, int(data.size))
    delta = identity["delta"] if unit.mechanism.takes_delta else None
    rows: dict[str, list[Any]] = {column: [] for column in SUMMARY_COLUMNS}
    kept = None
    if settings.keep_estimates:
        kept = np.full((len(settings.epsilons), settings.trials), np.nan)
    bounded = BoundedData(data, unit.dataset.lower, unit.dataset.upper)
    for i, epsilon in enumerate(settings.epsilons):
        fields, estimates = _cell(unit, data, bounded, epsilon, delta, settings)
        for column, value in {**identity, "epsilon": epsilon, **fields}.items():
            rows[column].append(value)
        if kept is not None and estimates is not None:
            kept[i] = estimates
    return {column: np.asarray(values) for column, values in rows.items()}, kept


def failed_unit(unit: Unit, settings: Settings, status: str) -> dict[str, np.ndarray]:
    """The rows of a unit that produced nothing (its worker died or hung): every ε failed."""
    identity = _identity(unit, settings, unit.dataset.size)
    empty: dict[str, Any] = dict.fromkeys(
        ("true_value", *METRICS, "guarantee_epsilon", "guarantee_delta", "rho", "seconds"),
        math.nan,
    )
    empty.update(neighbouring="", private=False, guarantee_met=False)
    status = " ".join(status.split())[:MAX_STATUS]
    rows = [{**identity, "epsilon": e, **empty, "status": status} for e in settings.epsilons]
    return {column: np.asarray([row[column] for row in rows]) for column in SUMMARY_COLUMNS}


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`UnitTimeout` in this (main) thread after ``seconds`` of wall time.

    Off when ``seconds`` is None or outside the main thread (signals are delivered
    to the main thread only: a Dask worker's threads rely on the supervisor).
    """
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise UnitTimeout(f"timed out: the unit took longer than timeout = {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class UnitResult(NamedTuple):
    """What a worker returns for a unit it stored: the unit file's rows (a structured
    array), its estimates (``None`` unless kept) and the identity of the code that
    computed it."""

    records: np.ndarray
    estimates: np.ndarray | None
    code: str


def run_unit(
    unit: Unit,
    settings: Settings,
    path: Path,
    digest: str,
    timeout: float | None,
    write: Writer = write_bytes_atomic,
) -> UnitResult:
    """Compute a unit and store it atomically at ``path``; return what was stored.

    ``digest`` (the sweep's config hash) is stored in the unit file, and so is the
    identity of the code that computes it, as this process loaded it
    (:func:`experiments.harness.code_identity.unit_identity`).  A unit that exceeds
    ``timeout`` seconds is stored with every row failed.  ``write`` writes the unit file.
    """
    code = unit_identity(unit)
    try:
        with time_limit(timeout):
            columns, estimates = compute_unit(unit, settings)
    except UnitTimeout as err:
        columns, estimates = failed_unit(unit, settings, str(err)), None
    if settings.keep_estimates and estimates is None:
        estimates = np.full((len(settings.epsilons), settings.trials), np.nan)
    records = save_unit(path, columns, estimates, digest, code=code, write=write)
    return UnitResult(records, estimates, code)


def run_units(
    items: Sequence[tuple[Unit, Path]], settings: Settings, digest: str, timeout: float | None
) -> list[UnitResult]:
    """:func:`run_unit` for each ``(unit, path)`` in turn (a task of the supervisor), each
    within its own ``timeout``; the unit files' fsyncs overlap the next units
    (:class:`experiments.base.atomic_files.BackgroundSync`), and all are on disk when
    this returns."""
    with BackgroundSync() as files:
        return [
            run_unit(unit, settings, path, digest, timeout, files.write_bytes)
            for unit, path in items
        ]
