"""Exact privacy of the two exponential mechanisms on neighbouring datasets.

For each pair (S, S') the probability of every cell of a partition of [a, b] is
computed exactly, in log space, from the releases' gap log masses (so tails
whose probability underflows are checked too), and also from the cdf for cells
with probability above 1e-6.  ε-DP requires |log P_S(I) - log P_S'(I)| <= ε.
The partition is refined at every data point of both datasets, so inside each
cell both densities are constant and the largest cell ratio is the largest
density ratio: the check sees the exact privacy loss of the pair.
"""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.core.guarantee import Neighbouring
from mechanisms.median.duff import Duff
from mechanisms.median.quantile_em import QuantileEM
from mechanisms.sampling.piecewise import PiecewiseUniformRelease

A, B = -5.0, 5.0
EPSILONS = [1e-3, 0.1, 1.0, 5.0, 50.0]
CONFIGS = [
    ("duff", {}),
    ("quantile_em", {"alpha": 0.5}),
    ("quantile_em", {"alpha": 0.1}),
    ("quantile_em", {"alpha": 0.3}),
    ("quantile_em", {"alpha": 0.77}),
    ("quantile_em", {"alpha": 0.5, "neighbours": "replace_one"}),
    ("quantile_em", {"alpha": 0.1, "neighbours": "replace_one"}),
    ("quantile_em", {"alpha": 0.77, "neighbours": "replace_one"}),
]
CLASSES = {"duff": Duff, "quantile_em": QuantileEM}


# ------------------------------------------------------------ exact cells


def log_cell_probabilities(release: PiecewiseUniformRelease, cuts: np.ndarray) -> np.ndarray:
    """log P(cell k) for the cells [cuts[k], cuts[k+1]], summed in log space over gap pieces."""
    edges, log_masses = release.edges, release.log_masses
    points = np.union1d(edges, cuts)
    left, right = points[:-1], points[1:]  # pieces: each inside one positive-length gap
    gap = np.searchsorted(edges, left, side="right") - 1
    cell = np.searchsorted(cuts, left, side="right") - 1
    log_piece = log_masses[gap] + (np.log(right - left) - np.log(edges[gap + 1] - edges[gap]))
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    peak = np.maximum.reduceat(log_piece, starts)
    sizes = np.diff(np.r_[starts, log_piece.size])
    total = np.add.reduceat(np.exp(log_piece - np.repeat(peak, sizes)), starts)
    assert np.array_equal(cell[starts], np.arange(cuts.size - 1))
    return peak + np.log(total)


def partition(first: np.ndarray, second: np.ndarray, cells: int = 200) -> np.ndarray:
    inner = np.concatenate([np.linspace(A, B, cells + 1), first, second])
    return np.unique(inner)


def privacy_loss(release_s, release_t, cuts: np.ndarray) -> float:
    """Exact max_I |log P_S(I) - log P_S'(I)| over the cells of ``cuts``."""
    return float(
        np.max(
            np.abs(
                log_cell_probabilities(release_s, cuts) - log_cell_probabilities(release_t, cuts)
            )
        )
    )


def cdf_privacy_loss(release_s, release_t, cuts: np.ndarray, floor: float = 1e-6) -> float:
    """The same from cdf differences, on cells where both probabilities exceed ``floor``.

    (A cdf cannot resolve smaller cells: ``1 - cdf`` loses everything below ~1e-16.)
    """
    p, q = np.diff(release_s.cdf(cuts)), np.diff(release_t.cdf(cuts))
    usable = (p > floor) & (q > floor)
    return float(np.max(np.abs(np.log(p[usable]) - np.log(q[usable])), initial=0.0))


# ------------------------------------------------------------------ pairs


