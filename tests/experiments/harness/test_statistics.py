"""Statistics as an axis of the sweep: T(S), the rank error, and the pairing checks."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from experiments.harness.plan import ConfigError, build_plan
from experiments.harness.results_reader import load
from experiments.run import run
from mechanisms.core.data import sorted_bounded
from mechanisms.statistics import MEDIAN, Median, Quantile

ALPHAS = (0.05, 0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9, 0.95)
QUANTILES = {"name": "q", "_target_": "mechanisms.statistics.Quantile", "options": {"alpha": []}}


def brute_quantile(values: list[float], alpha: float, lower: float) -> float:
    """``inf{r : #{x <= r} >= α·n}`` over the data, α read as the decimal written."""
    if not values:
        return lower
    needed = Fraction(repr(alpha)) * len(values)
    return min(r for r in values if sum(x <= r for x in values) >= needed)


def brute_rank_error(values: list[float], truth: float, estimate: float) -> int:
    low, high = sorted((truth, estimate))
    return sum(low < x < high for x in values)


def tie_heavy_datasets() -> list[list[float]]:
    rng = np.random.default_rng(11)
    sets = [[], [0.0], [1.0, 1.0]]
    for n in range(1, 24):
        for _ in range(4):
            sets.append(sorted(rng.integers(0, 4, size=n).astype(float).tolist()))
    return sets


@pytest.mark.parametrize("alpha", ALPHAS)
def test_quantile_is_the_inverse_empirical_cdf(alpha: float) -> None:
    for values in tie_heavy_datasets():
        x = np.asarray(values)
        assert Quantile(alpha).value(x, -1.0, 5.0) == brute_quantile(values, alpha, -1.0)


def test_median_is_the_lower_median_and_quantile_one_half() -> None:
    for values in tie_heavy_datasets():
        x = np.asarray(values)
        expected = values[(len(values) - 1) // 2] if values else -1.0
        assert MEDIAN.value(x, -1.0, 5.0) == expected == Quantile(0.5).value(x, -1.0, 5.0)


def test_quantile_reads_alpha_as_the_decimal_written() -> None:
    """0.1·10 is exactly 1 (x_(1)), although the float 0.1 is above 1/10; 0.55·100 is 55."""
    assert Quantile(0.1).value(np.arange(10.0), 0.0, 9.0) == 0.0
    assert Quantile(0.55).value(np.arange(100.0), 0.0, 99.0) == 54.0


def rank_errors_off_by_one(sorted_x: np.ndarray, truth: float, estimates: np.ndarray):
    """A planted bug: points equal to the far end counted."""
    low, high = np.minimum(estimates, truth), np.maximum(estimates, truth)
    return np.searchsorted(sorted_x, high, "right") - np.searchsorted(sorted_x, low, "right")


def rank_error_mismatches(rank_errors) -> int:
    """Cases where ``rank_errors`` differs from the brute-force count."""
    wrong = 0
    for values in tie_heavy_datasets():
        x = np.asarray(values)
        grid = np.unique(np.concatenate([x, x + 0.5, [-1.0, 5.0]]))
        truth = Quantile(0.3).value(x, -1.0, 5.0)
        got = rank_errors(x, truth, grid)
        expected = [brute_rank_error(values, truth, float(e)) for e in grid]
        wrong += int(np.count_nonzero(np.asarray(got) != expected))
    return wrong


def test_rank_error_counts_points_strictly_between() -> None:
    assert rank_error_mismatches(Quantile(0.3).rank_errors) == 0


def test_the_rank_error_check_catches_a_planted_off_by_one() -> None:
    assert rank_error_mismatches(rank_errors_off_by_one) > 0


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, math.nan, True, "0.5"])
def test_quantile_refuses_alpha_outside_the_open_unit_interval(bad: object) -> None:
    with pytest.raises(ValueError, match="alpha must be"):
        Quantile(bad)  # type: ignore[arg-type]


def test_ids_and_mechanism_options() -> None:
    assert (MEDIAN.id, MEDIAN.mechanism_options(), Median() == MEDIAN) == ("median", {}, True)
    assert Quantile(0.1).id == "quantile(0.1)"
    assert Quantile(0.1).mechanism_options() == {"alpha": 0.1}
    assert [q.id for q in Quantile.from_config(alpha=[0.1, 0.9])] == [
        "quantile(0.1)",
        "quantile(0.9)",
    ]


