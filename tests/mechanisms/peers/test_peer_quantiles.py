"""The peers' multi-quantile entry points (``opendp_quantiles``, ``diffprivlib_quantiles``,
``tumult_quantiles``, ``google_dp_quantiles``): registration, rows, ε split, guarantee, their
exact laws against ours, and the unseedable libraries' draws against those laws (each check
failing with probability <= 1e-9 when the sampler is right)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from missing_peers import import_errors_without, names_the_extra

import mechanisms
from mechanisms.core.guarantee import Neighbouring
from mechanisms.multi.release import QuantilesRelease

PEERS = {
    "opendp_quantiles": ("opendp", {"candidates": 1001}),
    "diffprivlib_quantiles": ("diffprivlib", {}),
    "tumult_quantiles": ("tmlt.core", {}),
    "google_dp_quantiles": ("pydp", {"height": 3, "branching": 8}),
}
"""name: (library, options keeping the tests fast)."""
NEIGHBOURS = ["add_remove", "replace_one"]
DATA = np.array([0.12, 0.3, 0.31, 0.45, 0.5, 0.52, 0.8, 0.9, 0.91])
DATASETS = {
    "empty": [],
    "ties_and_bounds": [0.0, 0.0, 0.2, 0.2, 0.2, 0.7, 1.0, 1.0],
    "outside_clipped": [-5.0, 0.5, 0.6, 9.0],
    "normal_100": list(np.random.default_rng(3).normal(0.5, 0.2, 100)),
}
FALSE_ALARM = 1e-9


def make(name: str, epsilon: float = 1.0, **options: object) -> mechanisms.Mechanism:
    library, fast = PEERS[name]
    pytest.importorskip(library)
    return mechanisms.make(name, epsilon=epsilon, **{**fast, **options})


def test_missing_libraries_hide_them_and_name_the_extra() -> None:
    """Without opendp, diffprivlib and pydp, in a fresh process: not listed, and ``get``
    raises an ImportError naming the extra."""
    lines = import_errors_without(
        ("opendp", "diffprivlib", "pydp"),
        "names = ['opendp_quantiles', 'diffprivlib_quantiles', 'google_dp_quantiles']\n"
        "assert not set(names) & set(mechanisms.available())\n"
        "for name in names:\n"
        "    report(lambda: mechanisms.get(name))\n",
    )
    assert len(lines) == 3
    for line, package in zip(lines, ("opendp", "diffprivlib", "pydp"), strict=True):
        assert names_the_extra(line, package)


@pytest.mark.parametrize("name", PEERS)
def test_listed_when_installed_with_the_quantiles_statistic(name: str) -> None:
    pytest.importorskip(PEERS[name][0])
    assert name in mechanisms.available()
    assert mechanisms.get(name).statistics == frozenset({"quantiles"})


@pytest.mark.parametrize("nb", NEIGHBOURS)
@pytest.mark.parametrize("data", DATASETS.values(), ids=DATASETS.keys())
@pytest.mark.parametrize("name", PEERS)
def test_rows_have_shape_m_are_sorted_and_inside_the_bounds(name: str, data, nb: str) -> None:
    mechanism = make(name, epsilon=0.7, neighbours=nb, alphas=[0.1, 0.5, 0.55, 0.9])
    release = mechanism.release(data, (0.0, 1.0))
    assert isinstance(release, QuantilesRelease)
    out = release.sample(20, np.random.default_rng(5))
    assert out.shape == (20, 4) and out.dtype == np.float64
    assert np.all(np.isfinite(out)) and out.min() >= 0.0 and out.max() <= 1.0
    assert np.all(np.diff(out, axis=1) >= 0)
    assert release.sample(0, np.random.default_rng(5)).shape == (0, 4)
    clipped = np.sort(np.clip(data, 0.0, 1.0))
    expected = [clipped[math.ceil(Fraction(repr(a)) * clipped.size) - 1] if clipped.size else 0.0
                for a in (0.1, 0.5, 0.55, 0.9)]  # fmt: skip
    np.testing.assert_array_equal(release.true_value, expected)


@pytest.mark.parametrize("nb", NEIGHBOURS)
@pytest.mark.parametrize("name", PEERS)
def test_guarantee_states_epsilon_neighbours_and_the_library(name: str, nb: str) -> None:
    mechanism = make(name, epsilon=0.8, neighbours=nb, m=4)
    guarantee = mechanism.guarantee
    assert (guarantee.epsilon, guarantee.delta) == (0.8, 0.0)
    assert guarantee.neighbouring is Neighbouring(nb)
    word = {
        "opendp": "OpenDP",
        "diffprivlib": "diffprivlib",
        "tmlt.core": "Tumult",
        "pydp": "Google",
    }
    assert word[PEERS[name][0]] in guarantee.source


@pytest.mark.parametrize("nb", NEIGHBOURS)
def test_epsilon_split(nb: str) -> None:
    """OpenDP and Tumult: ε/(m·d_in) per level and record (d_in = 2 for a replacement), the
    library's composed map exactly ε; diffprivlib: ε_lib split evenly by the library, ε_lib = ε
    (replace-one) or ε·m/Σ max(α, 1 - α) (add/remove); Google: no split, ε or ε/2."""
    d_in = 2 if nb == "replace_one" else 1
    alphas = [0.1, 0.5, 0.8]
    for name in ("opendp_quantiles", "tumult_quantiles"):
        if name == "tumult_quantiles":
            pytest.importorskip("tmlt.core")
        assert make(name, epsilon=1.2, neighbours=nb, alphas=alphas).per_level == 1.2 / (3 * d_in)
    pytest.importorskip("opendp")
    import opendp.prelude as dp

    release = make("opendp_quantiles", epsilon=1.2, neighbours=nb, alphas=alphas).release(
        DATA, (0.0, 1.0)
    )
    composed = dp.c.make_composition([level.measurement for level in release._levels])
    assert float(composed.map(d_in)) == pytest.approx(1.2, rel=1e-9)
    dpl = make("diffprivlib_quantiles", epsilon=1.2, neighbours=nb, alphas=alphas)
    assert dpl.library_epsilon == pytest.approx(1.2 if d_in == 2 else 1.2 * 3 / 2.2, rel=1e-15)
    assert make("google_dp_quantiles", epsilon=1.2, neighbours=nb).library_epsilon == 1.2 / d_in


@pytest.mark.parametrize(
    ("name", "nb", "alphas"),
    [
        ("diffprivlib_quantiles", "replace_one", [0.1, 0.5, 0.8]),
        ("diffprivlib_quantiles", "add_remove", [0.3, 0.7]),  # equal max(α, 1 - α): same split
        ("tumult_quantiles", "add_remove", [0.1, 0.5, 0.8]),
    ],
)
def test_exact_law_is_ind_exp_with_the_same_neighbours(name: str, nb: str, alphas) -> None:
    """Same mechanism, same neighbours: the quantile EM at ε/m per level (``ind_exp``)."""
    ours = mechanisms.make("ind_exp", epsilon=1.3, neighbours=nb, alphas=alphas)
    peer = make(name, epsilon=1.3, neighbours=nb, alphas=alphas)
    grid = np.linspace(-0.1, 1.1, 1201)
    mine, theirs = ours.release(DATA, (0.0, 1.0)), peer.release(DATA, (0.0, 1.0))
    for j in range(len(alphas)):
        np.testing.assert_allclose(
            theirs.marginal_cdf(j, grid), mine.marginal_cdf(j, grid), atol=1e-12
        )


def dkw_threshold(draws: int, tests: int) -> float:
    """``u`` with ``P(sup|F̂ - F| >= u) <= FALSE_ALARM / tests`` for ``draws`` i.i.d. draws
    from any law (Dvoretzky-Kiefer-Wolfowitz with Massart's constant, every n)."""
    return math.sqrt(math.log(2.0 * tests / FALSE_ALARM) / (2.0 * draws))


def cdf_distance(release: QuantilesRelease, column: np.ndarray, j: int) -> float:
    """``max |F̂(x) - F(x)|`` over the sample points and the points just below them."""
    points = np.unique(column)
    below = np.nextafter(points, -np.inf)
    sorted_column = np.sort(column)
    gaps = [
        np.abs(np.searchsorted(sorted_column, p, side="right") / column.size
               - release.marginal_cdf(j, p))
        for p in (points, below)
    ]  # fmt: skip
    return float(max(g.max() for g in gaps))


UNSEEDABLE = [("opendp_quantiles", 6.0, 6.0), ("tumult_quantiles", 6.0, 6.0),
              ("opendp_quantiles", 6.0, 12.0), ("tumult_quantiles", 6.0, 12.0)]  # fmt: skip
"""(name, ε of the draws, ε of the law checked): the last is a planted wrong ε."""


@pytest.mark.parametrize(("name", "drawn", "checked"), UNSEEDABLE)
def test_unseedable_draws_follow_the_exact_marginals(name: str, drawn: float, checked: float):
    """The library's own (unseedable) rows against the order-statistic cdfs of its exact
    per-level laws, 1000 rows, 3 levels: fails with probability <= 1e-9 when right.  The
    planted cases draw at ε and check against the law at 2ε, which must fail: the laws are
    0.246 (OpenDP) and 0.244 (Tumult) apart, above twice the threshold 0.106, so by the same
    inequality a wrong ε passes with probability <= 1e-9."""
    alphas, draws = [0.2, 0.5, 0.8], 1000
    rows = make(name, epsilon=drawn, alphas=alphas).release(DATA, (0.0, 1.0))
    sample = rows.sample(draws, np.random.default_rng(0))
    law = make(name, epsilon=checked, alphas=alphas).release(DATA, (0.0, 1.0))
    distance = max(cdf_distance(law, sample[:, j], j) for j in range(3))
    assert (distance < dkw_threshold(draws, 3)) is (drawn == checked)


def test_diffprivlib_rows_follow_the_seed() -> None:
    release = make("diffprivlib_quantiles", m=3).release(DATA, (0.0, 1.0))
    first, second = (release.sample(30, np.random.default_rng(4)) for _ in range(2))
    np.testing.assert_array_equal(first, second)
    assert release.library_failures == 0


@pytest.mark.parametrize(
    ("name", "options", "named"),
    [
        ("opendp_quantiles", {"candidates": 1}, "candidates"),
        ("google_dp_quantiles", {"height": 0}, "height"),
        ("google_dp_quantiles", {"epsilon": 2.0**-50, "neighbours": "replace_one"}, "epsilon"),
        ("diffprivlib_quantiles", {"epsilon": 1e308, "neighbours": "add_remove"}, "epsilon"),
        ("opendp_quantiles", {"neighbours": "swap"}, "neighbours"),
        ("google_dp_quantiles", {"m": 0}, "m"),
        ("diffprivlib_quantiles", {"delta": 1e-6}, "delta"),
    ],
)
def test_bad_options_are_refused_naming_them(name: str, options: dict, named: str) -> None:
    options = dict(options)
    epsilon = options.pop("epsilon", 1.0)
    with pytest.raises(ValueError, match=named):
        make(name, epsilon=epsilon, **options)
