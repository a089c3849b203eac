"""The branch-and-bound parameter search and the public reference data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mechanisms
from mechanisms.core.guarantee import Neighbouring
from mechanisms.median import smooth_laplace
from mechanisms.smooth import laplace_ln_tuning
from mechanisms.smooth.sensitivity import MedianSmoothSensitivity, QuantileSmoothSensitivity
from mechanisms.smooth.tuning import (
    DEFAULT_TOLERANCE,
    EvenlySpaced,
    minimise,
    reference_smooth_sensitivity,
)


class Lines:
    """``E(β) = max_k (h_k - c_k β)``: a convex, non-increasing test function."""

    def __init__(self, costs: np.ndarray, heights: np.ndarray) -> None:
        self.costs, self.heights = costs.astype(float), heights.astype(float)

    def __call__(self, beta: np.ndarray) -> np.ndarray:
        beta = np.atleast_1d(np.asarray(beta, dtype=float))
        return (self.heights[None, :] - beta[:, None] * self.costs[None, :]).max(axis=1)

    def breakpoints(self) -> np.ndarray:
        """Every pairwise crossing (a superset of the envelope's kinks)."""
        i, j = np.triu_indices(self.costs.size, 1)
        dc = self.costs[j] - self.costs[i]
        with np.errstate(divide="ignore", invalid="ignore"):
            b = (self.heights[j] - self.heights[i]) / dc
        return b[np.isfinite(b) & (b > 0)]


def brute_force_minimum(f, penalty, lo: float, hi: float, extra: np.ndarray) -> float:
    """Minimum of ``f + ψ`` on a fine geometric grid plus the given points."""
    grid = np.concatenate((np.geomspace(lo, hi, 200_001), extra[(extra >= lo) & (extra <= hi)]))
    return float(np.min(f(grid) + penalty.value(grid)))


line_sets = st.integers(1, 12).flatmap(
    lambda m: st.tuples(
        st.lists(st.integers(0, 400), min_size=m, max_size=m, unique=True),
        st.lists(st.floats(-8.0, 3.0), min_size=m, max_size=m),
    )
)


@settings(max_examples=40, deadline=None)
@given(lines=line_sets, epsilon=st.sampled_from([0.05, 0.3, 1.0, 4.0]))
def test_minimise_laplace_ln_penalty_is_global(lines, epsilon):
    """ψ of laplace_ln is concave then convex: several local minima, the global one is found."""
    f = Lines(np.array(lines[0]), np.array(lines[1]))
    penalty = laplace_ln_tuning._penalty(epsilon)
    hi = float(laplace_ln_tuning.t_for_sigma(laplace_ln_tuning.SIGMA_MAX, epsilon))
    lo = 1e-7 * hi
    found = minimise(f, penalty, lo, hi)
    stationary = laplace_ln_tuning._stationary_t(f.costs, epsilon)
    extra = np.concatenate((f.breakpoints(), stationary, [penalty.inflection]))
    reference = brute_force_minimum(f, penalty, lo, hi, extra)
    assert found.objective <= reference + DEFAULT_TOLERANCE
    assert found.objective == pytest.approx(float(f(found.beta)[0] + penalty.value(found.beta)))


@settings(max_examples=40, deadline=None)
@given(
    lines=line_sets,
    epsilon=st.sampled_from([0.05, 0.3, 1.0, 4.0]),
    delta=st.sampled_from([1e-2, 1e-6]),
)
def test_minimise_smooth_laplace_penalty_is_global(lines, epsilon, delta):
    f = Lines(np.array(lines[0]), np.array(lines[1]))
    log_inv_delta = -math.log(delta)
    penalty = smooth_laplace._penalty(epsilon, log_inv_delta)
    hi = smooth_laplace.beta_limit(epsilon, log_inv_delta) * (1 - 1e-9)
    lo = 1e-7 * hi
    found = minimise(f, penalty, lo, hi)
    stationary = smooth_laplace._stationary_beta(f.costs, epsilon, log_inv_delta)
    reference = brute_force_minimum(
        f, penalty, lo, hi, np.concatenate((f.breakpoints(), stationary))
    )
    assert found.objective <= reference + DEFAULT_TOLERANCE


def test_minimise_reaches_the_left_end_when_the_minimum_is_there():
    """A flat E: the objective ψ increases, so the best β is the smallest one."""
    epsilon, log_inv_delta = 1.0, math.log(1e3)
    penalty = smooth_laplace._penalty(epsilon, log_inv_delta)
    hi = smooth_laplace.beta_limit(epsilon, log_inv_delta) * (1 - 1e-9)
    found = minimise(lambda b: np.zeros(np.size(b)), penalty, 1e-12 * hi, hi)
    assert found.beta < 1e-9 * hi
    assert found.penalty == pytest.approx(-math.log(epsilon), abs=DEFAULT_TOLERANCE)


def test_stationary_points_solve_the_slope_equation():
    epsilon, log_inv_delta = 0.7, math.log(1e5)
    k = np.array([20.0, 100.0, 1e4])
    beta = smooth_laplace._stationary_beta(k, epsilon, log_inv_delta)
    alpha = smooth_laplace.alpha_at(beta, epsilon, log_inv_delta)
    np.testing.assert_allclose((log_inv_delta * np.exp(beta) - 1) / alpha, k, rtol=1e-9)
    assert smooth_laplace._stationary_beta(np.array([1.0]), epsilon, log_inv_delta)[0] == 0.0
    t = laplace_ln_tuning._stationary_t(k, epsilon)
    sigma = laplace_ln_tuning.optimal_sigma(t, epsilon)
    np.testing.assert_allclose((5 * sigma + 1 / sigma) / epsilon, k, rtol=1e-9)
    assert np.all(sigma >= 1 / math.sqrt(5))


def test_minimise_rejects_an_empty_interval():
    penalty = smooth_laplace._penalty(1.0, 5.0)
    with pytest.raises(ValueError, match="lo"):
        minimise(lambda b: np.zeros(np.size(b)), penalty, 1.0, 0.5)


def test_reference_data_is_evenly_spaced_and_cached():
    ss = reference_smooth_sensitivity(4, Neighbouring.ADD_REMOVE)
    direct = MedianSmoothSensitivity(np.array([0.125, 0.375, 0.625, 0.875]), 0.0, 1.0)
    betas = np.array([0.01, 0.3, 2.0])
    np.testing.assert_allclose(ss.log(betas), direct.log(betas))
    assert reference_smooth_sensitivity(4, Neighbouring.ADD_REMOVE) is ss


def reference_a(n: int) -> np.ndarray:
    """A(k), k = 0..n, of the reference data (tuning module docstring), for any quantile."""
    if n == 0:
        return np.array([1.0])
    k = np.arange(n + 1)
    return np.where(k <= n - 2, (k + 1) / n, np.where(k == n - 1, (n - 0.5) / n, 1.0))


@pytest.mark.parametrize("neighbouring", list(Neighbouring))
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.3, 0.5, 0.8, 0.99])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 500])
def test_reference_smooth_sensitivity_is_the_same_for_every_quantile(n, alpha, neighbouring):
    """SS_β of the evenly spaced data is max_k e^{-βk} A(k) with A(k) free of α.

    Also read lazily (and mirrored, for α < 1/2) it equals the materialised array's.
    """
    materialised = (np.arange(n) + 0.5) / max(n, 1)
    direct = QuantileSmoothSensitivity(materialised, 0.0, 1.0, neighbouring, alpha=alpha)
    lazy = QuantileSmoothSensitivity(EvenlySpaced(n), 0.0, 1.0, neighbouring, alpha=alpha)
    betas = np.array([1e-3, 0.05, 0.3, 2.0])
    np.testing.assert_array_equal(lazy.log(betas), direct.log(betas))
    a_of_k = reference_a(n)
    closed_form = np.log([np.max(np.exp(-b * np.arange(n + 1)) * a_of_k) for b in betas])
    np.testing.assert_allclose(direct.log(betas), closed_form, rtol=1e-12)
    reference = reference_smooth_sensitivity(n, neighbouring)
    np.testing.assert_allclose(reference.log(betas), closed_form, rtol=1e-12)


