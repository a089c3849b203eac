"""The interval interface shared by every method: names, input validation from public inputs
only, the release contract (shape, order, bounds, the empty dataset), and the endpoint
distributions with their atoms at the bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.intervals import (
    APPROXIMATE,
    GUARANTEED,
    INTERVALS,
    DPOrderStatistic,
    DrechslerExpMech,
    IntervalMechanism,
    NonPrivateOrderStatistic,
    SubsampleAggregate,
)
from mechanisms.intervals.base import TARGETS, IndependentEndpoints, PointMass, ShiftedRelease
from mechanisms.intervals.buffered_em import buffered_em

PRIVATE = [DPOrderStatistic, DrechslerExpMech, SubsampleAggregate]


def make(cls: type[IntervalMechanism], **options) -> IntervalMechanism:
    if cls is NonPrivateOrderStatistic:
        return cls(**options)
    return cls(**{"epsilon": 1.0, **options})


def test_registry_and_declarations():
    assert set(INTERVALS) == {
        "nonprivate_order_statistic",
        "dp_order_statistic",
        "drechsler_expmech",
        "subsample_aggregate",
    }
    for name, cls in INTERVALS.items():
        assert cls.name == name and cls.display_name
        assert cls.target in TARGETS
        assert cls.coverage_claim == (APPROXIMATE if cls is SubsampleAggregate else GUARANTEED)
    assert math.isinf(NonPrivateOrderStatistic().guarantee.epsilon)
    for cls in (DPOrderStatistic, DrechslerExpMech):
        guarantee = cls(epsilon=0.3).guarantee
        assert (guarantee.epsilon, guarantee.delta, guarantee.kind) == (0.3, 0.0, "pure")


@pytest.mark.parametrize("cls", list(INTERVALS.values()))
def test_bad_public_inputs_raise_value_errors_naming_them(cls):
    for alpha in (0, 1, -0.1, math.nan, "0.05", True, None):
        with pytest.raises(ValueError, match=r"^alpha"):
            make(cls, alpha=alpha)
    with pytest.raises(ValueError, match=r"^delta"):
        make(cls, delta=1e-6)
    method = make(cls)
    for data in ([1.0, math.nan], [math.inf], [[1.0, 2.0]], ["a"], [True, False]):
        with pytest.raises(ValueError, match=r"^data"):
            method.release(data, (0, 1))
    for bounds in ((1, 0), (0, math.inf), "ab", (0, 1, 2)):
        with pytest.raises(ValueError, match=r"^bounds"):
            method.release([0.5], bounds)


@pytest.mark.parametrize("cls", PRIVATE)
def test_epsilon_is_required_and_positive(cls):
    for epsilon in (0, -1.0, math.nan, math.inf, None, "1"):
        with pytest.raises(ValueError, match=r"^epsilon"):
            cls(epsilon=epsilon)


def test_the_baseline_takes_no_epsilon():
    with pytest.raises(ValueError, match=r"^epsilon"):
        NonPrivateOrderStatistic(epsilon=1.0)


@pytest.mark.parametrize("cls", [DPOrderStatistic, DrechslerExpMech])
def test_granularity_is_checked(cls):
    for granularity in (0, 1, -1e-3, math.nan, "small"):
        with pytest.raises(ValueError, match=r"^granularity"):
            cls(epsilon=1.0, granularity=granularity)
    with pytest.raises(ValueError, match=r"^bounds"):
        cls(epsilon=1.0, granularity=0.9).release([0.0], (-1.7e308, 1.7e308))


@pytest.mark.parametrize("cls", list(INTERVALS.values()))
def test_release_contract_on_awkward_data(cls):
    """Any dataset (empty, ties, points outside the bounds, one value) gives intervals with
    ``a <= lo <= hi <= b``; the statistic, ``n`` and the nominal coverage are the public or
    documented ones.  No error depends on the data."""
    method = make(cls, alpha=0.1)
    rng = np.random.default_rng(0)
    for data in (
        [],
        [3.0],
        [0.0] * 50,
        [-100.0] * 20 + [100.0] * 21,
        list(rng.normal(size=300)),
    ):
        release = method.release(data, (-2.0, 2.0))
        rows = release.sample(40, np.random.default_rng(1))
        assert rows.shape == (40, 2)
        assert np.all((rows[:, 0] >= -2.0) & (rows[:, 0] <= rows[:, 1]) & (rows[:, 1] <= 2.0))
        assert release.n == len(data)
        assert release.nominal_coverage == method.nominal_coverage(len(data))
        assert release.nominal_coverage >= 0.9
    with pytest.raises(ValueError, match=r"^size"):
        release.sample(-1, np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"^rng"):
        release.sample(1, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [DPOrderStatistic, DrechslerExpMech])
def test_too_few_points_give_the_whole_range(cls):
    method = cls(epsilon=0.5)
    for n in (0, 1, 30):
        release = method.release(np.zeros(n), (0.0, 1.0))
        assert np.array_equal(release.sample(1, np.random.default_rng(0)), [[0.0, 1.0]])
        assert release.coverage(0.0) == release.coverage(1.0) == 1.0


def test_shifted_release_has_atoms_at_the_bounds():
    """``clip(Y ∓ θ, a, b)``: the lower end's cdf jumps at ``a`` by ``P(Y <= a + θ)``, the
    upper end's reaches 1 only at ``b`` (an atom ``P(Y >= b − θ)``); ``cdf_below`` excludes
    the atoms; sampling agrees."""
    data = np.array([-1.0, -0.99, -0.98, 0.99, 1.0])
    low = ShiftedRelease(buffered_em(data, -1, 1, rank=2, epsilon=1, buffer=0.2), -0.2, -1, 1)
    high = ShiftedRelease(buffered_em(data, -1, 1, rank=3, epsilon=1, buffer=0.2), 0.2, -1, 1)
    assert low.cdf_below(-1.0) == 0.0 < low.cdf(-1.0) == pytest.approx(float(low.release.cdf(-0.8)))
    assert high.cdf(1.0) == 1.0 > high.cdf_below(1.0) == pytest.approx(float(high.release.cdf(0.8)))
    assert low.cdf(-1.5) == 0.0 and high.cdf_below(1.5) == 1.0
    rng = np.random.default_rng(2)
    lows, highs = low.sample(100000, rng), high.sample(100000, rng)
    assert np.mean(lows == -1.0) == pytest.approx(low.cdf(-1.0), abs=0.01)
    assert np.mean(highs < 1.0) == pytest.approx(high.cdf_below(1.0), abs=0.01)
    assert low.cdf(-1.0) > 0.05 and high.cdf_below(1.0) < 0.95  # both atoms are visible


def test_sorting_keeps_coverage_and_is_exact():
    """Independent point masses in the wrong order: the interval is sorted, and
    ``coverage`` is the indicator of the sorted interval."""
    data = np.array([0.1, 0.9])
    release = IndependentEndpoints(data, 0.0, 1.0, (PointMass(0.8), PointMass(0.3)), 0.5)
    assert np.array_equal(release.sample(2, np.random.default_rng(0)), [[0.3, 0.8]] * 2)
    assert [release.coverage(t) for t in (0.2, 0.3, 0.5, 0.8, 0.81)] == [0, 1, 1, 1, 0]


def test_repr_names_the_options():
    assert repr(NonPrivateOrderStatistic(alpha=0.1)) == "NonPrivateOrderStatistic(alpha=0.1)"
    assert "granularity=0.01" in repr(DrechslerExpMech(epsilon=1.0, granularity=0.01))
    assert "blocks=12" in repr(SubsampleAggregate(epsilon=1.0, blocks=12))
