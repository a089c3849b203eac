"""Conformance of every built-in mechanism to the interface, with no per-mechanism test code.

The cases are read from the registry: every class of :func:`mechanisms.available` that a
package module defines (:func:`mechanisms.registry.builtin_modules`; plug-ins registered by
other tests are not ours), once per statistic it estimates (``cls.statistics``), configured
from the class alone: ε = 1 (none when ``not cls.requires_epsilon``), δ = 1e-6 when
``cls.requires_delta``, and the options the statistic passes (``alpha`` of a quantile or an
interval; :data:`STATISTICS`).  The mode's data are integers on integer bounds; every other
statistic's are normal data, some of them outside the bounds.  A new mechanism gets every
check below by registering.  A mechanism of a new statistic kind gets the checks of
construction and bad input, and ``test_every_statistic_has_a_setting`` fails until the kind
has a setting in :data:`STATISTICS` (its data, options and output: a point, an interval).

(a) interface: ``release(data, bounds)`` is an OutputDistribution whose ``lower``, ``upper``,
    ``n`` and ``true_value`` are the bounds, the size and the statistic of the clipped data;
    ``guarantee`` is a valid Guarantee for ``mechanism.neighbouring``;
(b) the sample: points of shape ``(k,)`` in ``[a, b]`` (or anywhere, finite, for a release
    that says it does not clip), NaN only if the class ``may_refuse``; intervals of shape
    ``(k, 2)`` with ``a <= lo <= hi <= b``; m quantiles at once, rows of shape ``(k, m)``,
    finite, non-decreasing, in ``[a, b]``;
(c) the sample follows the cdf, at a fixed seed, each test failing with probability 1e-6
    when it is right: the randomized probability integral transform of the answers
    (exactly uniform for any cdf, atoms included) by a KS test, and the refusals by a
    binomial test; for a discrete output (the mode's) the frequencies against the jumps of
    the cdf (chi-square); for an interval, the frequency of covering a point against its
    exact ``coverage``; for m quantiles at once, each level's column against the release's
    exact ``marginal_cdf`` (the same PIT test per level).  Skipped where the cdf (coverage,
    marginal cdf) raises NotImplementedError and for a release whose sampler ignores the
    seed (OpenDP's);
(d) bad input, each a ValueError naming the argument: NaN or infinite data, bounds that
    are empty or reversed, ε <= 0, NaN or a bool (or any ε for a method that takes none), δ
    given to a mechanism that takes none or missing where required;
(e) with the cyclic garbage collector off, dropping a release frees its data (the peer
    libraries' releases are left out: OpenDP's ctypes conversions make cycles that hold a
    copy of the data, which is theirs to fix);
(f) the harness's checks and metrics (:mod:`experiments.harness.metrics`,
    :mod:`experiments.harness.interval_metrics`) accept the release and its sample.

The peers call their library once per draw: their samples are small
(:data:`PEER_DRAWS`).  Planted bugs at the end show that the checks (b), (c) and (e) fail
on broken releases.
"""

from __future__ import annotations

import gc
import math
import tracemalloc
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import pytest
from scipy import stats

import mechanisms
from experiments.harness.interval_metrics import (
    interval_metrics,
    interval_problem,
    nonprivate_width,
)
from experiments.harness.metrics import METRICS, cdf_problem, error_metrics, estimates_problem
from experiments.harness.vector_metrics import vector_metrics, vector_problem
from mechanisms import registry
from mechanisms.core.guarantee import Guarantee
from mechanisms.core.interface import OutputDistribution
from mechanisms.peers import PeerMechanism
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity
from mechanisms.statistics import (
    Mean,
    Median,
    MedianInterval,
    Mode,
    Quantile,
    Quantiles,
    Statistic,
)

EPSILON, DELTA = 1.0, 1e-6
N = 200
"""Points per dataset (the peers are slow: at most 200)."""
DRAWS, PEER_DRAWS = 2000, 200
SEED = 20_240_611
P_MIN = 1e-6
"""Each statistical check fails with this probability when the mechanism is right."""
STATISTICS: dict[str, Statistic] = {
    "median": Median(),
    "quantile": Quantile(0.3),
    "mean": Mean(),
    "mode": Mode(),
    "median_interval": MedianInterval(0.1),
    "quantiles": Quantiles((0.1, 0.5, 0.75)),
}
"""The statistic each kind is checked with (its ``mechanism_options`` configure the class)."""
BOUNDS = {"mode": (-5.0, 5.0)}
"""Integer bounds for the mode; (-2.5, 3.0) for the others."""


