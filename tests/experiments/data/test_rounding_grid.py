"""The rounding grid: the same draws rounded to several resolutions (atoms)."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.data.datasets import DatasetError
from experiments.data.rounded import RoundingGrid, tie_fraction


def grid(resolutions: object) -> list:
    return RoundingGrid.from_config(
        name="r", n=1000, replicates=2, resolutions=resolutions, bounds=[-10.0, 10.0]
    )


def test_the_same_draws_rounded_to_each_resolution() -> None:
    fine, coarse = grid([1e-5, 0.5])
    assert (fine.subset, coarse.subset) == ("h=1e-05", "h=0.5")
    x, y = fine.data(3, 1), coarse.data(3, 1)
    assert np.abs(x - y).max() <= 0.25 + 1e-6  # one draw, two roundings
    assert np.array_equal(y, 0.5 * np.rint(y / 0.5))
    assert tie_fraction(x) < 0.01 < 0.99 < tie_fraction(y)
    assert fine.expected_tie_fraction() < coarse.expected_tie_fraction()


@pytest.mark.parametrize("resolutions", [None, [], [0.1, 0.1], [0.0]])
def test_bad_resolutions_are_refused(resolutions: object) -> None:
    with pytest.raises(DatasetError):
        grid(resolutions)
