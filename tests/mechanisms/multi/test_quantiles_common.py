"""What every m-quantiles mechanism (issue 27) promises: registration, options and their
errors, the guarantee's declaration, the exact true quantiles, rows of shape (size, m),
non-decreasing, inside [a, b] (also on empty data, ties and points at the bounds), and
accuracy at a large ε.  Fixed seeds throughout."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from mechanisms import registry
from mechanisms.core.guarantee import Neighbouring
from mechanisms.multi.release import QuantilesRelease, check_levels, evenly_spaced

METHODS = [
    "joint_exp",
    "ind_exp",
    "ind_duff",
    "app_ind_exp",
    "smooth_laplace_per_level",
    "approximate_quantiles",
    "tree_quantiles",
    "tree_quantiles_gaussian",
]
NEIGHBOURS = ["add_remove", "replace_one"]
AUTHORS = {
    "joint_exp": "Gillenwater, Joseph & Kulesza",
    "ind_exp": "Gillenwater, Joseph & Kulesza",
    "ind_duff": "Duff",
    "app_ind_exp": "Dong, Durfee & Rogers",
    "smooth_laplace_per_level": "Bun & Steinke",
    "approximate_quantiles": "Kaplan, Schnapp & Stemmer",
    "tree_quantiles": "Dwork, McSherry, Nissim & Smith",
    "tree_quantiles_gaussian": "Balle & Wang",
}
EXACT_MARGINALS = {"joint_exp", "ind_exp", "ind_duff", "app_ind_exp", "smooth_laplace_per_level"}


def make(name: str, epsilon: float = 1.0, **options: object):
    cls = registry.get(name)
    return registry.make(
        name, epsilon=epsilon, delta=1e-6 if cls.requires_delta else None, **options
    )


@pytest.mark.parametrize("name", METHODS)
def test_registered_with_the_quantiles_statistic_and_a_sourced_guarantee(name):
    cls = registry.get(name)
    assert cls.statistics == frozenset({"quantiles"})
    for nb in NEIGHBOURS:
        mechanism = make(name, neighbours=nb, m=4)
        g = mechanism.guarantee
        assert g.neighbouring is Neighbouring(nb)
        assert g.epsilon == 1.0 and g.delta == (1e-6 if cls.requires_delta else 0.0)
        assert AUTHORS[name] in g.source and '"' in g.source  # author and title
        assert not g.data_dependent_tuning


DATASETS = {
    "empty": [],
    "one": [0.3],
    "ties_and_bounds": [0.0, 0.0, 0.2, 0.2, 0.2, 0.7, 1.0, 1.0],
    "outside_clipped": [-5.0, 0.5, 0.6, 9.0],
    "normal_300": list(np.random.default_rng(3).normal(0.5, 0.2, 300)),
}


@pytest.mark.parametrize("nb", NEIGHBOURS)
@pytest.mark.parametrize("data", DATASETS.values(), ids=DATASETS.keys())
@pytest.mark.parametrize("name", METHODS)
def test_rows_have_shape_m_are_sorted_and_inside_the_bounds(name, data, nb):
    release = make(name, epsilon=0.7, neighbours=nb, alphas=[0.1, 0.5, 0.55, 0.9]).release(
        data, (0.0, 1.0)
    )
    assert isinstance(release, QuantilesRelease)
    out = release.sample(40, np.random.default_rng(5))
    assert out.shape == (40, 4) and out.dtype == np.float64
    assert np.all(np.isfinite(out)) and out.min() >= 0.0 and out.max() <= 1.0
    assert np.all(np.diff(out, axis=1) >= 0)
    assert release.sample(0, np.random.default_rng(5)).shape == (0, 4)
    assert release.alphas == (0.1, 0.5, 0.55, 0.9) and release.m == 4
    assert (release.lower, release.upper) == (0.0, 1.0)


def _reference_quantiles(data: list[float], alphas: list[float], lower: float, upper: float):
    """x_(ceil(α n)) of the clipped data with α n in exact decimal arithmetic."""
    x = sorted(min(max(v, lower), upper) for v in data)
    if not x:
        return [lower] * len(alphas)
    ranks = [math.ceil(Fraction(repr(a)) * len(x)) for a in alphas]
    return [x[r - 1] for r in ranks]


@pytest.mark.parametrize("data", DATASETS.values(), ids=DATASETS.keys())
@pytest.mark.parametrize("name", METHODS)
def test_true_value_is_the_exact_quantiles(name, data):
    alphas = [0.1, 0.5, 0.55, 0.9]
    release = make(name, alphas=alphas).release(data, (0.0, 1.0))
    want = _reference_quantiles(data, alphas, 0.0, 1.0)
    assert isinstance(release.true_value, np.ndarray)
    np.testing.assert_array_equal(release.true_value, want)
    assert release.n == len(data)


def test_true_value_uses_exact_decimal_levels():
    """0.1 of 10 points is x_(1) and 0.55 of 100 points x_(55) (float products would not)."""
    release = make("ind_exp", alphas=[0.1, 0.55]).release(np.arange(1.0, 101.0), (0, 101))
    np.testing.assert_array_equal(release.true_value, [10.0, 55.0])


@pytest.mark.parametrize("name", [n for n in METHODS if n not in EXACT_MARGINALS])
def test_marginal_cdf_is_not_implemented_where_the_law_is_not_exact(name):
    release = make(name, m=2).release([0.2, 0.4], (0.0, 1.0))
    with pytest.raises(NotImplementedError):
        release.marginal_cdf(0, 0.5)


@pytest.mark.parametrize("name", sorted(EXACT_MARGINALS))
def test_exact_marginal_cdfs_are_cdfs(name):
    release = make(name, m=3).release([0.1, 0.25, 0.3, 0.8], (0.0, 1.0))
    grid = np.linspace(-0.5, 1.5, 81)
    for j in range(3):
        f = release.marginal_cdf(j, grid)
        assert np.all(np.diff(f) >= -1e-12) and f[0] == 0.0 and abs(f[-1] - 1.0) < 1e-12
    lower = [release.marginal_cdf(j, grid) for j in range(3)]
    assert np.all(lower[0] >= lower[1] - 1e-12) and np.all(lower[1] >= lower[2] - 1e-12)
    with pytest.raises(ValueError, match="j"):
        release.marginal_cdf(3, 0.5)


def test_levels_option():
    assert check_levels(None, None) == (0.25, 0.5, 0.75)
    assert check_levels(None, 3) == (0.25, 0.5, 0.75)
    # linspace's levels, each the float nearest j / (m + 1) (linspace is off by an ulp at 3/10)
    for m in (1, 4, 9, 37, 100):
        levels = evenly_spaced(m)
        assert np.allclose(levels, np.linspace(0, 1, m + 2)[1:-1], rtol=1e-15, atol=0)
        assert levels == tuple(float(Fraction(j, m + 1)) for j in range(1, m + 1))
    assert evenly_spaced(9)[2] == 0.3
    assert check_levels(np.array([0.2, 0.3]), None) == (0.2, 0.3)
    assert make("tree_quantiles", m=9).alphas == tuple(j / 10 for j in range(1, 10))


BAD_OPTIONS = [
    ({"alphas": []}, "alphas"),
    ({"alphas": [0.5, 0.5]}, "alphas"),
    ({"alphas": [0.6, 0.4]}, "alphas"),
    ({"alphas": [0.0, 0.5]}, "alphas"),
    ({"alphas": [0.5, 1.0]}, "alphas"),
    ({"alphas": [float("nan")]}, "alphas"),
    ({"alphas": "0.5"}, "alphas"),
    ({"alphas": 0.5}, "alphas"),
    ({"alphas": [True]}, "alphas"),
    ({"alphas": np.array([[0.5]])}, "alphas"),
    ({"alphas": list(np.linspace(0, 1, 903)[1:-1])}, "alphas"),
    ({"m": 0}, "m"),
    ({"m": 2.0}, "m"),
    ({"m": True}, "m"),
    ({"m": 901}, "m"),
    ({"m": 2, "alphas": [0.5]}, "alphas, m"),
    ({"neighbours": "swap"}, "neighbours"),
]


@pytest.mark.parametrize(("options", "argument"), BAD_OPTIONS)
@pytest.mark.parametrize("name", METHODS)
def test_bad_options_raise_value_error_naming_the_argument(name, options, argument):
    with pytest.raises(ValueError, match=argument):
        make(name, **options)


@pytest.mark.parametrize("name", METHODS)
def test_bad_privacy_parameters_are_named(name):
    cls = registry.get(name)
    with pytest.raises(ValueError, match="epsilon"):
        registry.make(name, epsilon=0.0, delta=1e-6 if cls.requires_delta else None)
    with pytest.raises(ValueError, match="delta"):
        registry.make(name, epsilon=1.0, delta=None if cls.requires_delta else 1e-6)


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"branching": 1}, "branching"),
        ({"height": 0}, "height"),
        ({"branching": 2.5}, "branching"),
        ({"branching": 64, "height": 5}, "branching, height"),
    ],
)
def test_tree_options_are_checked(options, argument):
    with pytest.raises(ValueError, match=argument):
        make("tree_quantiles", **options)


@pytest.mark.parametrize("nb", NEIGHBOURS)
@pytest.mark.parametrize("name", METHODS)
def test_accurate_at_large_epsilon(name, nb):
    """ε = 200, n = 2000: every coordinate's median rank error is below 1% of n."""
    x = np.random.default_rng(17).normal(0.0, 1.0, 2000)
    alphas = [0.1, 0.3, 0.5, 0.7, 0.9]
    release = make(name, epsilon=200.0, neighbours=nb, alphas=alphas).release(x, (-4.0, 4.0))
    out = release.sample(25, np.random.default_rng(23))
    ranks = np.searchsorted(np.sort(np.clip(x, -4, 4)), out, side="right")
    want = np.ceil(np.array(alphas) * x.size)
    assert np.all(np.median(np.abs(ranks - want), axis=0) <= 0.01 * x.size)
    assert np.all(np.abs(np.median(out, axis=0) - release.true_value) <= 0.05)
