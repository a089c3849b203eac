"""Samples, cdfs and pmfs of the mode releases; huge and unknown domains; public inputs.

Samples are checked against the exact pmf by a chi-square test with a fixed seed (and
the same check must reject the pmf of another ε); the unseen-value mapping is checked
exhaustively against a deliberately wrong one; a domain of 10¹² values is used as is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from mechanisms.mode.count_em import CountEM
from mechanisms.mode.duff import DuffMode
from mechanisms.mode.permute_and_flip import PermuteAndFlip
from mechanisms.mode.release import DomainLevels
from mechanisms.mode.report_noisy_max import ReportNoisyMax
from mechanisms.mode.stability_histogram import StabilityHistogram
from tests.mechanisms.mode.test_mechanisms import DATASETS, TINY

DRAWS = 200_000
MECHANISMS = [
    (DuffMode, {}),
    (DuffMode, {"sampler": "racing"}),
    (CountEM, {}),
    (CountEM, {"monotone": False}),
    (PermuteAndFlip, {}),
    (PermuteAndFlip, {"monotone": False}),
    (ReportNoisyMax, {}),
    (StabilityHistogram, {"delta": 0.05}),
]


# ------------------------------------------------------------------ samples and cdfs


def chisquare_pvalue(sample: np.ndarray, support: np.ndarray, probabilities: np.ndarray) -> float:
    """Goodness of fit of ``sample`` to ``probabilities`` over ``support`` and then ⊥ (NaN).

    A draw outside the support or of probability 0 gives 0; cells expected below 5
    times are pooled.
    """
    answered = sample[~np.isnan(sample)]
    if not np.isin(answered, support).all():
        return 0.0
    observed = np.append(
        np.bincount(np.searchsorted(support, answered), minlength=support.size),
        sample.size - answered.size,
    )
    if observed[probabilities == 0].any():
        return 0.0
    expected = probabilities * sample.size
    small = expected < 5
    pooled_observed = np.append(observed[~small], observed[small].sum())
    pooled_expected = np.append(expected[~small], expected[small].sum())
    keep = pooled_expected > 0
    if keep.sum() < 2:  # one possible outcome, and it is the only one observed
        return 1.0
    pooled_expected *= pooled_observed.sum() / pooled_expected[keep].sum()  # rounding only
    return float(stats.chisquare(pooled_observed[keep], pooled_expected[keep]).pvalue)


@pytest.mark.parametrize(("cls", "options"), MECHANISMS)
@pytest.mark.parametrize("data", DATASETS[:4])
def test_samples_follow_the_pmf(cls: type, options: dict, data: list[float]) -> None:
    release = cls(epsilon=0.8, **options).release(data, TINY)
    support = np.arange(TINY[0], TINY[1] + 1.0)
    probabilities = np.append(release.pmf(support), release.refusal_probability)
    sample = release.sample(DRAWS, np.random.default_rng(7))
    assert chisquare_pvalue(sample, support, probabilities) > 1e-6
    # planted bug: the pmf of a mechanism with another ε must be rejected by the same check
    other = cls(epsilon=1.6, **options).release(data, TINY)
    wrong = np.append(other.pmf(support), other.refusal_probability)
    if not np.allclose(wrong, probabilities, atol=1e-3):
        assert chisquare_pvalue(sample, support, wrong) < 1e-6


@pytest.mark.parametrize(("cls", "options"), MECHANISMS)
def test_cdf_is_the_sum_of_the_pmf(cls: type, options: dict) -> None:
    for data in DATASETS:
        release = cls(epsilon=1.3, **options).release(data, (-2, 6))
        points = np.array([-np.inf, -3, -2, -1.5, 0, 0.5, 2, 3, 5.99, 6, 7, np.inf])
        steps = np.cumsum(release.pmf(np.arange(-2.0, 7.0)))
        expected = np.concatenate(([0, 0], steps[[0, 0, 2, 2, 4, 5, 7, 8, 8, 8]]))
        np.testing.assert_allclose(release.cdf(points), expected, atol=1e-14)
        assert release.cdf(6)[()] == pytest.approx(1 - release.refusal_probability, abs=1e-13)
        assert np.isnan(release.cdf(np.nan)) and np.isnan(release.pmf(np.nan))
        assert release.pmf(np.array([2.5, -3, 7, np.inf])).sum() == 0


def naive_unseen_values(levels: DomainLevels, ranks: np.ndarray) -> np.ndarray:
    """Planted bug: the rank among all of Y instead of among the unseen values."""
    return levels.lower + ranks


def unseen_mapping_errors(levels: DomainLevels, mapping: Callable) -> int:
    """Each rank ``r`` must give the ``r``-th unseen integer of ``[a, b]``."""
    unseen = np.setdiff1d(np.arange(levels.lower, levels.upper + 1), levels.values)
    return int(np.sum(mapping(levels, np.arange(unseen.size)) != unseen))


def real_unseen_values(levels: DomainLevels, ranks: np.ndarray) -> np.ndarray:
    class Ranks:  # replays the given ranks as the "uniform" draws
        def integers(self, low: int, high: np.ndarray) -> np.ndarray:
            return ranks

    return levels.uniform(np.full(ranks.size, levels.unseen_level), Ranks())


@pytest.mark.parametrize(
    ("mapping", "correct"), [(real_unseen_values, True), (naive_unseen_values, False)]
)
def test_unseen_values_are_drawn_by_rank(mapping: Callable, correct: bool) -> None:
    rng = np.random.default_rng(8)
    errors = 0
    for _ in range(50):
        data = np.sort(rng.integers(-10, 11, rng.integers(1, 15)).astype(float))
        errors += unseen_mapping_errors(DomainLevels(data, -10.0, 10.0), mapping)
    assert (errors == 0) == correct


@pytest.mark.parametrize(("cls", "options"), MECHANISMS)
def test_a_domain_of_a_trillion_values_costs_nothing_extra(cls: type, options: dict) -> None:
    data = np.random.default_rng(9).zipf(1.4, 3000).astype(float)
    release = cls(epsilon=0.3, **options).release(data, (1, 10**12))
    sample = release.sample(20_000, np.random.default_rng(10))
    answered = sample[~np.isnan(sample)]
    assert np.all((answered >= 1) & (answered <= 10**12) & (answered == np.floor(answered)))
    assert release.cdf(10.0**12)[()] == pytest.approx(1 - release.refusal_probability, abs=1e-12)
    assert release.pmf(answered[:100]).min() > 0
    unseen = ~np.isin(answered, release.levels.values)
    if cls is StabilityHistogram:  # never outputs a value absent from the data
        assert not unseen.any()


def test_empty_data_and_unknown_domains() -> None:
    for cls, options in MECHANISMS:
        release = cls(epsilon=1.0, **options).release([], (-7, 7))
        assert release.true_value == -7 and release.n == 0
        if cls is StabilityHistogram:
            assert (
                release.refusal_probability == 1
                and np.isnan(release.sample(5, np.random.default_rng(0))).all()
            )
        else:
            np.testing.assert_allclose(release.pmf(np.arange(-7.0, 8.0)), 1 / 15, rtol=1e-12)
    data = [3.0, 3.0, 5.0, 8.0]
    small = StabilityHistogram(epsilon=1.0, delta=1e-3).release(data, (0, 10))
    huge = StabilityHistogram(epsilon=1.0, delta=1e-3).release(data, (-(2**53), 2**53))
    points = np.array([3.0, 5.0, 8.0, 4.0])
    np.testing.assert_array_equal(small.pmf(points), huge.pmf(points))
    np.testing.assert_array_equal(
        small.sample(1000, np.random.default_rng(1)), huge.sample(1000, np.random.default_rng(1))
    )


# ------------------------------------------------------------------ public inputs


@pytest.mark.parametrize(("cls", "options"), MECHANISMS)
def test_bad_public_inputs_raise_value_errors_naming_them(cls: type, options: dict) -> None:
    mechanism = cls(epsilon=1.0, **options)
    for bounds in [(0.5, 3), (0, 2**60), (3, 3), (0, np.inf)]:
        with pytest.raises(ValueError, match="bounds"):
            mechanism.release([1.0], bounds)
    with pytest.raises(ValueError, match="epsilon"):
        cls(epsilon=0.0, **options)
    if cls in (CountEM, PermuteAndFlip):
        with pytest.raises(ValueError, match="monotone"):
            cls(epsilon=1.0, monotone="yes")
    if cls in (DuffMode, CountEM):
        with pytest.raises(ValueError, match="sampler"):
            cls(epsilon=1.0, sampler="gumbel")
    with pytest.raises(ValueError, match="delta"):
        cls(epsilon=1.0, **({} if "delta" in options else {"delta": 0.1}))


def test_extreme_epsilons_give_valid_releases() -> None:
    data = [1.0, 1.0, 2.0, 5.0]
    for cls, options in MECHANISMS:
        for epsilon in (1e-320, 1e-12, 1e12, 1e300):
            release = cls(epsilon=epsilon, **options).release(data, (0, 10**9))
            total = release.cdf(10.0**9)[()] + release.refusal_probability
            assert total == pytest.approx(1, abs=1e-12), (cls, epsilon)
            sample = release.sample(100, np.random.default_rng(0))
            answered = sample[~np.isnan(sample)]
            assert np.all((answered >= 0) & (answered <= 10**9))