def dataset(kind: str, n: int = N) -> np.ndarray:
    """The data a mechanism of statistic ``kind`` is checked on (fixed seed, some points
    outside the bounds)."""
    rng = np.random.default_rng(SEED)
    if kind == "mode":
        return np.round(rng.normal(0.0, 2.5, n))
    return rng.normal(0.3, 1.2, n)


class Case(NamedTuple):
    name: str
    kind: str

    @property
    def cls(self) -> type[mechanisms.Mechanism]:
        return registry.get(self.name)

    @property
    def bounds(self) -> tuple[float, float]:
        return BOUNDS.get(self.kind, (-2.5, 3.0))

    @property
    def draws(self) -> int:
        return PEER_DRAWS if issubclass(self.cls, PeerMechanism) else DRAWS

    @property
    def known(self) -> bool:
        """Whether the statistic has a setting here (:data:`STATISTICS`)."""
        return self.kind in STATISTICS

    def mechanism(self, **parameters: object) -> mechanisms.Mechanism:
        """The class at ε = 1, δ = 1e-6 where it takes one, and the statistic's options;
        ``parameters`` override any of them."""
        cls = self.cls
        settings: dict[str, object] = {
            "epsilon": EPSILON if cls.requires_epsilon else None,
            "delta": DELTA if cls.requires_delta else None,
            **(STATISTICS[self.kind].mechanism_options() if self.known else {}),
            **parameters,
        }
        return registry.configure(cls, **settings)  # type: ignore[arg-type]

    def release(self) -> OutputDistribution:
        return self.mechanism().release(dataset(self.kind), self.bounds)


def built_ins() -> list[str]:
    """The package's usable mechanisms (not the plug-ins other tests register)."""
    modules = set(registry.builtin_modules())
    return [name for name in mechanisms.available() if registry.get(name).__module__ in modules]


ALL_CASES = [
    Case(name, kind) for name in built_ins() for kind in sorted(registry.get(name).statistics)
]
CASES = [case for case in ALL_CASES if case.known]
all_cases = pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: f"{c.name}[{c.kind}]")
"""The checks of construction and of bad input, which need no setting of the statistic."""
cases = pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.name}[{c.kind}]")
"""The checks of a release, its sample and its law: statistics with a setting only."""


def test_every_statistic_has_a_setting() -> None:
    """A mechanism of a new statistic kind gets only the checks of construction and bad input
    until the kind has a setting: data, options, and what its output looks like (a point,
    an interval) for the checks of the sample."""
    missing = sorted({case.kind for case in ALL_CASES} - set(STATISTICS))
    assert not missing, f"add a setting for {missing} to STATISTICS (and its output checks)"
    assert {name for name, _ in ALL_CASES} == set(built_ins()) and len(CASES) >= 20


# ------------------------------------------------------------------ (a) interface


def clipped(case: Case) -> np.ndarray:
    lower, upper = case.bounds
    return np.sort(np.clip(dataset(case.kind), lower, upper))


@cases
def test_a_release_is_the_output_distribution_of_the_clipped_data(case: Case) -> None:
    release = case.release()
    assert isinstance(release, OutputDistribution)
    lower, upper = case.bounds
    assert (release.lower, release.upper, release.n) == (lower, upper, N)
    statistic = STATISTICS[case.kind]
    if isinstance(statistic, Quantiles):
        truth = statistic.values(clipped(case), lower, upper)
        assert np.array_equal(release.true_value, truth)
        return
    assert release.true_value == statistic.value(clipped(case), lower, upper)


@all_cases
def test_the_guarantee_is_for_the_mechanisms_neighbouring(case: Case) -> None:
    mechanism = case.mechanism()
    guarantee = mechanism.guarantee
    assert isinstance(guarantee, Guarantee)
    assert guarantee.neighbouring == mechanism.neighbouring
    assert guarantee.epsilon > 0 and 0.0 <= guarantee.delta < 1.0
    assert math.isfinite(guarantee.epsilon) == case.cls.requires_epsilon


# ------------------------------------------------------------------ (b) the sample


