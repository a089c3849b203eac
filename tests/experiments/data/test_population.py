"""The population parameters θ of the synthetic and Zipf datasets: against scipy, by hand,
and against a large sample of the dataset itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from experiments.data.datasets import FixedDataset, SyntheticDataset
from experiments.data.rounded import RoundedDataset
from experiments.data.zipf import ZipfDataset
from mechanisms.core.data import lower_median, sorted_bounded
from mechanisms.statistics import MEDIAN, Mean, Mode, Quantile

LAWS = {
    "normal": ("normal", {"loc": 0.0, "scale": 1.0}, [-10.0, 10.0], stats.norm()),
    "uniform": ("uniform", {"low": 0.0, "high": 1.0}, [0.0, 1.0], stats.uniform()),
    "beta": ("beta", {"a": 0.5, "b": 0.5}, [0.0, 1.0], stats.beta(0.5, 0.5)),
}


def synthetic(key: str, n: int = 1000, bounds: list[float] | None = None) -> SyntheticDataset:
    distribution, params, default, _ = LAWS[key]
    (dataset,) = SyntheticDataset.from_config(
        name=key,
        n=n,
        replicates=1,
        bounds=bounds or default,
        distribution=distribution,
        params=params,
    )
    assert isinstance(dataset, SyntheticDataset)
    return dataset


@pytest.mark.parametrize("key", sorted(LAWS))
def test_against_scipy(key: str) -> None:
    dataset, law = synthetic(key), LAWS[key][3]
    assert dataset.population_value(MEDIAN) == pytest.approx(law.median(), abs=1e-12)
    assert dataset.population_value(MEDIAN) == dataset.population_median()
    assert dataset.population_value(Quantile(0.1)) == pytest.approx(law.ppf(0.1), abs=1e-12)
    assert dataset.population_value(Mean()) == pytest.approx(law.mean(), abs=1e-9)
    assert dataset.population_value(Mode()) is None  # a continuous law: no mode here


@pytest.mark.parametrize("key", sorted(LAWS))
def test_against_a_large_sample(key: str) -> None:
    """T(S) of 10⁶ draws of the dataset is within 5 standard errors of θ."""
    dataset = synthetic(key, n=1_000_000)
    data = sorted_bounded(dataset.data(7, 0), dataset.lower, dataset.upper, "clip")
    law = LAWS[key][3]
    for statistic, value, se in (
        (MEDIAN, lower_median(data, dataset.lower), 0.5 / law.pdf(law.median())),
        (Quantile(0.1), float(data[math.ceil(0.1 * data.size) - 1]), 0.3 / law.pdf(law.ppf(0.1))),
        (Mean(), float(data.mean()), float(law.std())),
    ):
        theta = dataset.population_value(statistic)
        assert abs(value - theta) < 5 * se / math.sqrt(data.size), (statistic, value, theta)


def test_clipping_moves_theta_as_the_harness_clips_the_data() -> None:
    """N(0, 1) clipped to [0, 5]: median 0, 0.1-quantile 0, mean E[max(X, 0)] = 1/√(2π)
    (less the tiny mass above 5)."""
    dataset = synthetic("normal", bounds=[0.0, 5.0])
    assert dataset.population_value(MEDIAN) == 0.0
    assert dataset.population_value(Quantile(0.1)) == 0.0
    by_hand = 1 / math.sqrt(2 * math.pi) - stats.norm.expect(lambda x: x - 5, lb=5)
    assert dataset.population_value(Mean()) == pytest.approx(by_hand, abs=1e-10)
    sample = np.clip(np.random.default_rng(1).standard_normal(1_000_000), 0.0, 5.0)
    assert abs(sample.mean() - dataset.population_value(Mean())) < 5 * 0.6 / 1000
    # dropping the points outside [0, 5] is another θ: refused (None), not the clipped one
    assert dataset.population_value(MEDIAN, "drop") is None
    assert synthetic("normal").population_value(MEDIAN, "drop") == 0.0  # mass outside: 1e-23


def test_zipf_mode_median_and_mean() -> None:
    (dataset,) = ZipfDataset.from_config(name="z", n=1000, replicates=1, exponent=1.0, support=10)
    weights = 1.0 / np.arange(1, 11)
    p = weights / weights.sum()
    assert dataset.population_value(Mode()) == 1.0
    assert dataset.population_value(MEDIAN) == float(np.argmax(np.cumsum(p) >= 0.5) + 1)
    assert dataset.population_value(Mean()) == pytest.approx(float(np.arange(1, 11) @ p))
    sample = np.sort(ZipfDataset(**{**dataset.__dict__, "n": 200_000}).data(3, 0))
    assert lower_median(sample, 1.0) == dataset.population_value(MEDIAN)


def test_no_law_no_theta() -> None:
    """Real data (a fixed sample of an unknown population) and the non-median statistics of
    rounded data (not the law's draws) have no θ."""
    real = FixedDataset.of_values("r", "", np.arange(5.0), (0.0, 10.0), "test")
    assert real.population_value(MEDIAN) is None
    (rounded,) = RoundedDataset.from_config(
        name="n", n=100, replicates=1, bounds=[-10.0, 10.0], resolution=0.5
    )
    assert rounded.population_value(MEDIAN) == rounded.population_median()
    assert rounded.population_value(Mean()) is None
