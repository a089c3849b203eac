"""The quantile EM ("The Exponential Mechanism for Medians", eq. 2.2) and its relation to Duff."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import mechanisms
from mechanisms.core.data import lower_median
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.quantiles import exact_alpha, quantile_rank, rank_distance, split_alpha_n
from mechanisms.median.duff import Duff
from mechanisms.median.quantile_em import QuantileEM

ALPHAS = [0.1, 0.25, 0.3, 0.5, 0.55, 0.77, 0.9]


def eq_2_2_log_masses(x, a, b, epsilon, alpha, neighbours) -> np.ndarray:
    """Normalised log masses straight from eq. 2.2, the constant max(α, 1-α)·N included."""
    edges = np.concatenate([[a], x, [b]])
    lengths = np.diff(edges)
    positive = lengths > 0
    middles = ((edges[:-1] + edges[1:]) / 2)[positive]
    below = (x[None, :] < middles[:, None]).sum(axis=1)
    above = (x[None, :] > middles[:, None]).sum(axis=1)
    u = max(alpha, 1 - alpha) * x.size - np.abs((1 - alpha) * below - alpha * above)
    sensitivity = max(alpha, 1 - alpha) if neighbours == "add_remove" else 1.0
    out = np.full(x.size + 1, -np.inf)
    out[positive] = epsilon * u / (2 * sensitivity) + np.log(lengths[positive])
    out[positive] -= out[positive].max()
    return out - np.log(np.exp(out[positive]).sum())


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("epsilon", [0.01, 1.0, 20.0])
def test_release_is_the_em_of_eq_2_2(epsilon, alpha, neighbours):
    rng = np.random.default_rng(int(alpha * 100))
    x = np.sort(np.round(rng.normal(size=150), 1))
    mechanism = QuantileEM(epsilon=epsilon, alpha=alpha, neighbours=neighbours)
    release = mechanism.release(x, (-2.0, 2.0))
    clipped = np.clip(x, -2.0, 2.0)
    expected = eq_2_2_log_masses(clipped, -2.0, 2.0, epsilon, alpha, neighbours)
    got = release.log_masses
    assert np.array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    assert np.allclose(got[finite], expected[finite], rtol=1e-9, atol=1e-9)
    assert abs(release.probabilities.sum() - 1) <= 1e-12


@pytest.mark.parametrize(
    ("alpha", "neighbours", "expected"),
    [
        (0.5, "add_remove", 0.5),
        (0.3, "add_remove", 0.7),
        (0.9, "add_remove", 0.9),
        (0.3, "replace_one", 1.0),
    ],
)
def test_sensitivity_and_guarantee(alpha, neighbours, expected):
    mechanism = mechanisms.make("quantile_em", epsilon=2.0, alpha=alpha, neighbours=neighbours)
    assert isinstance(mechanism, QuantileEM)
    assert mechanism.sensitivity == pytest.approx(expected, rel=1e-15)
    guarantee = mechanism.guarantee
    assert guarantee.epsilon == 2.0 and guarantee.delta == 0.0 and guarantee.kind == "pure"
    assert guarantee.neighbouring is Neighbouring(neighbours)
    assert mechanism.neighbouring is Neighbouring(neighbours)
    assert not guarantee.data_dependent_tuning
    assert repr(mechanism) == f"QuantileEM(epsilon=2, alpha={alpha:g}, neighbours={neighbours!r})"


# ----------------------------------------------------------------- the truth


def exact_utility(x: np.ndarray, r: float, alpha: Fraction) -> Fraction:
    below, above = int((x < r).sum()), int((x > r).sum())
    return max(alpha, 1 - alpha) * x.size - abs((1 - alpha) * below - alpha * above)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_true_value_is_a_maximiser_of_the_utility_or_its_gap_end(alpha):
    """x_(ceil(αn)) is a maximiser of eq. 2.2 or an endpoint of a maximising gap (exact)."""
    rng = np.random.default_rng(7)
    a, b = 0.0, 6.0
    for n in range(1, 41):
        x = np.sort(rng.integers(0, 7, size=n).astype(float))
        true_value = QuantileEM(epsilon=1.0, alpha=alpha).release(x, (a, b)).true_value
        points = np.unique(np.concatenate([[a], x, [b]]))
        gaps = list(itertools.pairwise(points))
        scores = {("point", p): exact_utility(x, p, exact_alpha(alpha)) for p in points}
        scores |= {
            ("gap", g): exact_utility(x, (g[0] + g[1]) / 2, exact_alpha(alpha)) for g in gaps
        }
        best = max(scores.values())
        closure = set()
        for (kind, where), score in scores.items():
            if score == best:
                closure |= {where} if kind == "point" else set(where)
        assert true_value in closure, (alpha, x, true_value)
        assert true_value == x[math.ceil(Fraction(repr(alpha)) * n) - 1]


@pytest.mark.parametrize("alpha", [0.125, 0.25, 0.5, 0.75])
def test_true_value_is_numpys_inverted_cdf_for_dyadic_alpha(alpha):
    rng = np.random.default_rng(3)
    for n in range(1, 60):
        x = rng.normal(size=n)
        release = QuantileEM(epsilon=1.0, alpha=alpha).release(x, (-10, 10))
        assert release.true_value == np.quantile(x, alpha, method="inverted_cdf")


def test_true_value_reads_alpha_as_written():
    x = np.arange(1.0, 101.0)
    assert QuantileEM(epsilon=1.0, alpha=0.1).release(x[:10], (0, 200)).true_value == 1.0
    assert QuantileEM(epsilon=1.0, alpha=0.55).release(x, (0, 200)).true_value == 55.0
    assert QuantileEM(epsilon=1.0, alpha=0.3).release(x[:10], (0, 200)).true_value == 3.0


@pytest.mark.parametrize("n", [1, 2, 3, 10, 11, 1000])
def test_median_true_value_is_the_lower_median(n):
    x = np.sort(np.random.default_rng(n).normal(size=n))
    release = QuantileEM(epsilon=1.0).release(x, (-10, 10))
    assert release.true_value == lower_median(x, -10.0)
    assert QuantileEM(epsilon=1.0, bounding="drop").release([50.0], (0, 1)).true_value == 0.0


def test_rank_distance_is_exact_for_large_n():
    n = 10**7
    gaps = np.array([0, 2_999_999, 3_000_000, 3_000_001, n])
    alpha_n = Fraction(3, 10) * n
    expected = [float(abs(g - alpha_n)) for g in gaps]
    assert rank_distance(n, 0.3, gaps).tolist() == expected
    n = 10**7 + 1
    gaps = np.array([0, 1_234_567, n])
    alpha_n = Fraction(77, 100) * n
    expected = [float(abs(g - alpha_n)) for g in gaps]
    assert rank_distance(n, 0.77, gaps).tolist() == expected


ADVERSARIAL = (0.1, 0.3, 1 / 3, 0.7, 0.05, 0.9, 0.55, 0.30000000000000004, 2 / 3, 1e-7, 0.999999)


def test_ranks_are_the_fractions() -> None:
    """quantile_rank and split_alpha_n (integer division) against Fraction(repr(alpha))·n."""
    rng = np.random.default_rng(5)
    alphas = [*ADVERSARIAL, *rng.uniform(size=200).tolist(), *np.round(rng.uniform(size=200), 3)]
    sizes = [*range(1200), *rng.integers(0, 10**7 + 1, size=300).tolist(), 10**7 - 1, 10**7]
    for alpha in (a for a in alphas if 0 < a < 1):
        exact = Fraction(repr(float(alpha)))
        for n in sizes if alpha in ADVERSARIAL else sizes[::37]:
            product = exact * n
            assert quantile_rank(n, alpha) == math.ceil(product), (n, alpha)
            whole, fraction = split_alpha_n(n, alpha)
            assert whole == math.floor(product) and fraction == float(product - whole), (n, alpha)
    assert quantile_rank(np.int64(10**7), 0.3) == 3 * 10**6  # numpy sizes: no int64 overflow
    assert split_alpha_n(np.int64(10**7 + 1), 0.77) == (7_700_000, 0.77)


# ------------------------------------------------------------ versus Duff


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 3.0])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 100])
def test_duff_log_weights_are_quantile_em_plus_half_epsilon_below_the_median(epsilon, n):
    """α = 1/2, add/remove: Duff's log-weight on gap i is quantile EM's + ε/2·[2i < n] + const.

    With D = #below - #above = 2i - n the quantile EM's log-weight is -ε|D|/2 and
    Duff's is -ε(1 + max(0, D, -D-1))/2, i.e. -ε|D|/2 - ε/2 for D >= 0 and
    -ε|D + 1|/2 = -ε|D|/2 + ε/2 - ε/2 for D < 0.
    """
    x = np.sort(np.random.default_rng(n).uniform(0, 1, n))
    duff = Duff(epsilon=epsilon).release(x, (0, 1)).log_masses
    quantile = QuantileEM(epsilon=epsilon).release(x, (0, 1)).log_masses
    gaps = np.arange(n + 1)
    difference = duff - quantile - 0.5 * epsilon * (2 * gaps < n)
    assert np.allclose(difference, difference[0], rtol=0, atol=1e-12)


def test_duff_and_quantile_em_cdfs_are_close():
    """sup |F_duff - F_qem| <= TV <= tanh(ε/8), for any data.

    The density ratio takes two values, c and c·r (r = e^{ε/2}); if the second
    set has quantile-EM probability q, TV = (r - 1) q (1 - q) / (1 + (r - 1) q),
    maximal at q = 1/(1 + √r), where it is (√r - 1)/(√r + 1) = tanh(ε/8) ≈ ε/8:
    0.0125 at ε = 0.1, 0.12 at ε = 1.  For n = 1000 normal data and small ε the
    bound is nearly attained (Duff is the quantile EM moved by half a rank).
    """
    rng = np.random.default_rng(0)
    for epsilon in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0):
        for data in (rng.normal(size=1000), rng.integers(0, 4, size=57).astype(float)):
            duff = Duff(epsilon=epsilon).release(data, (-10, 10))
            quantile = QuantileEM(epsilon=epsilon).release(data, (-10, 10))
            grid = np.unique(np.concatenate([duff.edges, np.linspace(-10, 10, 4001)]))
            sup = np.abs(duff.cdf(grid) - quantile.cdf(grid)).max()
            tv = 0.5 * np.abs(duff.probabilities - quantile.probabilities).sum()
            assert 0 < sup <= tv + 1e-12 <= math.tanh(epsilon / 8) + 1e-12
            if data.size == 1000 and epsilon <= 0.1:
                assert sup > 0.5 * math.tanh(epsilon / 8)


# ---------------------------------------------------------------- sampling


@pytest.mark.parametrize(("alpha", "neighbours"), [(0.5, "add_remove"), (0.2, "replace_one")])
def test_samples_follow_the_release_cdf(alpha, neighbours):
    data = np.random.default_rng(4).exponential(size=400)
    release = QuantileEM(epsilon=0.5, alpha=alpha, neighbours=neighbours).release(data, (0, 10))
    draws = release.sample(20_000, np.random.default_rng(5))
    assert stats.kstest(draws, release.cdf).pvalue > 1e-3
    other = QuantileEM(epsilon=0.5, alpha=alpha + 0.05, neighbours=neighbours).release(
        data, (0, 10)
    )
    assert stats.kstest(draws, other.cdf).pvalue < 1e-6


@pytest.mark.parametrize("epsilon", [1e-3, 1.0, 50.0])
@pytest.mark.parametrize("alpha", [0.5, 0.3])
def test_large_n_no_nan_and_normalised(epsilon, alpha):
    data = np.random.default_rng(6).standard_normal(10**6)
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        release = QuantileEM(epsilon=epsilon, alpha=alpha).release(data, (-10, 10))
        probabilities = release.probabilities
        draws = release.sample(100, np.random.default_rng(0))
    assert not np.isnan(probabilities).any() and abs(probabilities.sum() - 1.0) <= 1e-12
    assert np.all(np.abs(draws) <= 10)


def test_diffprivlib_107_regression():
    rng = np.random.default_rng(107)
    x = rng.uniform(0, 1, 200_000)
    x[:160_000] = 0.5
    release = QuantileEM(epsilon=5.0).release(x, (0, 1))
    assert np.isfinite(release.log_masses[np.diff(release.edges) > 0]).all()
    assert abs(release.probabilities.sum() - 1.0) <= 1e-12
    assert np.all(release.sample(1000, rng) != 0.5)


# ------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"alpha": -0.2}, "alpha"),
        ({"alpha": np.nan}, "alpha"),
        ({"alpha": "half"}, "alpha"),
        ({"alpha": True}, "alpha"),
        ({"alpha": None}, "alpha"),
        ({"neighbours": "swap"}, "neighbours"),
        ({"neighbours": None}, "neighbours"),
        ({"delta": 1e-6}, "delta"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": np.inf}, "epsilon"),
        ({"bounding": "wrap"}, "bounding"),
    ],
)
def test_bad_configuration(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        mechanisms.make("quantile_em", **{"epsilon": 1.0, **kwargs})


@pytest.mark.parametrize(
    ("data", "bounds", "argument"),
    [
        ([np.nan], (0, 1), "data"),
        ([np.inf, 0.5], (0, 1), "data"),
        ([1 + 2j], (0, 1), "data"),
        (np.zeros((2, 2)), (0, 1), "data"),
        ([0.5], (1, 0), "bounds"),
        ([0.5], (0, np.nan), "bounds"),
    ],
)
def test_bad_release_input(data, bounds, argument):
    with pytest.raises(ValueError, match=argument):
        QuantileEM(epsilon=1.0).release(data, bounds)


def test_edge_datasets():
    rng = np.random.default_rng(0)
    for alpha in (0.1, 0.5, 0.9):
        mechanism = QuantileEM(epsilon=1.0, alpha=alpha)
        for data in ([0.4], np.full(30, 0.2), [-5.0, 7.0, 9.0]):
            release = mechanism.release(data, (0, 1))
            assert abs(release.probabilities.sum() - 1) <= 1e-12
            draws = release.sample(50, rng)
            assert np.all((draws >= 0) & (draws <= 1))
        empty = QuantileEM(epsilon=1.0, alpha=alpha, bounding="drop").release([3.0], (0, 1))
        assert empty.n == 0 and empty.cdf(0.25) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="size"):
        release.sample(1.5, rng)
    with pytest.raises(ValueError, match="rng"):
        release.sample(1, None)