def sample_problem(release: OutputDistribution, sample: object, size: int, **flags) -> list[str]:
    """What is wrong with a sample of ``size`` draws (empty: nothing).  ``flags``:
    ``interval`` (intervals, not points), ``levels`` (rows of that many quantiles) and
    ``may_refuse`` (NaN allowed)."""
    lower, upper = release.lower, release.upper
    if not isinstance(sample, np.ndarray) or not np.issubdtype(sample.dtype, np.floating):
        return [f"sample is {type(sample).__name__} {getattr(sample, 'dtype', '')}"]
    if flags.get("levels"):
        m = flags["levels"]
        if sample.shape != (size, m):
            return [f"rows of shape {sample.shape}, not ({size}, {m})"]
        if not np.isfinite(sample).all():
            return ["NaN or infinite values"]
        problems = [] if (np.diff(sample, axis=1) >= 0).all() else ["a decreasing row"]
        inside = ((lower <= sample) & (sample <= upper)).all()
        return problems + ([] if inside else ["values outside [a, b]"])
    if flags.get("interval"):
        if sample.shape != (size, 2):
            return [f"intervals of shape {sample.shape}, not ({size}, 2)"]
        lo, hi = sample[:, 0], sample[:, 1]
        inside = np.isfinite(sample).all() and (lower <= lo).all() and (hi <= upper).all()
        problems = [] if (lo <= hi).all() else ["an interval with lo > hi"]
        return problems + ([] if inside else ["an interval leaves [a, b]"])
    if sample.shape != (size,):
        return [f"points of shape {sample.shape}, not ({size},)"]
    answered = sample[~np.isnan(sample)]
    problems = [] if flags.get("may_refuse") or answered.size == size else ["NaN draws"]
    outside = ((answered < lower) | (answered > upper)).any()
    if not np.isfinite(answered).all():
        problems.append("infinite draws")
    elif outside and getattr(release, "clip", True) is not False:
        problems.append("draws outside [a, b]")
    return problems


def is_interval(case: Case) -> bool:
    return bool(getattr(STATISTICS[case.kind], "interval", False))


def levels(case: Case) -> int:
    """The number of levels of a vector statistic's rows (0: not a vector statistic)."""
    statistic = STATISTICS[case.kind]
    return statistic.m if isinstance(statistic, Quantiles) else 0


@cases
def test_samples_have_the_shape_and_range_of_the_output(case: Case) -> None:
    release = case.release()
    for size in (0, 1, case.draws):
        sample = release.sample(size, np.random.default_rng(SEED))
        flags = {
            "interval": is_interval(case),
            "levels": levels(case),
            "may_refuse": case.cls.may_refuse,
        }
        assert sample_problem(release, sample, size, **flags) == []


# ------------------------------------------------------------ (c) sample and cdf


def seeded(release: OutputDistribution) -> bool:
    """Whether the release's draws follow the seed of the generator it is given."""
    first, second = (release.sample(8, np.random.default_rng(SEED)) for _ in range(2))
    return np.array_equal(first, second, equal_nan=True)


def cdf_or_none(release: OutputDistribution, x: np.ndarray) -> np.ndarray | None:
    """``release.cdf(x)``, None where the release has no (computable) cdf."""
    cdf = getattr(release, "cdf", None)
    if cdf is None:
        return None
    try:
        return np.asarray(cdf(x), dtype=np.float64)
    except NotImplementedError:
        return None


def refusal_p_value(release: OutputDistribution, sample: np.ndarray) -> float:
    refused = int(np.isnan(sample).sum())
    return binomial_p_value(refused, sample.size, float(getattr(release, "refusal_probability", 0)))


def pit_p_value(release: OutputDistribution, answered: np.ndarray, rng) -> float | None:
    """KS p-value of the randomized probability integral transform of the answers:
    ``(F(x-) + V·(F(x) - F(x-))) / P(answer)`` is exactly uniform iff ``F`` is their cdf."""
    at = cdf_or_none(release, answered)
    below = cdf_or_none(release, np.nextafter(answered, -np.inf))
    if at is None or below is None:
        return None
    if answered.size == 0:
        return 1.0
    answer = 1.0 - float(getattr(release, "refusal_probability", 0.0))
    uniforms = (below + rng.uniform(size=answered.size) * (at - below)) / answer
    return float(stats.kstest(uniforms, "uniform").pvalue)


