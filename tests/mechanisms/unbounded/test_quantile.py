"""Durfee's unbounded quantile: exact privacy on neighbouring datasets, the release's law
against the algorithm, bounds, bad input.

Planted bugs these tests catch (each tried): the add/remove noise scale ``(1 + α)/ε``
replaced by ``1/ε`` (privacy: the loss exceeds ε); the count ``#{x < c}`` made
``#{x <= c}`` in the data but not in the cdf (law); the second invocation's lower bound not
negated (two-step law); ``accepts_infinite_bounds`` set on Mechanism (refusals).
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from scipy import stats

import mechanisms
from mechanisms.unbounded.quantile import GridRelease, TwoStepRelease, UnboundedQuantile

BOUNDS = (0.0, 6.0)
BETA = 1.5
"""A coarse grid: ``c_i = -1 + 1.5^i``, 5 candidates below 6 and the terminal 6."""


def grid_log_pmf(release: GridRelease) -> np.ndarray:
    """``log P`` of every grid index, the terminal included."""
    return release.law.log_pmf(np.arange(release.grid.end + 1))


def datasets() -> list[np.ndarray]:
    """Small datasets over the grid's cells (points between and on candidates, at ``b``)."""
    values = [0.0, 0.3, 0.5, 1.25, 2.0, 2.4, 6.0]
    out = [np.array([])]
    for size in (1, 2, 3):
        out += [np.array(v) for v in product(values, repeat=size) if list(v) == sorted(v)]
    return out


def largest_loss(neighbours: str, alpha: float, epsilon: float) -> float:
    """The largest ``|log P_S(i) - log P_S'(i)|`` over neighbouring small datasets and
    every output ``i``, from the exact pmf."""
    mechanism = UnboundedQuantile(epsilon=epsilon, alpha=alpha, beta=BETA, neighbours=neighbours)
    cache: dict[bytes, np.ndarray] = {}

    def log_pmf(x: np.ndarray) -> np.ndarray:
        key = np.sort(x).tobytes()
        if key not in cache:
            release = mechanism._release(np.sort(x), *BOUNDS)
            assert isinstance(release, GridRelease)
            cache[key] = grid_log_pmf(release)
        return cache[key]

    worst = 0.0
    values = [0.0, 0.3, 1.25, 2.4, 6.0]
    for x in datasets():
        if neighbours == "add_remove":
            others = [np.append(x, v) for v in values]
        else:
            others = [np.append(np.delete(x, j), v) for j in range(x.size) for v in values]
        for y in others:
            worst = max(worst, float(np.max(np.abs(log_pmf(x) - log_pmf(y)))))
    return worst


@pytest.mark.parametrize(
    ("neighbours", "alpha", "epsilon"),
    [("add_remove", 0.5, 1.0), ("add_remove", 0.9, 0.5), ("replace_one", 0.5, 1.0),
     ("replace_one", 0.2, 2.0)],
)  # fmt: skip
def test_exact_pmf_of_neighbours_within_e_epsilon(
    neighbours: str, alpha: float, epsilon: float
) -> None:
    loss = largest_loss(neighbours, alpha, epsilon)
    assert loss <= epsilon * (1 + 1e-9)
    assert loss > 0.3 * epsilon  # the pairs do probe the mechanism


def test_release_cdf_and_pmf_on_the_grid() -> None:
    x = np.array([0.3, 1.25, 2.0, 2.4, 5.0])
    release = UnboundedQuantile(epsilon=1.0, beta=BETA).release(x, BOUNDS)
    assert isinstance(release, GridRelease)
    values = release.grid.values(np.arange(release.grid.end + 1))
    pmf = np.exp(release.log_pmf(values))
    np.testing.assert_allclose(np.cumsum(pmf), release.cdf(values), rtol=1e-10)
    assert release.cdf(BOUNDS[1]) == 1.0 and release.cdf(-0.1) == 0.0
    assert release.log_pmf(0.2) == -np.inf  # off the grid
    draws = release.sample(200_000, np.random.default_rng(3))
    observed = np.array([np.count_nonzero(draws == v) for v in values])
    assert observed.sum() == draws.size
    assert stats.chisquare(observed, pmf * draws.size).pvalue > 1e-9


def test_two_step_law_matches_its_samples() -> None:
    """No bounds: the mixture cdf against 100 000 draws (KS, fixed seed; false alarm 1e-9
    when right: the law is discrete, so the KS statistic is a conservative test)."""
    x = np.array([-3.0, -1.0, -0.5, 0.25, 0.5, 2.0])
    release = UnboundedQuantile(epsilon=2.0, beta=1.2).release(x, (-math.inf, math.inf))
    assert isinstance(release, TwoStepRelease)
    draws = np.sort(release.sample(100_000, np.random.default_rng(5)))
    points = np.unique(draws)
    empirical = np.searchsorted(draws, points, side="right") / draws.size
    gap = float(np.max(np.abs(empirical - release.cdf(points))))
    assert gap < math.sqrt(math.log(2 / 1e-9) / (2 * draws.size))


@pytest.mark.parametrize("bounds", [(0.0, math.inf), (-math.inf, math.inf), (-math.inf, 50.0)])
def test_accurate_in_rank_on_heavy_tails(bounds: tuple[float, float]) -> None:
    """Pareto(1.5) data, n = 1000, ε = 1: mean rank error at most 15 (measured 3-5)."""
    rng = np.random.default_rng(20)
    x = np.sort(rng.pareto(1.5, 1000) + 1.0)
    draws = UnboundedQuantile(epsilon=1.0).release(x, bounds).sample(300, rng)
    ranks = np.searchsorted(x, draws, side="right")
    assert np.mean(np.abs(ranks - 500)) < 15


@pytest.mark.parametrize("name", ["duff", "quantile_em", "smooth_laplace"])
@pytest.mark.parametrize("bounds", [(0.0, math.inf), (-math.inf, 1.0), (-math.inf, math.inf)])
def test_bounded_mechanisms_still_refuse_infinite_bounds(
    name: str, bounds: tuple[float, float]
) -> None:
    cls = mechanisms.registry.get(name)
    mechanism = mechanisms.make(name, epsilon=1.0, delta=1e-6 if cls.requires_delta else None)
    with pytest.raises(ValueError, match=r"^bounds must be finite, got"):
        mechanism.release(np.array([0.5]), bounds)


@pytest.mark.parametrize(
    ("options", "argument"),
    [({"beta": 1.0}, "beta"), ({"beta": 0.5}, "beta"), ({"beta": math.nan}, "beta"),
     ({"alpha": 0.0}, "alpha"), ({"alpha": 1.0}, "alpha"), ({"epsilon": 0.0}, "epsilon"),
     ({"epsilon": -1.0}, "epsilon")],
)  # fmt: skip
def test_bad_options_name_the_argument(options: dict[str, float], argument: str) -> None:
    settings: dict[str, float] = {"epsilon": 1.0, **options}
    with pytest.raises(ValueError, match=argument):
        UnboundedQuantile(**settings)


@pytest.mark.parametrize("bounds", [(1.0, 1.0), (2.0, 1.0), (math.nan, 1.0), (math.inf, math.inf)])
def test_bad_bounds_and_data_name_the_argument(bounds: tuple[float, float]) -> None:
    mechanism = UnboundedQuantile(epsilon=1.0)
    with pytest.raises(ValueError, match="bounds"):
        mechanism.release(np.array([0.5]), bounds)
    with pytest.raises(ValueError, match="data"):
        mechanism.release(np.array([0.5, math.nan]), (0.0, math.inf))