@pytest.mark.parametrize(
    ("name", "delta", "keys"),
    [("smooth_laplace", 1e-3, ("beta", "alpha")), ("laplace_ln", 1e-3, ("beta", "alpha", "sigma"))],
)
@pytest.mark.parametrize("quantile", [0.5, 0.1, 0.9])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
def test_public_parameters_do_not_depend_on_the_data(name, delta, keys, neighbours, quantile):
    rng = np.random.default_rng(5)
    mechanism = mechanisms.make(
        name, epsilon=0.8, delta=delta, neighbours=neighbours, alpha=quantile
    )
    first = mechanism.release(rng.normal(size=301), (-10, 10))
    second = mechanism.release(rng.exponential(size=301) * 3, (-10, 10))
    other_bounds = mechanism.release(rng.uniform(size=301), (0, 1))
    for key in keys:
        assert first.parameters[key] == second.parameters[key] == other_bounds.parameters[key]
    assert first.scale != second.scale  # the scale uses SS of the real data
    assert not mechanism.guarantee.data_dependent_tuning


@pytest.mark.parametrize("name", ["smooth_laplace", "laplace_ln"])
def test_oracle_parameters_follow_the_data_and_are_flagged(name):
    rng = np.random.default_rng(6)
    mechanism = mechanisms.make(name, epsilon=0.8, delta=1e-3, tuning="oracle")
    first = mechanism.release(rng.normal(size=301), (-10, 10))
    second = mechanism.release(rng.standard_cauchy(size=301), (-10, 10))
    assert first.parameters["beta"] != second.parameters["beta"]
    assert mechanism.guarantee.data_dependent_tuning
    assert "NOT private" in str(mechanism.guarantee)