def jumps_p_value(release: OutputDistribution, sample: np.ndarray) -> float | None:
    """Chi-square p-value of the frequencies of the values ``a, ..., b``, of ⊥ and of anything
    else against the jumps of the cdf at ``a, ..., b``, the refusal probability and 0 (cells
    expecting fewer than 5 draws pooled; 0 when a draw falls where nothing is expected)."""
    support = np.arange(release.lower, release.upper + 1.0)
    at = cdf_or_none(release, support)
    below = cdf_or_none(release, np.nextafter(support, -np.inf))
    if at is None or below is None:
        return None
    refusal = float(getattr(release, "refusal_probability", 0.0))
    probabilities = np.append(at - below, [refusal, 0.0])
    probabilities[-1] = max(0.0, 1.0 - probabilities.sum())  # off the support: 0 up to rounding
    counts = [np.count_nonzero(sample == y) for y in support]
    counts = np.append(counts, [np.isnan(sample).sum(), 0])
    counts[-1] = sample.size - counts.sum()
    expected = probabilities * sample.size
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    if (observed[expected < 1e-9] > 0).any():
        return 0.0
    keep = expected >= 1e-9
    if keep.sum() < 2:
        return 1.0
    observed, expected = observed[keep], expected[keep]
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


def coverage_p_values(release: OutputDistribution, sample: np.ndarray) -> list[float] | None:
    """Binomial p-values of how often the intervals cover the truth, and the point of a grid
    over ``[a, b]`` whose exact ``coverage`` is nearest 1/2, against that coverage."""
    grid = np.linspace(release.lower, release.upper, 81)
    try:
        exact = np.array([release.coverage(t) for t in grid])  # type: ignore[attr-defined]
        points = [release.true_value, float(grid[np.argmin(np.abs(exact - 0.5))])]
        exact = np.array([release.coverage(t) for t in points])  # type: ignore[attr-defined]
    except NotImplementedError:
        return None
    return [
        binomial_p_value(int(((sample[:, 0] <= t) & (t <= sample[:, 1])).sum()), len(sample), p)
        for t, p in zip(points, exact, strict=True)
    ]


def binomial_p_value(successes: int, trials: int, probability: float) -> float:
    """Two-sided binomial p-value (0 or 1 for a probability of 0 or 1)."""
    probability = min(max(probability, 0.0), 1.0)
    if probability in (0.0, 1.0):
        return float(successes == probability * trials)
    return float(stats.binomtest(successes, trials, probability).pvalue)


class Marginal:
    """Level ``j`` of an m-quantiles release, as a release of one number: its cdf is the
    release's exact ``marginal_cdf(j, ·)``."""

    def __init__(self, release: OutputDistribution, j: int) -> None:
        self.release, self.j = release, j

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return self.release.marginal_cdf(self.j, x)  # type: ignore[attr-defined]


def marginal_p_values(release: OutputDistribution, sample: np.ndarray) -> list[float] | None:
    """The PIT p-value of each level's column against that level's marginal cdf (None where
    the release has no exact marginal)."""
    found = []
    for j in range(sample.shape[1]):
        marginal = Marginal(release, j)
        p_value = pit_p_value(marginal, sample[:, j], np.random.default_rng(SEED + 1 + j))  # type: ignore[arg-type]
        if p_value is None:
            return None
        found.append(p_value)
    return found


def law_p_values(case: Case, release: OutputDistribution) -> list[float] | None:
    """The p-values of check (c) on ``release`` (None: nothing to compare with)."""
    sample = release.sample(case.draws, np.random.default_rng(SEED))
    if is_interval(case):
        return coverage_p_values(release, sample)
    if levels(case):
        return marginal_p_values(release, sample)
    if case.kind == "mode":
        found = jumps_p_value(release, sample)
        return None if found is None else [found]
    answered = sample[~np.isnan(sample)]
    found = pit_p_value(release, answered, np.random.default_rng(SEED + 1))
    return None if found is None else [found, refusal_p_value(release, sample)]


@cases
def test_samples_follow_the_cdf(case: Case) -> None:
    release = case.release()
    if not seeded(release):
        pytest.skip("its draws ignore the seed (the library's own RNG)")
    found = law_p_values(case, release)
    if found is None:
        pytest.skip("no exact cdf (coverage, marginal cdf) to compare with")
    assert min(found) > P_MIN, found


# ------------------------------------------------------------------ (d) bad input