# ------------------------------------------------------------------------ the sweep


def quantiles(*alphas: float) -> dict:
    return {**QUANTILES, "options": {"alpha": list(alphas)}}


def tiny(**keys: object) -> dict:
    config = {
        "seed": 5,
        "n": 15,
        "replicates": 2,
        "trials": 6,
        "epsilons": [1.0],
        "datasets": ["uniform"],
        "mechanisms": ["quantile_em"],
        "keep_estimates": True,
    }
    return {**config, **keys}


def test_a_mechanism_paired_with_a_statistic_it_does_not_support_is_refused() -> None:
    config = tiny(
        statistics=["median", quantiles(0.1)], mechanisms=["quantile_em", "laplace_global"]
    )
    with pytest.raises(ConfigError, match=r"'laplace_global' cannot estimate statistic 'quantile"):
        build_plan(config)


def test_an_option_set_by_both_the_statistic_and_the_entry_is_refused() -> None:
    entry = {"label": "q_em", "name": "quantile_em", "options": {"alpha": 0.2}}
    with pytest.raises(ConfigError, match="options alpha are set by the statistic"):
        build_plan(tiny(statistics=[quantiles(0.1)], mechanisms=[entry]))


@pytest.mark.parametrize(
    ("statistics", "message"),
    [
        (
            ["modes"],
            r"statistics: unknown statistic 'modes'; valid names: mean, median, "
            r"median_interval, mode, ",
        ),
        ([quantiles(1.5)], "statistic 'q': alpha must be a finite number > 0 and < 1"),
        (["median", {**QUANTILES, "options": {"alpha": 0.5}}, quantiles(0.5)], "duplicate"),
        ([], "statistics must not be empty"),
    ],
)
def test_statistic_config_errors(statistics: list, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_plan(tiny(statistics=statistics))


def test_the_sweep_computes_each_statistic_and_its_rank_error(tmp_path: Path) -> None:
    config = tiny(statistics=["median", quantiles(0.1, 0.9)])
    plan = build_plan(config)
    results = load(run(config, results_dir=tmp_path / "both", n_jobs=1), estimates=True)
    summary, estimates = results.summary, results.estimates["estimates"]
    assert list(summary["statistic"].unique()) == ["median", "quantile(0.1)", "quantile(0.9)"]
    alphas = {"median": 0.5, "quantile(0.1)": 0.1, "quantile(0.9)": 0.9}
    dataset = plan.datasets[0]
    for (_, row), sample in zip(summary.iterrows(), estimates, strict=True):
        data = dataset.data(5, row["replicate"])
        values = sorted_bounded(data, dataset.lower, dataset.upper, "clip").tolist()
        truth = brute_quantile(values, alphas[row["statistic"]], dataset.lower)
        assert row["true_value"] == truth
        ranks = [brute_rank_error(values, truth, float(e)) for e in sample]
        assert row["mean_rank_error"] == pytest.approx(np.mean(ranks), rel=1e-12)
    assert summary.groupby("statistic")["mean_rank_error"].mean().loc["quantile(0.1)"] > 0


def test_adding_a_statistic_leaves_the_median_numbers_unchanged(tmp_path: Path) -> None:
    alone = load(run(tiny(), results_dir=tmp_path / "alone", n_jobs=1), estimates=True)
    both = tiny(statistics=["median", quantiles(0.25)])
    mixed = load(run(both, results_dir=tmp_path / "mixed", n_jobs=1), estimates=True)
    median = (mixed.summary["statistic"] == "median").to_numpy()
    np.testing.assert_array_equal(
        alone.estimates["estimates"], mixed.estimates["estimates"][median]
    )
    quantile = mixed.estimates["estimates"][~median]
    assert not np.array_equal(quantile, alone.estimates["estimates"])  # its own noise stream
    errors = mixed.summary.loc[median, "mean_abs_error"].tolist()
    assert alone.summary["mean_abs_error"].tolist() == errors
