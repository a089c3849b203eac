"""The range finder before Duff: infinite bounds, outputs inside the bounds, accuracy.

Planted bug this catches (tried): the histogram threshold dropped (every noisy bin above 0
occupied), which widens the range to empty bins and fails the accuracy test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.core.guarantee import Neighbouring
from mechanisms.unbounded.range_finder import RangeFinderDuff, bin_edges


@pytest.mark.parametrize("bounds", [(0.0, math.inf), (-math.inf, math.inf), (1.0, 40.0)])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
def test_accurate_inside_the_bounds(bounds: tuple[float, float], neighbours: str) -> None:
    rng = np.random.default_rng(30)
    x = np.sort(rng.lognormal(0.0, 2.0, 1000))
    mechanism = RangeFinderDuff(epsilon=1.0, neighbours=neighbours)
    assert mechanism.guarantee.neighbouring is Neighbouring(neighbours)
    draws = mechanism.release(x, bounds).sample(200, rng)
    assert ((draws >= bounds[0]) & (draws <= bounds[1])).all()
    ranks = np.searchsorted(np.clip(x, *bounds), draws, side="right")
    assert np.mean(np.abs(ranks - 500)) < 15


def test_bins_are_powers_of_two_inside_the_bounds() -> None:
    edges = bin_edges(-3.0, math.inf)
    assert edges[0] == -3.0 and (np.diff(edges) > 0).all()
    assert {-2.0, -1.0, 1.0, 2.0, 4.0} <= set(edges.tolist())
    assert math.isfinite(edges[-1] - edges[0])


def test_bad_input_names_the_argument() -> None:
    with pytest.raises(ValueError, match="alpha"):
        RangeFinderDuff(epsilon=1.0, alpha=1.5)
    with pytest.raises(ValueError, match="epsilon"):
        RangeFinderDuff(epsilon=0.0)
    with pytest.raises(ValueError, match="data"):
        RangeFinderDuff(epsilon=1.0).release(np.array([math.nan]), (0.0, math.inf))


def test_an_empty_far_bin_almost_never_stretches_the_range() -> None:
    # Before: p = 1e-3 per release, and one range in a thousand reached 2^1020, where Duff's
    # release lands in the empty region: the reference run's mean errors reached 1e253.
    # Planted bug this catches (tried): FALSE_OCCUPIED back at 1e-3 (about 20 of these ranges).
    rng = np.random.default_rng(31)
    x = np.sort(rng.lognormal(0.0, 2.0, 1000))
    release = RangeFinderDuff(epsilon=1.0).release(x, (0.0, math.inf))
    ranges = release.ranges(20_000, rng)
    assert (ranges[:, 1] <= 2.0**20).all() and (ranges[:, 0] >= 0.0).all()
    assert ((ranges[:, 0] <= 1.0) & (ranges[:, 1] >= 1.0)).mean() > 0.999  # the median, ~1
