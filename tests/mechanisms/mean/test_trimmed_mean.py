"""The trimmed mean's smooth sensitivity (brute force) and its two noise mechanisms."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from mechanisms.core.data import mean_value
from mechanisms.core.guarantee import Neighbouring
from mechanisms.mean.trimmed_mean import (
    TrimmedMeanLaplaceLN,
    TrimmedMeanStudentT,
    student_t_epsilon,
)
from mechanisms.noise.laws import StandardStudentT
from mechanisms.smooth.trimmed_mean import (
    TrimmedMeanSmoothSensitivity,
    check_trim,
    trim_count,
    trimmed_mean,
    trimmed_mean_smooth_sensitivity,
)

A, B = 0.0, 1.0
Dataset = tuple[float, ...]


def replaced(z: Dataset, i: int, v: float) -> Dataset:
    """``z`` with its ``i``-th point replaced by ``v``."""
    return (*z[:i], v, *z[i + 1 :])


def tm(z: Dataset, m: int) -> float:
    """The trimmed mean in plain Python (``a`` for the empty dataset)."""
    if not z:
        return A
    ordered = sorted(z)
    return math.fsum(ordered[m : len(z) - m]) / (len(z) - 2 * m)


def brute_local_sensitivity(z: Dataset, m: int, values: Dataset) -> float:
    """max |T(z) - T(z')| over replacing one point of z by one of ``values``."""
    t = tm(z, m)
    return max(
        (abs(tm(replaced(z, i, v), m) - t) for i in range(len(z)) for v in values),
        default=0.0,
    )


@functools.cache
def brute_a(x: Dataset, m: int, values: Dataset) -> list[float]:
    """A(k) = max LS over datasets within k replacements, k = 0..n (all of them)."""
    n = len(x)
    out = []
    for k in range(n + 1):
        best = out[-1] if out else 0.0
        for where in itertools.combinations(range(n), k):
            for new in itertools.product(values, repeat=k):
                z = list(x)
                for i, v in zip(where, new, strict=True):
                    z[i] = v
                best = max(best, brute_local_sensitivity(tuple(z), m, values))
        out.append(best)
    return out


DATASETS: list[tuple[Dataset, int]] = [
    ((), 0),
    ((0.4,), 0),
    ((1.0,), 0),
    ((0.2, 0.7), 0),
    ((0.5, 0.5, 0.5), 1),
    ((0.0, 0.5, 1.0), 0),
    ((0.0, 0.5, 1.0), 1),
    ((0.1, 0.2, 0.2, 0.9), 1),
    ((0.0, 0.0, 0.3, 1.0), 0),
    ((0.1, 0.3, 0.5, 0.6, 0.8), 2),
    ((0.0, 0.2, 0.4, 0.4, 1.0), 1),
]
BETAS = (0.0, 0.1, 0.7, 3.0, 40.0)
SmoothSensitivity = Callable[[np.ndarray, int, float, float, float], float]


def ss_mismatches(ss: SmoothSensitivity) -> list[tuple[Dataset, int, float]]:
    """(data, m, β) where ``ss`` differs from ``max_k e^{-βk} A(k)`` by brute force.

    Replacement values: a, b and the data (a and b give every extreme; the
    trimmed sum is monotone in each point).
    """
    wrong = []
    for x, m in DATASETS:
        values = tuple(sorted({A, B, *x}))
        a_k = brute_a(x, m, values)
        for beta in BETAS:
            expected = max(math.exp(-beta * k) * a for k, a in enumerate(a_k))
            got = ss(np.array(x), m, beta, A, B)
            if not math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-300):
                wrong.append((x, m, beta))
    return wrong


def quadratic_ss(
    x: np.ndarray, m: int, beta: float, a: float, b: float, *, reach: int = 1
) -> float:
    """``max_k e^{-βk} max_{0 <= l <= k + reach} (x_{n-m+1+k-l} - x_{m+1-l}) / N`` directly
    (``reach = 1`` is Bun & Steinke's formula)."""
    n = x.size
    if n == 0:
        return 0.0
    padded = np.concatenate(([a] * (2 * n + 4), x, [b] * (2 * n + 4)))

    def at(rank: int) -> float:
        return float(padded[rank + 2 * n + 3])

    best = 0.0
    for k in range(2 * m + 2):  # beyond, every pair spans [a, b] already
        spread = max(at(n - m + 1 + k - j) - at(m + 1 - j) for j in range(k + reach + 1))
        best = max(best, math.exp(-beta * k) * spread / (n - 2 * m))
    return best


