"""The mechanisms on the real Vertebral Column data, whose two-decimal values tie often.

Each (measurement, class) dataset of ``column_2C.dat`` with the bounds the
harness uses (the measurement's range over both classes) has zero-length gaps:
repeated values, and points equal to a bound.  These tests check, on exactly
that data, that

* the EMs (``duff``, ``quantile_em``) give every gap the probability of the
  exponential mechanism evaluated independently here (utility of the gap's
  midpoint from point counts), so ties get exactly zero mass, the gap
  probabilities sum to 1, and the cdf is continuous and non-decreasing;
* the density ratio on neighbouring datasets formed by removing or adding a
  tied value is at most ``e^ε`` (Duff paper, Definition 1; Lemma 1);
* the smooth sensitivity equals a literal quadratic evaluation of its
  definition on the tied data (:mod:`mechanisms.smooth.sensitivity`).

The data is found as the harness finds it (``$VERTEBRAL_DATA``, the cache,
``../shared/data``); the tests are skipped, never downloading, when it is absent.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

import mechanisms
from experiments.data.datasets import DatasetError, FixedDataset
from experiments.data.vertebral import VertebralColumn, locate_vertebral
from mechanisms.core.guarantee import Neighbouring
from mechanisms.median.duff import utility
from mechanisms.smooth.sensitivity import MedianSmoothSensitivity

EPSILONS = (0.1, 0.5, 2.0)
EMS = ("duff", "quantile_em")
BETAS = (1e-3, 0.01, 0.1, 1.0)


def _load() -> tuple[list[VertebralColumn], str]:
    try:
        path = locate_vertebral()
    except DatasetError as err:
        return [], f"vertebral data unavailable: {err}"
    if path is None:
        return [], (
            "vertebral data unavailable: no column_2C.dat at $VERTEBRAL_DATA, the user cache or "
            "../shared/data (these tests never download it)"
        )
    return VertebralColumn.from_config(name="vertebral", path=str(path)), ""


DATASETS, SKIP_REASON = _load()
CASES = [pytest.param(d, id=d.subset) for d in DATASETS] or [
    pytest.param(None, id="no-data", marks=pytest.mark.skip(reason=SKIP_REASON))
]


def zero_gaps(sorted_x: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """Mask of the zero-length gaps of ``[a, x_(1), ..., x_(n), b]``."""
    return np.diff(np.concatenate(([lower], sorted_x, [upper]))) == 0


def reference_log_probabilities(
    name: str, sorted_x: np.ndarray, lower: float, upper: float, epsilon: float
) -> np.ndarray:
    """Gap log probabilities of the EM, from point counts at each gap's midpoint.

    Duff: ``ε·u_d/2`` with ``u_d`` of :func:`mechanisms.median.duff.utility` (Definition 8,
    sensitivity 1).  Quantile EM at α = 1/2, add/remove: ``ε·u/(2Δu)`` with
    ``u = -|#below/2 - #above/2|`` and ``Δu = 1/2`` ("The Exponential Mechanism for
    Medians", eq. 2.2, Thm 3).
    Zero-length gaps get ``-inf``.
    """
    edges = np.concatenate(([lower], sorted_x, [upper]))
    lengths = np.diff(edges)
    positive = lengths > 0
    middle = (edges[:-1] + edges[1:])[positive] / 2
    if name == "duff":
        score = epsilon * utility(sorted_x, middle, lower) / 2
    else:
        below = np.searchsorted(sorted_x, middle, side="left")
        above = sorted_x.size - np.searchsorted(sorted_x, middle, side="right")
        score = -epsilon * np.abs(below - above) / 2
    out = np.full(lengths.size, -np.inf)
    out[positive] = score + np.log(lengths[positive])
    return out - special.logsumexp(out[positive])


def log_density(release: mechanisms.Release, points: np.ndarray) -> np.ndarray:
    """Log density of a piecewise-uniform release at points inside positive-length gaps."""
    edges = release.edges
    gap = np.searchsorted(edges, points, side="right") - 1
    return release.log_masses[gap] - np.log(edges[gap + 1] - edges[gap])


def max_log_ratio(first: mechanisms.Release, second: mechanisms.Release) -> float:
    """``max_x |log p_1(x) - log p_2(x)|`` over the common partition of ``[a, b]``."""
    edges = np.union1d(first.edges, second.edges)
    points = (edges[:-1] + edges[1:]) / 2
    return float(np.max(np.abs(log_density(first, points) - log_density(second, points))))


def tied_neighbours(values: np.ndarray, lower: float, upper: float) -> list[np.ndarray]:
    """Datasets one edit away that remove or add a copy of a tied value.

    Removes one copy of every value that occurs at least twice; adds one copy of
    every such value, of the lower median, of its two neighbours in rank, and of
    each bound (a point at ``a`` or ``b`` ties with the bound).
    """
    x = np.sort(values)
    distinct, counts = np.unique(x, return_counts=True)
    tied = distinct[counts >= 2]
    m = (x.size - 1) // 2
    added = np.unique(np.concatenate((tied, x[max(m - 1, 0) : m + 2], [lower, upper])))
    out = []
    for value in tied:
        index = int(np.searchsorted(x, value))
        out.append(np.delete(x, index))
    out += [np.sort(np.append(x, value)) for value in added]
    return out


# ----------------------------------------------------------------------- the data


@pytest.mark.parametrize("dataset", CASES)
def test_the_data_has_zero_length_gaps(dataset: FixedDataset) -> None:
    x = np.sort(dataset.values)
    assert zero_gaps(x, dataset.lower, dataset.upper).any()


def test_ties_are_common() -> None:
    if not DATASETS:
        pytest.skip(SKIP_REASON)
    repeats = sum(d.size - np.unique(d.values).size for d in DATASETS)
    assert repeats >= 50
    # Both kinds of tie at the median occur: sacral slope AB ties ranks n/2 and n/2 + 1
    # (local sensitivity 0), pelvic incidence AB ties the median with the point below it.
    sacral = np.sort(next(d for d in DATASETS if d.subset == "sacral_slope/AB").values)
    assert sacral[sacral.size // 2 - 1] == sacral[sacral.size // 2]
    pelvic = np.sort(next(d for d in DATASETS if d.subset == "pelvic_incidence/AB").values)
    m = (pelvic.size - 1) // 2
    assert pelvic[m - 1] == pelvic[m] < pelvic[m + 1]


# ------------------------------------------------------------------------ the EMs


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("name", EMS)
@pytest.mark.parametrize("dataset", CASES)
def test_em_gap_probabilities_are_exact_on_ties(
    dataset: FixedDataset, name: str, epsilon: float
) -> None:
    x = np.sort(dataset.values)
    release = mechanisms.make(name, epsilon=epsilon).release(dataset.values, dataset.bounds)
    zero = zero_gaps(x, dataset.lower, dataset.upper)
    np.testing.assert_array_equal(
        release.edges, np.concatenate(([dataset.lower], x, [dataset.upper]))
    )

    probabilities = release.probabilities
    assert np.all(probabilities[zero] == 0.0)
    assert np.all(np.isneginf(release.log_masses[zero]))
    assert np.all(probabilities[~zero] > 0.0)
    assert math.fsum(probabilities) == pytest.approx(1.0, abs=1e-12)

    expected = reference_log_probabilities(name, x, dataset.lower, dataset.upper, epsilon)
    np.testing.assert_allclose(release.log_masses[~zero], expected[~zero], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", EMS)
@pytest.mark.parametrize("dataset", CASES)
def test_em_cdf_is_continuous_and_monotone_at_ties(dataset: FixedDataset, name: str) -> None:
    a, b = dataset.bounds
    release = mechanisms.make(name, epsilon=0.5).release(dataset.values, dataset.bounds)
    edges = release.edges
    at_edges = release.cdf(edges)
    cumulative = np.concatenate(([0.0], np.cumsum(release.probabilities)))
    np.testing.assert_allclose(at_edges, cumulative, rtol=0, atol=1e-12)
    # No atom anywhere, in particular not at tied values or at a bound shared with the data.
    just_below = release.cdf(np.nextafter(edges, -np.inf))
    np.testing.assert_allclose(at_edges, just_below, rtol=0, atol=1e-12)
    assert release.cdf(np.nextafter(a, -np.inf)) == 0.0
    assert release.cdf(b) == 1.0
    grid = np.sort(
        np.concatenate(
            (
                edges,
                np.nextafter(edges, -np.inf),
                np.nextafter(edges, np.inf),
                (edges[:-1] + edges[1:]) / 2,
                np.linspace(a - 1, b + 1, 2001),
            )
        )
    )
    values = release.cdf(grid)
    # Non-decreasing up to the cdf's documented float64 error (a few 2**-53, see
    # mechanisms/sampling/piecewise.py): at a gap's right end `before + p·fraction` and the next
    # cumulative sum can differ by one rounding.  A misplaced mass would be far larger.
    assert np.all(np.diff(values) >= -(2.0**-52))
    assert values[0] == 0.0 and values[-1] == 1.0


@pytest.mark.parametrize("name", EMS)
@pytest.mark.parametrize("dataset", CASES)
def test_em_samples_follow_the_cdf(dataset: FixedDataset, name: str) -> None:
    release = mechanisms.make(name, epsilon=0.5).release(dataset.values, dataset.bounds)
    rng = np.random.default_rng(20240611)
    sample = release.sample(20_000, rng)
    assert np.all((sample >= dataset.lower) & (sample <= dataset.upper))
    assert stats.kstest(sample, release.cdf).pvalue > 1e-3


@pytest.mark.parametrize("epsilon", (0.5, 2.0))
@pytest.mark.parametrize("name", EMS)
@pytest.mark.parametrize("dataset", CASES)
def test_em_privacy_ratio_on_tied_neighbours(
    dataset: FixedDataset, name: str, epsilon: float
) -> None:
    mechanism = mechanisms.make(name, epsilon=epsilon)
    release = mechanism.release(dataset.values, dataset.bounds)
    ratios = [
        max_log_ratio(release, mechanism.release(neighbour, dataset.bounds))
        for neighbour in tied_neighbours(dataset.values, dataset.lower, dataset.upper)
    ]
    assert max(ratios) <= epsilon * (1 + 1e-12) + 1e-12
    assert max(ratios) >= epsilon / 4  # the edits do move the distribution


# ------------------------------------------------------------ smooth sensitivity


def literal_add_remove(x: np.ndarray, lower: float, upper: float, beta: float) -> float:
    """``max_k e^{-βk} A(k)``, ``A(k) = max{x_j - x_i : c(i, j) <= k}`` over all pairs.

    ``c(i, j) = (j - i - 1) + max(0, i + j - n - 1, n - i - j)`` for
    ``0 <= i < j <= n + 1`` (padding ``x_0 = a``, ``x_{n+1} = b``), as in the
    docstring of :mod:`mechanisms.smooth.sensitivity`.
    """
    n = x.size
    padded = np.concatenate(([lower], x, [upper]))
    i, j = np.triu_indices(n + 2, k=1)
    cost = (j - i - 1) + np.maximum(0, np.maximum(i + j - n - 1, n - i - j))
    gap = padded[j] - padded[i]
    a_of_k = np.array([gap[cost <= k].max(initial=0.0) for k in range(n + 1)])
    return float(np.max(np.exp(-beta * np.arange(n + 1)) * a_of_k))


def literal_replace_one(x: np.ndarray, lower: float, upper: float, beta: float) -> float:
    """NRS07 Proposition 3.4 term by term.

    ``max_k e^{-kβ} max_{0 <= t <= k+1} (x_{m+t} - x_{m+t-k-1})``, ``m = ceil(n/2)``.
    """
    n = x.size
    m = (n + 1) // 2
    padded = np.concatenate(([lower], x, [upper]))
    best = 0.0
    for k in range(n + 1):
        t = np.arange(k + 2)
        high = padded[np.clip(m + t, 0, n + 1)]
        low = padded[np.clip(m + t - k - 1, 0, n + 1)]
        best = max(best, math.exp(-beta * k) * float(np.max(high - low)))
    return best


@pytest.mark.parametrize("dataset", CASES)
def test_smooth_sensitivity_matches_literal_formula_on_ties(dataset: FixedDataset) -> None:
    x = np.sort(dataset.values)
    a, b = dataset.bounds
    add_remove = MedianSmoothSensitivity(x, a, b, Neighbouring.ADD_REMOVE)
    replace_one = MedianSmoothSensitivity(x, a, b, Neighbouring.REPLACE_ONE)
    n = x.size
    assert add_remove.local_sensitivity == x[n // 2] - x[n // 2 - 1]  # gap at q = floor(n/2)
    for beta in BETAS:
        assert add_remove(beta) == pytest.approx(literal_add_remove(x, a, b, beta), rel=1e-12)
        assert replace_one(beta) == pytest.approx(literal_replace_one(x, a, b, beta), rel=1e-12)


def test_smooth_sensitivity_is_positive_where_local_sensitivity_is_zero() -> None:
    """A tied median has local sensitivity 0, but SS_β > 0 (the ties are one edit away)."""
    if not DATASETS:
        pytest.skip(SKIP_REASON)
    zero = [
        d
        for d in DATASETS
        if MedianSmoothSensitivity(np.sort(d.values), *d.bounds).local_sensitivity == 0
    ]
    assert [d.subset for d in zero] == ["sacral_slope/AB"]
    for dataset in zero:
        x = np.sort(dataset.values)
        ss = MedianSmoothSensitivity(x, *dataset.bounds)
        for beta in BETAS:
            assert ss(beta) > 0
            assert ss(beta) == pytest.approx(
                literal_add_remove(x, *dataset.bounds, beta), rel=1e-12
            )
