"""The bounds grid: the same draws under every pair of bounds [c − R, c + R]."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.data.bounds_grid import BoundsGrid, subset_name
from experiments.data.datasets import DatasetError, SyntheticDataset


def grid(**options: object) -> list:
    defaults = {"distribution": "normal", "params": {"loc": 0.0, "scale": 1.0}}
    return BoundsGrid.from_config(name="g", n=50, replicates=3, **{**defaults, **options})


def test_one_dataset_per_width_and_centre_with_the_same_draws() -> None:
    datasets = grid(half_widths=[1.0, 100.0], centres=[0.0, 5.0])
    assert [d.subset for d in datasets] == [
        subset_name(1.0, 0.0), subset_name(1.0, 5.0), subset_name(100.0, 0.0),
        subset_name(100.0, 5.0),
    ]  # fmt: skip
    assert [d.bounds for d in datasets] == [(-1, 1), (4, 6), (-100, 100), (-95, 105)]
    for replicate in range(3):
        draws = [d.data(7, replicate) for d in datasets]
        assert all(np.array_equal(draws[0], other) for other in draws[1:])
    assert not np.array_equal(datasets[0].data(7, 0), datasets[0].data(7, 1))
    # the draws of the plain synthetic dataset of the same name (the grid's seed key)
    (plain,) = SyntheticDataset.from_config(
        name="g", n=50, replicates=3, bounds=[-1, 1], params={"loc": 0.0, "scale": 1.0}
    )
    assert np.array_equal(plain.data(7, 2), datasets[3].data(7, 2))
    assert len({str(d.describe()) for d in datasets}) == 4  # each its own config hash


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"half_widths": []}, "half_widths must be a non-empty list"),
        ({"half_widths": [1.0, -2.0]}, "half_widths must be > 0"),
        ({"half_widths": [1.0, 1.0]}, "repeats"),
        ({"half_widths": [1.0], "centres": "0"}, "centres must be a non-empty list"),
        ({"half_widths": [1.0], "bounds": [0, 1]}, "not bounds"),
        ({"half_widths": [1e308], "centres": [1e308]}, "overflow"),
    ],
)
def test_bad_grids_are_refused_naming_the_option(options: dict, match: str) -> None:
    with pytest.raises(DatasetError, match=match):
        grid(**options)
