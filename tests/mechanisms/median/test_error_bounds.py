"""Tests of mechanisms/median/error_bounds.py and of its coverage on a run (``duff-plot bounds``,
:mod:`experiments.reports.bounds_coverage`).

The strong checks use the releases' exact cdf: for a bound to be a (1 − η)
bound, P(quantity > bound) <= η must hold exactly on every dataset.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import mechanisms
from experiments.reports import bounds_coverage, cli
from experiments.run import run
from mechanisms.core import bound_checks
from mechanisms.core import bounds as core_bounds
from mechanisms.core.guarantee import Neighbouring
from mechanisms.median import error_bounds as theory
from mechanisms.smooth.sensitivity import MedianSmoothSensitivity

BOUNDS = (0.0, 1.0)


def _data(seed: int, n: int, ties: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.beta(0.7, 1.3, n)
    if ties:  # repeated values and points on the bounds
        x = np.round(x * 8) / 8
    return x


def _sorted(x: np.ndarray) -> np.ndarray:
    return np.sort(np.clip(x, *BOUNDS))


# ------------------------------------------------------------- formulas


@pytest.mark.parametrize("log_z", [-30.0, -1.0, 0.0, 1.0, 10.0, 699.0, 701.0, 5000.0, 1e6])
def test_lambert_w_identity(log_z: float) -> None:
    w = theory.lambert_w_exp(log_z)
    assert w + math.log(w) == pytest.approx(log_z, rel=1e-13, abs=1e-13)  # w e^w = z
    if log_z < 700:
        assert w * math.exp(w) == pytest.approx(math.exp(log_z), rel=1e-12)
        assert w == pytest.approx(special.lambertw(math.exp(log_z)).real, rel=1e-14)


def _em_level_brute(levels, lengths, rate, span, eta, factor) -> float:
    """The first point of a fine grid where the condition holds (λ as an exact step function)."""
    grid = np.linspace(0, levels.max() + 60 / rate, 400_001)
    values = np.unique(levels)
    measure = np.array([lengths[levels <= v].sum() for v in values])
    steps = np.searchsorted(values, grid, side="right") - 1
    exact = np.where(steps >= 0, measure[np.maximum(steps, 0)], 0.0)
    ok = factor * span * np.exp(-rate * grid) <= eta * exact
    return float(grid[np.argmax(ok)])


@pytest.mark.parametrize("seed", range(4))
def test_em_level_is_the_smallest_valid_level(seed: int) -> None:
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 12, 30).astype(float)
    lengths = rng.exponential(1.0, 30) * (rng.random(30) > 0.2)
    span, rate, eta, factor = lengths.sum(), rng.uniform(0.3, 2), 0.1, 2.0
    h = theory.em_level(levels, lengths, rate=rate, span=span, eta=eta, factor=factor)
    assert factor * span * math.exp(-rate * h) <= eta * theory.level_measure(levels, lengths, h) * (
        1 + 1e-12
    )
    step = (levels.max() + 60 / rate) / 400_000
    assert h == pytest.approx(_em_level_brute(levels, lengths, rate, span, eta, factor), abs=step)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 2.0])
@pytest.mark.parametrize("ties", [False, True])
def test_duff_constant_from_data_is_the_largest_valid_c(epsilon: float, ties: bool) -> None:
    x = _sorted(_data(3, 301, ties))
    bound = theory.duff_bound(x, *BOUNDS, epsilon=epsilon, eta=0.05)
    d = bound.details
    # Lambert W identity: W(ε(b − a)/(Cη)) = εγ/2, and eq. 3 = (e − 1) SS_β / β.
    assert d["W"] == pytest.approx(epsilon * d["gamma"] / 2, rel=1e-10)
    assert d["beta"] == pytest.approx(1 / (2 * d["gamma"]), rel=1e-12)
    ss = MedianSmoothSensitivity(x, *BOUNDS, Neighbouring.ADD_REMOVE)
    assert d["ss"] == pytest.approx(float(ss(d["beta"])), rel=1e-12)
    assert bound.value == pytest.approx((math.e - 1) * d["ss"] / d["beta"], rel=1e-10)
    # The corollary's assumption holds at γ (Theorem 1's right-hand side <= η) ...
    assert d["level_measure"] >= d["C"] * d["gamma"] * (1 - 1e-9)
    # ... and fails for a slightly larger C (so C is the largest such constant).
    bigger = theory.corollary1(ss, epsilon=epsilon, span=1.0, c=d["C"] * 1.01, eta=0.05)
    levels = theory.duff_levels(x.size)
    lengths = theory.gap_lengths(x, *BOUNDS)
    assert theory.level_measure(levels, lengths, bigger["gamma"]) < d["C"] * 1.01 * bigger["gamma"]


def test_paper_constant_and_its_assumption() -> None:
    # Evenly spaced points: λ(H_t) ≈ t(b − a)/(n + 1), half the paper's C = 2(b − a)/n.
    n = 999
    x = np.linspace(0, 1, n + 2)[1:-1]
    paper = theory.duff_bound_paper_c(x, *BOUNDS, epsilon=1.0, eta=0.05)
    assert paper.details["C"] == pytest.approx(2 / n)
    assert not paper.details["assumption_holds"]
    data_c = theory.duff_bound(x, *BOUNDS, epsilon=1.0, eta=0.05).details["C"]
    assert data_c == pytest.approx(1 / (n + 1), rel=0.15)
    # the printed formula, evaluated by hand
    w = special.lambertw(1.0 * 1.0 / (2 / n * 0.05)).real
    ss = MedianSmoothSensitivity(x, *BOUNDS)(1.0 / (4 * w))
    assert paper.value == pytest.approx(4 * (math.e - 1) * ss / 1.0 * w, rel=1e-12)


def test_duff_level_rate_matches_the_mechanism_density() -> None:
    """Theorem 1 uses density ∝ exp(−ε·K/2) with K = −u_d: check it on the release."""
    x = _sorted(_data(5, 40, False))
    epsilon = 0.8
    release = mechanisms.make("duff", epsilon=epsilon).release(x, BOUNDS)
    lengths = theory.gap_lengths(x, *BOUNDS)
    log_density = release.log_masses - np.log(lengths)
    levels = theory.duff_levels(x.size)
    slope = np.polyfit(levels, log_density, 1)[0]
    assert slope == pytest.approx(-epsilon / 2, rel=1e-9)


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("alpha", [0.5, 0.3])
def test_quantile_em_rate_matches_the_mechanism_density(neighbours: str, alpha: float) -> None:
    x = _sorted(_data(6, 41, False))
    epsilon = 0.8
    release = mechanisms.make(
        "quantile_em", epsilon=epsilon, alpha=alpha, neighbours=neighbours
    ).release(x, BOUNDS)
    bound = theory.quantile_em_bound(
        x, *BOUNDS, epsilon=epsilon, alpha=alpha, neighbouring=Neighbouring(neighbours)
    )
    expected = epsilon if neighbours == "add_remove" and alpha == 0.5 else None
    if neighbours == "replace_one":
        expected = epsilon / 2
    if expected is not None:
        assert bound.details["rate"] == pytest.approx(expected)
    log_density = release.log_masses - np.log(theory.gap_lengths(x, *BOUNDS))
    rank = np.abs(np.arange(x.size + 1) - alpha * x.size)
    slope = np.polyfit(rank, log_density, 1)[0]
    assert slope == pytest.approx(-bound.details["rate"], rel=1e-9)


def test_rank_error_and_window_agree() -> None:
    x = _sorted(_data(7, 50, True))
    y = np.random.default_rng(8).uniform(*BOUNDS, 5000)
    for alpha in (0.5, 0.3):
        errors = theory.rank_error(x, y, alpha)
        brute = np.abs((x[None, :] <= y[:, None]).sum(axis=1) - alpha * x.size)
        np.testing.assert_allclose(errors, brute, atol=1e-12)
        for k in (0.0, 0.5, 1.0, 2.7, 7.0, 60.0):
            lo, hi = bound_checks.rank_window(x.size, alpha, k)
            left = bound_checks.order_statistic(x, lo, *BOUNDS)
            inside = (y >= left) & ((y < x[hi - 1]) if hi <= x.size else (y <= BOUNDS[1]))
            np.testing.assert_array_equal(inside, errors <= k)


def test_smooth_cauchy_bound_is_the_exact_quantile_without_clipping() -> None:
    x = _sorted(_data(9, 200, False))
    for epsilon, eta in [(0.5, 0.05), (2.0, 0.2), (1.0, 0.5)]:
        mechanism = mechanisms.make("smooth_cauchy", epsilon=epsilon, clip_output=False)
        release = mechanism.release(x, BOUNDS)
        bound = theory.smooth_cauchy_bound(x, *BOUNDS, epsilon=epsilon, eta=eta)
        assert bound.value == pytest.approx(release.scale * math.tan(math.pi * (1 - eta) / 2))
        assert bound_checks.exact_coverage(release, bound) == pytest.approx(1 - eta, abs=1e-12)
        halved = dataclasses.replace(bound, value=bound.value / 2)
        assert bound_checks.exact_coverage(release, halved) < 1 - eta - 0.01


# ------------------------------------------------ exact coverage, every mechanism

MECHANISMS = [
    ("duff", {}),
    ("smooth_cauchy", {}),
    ("smooth_cauchy", {"neighbours": "replace_one"}),
    ("smooth_cauchy", {"alpha": 0.1}),
    ("smooth_cauchy", {"alpha": 0.9, "neighbours": "replace_one"}),
    ("quantile_em", {}),
    ("quantile_em", {"neighbours": "replace_one"}),
    ("quantile_em", {"alpha": 0.3}),
]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    ties=st.booleans(),
    epsilon=st.sampled_from([0.05, 0.3, 1.0, 3.0, 10.0]),
    eta=st.sampled_from([0.01, 0.05, 0.2, 0.5]),
    which=st.integers(0, len(MECHANISMS) - 1),
)
def test_exact_failure_probability_is_at_most_eta(
    seed: int, n: int, ties: bool, epsilon: float, eta: float, which: int
) -> None:
    name, options = MECHANISMS[which]
    mechanism = mechanisms.make(name, epsilon=epsilon, **options)
    x = _data(seed, n, ties)
    release = mechanism.release(x, BOUNDS)
    sorted_x = _sorted(x)
    for bound in bound_checks.mechanism_bounds(mechanism, x, BOUNDS, eta):
        if bound.name == "corollary1_paper_c" and not bound.details["assumption_holds"]:
            continue  # the corollary does not apply
        assert bound_checks.exact_coverage(release, bound, sorted_x) >= 1 - eta - 1e-9
        # the data-unit conversion is implied by the bounded quantity
        abs_bound = dataclasses.replace(
            bound, quantity=core_bounds.ABS_ERROR, value=bound.abs_error
        )
        assert bound_checks.exact_coverage(release, abs_bound) >= 1 - eta - 1e-9


@pytest.mark.parametrize("alpha", [0.5, 0.3])
def test_rank_coverage_matches_summed_gap_probabilities(alpha: float) -> None:
    """Independent of the cdf: sum the probabilities of the gaps with rank error <= k."""
    x = _sorted(_data(11, 120, True))
    mechanism = mechanisms.make("quantile_em", epsilon=0.4, alpha=alpha)
    release = mechanism.release(x, BOUNDS)
    bound = theory.quantile_em_bound(x, *BOUNDS, epsilon=0.4, alpha=alpha, eta=0.05)
    rank = np.abs(np.arange(x.size + 1) - alpha * x.size)
    for k in (bound.value, bound.value / 2, bound.value / 4):
        direct = release.probabilities[rank <= k].sum()
        scaled = dataclasses.replace(bound, value=k)
        assert bound_checks.exact_coverage(release, scaled, x) == pytest.approx(direct, abs=1e-12)
    # and the seed-004 inequality holds at every level, not only at the bound
    lengths = theory.gap_lengths(x, *BOUNDS)
    for k in np.unique(rank):
        tail = release.probabilities[rank > k].sum()
        good = lengths[rank <= k / 2].sum()
        if good > 0:
            assert tail <= math.exp(-bound.details["rate"] * k / 2) / good * (1 + 1e-9)


def test_bad_arguments() -> None:
    x = _sorted(_data(1, 10, False))
    for eta in (0, 1, -0.1, "x", True):
        with pytest.raises(ValueError, match="eta"):
            theory.duff_bound(x, *BOUNDS, epsilon=1.0, eta=eta)
    with pytest.raises(ValueError, match="epsilon"):
        theory.smooth_cauchy_bound(x, *BOUNDS, epsilon=0.0)
    assert (
        bound_checks.mechanism_bounds(mechanisms.make("laplace_global", epsilon=1.0), x, BOUNDS)
        == []
    )


# ------------------------------------------------------ coverage on a small run


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = {
        "name": "bounds_test",
        "seed": 7,
        "n": 101,
        "replicates": 3,
        "trials": 400,
        "epsilons": [0.5, 2.0],
        "delta": "1/n",
        "datasets": ["normal", "uniform"],
        "mechanisms": ["duff", "quantile_em", "smooth_cauchy", "laplace_global"],
        "keep_estimates": True,
        "plugins": [],
        "n_jobs": 1,
    }
    return run(config, results_dir=tmp_path_factory.mktemp("bounds_run"))


def test_coverage_holds_on_a_small_run(small_run: Path) -> None:
    rows, table = bounds_coverage.coverage(small_run, 0.05)
    assert set(rows["mechanism"]) == {"duff", "quantile_em", "smooth_cauchy"}
    assert len(table) == 2 * 2 * 4  # datasets × ε × bounds
    assert (table["trials"] == 3 * 400).all()
    assert table["holds"].all()
    loose = table["bound"] != "proposition7"
    assert (table.loc[loose, "coverage"] >= 0.95).all()
    # Proposition 7 is the exact 0.95-quantile when clipping does not bind (ε = 2 here):
    # the pooled coverage is then 0.95 up to binomial noise (sd 0.006 for 1200 trials).
    exact = table.loc[~loose & (table["epsilon"] == 2.0)]
    assert np.allclose(exact["exact_min"], 0.95, atol=1e-9)
    assert np.allclose(exact["coverage"], 0.95, atol=0.02)
    assert (rows["exact"] >= 0.95 - 1e-9).all()
    em = rows.loc[rows["mechanism"] == "quantile_em"]
    assert (em["quantity"] == core_bounds.RANK_ERROR).all()
    assert (em["abs_covered"] >= em["covered"]).all()  # the conversion is implied


def test_too_tight_bounds_are_reported_as_failing(small_run: Path, tmp_path: Path) -> None:
    rows, table = bounds_coverage.coverage(small_run, 0.05, scale=0.5)
    cauchy = table.loc[(table["bound"] == "proposition7") & (table["epsilon"] == 2.0)]
    assert len(cauchy) == 2 and not cauchy["holds"].any()
    assert (cauchy["exact_min"] < 0.93).all() and (cauchy["p_value"] < 1e-6).all()
    # Far below the measured errors, every bound fails.
    shrink = 0.5 / rows["ratio"].max()
    _, table = bounds_coverage.coverage(small_run, 0.05, scale=shrink)
    assert not table["holds"].any()
    assert cli.main(["bounds", str(small_run), "--out", str(tmp_path), "--scale", "0.5"]) == 0
    assert "**fails**" in (tmp_path / bounds_coverage.COVERAGE_MD).read_text(encoding="utf-8")


def test_coverage_command_errors(
    small_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bounds", str(tmp_path)]) == 2
    assert "run.json: no such file" in capsys.readouterr().err
    (tmp_path / "run.json").write_text("{}", encoding="utf-8")
    assert cli.main(["bounds", str(tmp_path)]) == 2
    assert "expected a JSON object with a 'numbers' object" in capsys.readouterr().err
    for name in ("run.json", "summary.csv"):  # a run without its estimates
        shutil.copy(small_run / name, tmp_path / name)
    assert cli.main(["bounds", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("duff-plot bounds: error: ") and "keep_estimates=true" in err
    assert cli.main(["bounds", str(small_run), "--scale", "0"]) == 2
    assert "--scale: must be a positive number" in capsys.readouterr().err
