"""Dong, Durfee & Rogers' optimal composition of bounded-range mechanisms (Theorem 3) and the
per-level ε of ``app_ind_exp``: the log-space sum against a direct sum over the outcomes of k
generalised randomised responses, the k + 1 candidate points against a dense maximisation
over t, the bisection's ε₀ (private, tight, monotone, above basic composition), against
google-research dp_multiq's 0.01-grid search written out independently, and planted bugs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.multi import composition as comp


def grr_delta(eps: float, eps0: float, k: int, t: float) -> float:
    """Independent: δ(ε) = Σ_outcomes (P - e^ε Q)_+ for k independent two-outcome mechanisms
    with privacy losses t and t - ε₀ (P = e^t Q on the first outcome; plain floats)."""
    q1 = (math.exp(-t) - math.exp(-eps0)) / (1 - math.exp(-eps0))
    p1 = math.exp(t) * q1
    total = 0.0
    for i in range(k + 1):
        c = math.comb(k, i)
        p = c * p1 ** (k - i) * (1 - p1) ** i
        q = c * q1 ** (k - i) * (1 - q1) ** i
        total += max(p - math.exp(eps) * q, 0.0)
    return total


CASES = [
    (1.0, 0.3, 5),
    (2.0, 1.5, 2),
    (0.5, 0.2, 10),
    (1.0, 0.05, 30),
    (3.0, 2.5, 1),
    (4.0, 0.3, 25),
]


def check_sum_matches_direct(eps, eps0, k):
    ts = np.linspace(0.0, eps0, 57)
    got = comp.composed_delta_at(eps, eps0, k, ts)
    want = np.array([grr_delta(eps, eps0, k, t) for t in ts])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


def check_candidates_attain_the_maximum(eps, eps0, k):
    dense = comp.composed_delta_at(eps, eps0, k, np.linspace(0.0, eps0, 20_001)).max()
    assert comp.composed_delta(eps, eps0, k) >= dense * (1 - 1e-9)


def check_per_level_epsilon_is_private_and_tight(eps, delta, k):
    e0 = comp.per_level_epsilon(eps, delta, k)
    assert eps / k <= e0 <= eps
    assert comp.composed_delta(eps, e0, k) <= delta
    if e0 < eps:
        assert comp.composed_delta(eps, e0 * (1 + 1e-9), k) > delta


@pytest.mark.parametrize(("eps", "eps0", "k"), CASES)
def test_log_space_sum_equals_direct_sum(eps, eps0, k):
    check_sum_matches_direct(eps, eps0, k)


@pytest.mark.parametrize(("eps", "eps0", "k"), CASES)
def test_candidate_points_attain_the_maximum_over_t(eps, eps0, k):
    check_candidates_attain_the_maximum(eps, eps0, k)


@pytest.mark.parametrize(
    ("eps", "delta", "k"),
    [
        (1.0, 1e-6, 2),
        (1.0, 1e-6, 10),
        (1.0, 1e-9, 100),
        (0.1, 1e-6, 5),
        (10.0, 1e-5, 30),
        (1e3, 1e-6, 100),
    ],
)
def test_per_level_epsilon_is_private_tight_and_beats_basic_composition(eps, delta, k):
    check_per_level_epsilon_is_private_and_tight(eps, delta, k)
    assert comp.per_level_epsilon(eps, delta, k) > eps / k


def test_large_epsilon_does_not_overflow():
    assert math.isfinite(comp.composed_delta(1e4, 500.0, 50))
    assert 0.0 <= comp.composed_delta(1e4, 500.0, 50) <= 1.0


def test_degenerate_cases():
    assert comp.per_level_epsilon(2.0, 1e-6, 1) == 2.0
    assert comp.composed_delta(1.0, 0.1, 10) == 0.0  # k ε₀ <= ε: basic composition
    assert comp.composed_delta(1.0, 0.25, 4) == 0.0
    assert comp.composed_delta(1.0, 0.2, 4) == 0.0
    assert comp.per_level_epsilon(1.0, 0.999, 2) <= 1.0
    e = [comp.per_level_epsilon(1.0, d, 10) for d in (1e-12, 1e-9, 1e-6, 1e-3)]
    assert e == sorted(e)  # more δ, more ε₀
    with pytest.raises(ValueError, match="delta"):
        comp.per_level_epsilon(1.0, 0.0, 3)
    with pytest.raises(ValueError, match="epsilon"):
        comp.per_level_epsilon(-1.0, 1e-6, 3)


def dp_multiq_search(eps: float, delta: float, k: int) -> float:
    """google-research dp_multiq/ind_exp.py opt_comp_calculator, written out: ε₀ on a grid of
    step 0.01 from ε/k - 0.01, the last one whose Theorem-3 δ is at most the target."""
    best = 0.0
    for e0 in np.arange(eps / k - 0.01, eps, 0.01):
        worst = 0.0
        for ell in range(k + 1):
            t = min(max((eps + (ell + 1) * e0) / (k + 1), 0.0), e0)
            p = (math.exp(-t) - math.exp(-e0)) / (1 - math.exp(-e0))
            s = sum(
                math.comb(k, i)
                * p ** (k - i)
                * (1 - p) ** i
                * max(math.exp(k * t - i * e0) - math.exp(eps), 0)
                for i in range(k + 1)
            )
            worst = max(worst, s)
        if worst > delta:
            return best
        best = e0
    return best


@pytest.mark.parametrize(("eps", "delta", "k"), [(1.0, 1e-6, 5), (2.0, 1e-6, 10), (0.5, 1e-8, 3)])
def test_agrees_with_the_authors_grid_search(eps, delta, k):
    e0 = comp.per_level_epsilon(eps, delta, k)
    assert dp_multiq_search(eps, delta, k) <= e0 < dp_multiq_search(eps, delta, k) + 0.01


# ------------------------------------------------------------------------------ planted bugs

_orig_log_p = comp._log_p


def _swapped_log_p(eps0, t):
    a, b = _orig_log_p(eps0, t)
    return b, a


def _upper_end(eps, delta, k):  # bisection returning the failing end
    lo, hi = eps / k, eps
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if comp.composed_delta(eps, mid, k) <= delta:
            lo = mid
        else:
            hi = mid
    return hi


BUGS = {
    "p and 1 - p swapped": ("_log_p", _swapped_log_p),
    "candidates off by one": (
        "candidate_ts",
        lambda eps, eps0, k: np.clip((eps + np.arange(k + 1.0) * eps0) / (k + 2.0), 0, eps0),
    ),
    "bisection keeps the failing end": ("per_level_epsilon", _upper_end),
}
CAUGHT_BY = [
    ("p and 1 - p swapped", lambda: check_sum_matches_direct(1.0, 0.3, 5)),
    ("candidates off by one", lambda: check_candidates_attain_the_maximum(1.0, 0.3, 5)),
    (
        "bisection keeps the failing end",
        lambda: check_per_level_epsilon_is_private_and_tight(1.0, 1e-6, 10),
    ),
]


@pytest.mark.parametrize(("bug", "check"), CAUGHT_BY, ids=[b for b, _ in CAUGHT_BY])
def test_planted_bug_is_caught(bug, check, monkeypatch):
    check()
    name, replacement = BUGS[bug]
    monkeypatch.setattr(comp, name, replacement)
    with pytest.raises(AssertionError):
        check()


def test_every_planted_bug_is_exercised():
    assert {b for b, _ in CAUGHT_BY} == set(BUGS)
