"""Rounded synthetic data (experiments/data/rounded.py): the draws, the grid and the ties.

A replicate is the rounding, to multiples of the resolution h, of the replicate that
:class:`SyntheticDataset` draws for the same id; its expected fraction of tied points is
``1 − Σ_k p_k (1 − p_k)^(n−1)``, checked here against a hand computation, the small-h
approximation ``(n − 1) h / (2√π)`` for N(0, 1), and the fraction measured over many
replicates.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import CONF_DIR, PROJECT_ROOT

from experiments.data.datasets import DatasetError, SyntheticDataset, build_datasets
from experiments.data.rounded import RoundedDataset, tie_fraction
from experiments.harness.conf_files import load_entry
from experiments.harness.results import read_summary

SEED = 2020
ROUNDED = "experiments.data.rounded.RoundedDataset"
SYNTHETIC = "experiments.data.datasets.SyntheticDataset"


def rounded(n: int = 1000, replicates: int = 5, **options) -> list[RoundedDataset]:
    entry = {"name": "r", "_target_": ROUNDED, "options": {"bounds": [-10, 10], **options}}
    datasets = build_datasets(entry, n=n, replicates=replicates)
    assert all(isinstance(d, RoundedDataset) for d in datasets)
    return datasets  # type: ignore[return-value]


def test_the_entry_is_n01_rounded_to_hundredths() -> None:
    (dataset,) = build_datasets(
        load_entry(CONF_DIR, "dataset", "rounded_normal"), n=50, replicates=2
    )
    assert isinstance(dataset, RoundedDataset)
    assert (dataset.distribution, dict(dataset.params)) == ("normal", {"loc": 0.0, "scale": 1.0})
    assert dataset.resolution == 0.01 and dataset.bounds == (-10.0, 10.0)
    assert dataset.describe() == {
        "kind": "rounded",
        "distribution": "normal",
        "params": {"loc": 0.0, "scale": 1.0},
        "n": 50,
        "replicates": 2,
        "bounds": [-10.0, 10.0],
        "resolution": 0.01,
    }


@pytest.mark.parametrize(
    ("distribution", "params", "resolution"),
    [("normal", {}, 0.01), ("normal", {"loc": 3.0, "scale": 2.0}, 0.5), ("lognormal", {}, 0.1)],
)
def test_a_replicate_is_the_synthetic_replicate_of_its_id_rounded(
    distribution: str, params: dict, resolution: float
) -> None:
    options = {"distribution": distribution, "params": params, "bounds": [-10, 10]}
    (synthetic,) = build_datasets(
        {"name": "r", "_target_": SYNTHETIC, "options": options}, n=300, replicates=3
    )
    (dataset,) = rounded(300, 3, **options, resolution=resolution)
    for replicate in range(3):
        x = synthetic.data(SEED, replicate)
        expected = resolution * np.rint(x / resolution)
        np.testing.assert_array_equal(dataset.data(SEED, replicate), expected)  # bit for bit
        assert np.all(np.abs(dataset.data(SEED, replicate) - x) <= resolution / 2 + 1e-12)


def test_sizes_give_one_rounded_dataset_per_size() -> None:
    datasets = rounded(sizes=[10, 200], resolution=0.25)
    assert [d.id for d in datasets] == ["r/n=10", "r/n=200"] and [d.size for d in datasets] == [
        10,
        200,
    ]
    synthetic = SyntheticDataset("r", "n=200", -10.0, 10.0, 5, "", "normal", (), 200)
    np.testing.assert_array_equal(
        datasets[1].data(SEED, 4), 0.25 * np.rint(synthetic.data(SEED, 4) / 0.25)
    )


def test_a_replicate_is_the_same_every_time_and_replicates_differ() -> None:
    (dataset,) = rounded(resolution=0.01)
    first = dataset.data(SEED, 1)
    np.testing.assert_array_equal(first, rounded(resolution=0.01)[0].data(SEED, 1))
    assert all(not np.array_equal(first, dataset.data(SEED, r)) for r in (0, 2, 3, 4))
    assert not np.array_equal(first, dataset.data(SEED + 1, 1))
    with pytest.raises(ValueError, match=r"replicate must be in \[0, 5\)"):
        dataset.data(SEED, 5)


def test_every_value_is_on_the_grid() -> None:
    (dataset,) = rounded(resolution=0.3)
    steps = dataset.data(SEED, 0) / 0.3
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)
    assert np.unique(np.round(steps)).size == np.unique(dataset.data(SEED, 0)).size


def test_tie_fraction_counts_the_points_that_share_their_value() -> None:
    assert tie_fraction(np.array([1.0, 1.0, 2.0])) == pytest.approx(2 / 3)
    assert tie_fraction(np.array([3.0, 1.0, 2.0, 1.0, 3.0, 3.0, 7.0])) == pytest.approx(5 / 7)
    assert tie_fraction(np.array([1.0, 2.0, 3.0])) == 0.0
    assert tie_fraction(np.full(4, 5.0)) == 1.0
    assert tie_fraction(np.array([])) == 0.0 and tie_fraction(np.array([2.0])) == 0.0


def test_the_expected_tie_fraction_by_hand() -> None:
    """U(0, 1) rounded to quarters: cells 0, ¼, ½, ¾, 1 with masses ⅛, ¼, ¼, ¼, ⅛."""
    for n in (2, 3, 10):
        (dataset,) = rounded(n, distribution="uniform", resolution=0.25)
        masses = np.array([1, 2, 2, 2, 1]) / 8
        expected = 1 - sum(p * (1 - p) ** (n - 1) for p in masses)
        assert dataset.expected_tie_fraction() == pytest.approx(expected, abs=1e-12)
    (single,) = rounded(1, resolution=0.5)
    assert single.expected_tie_fraction() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(("n", "resolution"), [(1000, 1e-5), (100, 1e-4), (100, 1e-5)])
def test_small_resolutions_give_about_n_h_over_two_root_pi(n: int, resolution: float) -> None:
    (dataset,) = rounded(n, resolution=resolution)
    approximation = (n - 1) * resolution / (2 * math.sqrt(math.pi))
    assert dataset.expected_tie_fraction() == pytest.approx(approximation, rel=0.01)


@pytest.mark.parametrize(
    ("n", "resolution", "replicates"),
    [(10, 0.1, 4000), (10, 1.0, 2000), (100, 0.01, 1000), (1000, 0.001, 200), (1000, 0.01, 100)],
)
def test_the_measured_tie_fraction_matches_the_formula(
    n: int, resolution: float, replicates: int
) -> None:
    (dataset,) = rounded(n, replicates, resolution=resolution)
    measured = np.array([tie_fraction(dataset.data(SEED, r)) for r in range(replicates)])
    error = measured.std(ddof=1) / math.sqrt(replicates)
    expected = dataset.expected_tie_fraction()
    assert abs(measured.mean() - expected) <= 4 * error + 1e-4, (measured.mean(), expected, error)


def test_the_ties_grow_with_the_resolution_and_n() -> None:
    by_resolution = [
        rounded(1000, resolution=h)[0].expected_tie_fraction() for h in (1e-4, 1e-3, 1e-2, 1e-1)
    ]
    by_n = [rounded(n, resolution=1e-3)[0].expected_tie_fraction() for n in (10, 100, 1000, 10_000)]
    assert by_resolution == sorted(by_resolution) and by_n == sorted(by_n)
    assert by_resolution[0] < 0.03 and by_resolution[-1] > 0.99


def test_the_population_median_is_the_law_median_rounded_and_clipped() -> None:
    assert rounded(resolution=0.01, params={"loc": 0.004})[0].population_median() == 0.0
    assert rounded(resolution=0.01, params={"loc": 0.013})[0].population_median() == pytest.approx(
        0.01
    )
    assert rounded(resolution=4.0, params={"loc": 7.0})[0].population_median() == 8.0
    entry = {"bounds": [0, 1], "distribution": "normal", "params": {"loc": 3.0}}
    assert rounded(**entry, resolution=0.5)[0].population_median() == 1.0


@pytest.mark.parametrize("resolution", [0, -0.1, float("nan"), float("inf"), "0.1", True])
def test_a_resolution_that_is_not_a_positive_number_is_refused(resolution: object) -> None:
    with pytest.raises(DatasetError, match=r"dataset 'r': resolution must be a finite number > 0"):
        rounded(resolution=resolution)


def test_too_many_cells_for_the_expected_tie_fraction_is_an_error() -> None:
    (dataset,) = rounded(distribution="standard_cauchy", resolution=1e-3)
    with pytest.raises(DatasetError, match="grid cells"):
        dataset.expected_tie_fraction()


def test_a_one_replicate_smoke_sweep_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments.run", "experiment=smoke", "replicates=1"]
    command += ["datasets=[rounded_normal]", "mechanisms=[duff,quantile_em]"]
    command += ["n_jobs=1", f"results_dir={out}"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = read_summary(out)
    assert set(summary["dataset"]) == {"rounded_normal"} and len(summary) == 2 * 2
    assert (summary["status"] == "ok").all()