@all_cases
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_data_that_is_not_finite_is_refused_naming_data(case: Case, bad: float) -> None:
    data = dataset(case.kind).copy()
    data[N // 3] = bad
    with pytest.raises(ValueError, match="data"):
        case.mechanism().release(data, case.bounds)


@all_cases
@pytest.mark.parametrize("kind", ["empty", "reversed"])
def test_empty_or_reversed_bounds_are_refused_naming_bounds(case: Case, kind: str) -> None:
    bounds = () if kind == "empty" else case.bounds[::-1]
    with pytest.raises(ValueError, match="bounds"):
        case.mechanism().release(dataset(case.kind), bounds)


@all_cases
@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, True], ids=["0", "-1", "nan", "True"])
def test_a_bad_epsilon_is_refused_naming_epsilon(case: Case, epsilon: object) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        case.mechanism(epsilon=epsilon)
    if not case.cls.requires_epsilon:
        with pytest.raises(ValueError, match="epsilon"):
            case.mechanism(epsilon=EPSILON)  # a non-private method takes no ε


@all_cases
def test_delta_is_refused_unless_used_and_required_if_used(case: Case) -> None:
    with pytest.raises(ValueError, match="delta"):
        case.mechanism(delta=None if case.cls.requires_delta else DELTA)


# ------------------------------------------------------------------ (e) memory
# A release holds the bounded data (its cdf reads them); an object of the release that refers
# back to itself (a bound method of the smooth-sensitivity object kept by its envelope did)
# makes a reference cycle, and the data then stay until the cyclic collector happens to run:
# at n = 10⁷, 80 MB per release of every worker.  With the collector off, each release is
# made, sampled and dropped, and the memory it allocated must be back to a small fraction of
# one dataset (caches of public parameters hold arrays far smaller than the data).

MEMORY_N = 20_000
"""Above mechanisms.core.selection.MIN_SAMPLED, so releases go through selection."""
MEMORY_BOUNDS = (-10.0, 10.0)
KEPT_FRACTION = 0.5
"""A cycle keeps at least the bounded copy of the data (one dataset); caches keep less."""


@pytest.fixture
def no_cyclic_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def memory_kept(mechanism: mechanisms.Mechanism, data: np.ndarray) -> float:
    """Bytes still allocated after a release is made, sampled and dropped (after one untimed
    release that fills the caches)."""
    rng = np.random.default_rng(0)
    mechanism.release(data, MEMORY_BOUNDS).sample(10, rng)
    tracemalloc.start()
    try:
        release = mechanism.release(data, MEMORY_BOUNDS)
        release.sample(10, rng)
        del release
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def configured(name: str) -> mechanisms.Mechanism:
    """``name`` at ε = 1 (none for a non-private reference), δ = 1e-6 where it takes one."""
    cls = registry.get(name)
    epsilon = EPSILON if cls.requires_epsilon else None
    return registry.configure(cls, epsilon=epsilon, delta=DELTA if cls.requires_delta else None)


@pytest.mark.parametrize("name", built_ins())
def test_a_dropped_release_frees_its_data(name: str, no_cyclic_collector: None) -> None:
    if issubclass(registry.get(name), PeerMechanism):
        pytest.skip("a peer library's internals (OpenDP's ctypes conversions make cycles)")
    data = np.random.default_rng(1).normal(size=MEMORY_N)
    assert memory_kept(configured(name), data) < KEPT_FRACTION * data.nbytes


# ------------------------------------------------------------------ (f) metrics


@cases
def test_the_harness_metrics_accept_the_sample(case: Case) -> None:
    release = case.release()
    sample = release.sample(case.draws, np.random.default_rng(SEED))
    lower, upper = case.bounds
    bounded, statistic = clipped(case), STATISTICS[case.kind]
    if isinstance(statistic, Quantiles):
        assert vector_problem(sample, case.draws, statistic.m, lower, upper) is None
        truth_vector = statistic.values(bounded, lower, upper)
        ranks = statistic.level_rank_errors(bounded, truth_vector, sample)
        found = vector_metrics(sample, truth_vector, ranks)
        assert all(math.isfinite(value) for value in found.values()), found
        return
    truth = statistic.value(bounded, lower, upper)
    if is_interval(case):
        assert interval_problem(sample, case.draws, lower, upper) is None
        reference = nonprivate_width(bounded, statistic.alpha, lower, upper)  # type: ignore[attr-defined]
        metrics = interval_metrics(sample, truth, reference)
        assert metrics and all(math.isfinite(value) for value in metrics.values()), metrics
        return
    clip = getattr(release, "clip", True) is not False
    flags = {"clipped": clip, "may_refuse": case.cls.may_refuse}
    assert estimates_problem(sample, case.draws, lower, upper, **flags) is None
    assert cdf_problem(release, lower, upper, clipped=clip) is None
    answered = sample[~np.isnan(sample)]
    metrics = error_metrics(
        answered,
        truth,
        statistic.rank_errors(bounded, truth, answered),
        statistic.count_gaps(bounded, answered),
        trials=case.draws,
    )
    assert set(metrics) == set(METRICS)
    assert 0.0 <= metrics["answer_rate"] <= 1.0
    if answered.size > 1:
        assert math.isfinite(metrics["mean_abs_error"]) and math.isfinite(metrics["rmse"])