def datasets(rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for n in (1, 2, 3, 4, 5, 10, 31, 200, 1000):
        out.append(rng.normal(0.0, 1.5, n).clip(A, B))
        out.append(rng.integers(-5, 6, n).astype(float))  # ties, points on both bounds
        ties = rng.uniform(A, B, n)
        ties[: int(0.8 * n)] = 0.0
        out.append(ties)
    return [np.sort(x) for x in out]


def add_remove_pairs(rng: np.random.Generator):
    """(S, S') with S' = S plus or minus one point (the loss is symmetric in S, S')."""
    for v in (A, B, 0.0, 1.234):
        yield np.array([]), np.array([v])
    for x in datasets(rng):
        median = x[(x.size - 1) // 2]
        for index in (0, x.size - 1, (x.size - 1) // 2, rng.integers(x.size)):
            yield x, np.delete(x, index)
        for value in (
            A,
            B,
            median,
            np.nextafter(median, np.inf),
            np.nextafter(median, -np.inf),
            x[-1],
            rng.uniform(A, B),
        ):
            yield x, np.sort(np.append(x, value))


def replace_one_pairs(rng: np.random.Generator):
    for x in datasets(rng):
        median_index = (x.size - 1) // 2
        for index, value in (
            (0, B),
            (x.size - 1, A),
            (median_index, A),
            (median_index, B),
            (rng.integers(x.size), rng.uniform(A, B)),
        ):
            y = x.copy()
            y[index] = value
            yield x, np.sort(y)


def release(name: str, options: dict, epsilon: float, data: np.ndarray):
    return CLASSES[name](epsilon=epsilon, **options).release(data, (A, B))


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize(("name", "options"), CONFIGS)
def test_exact_privacy_on_adversarial_and_random_pairs(name, options):
    neighbouring = CLASSES[name](epsilon=1.0, **options).guarantee.neighbouring
    pairs = replace_one_pairs if neighbouring is Neighbouring.REPLACE_ONE else add_remove_pairs
    for epsilon in EPSILONS:
        worst = 0.0
        for first, second in pairs(np.random.default_rng(0)):
            assert first.size == second.size or neighbouring is Neighbouring.ADD_REMOVE
            s, t = release(name, options, epsilon, first), release(name, options, epsilon, second)
            cuts = partition(first, second)
            loss = privacy_loss(s, t, cuts)
            assert loss <= epsilon * (1 + 1e-9), (name, options, epsilon, first, second, loss)
            assert cdf_privacy_loss(s, t, cuts) <= epsilon * (1 + 1e-9)
            worst = max(worst, loss)
        # the check is not vacuous: some pair comes close to the bound
        assert worst >= 0.7 * epsilon, (name, options, epsilon, worst)


def test_log_cells_agree_with_cdf_cells():
    data = np.random.default_rng(2).normal(size=50)
    s = Duff(epsilon=0.7).release(data, (A, B))
    cuts = partition(data, data, 37)
    exact = np.exp(log_cell_probabilities(s, cuts))
    assert np.allclose(exact, np.diff(s.cdf(cuts)), rtol=0, atol=1e-14)
    assert abs(exact.sum() - 1) < 1e-12


@pytest.mark.parametrize("alpha", [0.5, 0.3])
def test_check_detects_a_wrong_sensitivity(alpha):
    """The add/remove calibration of the quantile EM (Δu = max(α, 1-α)) is not ε-DP for
    replace-one pairs, whose sensitivity is 1: the exact check must see a loss above ε."""
    epsilon = 1.0
    worst = 0.0
    for first, second in replace_one_pairs(np.random.default_rng(0)):
        options = {"alpha": alpha, "neighbours": "add_remove"}
        s, t = (
            release("quantile_em", options, epsilon, first),
            release("quantile_em", options, epsilon, second),
        )
        worst = max(worst, privacy_loss(s, t, partition(first, second)))
    assert worst > 1.2 * epsilon


def test_empty_versus_one_point_is_uniform_versus_em():
    empty = release("duff", {}, 1.0, np.array([]))
    assert np.allclose(empty.cdf([A, 0.0, B]), [0.0, 0.5, 1.0])
    one = release("duff", {}, 1.0, np.array([B]))
    # S' = {b}: the only positive gap is [a, b] with u = -1: uniform as well
    assert privacy_loss(empty, one, partition(np.array([]), np.array([B]))) == pytest.approx(
        0, abs=1e-12
    )