@pytest.mark.parametrize("name", ["smooth_laplace", "laplace_ln"])
def test_reference_size_fixes_the_public_parameters(name):
    rng = np.random.default_rng(7)
    fixed = mechanisms.make(name, epsilon=0.5, delta=1e-3, reference_size=1000)
    small = fixed.release(rng.normal(size=50), (-10, 10))
    large = fixed.release(rng.normal(size=2000), (-10, 10))
    same_n = mechanisms.make(name, epsilon=0.5, delta=1e-3).release(
        rng.normal(size=1000), (-10, 10)
    )
    assert small.parameters["beta"] == large.parameters["beta"] == same_n.parameters["beta"]


@pytest.mark.parametrize("name", ["smooth_laplace", "laplace_ln"])
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("tuning", "private"),
        ("reference_size", 0),
        ("reference_size", 2.5),
        ("reference_size", True),
    ],
)
def test_bad_tuning_options(name, option, value):
    with pytest.raises(ValueError, match=option):
        mechanisms.make(name, epsilon=1.0, delta=1e-3, **{option: value})


@pytest.mark.parametrize("name", ["smooth_laplace", "laplace_ln"])
def test_public_parameters_are_the_same_for_every_quantile(name):
    chosen = {
        alpha: mechanisms.make(name, epsilon=0.5, delta=1e-3, alpha=alpha)
        .release(np.linspace(-1, 1, 40), (-10, 10))
        .parameters
        for alpha in (0.05, 0.5, 0.9)
    }
    assert chosen[0.05] != chosen[0.5]  # the scale, from the data's SS
    for key in ("beta", "alpha"):
        assert chosen[0.05][key] == chosen[0.5][key] == chosen[0.9][key]