def test_smooth_sensitivity_matches_brute_force() -> None:
    assert ss_mismatches(trimmed_mean_smooth_sensitivity) == []


def test_bun_steinkes_formula_matches_brute_force() -> None:
    assert ss_mismatches(quadratic_ss) == []


def test_the_brute_force_check_catches_a_formula_missing_its_last_term() -> None:
    assert ss_mismatches(lambda *args: quadratic_ss(*args, reach=0)) != []


@pytest.mark.parametrize("seed", range(4))
def test_divide_and_conquer_equals_the_direct_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    x = np.sort(np.round(rng.beta(0.5, 0.5, n), 2))  # ties included
    for m in (0, 1, n // 10, (n - 1) // 2):
        ss = TrimmedMeanSmoothSensitivity(x, m, A, B)
        for beta in (0.0, 1e-4, 0.01, 0.2, 2.0, 50.0):
            assert float(ss(beta)) == pytest.approx(quadratic_ss(x, m, beta, A, B), rel=1e-12)


GRID = (0.0, 0.3, 0.6, 1.0)


@pytest.mark.parametrize("m", [0, 1])
@pytest.mark.parametrize("n", [3, 4])
def test_smooth_bound_properties_on_neighbour_pairs(n: int, m: int) -> None:
    """``S >= LS`` and ``S(x) <= e^β S(x')`` for every replace-one pair on the grid."""
    for beta in (0.05, 0.5, 2.0):
        for x in itertools.combinations_with_replacement(GRID, n):
            s = trimmed_mean_smooth_sensitivity(np.array(x), m, beta, A, B)
            assert s >= brute_local_sensitivity(x, m, GRID) * (1 - 1e-12)
            for i, v in itertools.product(range(n), GRID):
                y = np.sort(np.array(replaced(x, i, v)))
                assert s <= math.exp(beta) * trimmed_mean_smooth_sensitivity(y, m, beta, A, B) * (
                    1 + 1e-12
                )


def test_extremes_of_beta() -> None:
    x = np.sort(np.random.default_rng(1).uniform(size=101))
    ss = TrimmedMeanSmoothSensitivity(x, 10, A, B)
    assert float(ss(0.0)) == pytest.approx((B - A) / 81, rel=1e-15)
    assert float(ss(1e6)) == pytest.approx(ss.local_sensitivity, rel=1e-15)
    with pytest.raises(ValueError, match="beta"):
        ss.log(-1.0)


# ---------------------------------------------------------------- statistic, trim


def test_no_trimming_is_the_mean_bit_for_bit() -> None:
    x = np.sort(np.random.default_rng(2).normal(size=1001))
    assert trimmed_mean(x, 0, -10.0) == mean_value(x, -10.0)
    assert trimmed_mean(np.array([]), 0, -10.0) == mean_value(np.array([]), -10.0) == -10.0


@pytest.mark.parametrize(
    ("trim", "n", "m"),
    [
        (0.1, 1000, 100),
        (0.1, 19, 1),
        (0.1, 0, 0),
        (0.49, 3, 1),
        (0.0, 7, 0),
        (3, 100, 3),
        (3, 6, 2),
    ],
)
def test_trim_count(trim, n, m) -> None:
    assert trim_count(check_trim(trim), n) == m


@pytest.mark.parametrize("trim", [0.5, -1, -0.1, True, "0.1", math.nan])
def test_bad_trim_names_the_argument(trim) -> None:
    with pytest.raises(ValueError, match="trim"):
        check_trim(trim)


# ---------------------------------------------------------------- Student's T privacy


def worst_log_ratio(s: float, t: float, d: float) -> float:
    """sup |log density ratio| of ``c·Z`` vs ``Δ + c e^τ·Z`` (``c = 1/s``, ``|Δ| <= 1``,
    ``|τ| <= t``): the pairs (T(x), SS(x)) vs (T(x'), SS(x')) the proof allows, SS(x) = 1."""
    y = np.concatenate((-np.geomspace(1e-3, 1e6, 2000), [0.0], np.geomspace(1e-3, 1e6, 2000)))
    worst = 0.0
    for shift, tau in itertools.product(np.linspace(-1, 1, 21), np.linspace(-t, t, 11)):
        c, c2 = 1.0 / s, math.exp(tau) / s
        first = stats.t.logpdf(y / c, d) - math.log(c)
        second = stats.t.logpdf((y - shift) / c2, d) - math.log(c2)
        worst = max(worst, float(np.max(np.abs(first - second))))
    return worst


@pytest.mark.parametrize("d", [1.0, 3.0, 10.0])
def test_student_t_loss_is_within_epsilon(d: float) -> None:
    lipschitz = (d + 1) / (2 * math.sqrt(d))
    for t in (0.0, 0.05, 0.2 / max(1.0, d)):
        s = (1.0 - max(1.0, d) * t) / lipschitz
        assert student_t_epsilon(s, t, d) == pytest.approx(1.0)
        assert worst_log_ratio(s, t, d) <= 1.0


def test_the_student_t_check_catches_a_budget_without_the_scale_term() -> None:
    d, t = 3.0, 0.2
    s_ignoring_t = 2 * math.sqrt(d) / (d + 1)  # (d + 1)/(2√d)·s = ε = 1 and no room for t
    assert worst_log_ratio(s_ignoring_t, t, d) > 1.0


OUTPUTS = np.concatenate(
    (np.linspace(-3, 4, 1401), np.geomspace(4, 1e6, 200), -np.geomspace(3, 1e6, 200))
)


def log_density(centre: float, scale: float, d: float) -> np.ndarray:
    return stats.t.logpdf((OUTPUTS - centre) / scale, d) - math.log(scale)


def worst_neighbour_ratio(m: int, t: float, s: float, d: float = 3.0) -> float:
    """max |log density ratio| of ``T_m + SS_t/s · Z`` over replace-one pairs of size 4."""

    def release(z: Dataset) -> np.ndarray:
        x = np.sort(np.array(z))
        scale = trimmed_mean_smooth_sensitivity(x, m, t, A, B) / s
        return log_density(trimmed_mean(x, m, A), scale, d)

    worst = 0.0
    for x in itertools.combinations_with_replacement(GRID, 4):
        first = release(x)
        for i, v in itertools.product(range(4), GRID):
            worst = max(worst, float(np.max(np.abs(first - release(replaced(x, i, v))))))
    return worst


@pytest.mark.parametrize("t", [0.1, 0.2])
@pytest.mark.parametrize("m", [0, 1])
def test_student_t_releases_of_neighbours_are_within_epsilon(m: int, t: float) -> None:
    epsilon, d = 0.7, 3.0
    s = (epsilon - d * t) * 2 * math.sqrt(d) / (d + 1)
    assert worst_neighbour_ratio(m, t, s, d) <= epsilon * (1 + 1e-12)


def test_the_neighbour_check_catches_a_budget_without_the_scale_term() -> None:
    epsilon, d = 0.7, 3.0
    assert worst_neighbour_ratio(0, 0.2, epsilon * 2 * math.sqrt(d) / (d + 1), d) > epsilon


def test_the_public_student_t_mechanism_is_within_epsilon_on_neighbours() -> None:
    mechanism = TrimmedMeanStudentT(epsilon=0.7, trim=1, clip_output=False)
    worst = 0.0
    for x in itertools.combinations_with_replacement(GRID, 4):
        first = mechanism.release(np.array(x), (A, B))
        for i, v in itertools.product(range(4), GRID):
            second = mechanism.release(np.array(replaced(x, i, v)), (A, B))
            ratio = log_density(first.centre, first.scale, 3.0) - log_density(
                second.centre, second.scale, 3.0
            )
            worst = max(worst, float(np.max(np.abs(ratio))))
    assert worst <= 0.7 * (1 + 1e-12)


# ---------------------------------------------------------------- the mechanisms


def make(cls, **options):
    base = {"epsilon": 1.0}
    if cls is TrimmedMeanLaplaceLN:
        base["delta"] = 1e-3
    return cls(**{**base, **options})


CLASSES = [TrimmedMeanLaplaceLN, TrimmedMeanStudentT]


@pytest.mark.parametrize("clip_output", [True, False])
@pytest.mark.parametrize("tuning", ["public", "oracle"])
@pytest.mark.parametrize("cls", CLASSES)
def test_samples_match_the_cdf(cls, tuning, clip_output) -> None:
    x = np.random.default_rng(3).normal(size=300)
    release = make(cls, tuning=tuning, clip_output=clip_output).release(x, (-3.0, 3.0))
    draws = release.sample(20_000, np.random.default_rng(4))
    upper = release.cdf(draws)
    lower = release.cdf(np.nextafter(draws, -np.inf))
    u = lower + np.random.default_rng(5).uniform(size=draws.size) * (upper - lower)
    assert stats.kstest(u, "uniform").pvalue > 1e-3


@pytest.mark.parametrize("tuning", ["public", "oracle"])
@pytest.mark.parametrize("cls", CLASSES)
def test_scale_is_the_smooth_sensitivity_over_s(cls, tuning) -> None:
    x = np.sort(np.clip(np.random.default_rng(6).normal(size=500), -4, 4))
    release = make(cls, tuning=tuning, trim=0.05).release(x, (-4.0, 4.0))
    m = trim_count(0.05, 500)
    assert release.centre == trimmed_mean(x, m, -4.0)
    assert release.true_value == mean_value(np.sort(x), -4.0)  # the statistic it estimates
    ss = trimmed_mean_smooth_sensitivity(x, m, release.parameters["beta"], -4.0, 4.0)
    assert release.scale == pytest.approx(ss / release.parameters["alpha"], rel=1e-12)


def test_laplace_ln_parameters_meet_the_proposition() -> None:
    release = make(TrimmedMeanLaplaceLN, tuning="oracle").release(
        np.random.default_rng(7).normal(size=400), (-5.0, 5.0)
    )
    t, s, sigma = (release.parameters[key] for key in ("beta", "alpha", "sigma"))
    assert t / sigma + math.exp(1.5 * sigma**2) * s == pytest.approx(1.0, rel=1e-12)


def test_student_t_parameters_meet_t_with_equality() -> None:
    mechanism = make(TrimmedMeanStudentT, degrees_of_freedom=5)
    release = mechanism.release(np.random.default_rng(8).normal(size=400), (-5.0, 5.0))
    t, s = release.parameters["beta"], release.parameters["alpha"]
    assert t > 0 and student_t_epsilon(s, t, 5.0) == pytest.approx(1.0, rel=1e-12)


def test_student_t_noise_cdf_and_sampler() -> None:
    noise = StandardStudentT(3.0)
    z = np.array([-np.inf, -2.0, 0.0, 1.5, np.inf])
    np.testing.assert_allclose(noise.cdf(z), stats.t.cdf(z, 3.0), rtol=1e-13)
    draws = noise.sample(50_000, np.random.default_rng(9))
    assert stats.kstest(draws, stats.t(3.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("cls", CLASSES)
def test_guarantees(cls) -> None:
    mechanism = make(cls)
    guarantee = mechanism.guarantee
    assert guarantee.neighbouring is Neighbouring.REPLACE_ONE
    assert mechanism.statistics == frozenset({"mean"})
    assert not guarantee.data_dependent_tuning
    assert make(cls, tuning="oracle").guarantee.data_dependent_tuning
    if cls is TrimmedMeanStudentT:
        assert (guarantee.epsilon, guarantee.delta, guarantee.rho) == (1.0, 0.0, None)
    else:
        assert guarantee.rho == 0.5 and guarantee.delta == 1e-3
        assert guarantee.epsilon == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e3)))


@pytest.mark.parametrize("cls", CLASSES)
def test_empty_data_is_released_as_a(cls) -> None:
    release = make(cls).release([], (-1.0, 2.0))
    assert release.true_value == -1.0 and release.scale == 0.0
    assert np.all(release.sample(10, np.random.default_rng(0)) == -1.0)


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"neighbours": "add_remove"}, "neighbours"),
        ({"bounding": "drop"}, "bounding"),
        ({"trim": 0.7}, "trim"),
        ({"tuning": "private"}, "tuning"),
        ({"clip_output": "yes"}, "clip_output"),
    ],
)
@pytest.mark.parametrize("cls", CLASSES)
def test_bad_public_input_names_the_argument(cls, options, name) -> None:
    with pytest.raises(ValueError, match=name):
        make(cls, **options)


def test_bad_degrees_of_freedom_and_target_name_the_argument() -> None:
    with pytest.raises(ValueError, match="degrees_of_freedom"):
        make(TrimmedMeanStudentT, degrees_of_freedom=0)
    with pytest.raises(ValueError, match="target"):
        make(TrimmedMeanLaplaceLN, target="dp")
    with pytest.raises(ValueError, match="delta"):
        TrimmedMeanLaplaceLN(epsilon=1.0)
