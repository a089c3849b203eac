"""The exact tuning search: the arrays ``log A(k)`` against brute force, the minimum over
their hull against a dense minimisation and the branch and bound, the stationary points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.quantiles import exact_alpha, quantile_rank
from mechanisms.median import smooth_laplace
from mechanisms.smooth import exact_search, laplace_ln_tuning
from mechanisms.smooth.exact_search import minimise_lines, upper_hull
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity
from mechanisms.smooth.trimmed_mean import TrimmedMeanSmoothSensitivity
from mechanisms.smooth.tuning import DEFAULT_TOLERANCE, minimise, tune

ALPHAS = (0.01, 0.1, 0.5, 0.9)


def padded(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return np.concatenate(([a], x, [b]))


def brute_add_remove(x: np.ndarray, a: float, b: float, alpha: float) -> np.ndarray:
    """``A(k)``, ``k = 0..n``, from every pair and its cost ``c(i, j)`` (sensitivity docstring)."""
    n, q = x.size, exact_alpha(alpha)
    mu, y = max(q, 1 - q), padded(x, a, b)
    out = np.zeros(n + 1)
    for i in range(n + 2):
        for j in range(i + 1, n + 2):
            g0 = (1 - q) * i - q * (n + 1 - j)
            cost = (j - i - 1) + max(0, math.floor(g0 / mu), math.ceil(-g0 / mu) - 1)
            out[cost:] = np.maximum(out[cost:], y[j] - y[i])
    return out


def brute_replace_one(x: np.ndarray, a: float, b: float, alpha: float) -> np.ndarray:
    """NRS07 Prop. 3.4: ``A(k) = max_{0<=t<=k+1} (x_{r+t} - x_{r+t-k-1})``, ``k = 0..n``."""
    n, r = x.size, quantile_rank(x.size, alpha)
    y = lambda i: a if i < 1 else (b if i > n else x[i - 1])  # noqa: E731
    return np.array([max(y(r + t) - y(r + t - k - 1) for t in range(k + 2)) for k in range(n + 1)])


def data_sets(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        np.sort(rng.uniform(-1, 1, n)),
        np.sort(np.clip(np.round(rng.normal(size=n) * 2) / 2, -1, 1)),  # ties
        np.sort(np.where(rng.uniform(size=n) < 0.5, -1.0, rng.uniform(-1, 1, n))),  # at a
        np.sort(np.where(rng.uniform(size=n) < 0.5, 1.0, rng.uniform(-1, 1, n))),  # at b
    ]


def log_of(values: np.ndarray) -> np.ndarray:
    out = np.full(values.shape, -np.inf)
    np.log(values, out=out, where=values > 0)
    return out


@pytest.mark.parametrize("neighbouring", list(Neighbouring))
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("n", [*range(12), 30, 70, 150])
def test_envelope_arrays_equal_brute_force(n, alpha, neighbouring) -> None:
    brute = brute_add_remove if neighbouring is Neighbouring.ADD_REMOVE else brute_replace_one
    for x in data_sets(n, n):
        ss = QuantileSmoothSensitivity(x, -1.0, 1.0, neighbouring, alpha=alpha)
        envelope = ss.envelope()
        ell = envelope.lines(0.0)
        np.testing.assert_array_equal(ell, log_of(brute(x, -1.0, 1.0, alpha))[: ell.size])
        # a large β stops early: what it leaves out is never above the envelope
        short = QuantileSmoothSensitivity(x, -1.0, 1.0, neighbouring, alpha=alpha).envelope()
        np.testing.assert_array_equal(short.lines(5.0), ell[: short.lines(5.0).size])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9, 40])
def test_trimmed_mean_envelope_equals_brute_force(n) -> None:
    for x in data_sets(n, 100 + n):
        for m in range(0, (n - 1) // 2 + 1):
            ss = TrimmedMeanSmoothSensitivity(x, m, -1.0, 1.0)
            y = lambda i: -1.0 if i < 1 else (1.0 if i > n else x[i - 1])  # noqa: E731, B023
            widths = [
                max(y(n - m + 1 + k - s) - y(m + 1 - s) for s in range(k + 2)) / (n - 2 * m)
                for k in range(2 * m + 2)
            ]
            ell = ss.envelope().lines(0.0)
            np.testing.assert_allclose(
                ell, log_of(np.array(widths))[: ell.size], rtol=1e-15, atol=1e-15
            )


def dense_minimum(ell: np.ndarray, penalty, lo: float, hi: float) -> float:
    """``max_k(ℓ_k - βk) + ψ(β)`` minimised on a fine geometric grid plus every crossing of
    two lines and every stationary point: no hull involved."""
    costs = np.flatnonzero(ell > -np.inf)
    i, j = np.triu_indices(costs.size, 1)
    crossings = (ell[costs[j]] - ell[costs[i]]) / (costs[j] - costs[i])
    stationary = penalty.inverse_slope(costs.astype(float))
    grid = np.concatenate(
        (np.geomspace(lo, hi, 20_001), crossings, stationary, [penalty.inflection])
    )
    grid = grid[(grid >= lo) & (grid <= hi)]
    finite = ell[costs]
    values = np.max(finite[None, :] - grid[:, None] * costs[None, :], axis=1)
    return float(np.min(values + penalty.value(grid)))


PENALTIES = {
    "smooth_laplace": lambda eps: (
        smooth_laplace._penalty(eps, math.log(1e6)),
        smooth_laplace.search_interval(eps, 1e-6),
    ),
    "laplace_ln": lambda eps: (
        laplace_ln_tuning._penalty(eps),
        laplace_ln_tuning.search_interval(eps),
    ),
}

arrays = st.lists(st.floats(-8.0, 3.0), min_size=1, max_size=60).map(
    lambda v: np.maximum.accumulate(np.array(v))  # A(k) is non-decreasing in k
)


@settings(max_examples=60, deadline=None)
@given(
    ell=arrays,
    epsilon=st.sampled_from([0.05, 0.3, 1.0, 4.0]),
    name=st.sampled_from(sorted(PENALTIES)),
    low=st.sampled_from([1e-7, 1e-3, 0.3]),
)
def test_the_minimum_over_the_hull_is_the_dense_minimum(ell, epsilon, name, low) -> None:
    penalty, (_, hi) = PENALTIES[name](epsilon)
    found = minimise_lines(ell, penalty, low * hi, hi)
    reference = dense_minimum(ell, penalty, low * hi, hi)
    assert found.objective <= reference + 1e-12 * max(1.0, abs(reference))
    assert found.objective >= reference - 1e-12 * max(1.0, abs(reference))


def cases() -> list[tuple[np.ndarray, float, Neighbouring, float, str]]:
    rng = np.random.default_rng(11)
    out = []
    for n in (0, 1, 2, 5, 31, 101, 400, 1000):
        for x in (rng.normal(size=n), rng.standard_cauchy(size=n), np.round(rng.normal(size=n))):
            for alpha in ALPHAS:
                for neighbouring in Neighbouring:
                    for epsilon in (1e-3, 0.1, 1.0, 2.0, 50.0):
                        name = "smooth_laplace" if rng.uniform() < 0.5 else "laplace_ln"
                        out.append(
                            (np.sort(np.clip(x, -10, 10)), alpha, neighbouring, epsilon, name)
                        )
    return out


def test_tune_is_never_above_the_branch_and_bound() -> None:
    """The branch and bound is within ``1e-9`` of the optimum: the exact search is at or
    below it, and the ``log SS`` it reports is ``SS.log`` at its β."""
    for x, alpha, neighbouring, epsilon, name in cases():
        penalty, interval = PENALTIES[name](epsilon)
        ss = QuantileSmoothSensitivity(x, -10, 10, neighbouring, alpha=alpha)
        new = tune(ss, penalty, *interval)
        old = minimise(ss.log, penalty, *interval)
        assert new.objective <= old.objective + 1e-13 * max(1.0, abs(old.objective))
        assert new.objective >= old.objective - DEFAULT_TOLERANCE
        assert new.log_ss == pytest.approx(float(ss.log(new.beta)), rel=1e-14, abs=1e-14)


def test_a_dropped_hull_line_is_caught(monkeypatch) -> None:
    """Planted bug: the hull loses its middle vertex; the comparison above must fail."""
    hull = exact_search.upper_hull

    def planted(ell: np.ndarray) -> np.ndarray:
        vertices = hull(ell)
        return np.delete(vertices, vertices.size // 2) if vertices.size >= 3 else vertices

    monkeypatch.setattr(exact_search, "upper_hull", planted)
    caught = 0
    for x, alpha, neighbouring, epsilon, name in cases()[::7]:
        penalty, interval = PENALTIES[name](epsilon)
        ss = QuantileSmoothSensitivity(x, -10, 10, neighbouring, alpha=alpha)
        new = tune(ss, penalty, *interval)
        old = minimise(ss.log, penalty, *interval)
        caught += new.objective > old.objective + 1e-13 * max(1.0, abs(old.objective))
    assert caught > 0


def test_upper_hull_of_ties_and_collinear_points() -> None:
    assert upper_hull(np.array([-np.inf, -np.inf])).size == 0
    assert upper_hull(np.array([1.0, 1.0, 1.0])).tolist() == [0, 2]
    assert upper_hull(np.array([0.0, 1.0, 2.0, 2.5])).tolist() == [0, 2, 3]
    assert upper_hull(np.array([-np.inf, 0.0, np.log(2.0), np.log(3.0)])).tolist() == [1, 2, 3]


def test_stationary_points_solve_their_equation() -> None:
    """``ψ'(β) = k`` of smooth_laplace, ``h(β) = L(1 + k)e^β - 1 - k(ε + L + β) = 0``, to a
    relative ``1e-14`` of its terms (evaluated in 60 digits at the float β), over
    ε ∈ [1e-8, 1e8], δ ∈ [1e-300, e^-2], k ∈ [1, 1e12]; and laplace_ln's quadratic."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    ks = np.geomspace(1.0, 1e12, 37)
    for epsilon in np.geomspace(1e-8, 1e8, 9):
        for log_inv_delta in (2.0, 5.0, 23.0, 300 * math.log(10)):
            betas = smooth_laplace._stationary_beta(ks, float(epsilon), log_inv_delta)
            for k, beta in zip(ks, betas, strict=True):
                if k <= (log_inv_delta - 1.0) / epsilon:
                    assert beta == 0.0
                    continue
                b, kk = mpmath.mpf(float(beta)), mpmath.mpf(float(k))
                e, ell = mpmath.mpf(float(epsilon)), mpmath.mpf(log_inv_delta)
                grow = ell * (1 + kk) * mpmath.exp(b)
                residual = grow - 1 - kk * (e + ell + b)
                assert abs(residual) <= 1e-14 * (grow + 1 + kk * (e + ell + b))
    for epsilon in (1e-8, 1.0, 1e8):
        t = laplace_ln_tuning._stationary_t(ks, epsilon)
        on = t > 0
        sigma = laplace_ln_tuning.optimal_sigma(t[on], epsilon)
        np.testing.assert_allclose((5 * sigma + 1 / sigma) / epsilon, ks[on], rtol=1e-12)
