"""Black-box audit (:mod:`experiments.audit.black_box`): validity, power and calibration.

Every mechanism here has exactly known output probabilities, so each check compares the
audit's lower bounds with the truth:

* correct mechanisms are not flagged and their bounds stay below the true ε (or δ);
* planted privacy bugs (half the noise, an inflated ε, refusals on one side) are flagged;
* calibration: at a loose family-wise level α, the fraction of audits in which *any* reported
  bound misses the true probability of its event stays within what Bin(runs, α) allows
  (a test failing with probability < 1e-9 when the audit is right); planted auditor bugs
  (selection and bounding on the same half, no Bonferroni split) make it fail.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from experiments.audit import black_box
from experiments.audit.black_box import (
    Event,
    Sampler,
    audit_pair,
    audit_pairs,
    clopper_pearson_lower,
    clopper_pearson_upper,
)

EPS = 1.0
LOWER, UPPER = 0.0, 1.0  # public clipping bounds [a, b]: sensitivity of the median b − a
LOW = np.array([LOWER] * 6 + [UPPER] * 5)  # median a ...
HIGH = np.array([LOWER] * 5 + [UPPER] * 6)  # ... one record replaced: median b
TEST_FAILURE = 1e-9  # chance that a calibration limit below fails although the audit is right


def laplace_median(data: np.ndarray, epsilon: float, noise_factor: float = 1.0) -> Sampler:
    """Clipped median + Laplace((b − a) / (noise_factor · ε)); factor 2 is the 2ε bug."""
    center = float(np.median(np.clip(data, LOWER, UPPER)))
    scale = (UPPER - LOWER) / (noise_factor * epsilon)
    return lambda size, rng: center + rng.laplace(0.0, scale, size)


def laplace_probability(event: Event, center: float, scale: float = (UPPER - LOWER) / EPS) -> float:
    """Exact probability of a point event under Laplace(center, scale)."""
    if event.kind == "nan":
        return 0.0
    assert event.threshold is not None and event.kind in ("le", "gt")
    below = stats.laplace.cdf(event.threshold, center, scale)
    return float(below if event.kind == "le" else stats.laplace.sf(event.threshold, center, scale))


# --- Laplace median: the planted 2ε bug ---------------------------------------------------


def test_correct_laplace_median_is_not_flagged_and_its_bound_is_near_tight() -> None:
    audit = audit_pair(laplace_median(LOW, EPS), laplace_median(HIGH, EPS), epsilon=EPS, rng=1)
    assert not audit.violated
    assert 0.8 * EPS < audit.epsilon_lower <= EPS  # the pair is tight: the bound is informative
    assert audit.samples == black_box.DEFAULT_SAMPLES and audit.alpha_total == 1e-9


def test_half_the_noise_is_flagged_at_the_default_budget() -> None:
    leaky = audit_pair(
        laplace_median(LOW, EPS, 2), laplace_median(HIGH, EPS, 2), epsilon=EPS, rng=2
    )
    assert leaky.violated and "violates" in leaky.verdict
    assert EPS < leaky.epsilon_lower <= 2 * EPS  # the true ε of the leaky pair is 2ε
    assert leaky.witness.event.kind in ("le", "gt") and leaky.witness.n == leaky.samples // 2


def test_without_confidence_bounds_the_correct_laplace_median_is_flagged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted auditor bug: point estimates (k + ½) / (n + 1) instead of Clopper–Pearson bounds."""

    def point(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
        return (np.atleast_1d(np.asarray(k, dtype=float)) + 0.5) / (n + 1)

    monkeypatch.setattr(black_box, "clopper_pearson_lower", point)
    monkeypatch.setattr(black_box, "clopper_pearson_upper", point)
    pair = (laplace_median(LOW, EPS), laplace_median(HIGH, EPS))
    flagged = [audit_pair(*pair, epsilon=EPS, samples=100_000, rng=s).violated for s in range(10)]
    assert sum(flagged) >= 5


# --- discrete mechanisms: exponential mechanism, randomized response, report noisy max -----

EM_GRID = np.linspace(0.0, 1.0, 6)
EM_D = [0.0, 0.2, 0.2, 0.2, 1.0, 1.0]  # replace-one neighbours (found by exhaustive
EM_D2 = [1.0, 0.2, 0.2, 0.2, 1.0, 1.0]  # search: the EM's loss here is 0.89ε at ε = 1)


def em_probabilities(data: list[float], epsilon: float) -> np.ndarray:
    """Median EM (McSherry & Talwar): P(r) ∝ exp(ε u(r) / 2), u(r) = −|#{x <= r} − n/2|."""
    counts = (np.asarray(data)[None, :] <= EM_GRID[:, None]).sum(axis=1)
    weights = np.exp(epsilon * -np.abs(counts - len(data) / 2) / 2)  # u has sensitivity 1
    return weights / weights.sum()


def finite_sampler(values: np.ndarray, probabilities: np.ndarray) -> Sampler:
    return lambda size, rng: rng.choice(values, size=size, p=probabilities)


def randomized_response(true: int, epsilon: float, k: int = 4) -> np.ndarray:
    """k-ary randomized response: the truth with probability e^ε / (e^ε + k − 1)."""
    probabilities = np.full(k, 1.0 / (math.exp(epsilon) + k - 1))
    probabilities[true] *= math.exp(epsilon)
    return probabilities


def report_noisy_max(counts: list[int], epsilon: float) -> Sampler:
    """argmax of counts + Laplace(1/ε) noise: ε-DP for counting queries (Dwork & Roth, 3.9)."""
    c = np.asarray(counts, dtype=float)
    return lambda size, rng: np.argmax(c + rng.laplace(0, 1 / epsilon, (size, c.size)), axis=1)


def discrete_pair(kind: str, used_epsilon: float) -> tuple[Sampler, Sampler, float]:
    """Samplers of a pair and an upper bound on their true privacy loss (exact if known)."""
    if kind == "em":
        p, q = em_probabilities(EM_D, used_epsilon), em_probabilities(EM_D2, used_epsilon)
        loss = float(np.max(np.abs(np.log(p / q))))
        return finite_sampler(EM_GRID, p), finite_sampler(EM_GRID, q), loss
    if kind == "rr":
        p, q = randomized_response(1, used_epsilon), randomized_response(2, used_epsilon)
        return finite_sampler(np.arange(4.0), p), finite_sampler(np.arange(4.0), q), used_epsilon
    add_one = (
        report_noisy_max([0, 1, 1, 1], used_epsilon),
        report_noisy_max([1, 1, 1, 1], used_epsilon),
    )
    return *add_one, used_epsilon  # add/remove neighbours


@pytest.mark.parametrize("kind", ["em", "rr", "rnm"])
def test_correct_discrete_mechanisms_are_not_flagged_and_bounds_are_valid(kind: str) -> None:
    sample_p, sample_q, true_loss = discrete_pair(kind, EPS)
    audit = audit_pair(sample_p, sample_q, epsilon=EPS, rng=3)
    assert true_loss <= EPS + 1e-12
    assert not audit.violated and audit.epsilon_lower <= true_loss
    assert audit.epsilon_lower > 0.5 * true_loss


@pytest.mark.parametrize("kind", ["em", "rr", "rnm"])
def test_discrete_mechanisms_run_at_twice_the_claimed_epsilon_are_caught(kind: str) -> None:
    sample_p, sample_q, true_loss = discrete_pair(kind, 2 * EPS)
    audit = audit_pair(sample_p, sample_q, epsilon=EPS, rng=4)
    assert audit.violated and EPS < audit.epsilon_lower <= true_loss


def test_em_pair_losses_are_the_exhaustive_search_values() -> None:
    assert discrete_pair("em", EPS)[2] == pytest.approx(0.887757, abs=1e-6)
    assert discrete_pair("em", 2 * EPS)[2] == pytest.approx(1.906092, abs=1e-6)


# --- Gaussian mechanism and (ε, δ) claims --------------------------------------------------


def gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Exact hockey-stick divergence of N(0, σ²) vs N(Δ, σ²) at e^ε (Balle & Wang, "Improving
    the Gaussian Mechanism for Differential Privacy", 2018, Thm 8):
    Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ)."""
    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    return float(stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b))


DELTA = 1e-5
SIGMA = optimize.brentq(lambda s: gaussian_delta(EPS, s) - DELTA, 0.1, 100.0)  # tight at (ε, δ)


def gaussian(center: float, sigma: float) -> Sampler:
    return lambda size, rng: center + sigma * rng.standard_normal(size)


def test_tight_gaussian_mechanism_is_not_flagged_and_bounds_are_valid() -> None:
    audit = audit_pair(gaussian(0, SIGMA), gaussian(1, SIGMA), epsilon=EPS, delta=DELTA, rng=5)
    assert not audit.violated and audit.delta_lower <= gaussian_delta(EPS, SIGMA)
    assert audit.epsilon_lower <= EPS  # ε(δ) of the pair is exactly ε
    assert {w.criterion for w in audit.witnesses} == {"epsilon", "delta"}
    assert audit.alpha == pytest.approx(1e-9 / 8)


def test_halved_sigma_is_caught_and_its_delta_bound_is_valid() -> None:
    sigma = SIGMA / 2
    audit = audit_pair(gaussian(0, sigma), gaussian(1, sigma), epsilon=EPS, delta=DELTA, rng=6)
    true_delta = gaussian_delta(EPS, sigma)
    true_epsilon = optimize.brentq(lambda e: gaussian_delta(e, sigma) - DELTA, 0.0, 50.0)
    assert audit.violated and DELTA < audit.delta_lower <= true_delta
    assert EPS < audit.epsilon_lower <= true_epsilon


# --- refusals and vector outputs ----------------------------------------------------------


def refusing(probability: float) -> Sampler:
    """Laplace(0, 1/ε) output, NaN ("refused") with the given probability."""
    return lambda size, rng: np.where(
        rng.random(size) < probability, np.nan, rng.laplace(0, 1 / EPS, size)
    )


def test_refusing_on_one_dataset_only_is_caught() -> None:
    audit = audit_pair(refusing(0.5), refusing(0.0), epsilon=EPS, rng=7)
    assert audit.violated and audit.witness.event.kind == "nan"
    assert "refused" in audit.event and audit.witness.direction == "P/Q"


def test_without_the_refusal_event_the_refusing_mechanism_is_missed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted auditor bug: the {NaN} candidate dropped; half-lines alone show log 2 < ε."""
    original = black_box._candidates

    def no_refusals(*args: object) -> tuple[list[Event], np.ndarray, np.ndarray]:
        events, cp, cq = original(*args)  # type: ignore[arg-type]
        keep = np.array([e.kind != "nan" for e in events])
        return [e for e, k in zip(events, keep, strict=True) if k], cp[keep], cq[keep]

    monkeypatch.setattr(black_box, "_candidates", no_refusals)
    audit = audit_pair(refusing(0.5), refusing(0.0), epsilon=EPS, rng=7)
    assert not audit.violated and audit.epsilon_lower <= math.log(2)


def vector_laplace(center: float, scale: float, k: int = 3) -> Sampler:
    return lambda size, rng: center + rng.laplace(0.0, scale, (size, k))


def test_vector_outputs() -> None:
    """Three medians, each at ε/3 (basic composition); the bug spends ε on each."""
    correct = audit_pair(vector_laplace(0, 3 / EPS), vector_laplace(1, 3 / EPS), epsilon=EPS, rng=8)
    assert not correct.violated and correct.epsilon_lower <= EPS
    leaky = audit_pair(vector_laplace(0, 1 / EPS), vector_laplace(1, 1 / EPS), epsilon=EPS, rng=9)
    assert leaky.violated and EPS < leaky.epsilon_lower <= 3 * EPS
    assert leaky.witness.event.name in ("x[0]", "x[1]", "x[2]", "sum(x)")
    single = audit_pair(
        vector_laplace(0, 1 / EPS, 1), vector_laplace(1, 1 / EPS, 1), epsilon=EPS, rng=9
    )
    assert not single.violated and single.witness.event.name == "x[0]"


# --- calibration --------------------------------------------------------------------------


def allowed_failures(runs: int, alpha: float) -> int:
    """Largest count k with P(Bin(runs, α) > k) <= TEST_FAILURE."""
    return int(stats.binom.isf(TEST_FAILURE, runs, alpha))


def calibration(runs: int, pairs: int, alpha_total: float) -> tuple[int, int]:
    """Audits (of correct, tight Laplace medians; ``pairs`` per call) in which some reported
    bound missed the true probability of its event, and audits flagged (a subset)."""
    pair = (laplace_median(LOW, EPS), laplace_median(HIGH, EPS))
    centers = {"P/Q": (0.0, 1.0), "Q/P": (1.0, 0.0)}
    missed = flagged = 0
    for run in range(runs):
        report = audit_pairs(
            [pair] * pairs, epsilon=EPS, samples=2000, rng=run, alpha_total=alpha_total
        )
        witnesses = [w for audit in report.pairs for w in audit.witnesses]
        missed += any(
            w.p_lower > laplace_probability(w.event, centers[w.direction][0])
            or w.q_upper < laplace_probability(w.event, centers[w.direction][1])
            for w in witnesses
        )
        flagged += report.violated
    return missed, flagged


REUSE = ("_halves", lambda n: (slice(0, n // 2), slice(0, n // 2)))
NO_BONFERRONI = ("_per_bound_alpha", lambda alpha_total, tests, delta: alpha_total)
NO_PAIR_SPLIT = ("_per_bound_alpha", lambda a, tests, d: a / black_box._bounds_per_pair(d))


@pytest.mark.parametrize(
    ("bug", "runs", "pairs", "alpha_total"),
    [
        (None, 1000, 1, 0.05),
        (REUSE, 1000, 1, 0.05),
        (NO_BONFERRONI, 1000, 1, 0.05),
        (None, 250, 8, 0.1),
        (NO_PAIR_SPLIT, 250, 8, 0.1),
    ],
    ids=["single", "reuse-bug", "no-bonferroni-bug", "eight-pairs", "no-pair-split-bug"],
)
def test_calibration_at_a_loose_family_wise_level(
    monkeypatch: pytest.MonkeyPatch, bug: tuple | None, runs: int, pairs: int, alpha_total: float
) -> None:
    if bug is not None:
        monkeypatch.setattr(black_box, *bug)
    missed, flagged = calibration(runs, pairs, alpha_total)
    limit = allowed_failures(runs, alpha_total)
    assert flagged <= missed  # a correct mechanism is flagged only through a missed bound
    if bug is None:
        assert missed <= limit, f"{missed}/{runs} audits missed at α = {alpha_total}"
    else:
        assert missed > limit, f"planted bug not detected: {missed}/{runs} <= {limit}"


def test_clopper_pearson_bounds_have_exact_coverage() -> None:
    """P_p(lower(K) > p) <= α for every p, and near α for some (valid, not just conservative);
    a Wald bound (a planted bug) fails."""
    n, alpha, ks = 40, 0.05, np.arange(41)
    lower, upper = clopper_pearson_lower(ks, n, alpha), clopper_pearson_upper(ks, n, alpha)
    z = stats.norm.isf(alpha)
    wald = ks / n - z * np.sqrt(ks / n * (1 - ks / n) / n)
    misses = {"lower": [], "upper": [], "wald": []}
    for p in np.linspace(0.001, 0.999, 2000):
        pmf = stats.binom.pmf(ks, n, p)
        misses["lower"].append(pmf[lower > p].sum())
        misses["upper"].append(pmf[upper < p].sum())
        misses["wald"].append(pmf[wald > p].sum())
    assert max(misses["lower"]) <= alpha and max(misses["upper"]) <= alpha
    assert min(max(misses["lower"]), max(misses["upper"])) > 0.8 * alpha
    assert max(misses["wald"]) > 2 * alpha


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**6), st.data(), st.floats(1e-15, 0.5))
def test_clopper_pearson_bounds_bracket_the_estimate(
    n: int, data: st.DataObject, alpha: float
) -> None:
    k = data.draw(st.integers(0, n))
    lower, upper = clopper_pearson_lower(k, n, alpha)[0], clopper_pearson_upper(k, n, alpha)[0]
    assert 0.0 <= lower <= k / n <= upper <= 1.0
    assert (k > 0 or lower == 0.0) and (k < n or upper == 1.0)


# --- API: families, records, validation ---------------------------------------------------


def test_audit_pairs_splits_the_level_and_records_serialise() -> None:
    pair = (laplace_median(LOW, EPS), laplace_median(HIGH, EPS))
    report = audit_pairs([pair] * 3, epsilon=EPS, delta=1e-6, samples=20_000, rng=10, tests=2)
    assert [a.tests for a in report.pairs] == [6, 6, 6]
    assert all(a.alpha == pytest.approx(1e-9 / (6 * 8)) for a in report.pairs)
    assert report.epsilon_lower == max(a.epsilon_lower for a in report.pairs)
    record = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert record["violated"] is False and len(record["pairs"]) == 3
    witness = record["pairs"][0]["witnesses"][0]
    assert {"description", "kind", "threshold"} <= set(witness["event"])
    assert set(witness) >= {"count_num", "count_den", "n", "p_lower", "q_upper", "direction"}
    again = audit_pairs([pair] * 3, epsilon=EPS, delta=1e-6, samples=20_000, rng=10, tests=2)
    assert again.to_dict() == report.to_dict()


def good(size: int, rng: np.random.Generator) -> np.ndarray:
    return rng.laplace(0.0, 1.0, size)


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"delta": -0.1}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"samples": 100}, "samples"),
        ({"samples": 5000.0}, "samples"),
        ({"samples": True}, "samples"),
        ({"alpha_total": 0.0}, "alpha_total"),
        ({"alpha_total": 1.0}, "alpha_total"),
        ({"tests": 0}, "tests"),
        ({"grid": 0}, "grid"),
    ],
)
def test_invalid_arguments_are_named(options: dict, argument: str) -> None:
    kwargs = {"epsilon": 1.0, "samples": 1000, "rng": 0, **options}
    with pytest.raises(ValueError, match=argument):
        audit_pair(good, good, **kwargs)


def test_numpy_integers_are_accepted_and_an_empty_family_is_rejected() -> None:
    audit = audit_pair(good, good, epsilon=1.0, samples=np.int64(1000), rng=0, tests=np.int64(2))
    assert audit.samples == 1000 and audit.tests == 2 and not audit.violated
    with pytest.raises(ValueError, match="pairs"):
        audit_pairs([], epsilon=1.0, rng=0)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (lambda size, rng: np.zeros(size + 1), "shape"),
        (lambda size, rng: np.zeros((size, 2, 2)), "shape"),
        (lambda size, rng: np.zeros((size, 0)), "shape"),
        (lambda size, rng: np.array(["a"] * size), "real numbers"),
        (lambda size, rng: np.zeros((size, 1)), "differ in shape"),
    ],
)
def test_outputs_of_the_wrong_shape_are_rejected(bad: Sampler, message: str) -> None:
    with pytest.raises(ValueError, match=f"sample_q.*{message}"):
        audit_pair(good, bad, epsilon=1.0, samples=1000, rng=0)