# ------------------------------------------------------------------ planted bugs


class Shifted:
    """A release whose draws are moved by ``shift`` (its cdf is not)."""

    def __init__(self, release: OutputDistribution, shift: float) -> None:
        self.release, self.shift = release, shift

    def __getattr__(self, attribute: str) -> object:
        return getattr(self.release, attribute)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return self.release.sample(size, rng) + self.shift


@pytest.mark.parametrize(
    ("name", "kind", "shift"),
    [
        ("duff", "median", 0.05),
        ("report_noisy_max", "mode", 1.0),
        ("smooth_cauchy", "quantile", 0.1),
        ("ind_exp", "quantiles", 0.1),
    ],
)
def test_the_law_check_catches_draws_off_the_cdf(name: str, kind: str, shift: float) -> None:
    case = Case(name, kind)
    release = case.release()
    assert min(law_p_values(case, release)) > P_MIN  # type: ignore[arg-type]
    assert min(law_p_values(case, Shifted(release, shift))) < P_MIN  # type: ignore[arg-type]


def test_the_refusal_check_catches_a_wrong_refusal_probability() -> None:
    release = Case("ptr_median", "median").mechanism().release(np.zeros(30), (0, 1))
    sample = release.sample(DRAWS, np.random.default_rng(SEED))
    assert 0.05 < release.refusal_probability < 0.95 and refusal_p_value(release, sample) > P_MIN
    release.refusal_probability *= 0.5
    assert refusal_p_value(release, sample) < P_MIN


def test_the_coverage_check_catches_intervals_off_their_coverage() -> None:
    case = Case("dp_order_statistic", "median_interval")
    release = case.release()
    sample = release.sample(DRAWS, np.random.default_rng(SEED))
    assert min(coverage_p_values(release, sample)) > P_MIN  # type: ignore[arg-type]
    narrowed = sample + np.array([0.05, -0.05]) * (release.upper - release.lower)
    assert min(coverage_p_values(release, narrowed)) < P_MIN  # type: ignore[arg-type]


def test_the_shape_and_range_check_catches_bad_samples() -> None:
    release = Case("duff", "median").release()
    good = release.sample(10, np.random.default_rng(SEED))
    assert sample_problem(release, good, 10) == []
    assert sample_problem(release, good + 10.0, 10) == ["draws outside [a, b]"]
    assert sample_problem(release, good[:9], 10) == ["points of shape (9,), not (10,)"]
    assert sample_problem(release, np.where(good > 0, np.nan, good), 10) == ["NaN draws"]
    assert sample_problem(release, np.append(good[:9], np.inf), 10) == ["infinite draws"]
    intervals = np.column_stack((good, good + 0.1))
    assert sample_problem(release, intervals[:, ::-1], 10, interval=True) == [
        "an interval with lo > hi"
    ]
    rows = np.column_stack((good, good + 0.1, good + 0.2)).clip(release.lower, release.upper)
    assert sample_problem(release, rows, 10, levels=3) == []
    assert sample_problem(release, rows[:, ::-1], 10, levels=3) == ["a decreasing row"]
    assert sample_problem(release, rows + 10.0, 10, levels=3) == ["values outside [a, b]"]
    assert sample_problem(release, rows[:, :2], 10, levels=3) == [
        "rows of shape (10, 2), not (10, 3)"
    ]


def test_a_reference_cycle_through_the_data_is_caught(
    no_cyclic_collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted: the smooth-sensitivity object keeps a bound method of itself."""
    original = QuantileSmoothSensitivity.__init__

    def cyclic(self: QuantileSmoothSensitivity, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        self.myself = self.log  # type: ignore[attr-defined]

    monkeypatch.setattr(QuantileSmoothSensitivity, "__init__", cyclic)
    data = np.random.default_rng(1).normal(size=MEMORY_N)
    assert memory_kept(configured("smooth_cauchy"), data) > 0.9 * data.nbytes
