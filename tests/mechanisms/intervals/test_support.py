"""Shared tools of the interval tests (statistical thresholds, exact privacy loss, coverage
over datasets), and the tests of those tools.

Statistical assertions use Chernoff's bound with the Bernoulli moment generating
function, ``P(mean <= x) <= exp(−N·KL(x || p))`` for the mean of ``N`` independent
variables in ``[0, 1]`` with mean ``p`` (Hoeffding: the Bernoulli variable has the
largest mgf among them), so a threshold at ``exp(−N·KL) = 1e-9`` has a false-alarm
rate at most 1e-9 whatever the variables' law (exact conditional coverages or
hit indicators).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from mechanisms.intervals.base import IntervalMechanism
from mechanisms.sampling.piecewise import PiecewiseUniformRelease

FALSE_ALARM = 1e-9
DISTRIBUTIONS: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], tuple, float]] = {
    "normal": (lambda rng, n: rng.normal(size=n), (-10.0, 10.0), 0.0),
    "uniform": (lambda rng, n: rng.uniform(size=n), (0.0, 1.0), 0.5),
}
"""name -> (sampler, bounds, population median)."""


def kl_bernoulli(x: float, p: float) -> float:
    """``KL(Bernoulli(x) || Bernoulli(p))``."""
    total = 0.0
    for mine, theirs in ((x, p), (1.0 - x, 1.0 - p)):
        if mine > 0.0:
            total += mine * math.log(mine / theirs)
    return total


def chernoff_threshold(p: float, trials: int, side: int = -1, delta: float = FALSE_ALARM) -> float:
    """The level ``x`` beyond which (below for ``side = −1``, above for ``+1``) the mean of
    ``trials`` variables in ``[0, 1]`` with mean ``p`` falls with probability ``<= delta``
    (``p`` itself when ``p`` is 0 or 1: the mean is then ``p`` surely)."""
    if not 0.0 < p < 1.0:
        return p
    target = math.log(1.0 / delta) / trials
    near, far = p, (0.0 if side < 0 else 1.0)
    if kl_bernoulli(far, p) <= target:
        return far
    for _ in range(200):
        middle = 0.5 * (near + far)
        if kl_bernoulli(middle, p) < target:
            near = middle
        else:
            far = middle
    return far


def mean_exact_coverage(
    method: IntervalMechanism, distribution: str, n: int, trials: int, seed: int
) -> float:
    """The coverage of the population median: ``release.coverage(median)`` averaged over
    ``trials`` datasets of ``n`` points."""
    draw, bounds, median = DISTRIBUTIONS[distribution]
    rng = np.random.default_rng(seed)
    return float(
        np.mean([method.release(draw(rng, n), bounds).coverage(median) for _ in range(trials)])
    )


def log_cell_probabilities(release: PiecewiseUniformRelease, cuts: np.ndarray) -> np.ndarray:
    """``log P(cell)`` for the cells ``[cuts[k], cuts[k+1]]``, in log space from the gap log
    masses (exact in the tails), summed over the pieces of each cell."""
    edges, log_masses = release.edges, release.log_masses
    points = np.union1d(edges, cuts)
    left, right = points[:-1], points[1:]
    gap = np.searchsorted(edges, left, side="right") - 1
    cell = np.searchsorted(cuts, left, side="right") - 1
    positive = right > left
    gap, cell, left, right = gap[positive], cell[positive], left[positive], right[positive]
    log_piece = log_masses[gap] + np.log(right - left) - np.log(edges[gap + 1] - edges[gap])
    out = np.full(cuts.size - 1, -np.inf)
    for index in np.unique(cell):
        pieces = log_piece[cell == index]
        peak = pieces.max()
        if np.isfinite(peak):
            out[index] = peak + math.log(np.exp(pieces - peak).sum())
    return out


def privacy_loss(first: PiecewiseUniformRelease, second: PiecewiseUniformRelease) -> float:
    """The exact privacy loss ``max_I |log P(I) − log P'(I)|`` of two piecewise-uniform
    releases on the same range: the cells are the common refinement of both releases'
    gaps, inside which both densities are constant, so the largest cell ratio is the
    largest density ratio."""
    cuts = np.union1d(first.edges, second.edges)
    p, q = log_cell_probabilities(first, cuts), log_cell_probabilities(second, cuts)
    assert np.array_equal(np.isfinite(p), np.isfinite(q))  # same support
    finite = np.isfinite(p)
    return float(np.max(np.abs(p[finite] - q[finite])))


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize(("p", "trials"), [(0.95, 1000), (0.95, 400), (0.5, 2000), (0.99, 5000)])
def test_chernoff_thresholds_bound_the_exact_binomial_tails(p, trials):
    low, high = chernoff_threshold(p, trials, -1), chernoff_threshold(p, trials, +1)
    assert low < p < high or high == 1.0
    # for Bernoulli variables (the worst case) the exact tails are below 1e-9
    assert stats.binom.cdf(math.ceil(low * trials) - 1, trials, p) <= FALSE_ALARM
    assert stats.binom.sf(math.floor(high * trials), trials, p) <= FALSE_ALARM
    # and the threshold is not needlessly loose: 1e-6 is reached within 40% of the distance
    assert stats.binom.cdf(math.floor((p - 0.6 * (p - low)) * trials), trials, p) > 1e-6


def test_privacy_loss_sees_a_known_ratio():
    """Two uniform-on-two-gaps releases whose gap weights differ by e^0.3 on one gap."""
    x = np.array([0.0])

    def release(score: float) -> PiecewiseUniformRelease:
        return PiecewiseUniformRelease(
            x, -1.0, 1.0, lambda gaps: np.where(gaps == 0, score, 0.0), mode=1
        )

    # (1/2, 1/2) against (e^-0.3, 1)/(1 + e^-0.3): the loss is on the first gap
    expected = 0.3 + math.log((1 + math.exp(-0.3)) / 2)
    assert privacy_loss(release(0.0), release(-0.3)) == pytest.approx(expected, rel=1e-12)
