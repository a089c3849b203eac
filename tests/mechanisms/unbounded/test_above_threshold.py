"""The AboveThreshold law: its quadrature against SciPy's adaptive quadrature, and its
sampler against its pmf.

Planted bugs these tests catch (each tried): the query noise's survival ``F̄`` replaced by
the cdf ``F`` in the pmf; the run's multiplicity off by one (``inside + 1``); the sampler's
geometric count drawn with ``ceil`` instead of ``floor``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from mechanisms.unbounded.above_threshold import AboveThreshold

LAW = AboveThreshold(np.array([0, 2, 3, 6]), np.array([0.0, 1.0, 3.0, 4.0]), 8, 2.0, 1.5)
"""Runs of counts 0, 1, 3, 4 over indices [0, 2), [2, 3), [3, 6), [6, 8); T = 2; b = 1.5."""


def counts_of(law: AboveThreshold) -> np.ndarray:
    """The count of each index ``0 .. K - 1``."""
    return np.repeat(law.counts, law.lengths)


def reference_pmf(law: AboveThreshold, k: int) -> float:
    """``P(stop at k)`` by ``scipy.integrate.quad`` of the module's integral, split at the
    kinks (an independent implementation)."""
    b, q = law.scale, counts_of(law)
    lap = stats.laplace(scale=b)

    def integrand(tau: float) -> float:
        value = lap.pdf(tau - law.threshold) * float(np.prod(lap.cdf(tau - q[:k])))
        return value * (lap.sf(tau - q[k]) if k < law.end else 1.0)

    kinks = sorted({*q.tolist(), law.threshold})
    edges = [kinks[0] - 60 * b, *kinks, kinks[-1] + 60 * b]
    return sum(
        integrate.quad(integrand, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)[0]
        for lo, hi in itertools.pairwise(edges)
    )


def test_pmf_matches_adaptive_quadrature() -> None:
    index = np.arange(LAW.end + 1)
    pmf = np.exp(LAW.log_pmf(index))
    reference = np.array([reference_pmf(LAW, int(k)) for k in index])
    np.testing.assert_allclose(pmf, reference, rtol=1e-9)
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)


def test_cdf_and_survival_agree_with_the_pmf() -> None:
    index = np.arange(LAW.end)
    pmf = np.exp(LAW.log_pmf(np.arange(LAW.end + 1)))
    np.testing.assert_allclose(LAW.cdf(index), np.cumsum(pmf)[:-1], rtol=1e-11, atol=1e-15)
    survival = np.exp(LAW.log_survival(np.arange(LAW.end + 1)))
    np.testing.assert_allclose(survival, pmf[::-1].cumsum()[::-1], rtol=1e-11)


def test_sampler_follows_the_pmf() -> None:
    """Chi-square of 400 000 draws (fixed seed) against the exact pmf: a false alarm has
    probability 1e-9 when both are right."""
    draws = LAW.sample(400_000, np.random.default_rng(7))
    observed = np.bincount(draws, minlength=LAW.end + 1)
    expected = np.exp(LAW.log_pmf(np.arange(LAW.end + 1))) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-9


def test_the_sampler_is_the_algorithm() -> None:
    """The run-wise geometric sampler against the literal loop over indices (Monte Carlo of
    AboveThreshold itself), two-sample chi-square, false alarm 1e-9."""
    rng = np.random.default_rng(11)
    size, b = 200_000, LAW.scale
    tau = LAW.threshold + rng.laplace(0.0, b, size)
    noisy = counts_of(LAW)[None, :] + rng.laplace(0.0, b, (size, LAW.end))
    above = noisy >= tau[:, None]
    literal = np.where(above.any(axis=1), above.argmax(axis=1), LAW.end)
    runs = LAW.sample(size, np.random.default_rng(12))
    table = np.array([np.bincount(d, minlength=LAW.end + 1) for d in (literal, runs)])
    assert stats.chi2_contingency(table).pvalue > 1e-9


@pytest.mark.parametrize("end", [0, 1])
def test_degenerate_grids(end: int) -> None:
    law = AboveThreshold(np.array([0]), np.array([0.0]), end, 0.0, 1.0)
    pmf = np.exp(law.log_pmf(np.arange(end + 1)))
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)
    assert (law.sample(50, np.random.default_rng(0)) <= end).all()
