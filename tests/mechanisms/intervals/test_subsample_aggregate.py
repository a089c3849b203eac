"""Subsample and aggregate: the guarantee it inherits, data-independent blocks, validation,
and its (approximate, measured) coverage."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.core.guarantee import Guarantee, Neighbouring
from mechanisms.core.interface import Mechanism, Release
from mechanisms.intervals.nonprivate import order_statistic_coverage
from mechanisms.intervals.subsample_aggregate import DEFAULT_BLOCKS, SubsampleAggregate
from mechanisms.median.duff import Duff
from mechanisms.median.quantile_em import QuantileEM
from tests.mechanisms.intervals.test_support import DISTRIBUTIONS, chernoff_threshold

ALPHA = 0.05
TRIALS = 500


class BlockSizeRelease(Release):
    """Outputs the number of points it was given: the intervals then show the block sizes."""

    def __init__(self, sorted_x: np.ndarray, lower: float, upper: float) -> None:
        self.lower, self.upper, self.n, self.true_value = lower, upper, sorted_x.size, lower

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(size, float(self.n))

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        return np.asarray(np.asarray(x) >= self.n, dtype=float)


class BlockSize(Mechanism):
    name = "test_block_size"

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(epsilon=self.epsilon, delta=0.0, neighbouring=Neighbouring.ADD_REMOVE)

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return BlockSizeRelease(sorted_x, lower, upper)


class MeanOnly(BlockSize):
    name = "test_mean_only"
    statistics = frozenset({"mean"})


def test_guarantee_is_the_estimators():
    duff = SubsampleAggregate(epsilon=0.7)
    assert isinstance(duff.estimator, Duff)
    assert (duff.guarantee.epsilon, duff.guarantee.delta) == (0.7, 0.0)
    assert duff.guarantee.neighbouring is Neighbouring.ADD_REMOVE
    replace = SubsampleAggregate.wrapping(QuantileEM(epsilon=2.0, neighbours="replace_one"))
    assert replace.guarantee.neighbouring is Neighbouring.REPLACE_ONE
    assert replace.guarantee.epsilon == 2.0
    noisy = SubsampleAggregate(epsilon=1.0, delta=1e-6, estimator="smooth_laplace")
    assert noisy.guarantee.delta == 1e-6
    assert "parallel composition" in noisy.guarantee.source


def test_blocks_never_depend_on_the_values():
    """With an estimator that outputs its block's size, two datasets of the same size give
    the same intervals for the same seed: the assignment uses only ``n`` and the rng."""
    method = SubsampleAggregate.wrapping(BlockSize(epsilon=1.0), blocks=12)
    first = method.release(np.arange(300.0), (0, 1000)).sample(50, np.random.default_rng(3))
    second = method.release(np.full(300, 7.0), (0, 1000)).sample(50, np.random.default_rng(3))
    assert np.array_equal(first, second)
    assert first[:, 0].min() > 0 and first[:, 1].max() < 300  # sizes near 300/12


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match=r"^estimator"):
        SubsampleAggregate(epsilon=1.0, estimator="no_such_mechanism")
    with pytest.raises(ValueError, match=r"^estimator"):
        SubsampleAggregate(epsilon=1.0, estimator=3.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^estimator"):
        SubsampleAggregate.wrapping(MeanOnly(epsilon=1.0))
    with pytest.raises(ValueError, match=r"^epsilon"):
        SubsampleAggregate(epsilon=2.0, estimator=Duff(epsilon=1.0))
    with pytest.raises(ValueError, match=r"^blocks"):
        SubsampleAggregate(epsilon=1.0, blocks=5)  # 2^-5 > α/2: no sign-test pair
    with pytest.raises(ValueError, match=r"^blocks"):
        SubsampleAggregate(epsilon=1.0, blocks=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^delta"):
        SubsampleAggregate(epsilon=1.0, estimator="smooth_laplace")
    with pytest.raises(ValueError, match=r"^delta"):
        SubsampleAggregate(epsilon=1.0, delta=1e-6)


def test_release_contract():
    method = SubsampleAggregate(epsilon=1.0, blocks=6, alpha=0.1)
    for data in (np.array([]), np.array([5.0]), np.random.default_rng(0).normal(size=200)):
        release = method.release(data, (-1.0, 2.0))
        rows = release.sample(7, np.random.default_rng(1))
        assert rows.shape == (7, 2)
        assert np.all((rows[:, 0] >= -1.0) & (rows[:, 0] <= rows[:, 1]) & (rows[:, 1] <= 2.0))
        assert release.sample(0, np.random.default_rng(1)).shape == (0, 2)
        assert release.nominal_coverage == order_statistic_coverage(6, 1)
        with pytest.raises(NotImplementedError):
            release.coverage(0.0)


@pytest.mark.parametrize("distribution", list(DISTRIBUTIONS))
@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_measured_coverage_of_duff_blocks(distribution, n, epsilon):
    """Coverage is approximate (bias of the block estimates, module docstring); on these
    symmetric distributions with symmetric bounds, 10 Duff blocks covered 0.96-0.98 in a
    development run.  The check is the Chernoff one at ``1 − α`` over 500 intervals
    (0.875); its false-alarm rate is <= 1e-9 if the true coverage is at least ``1 − α``."""
    draw, bounds, median = DISTRIBUTIONS[distribution]
    method = SubsampleAggregate(epsilon=epsilon, alpha=ALPHA, blocks=DEFAULT_BLOCKS)
    rng = np.random.default_rng(n + int(10 * epsilon))
    hits = 0
    for _ in range(TRIALS):
        lo, hi = method.release(draw(rng, n), bounds).sample(1, rng)[0]
        hits += lo <= median <= hi
    assert hits / TRIALS >= chernoff_threshold(1 - ALPHA, TRIALS, -1)
