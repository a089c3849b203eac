"""Tests of the exact JointExp sampler (Gillenwater, Joseph & Kulesza, "Differentially Private
Quantiles", ICML 2021): dynamic program against brute force and a dense reference, the m = 1
reduction, the sampler's law and within-gap uniformity, pointwise ε-DP of the density, no
underflow at n = 1e5, input validation, and planted bugs that every check must catch.

Statistical checks use fixed seeds and a p-value threshold of 1e-9 (false-alarm rate <= 1e-9
for any seed).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats
from small_neighbours import small_neighbour_pairs

from mechanisms.multi import joint_exp_sampler as jes
from mechanisms.multi.joint_exp_sampler import (
    NEIGHBOURING,
    brute_force_gap_tuple_log_probabilities,
    gap_tuple_log_probabilities,
    joint_exp_forward,
    joint_exp_log_density,
    sample_joint_exp,
    utility_sensitivity,
)

LO, HI = 0.0, 1.0
P_MIN = 1e-9
DATASETS = {
    "n0": [],
    "n1": [0.4],
    "n2_bounds": [0.0, 1.0],
    "n5_ties_bounds": [0.0, 0.2, 0.2, 0.7, 1.0],
    "n7_ties": [0.1, 0.1, 0.1, 0.35, 0.6, 0.6, 1.0],
}
ALPHAS = {"m1": [0.5], "m1_skew": [0.15], "m2": [0.25, 0.8], "m3": [0.1, 0.5, 0.6]}
EPSILONS = [1e-8, 0.3, 2.0, 1e4]


def _tol(eps: float, n: int, alphas: list[float], neighbouring: str) -> float:
    """1e-12, widened to 8 ulp of the largest unnormalised log-weight ε (n + 1) / Δ.

    Both sides subtract log-weights of that size, so at ε = 1e4 even the brute force itself is
    only exact to ~1e-11; for ε <= 2 and n <= 7 this is 1e-12 (+ < 1e-13).
    """
    scale = eps * (n + 1) / utility_sensitivity(np.array(alphas), neighbouring)
    return 1e-12 + 8 * float(np.spacing(scale))


def _ref_lse(a: np.ndarray, axis: int = -1) -> np.ndarray:
    mx = np.max(a, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    s = np.sum(np.exp(a - mx), axis=axis, keepdims=True)
    out = np.full(s.shape, -np.inf)
    np.log(s, out=out, where=s > 0)
    return np.squeeze(out + mx, axis=axis)


def _assert_log_probs_equal(got: dict, want: dict, tol: float) -> None:
    assert got.keys() == want.keys()
    for t, w in want.items():
        g = got[t]
        if math.isinf(w) or math.isinf(g):
            assert g == w, (t, g, w)
        else:
            assert abs(g - w) <= tol, (t, g, w, abs(g - w), tol)


# ---------------------------------------------------------------- checks (reused by planted bugs)


def check_dp_matches_brute_force(x: list[float], alphas: list[float], eps: float, nb: str) -> None:
    want = brute_force_gap_tuple_log_probabilities(np.array(x), LO, HI, np.array(alphas), eps, nb)
    got = gap_tuple_log_probabilities(np.array(x), LO, HI, np.array(alphas), eps, nb)
    _assert_log_probs_equal(got, want, _tol(eps, len(x), alphas, nb))
    assert abs(_ref_lse(np.array(list(got.values())))) <= _tol(eps, len(x), alphas, nb)


def check_m1_is_single_quantile_em(x: list[float], alpha: float, eps: float, nb: str) -> None:
    """P(gap i) ∝ L_i exp(-ε |i - α n| / (2 Δ1)), Δ1 = 1 (replace-one), max(α, 1-α) (add/remove)."""
    n = len(x)
    delta1 = 1.0 if nb == "replace_one" else max(alpha, 1.0 - alpha)
    lengths = np.diff(np.concatenate(([LO], x, [HI])))
    logw = np.full(n + 1, -np.inf)
    pos = lengths > 0
    logw[pos] = np.log(lengths[pos]) - eps * np.abs(np.arange(n + 1) - alpha * n)[pos] / (
        2 * delta1
    )
    want = {(i,): float(v) for i, v in enumerate(logw - _ref_lse(logw))}
    got = gap_tuple_log_probabilities(np.array(x), LO, HI, np.array([alpha]), eps, nb)
    _assert_log_probs_equal(got, want, _tol(eps, n, [alpha], nb))


def _dense_forward(x: np.ndarray, alphas: np.ndarray, eps: float, nb: str):
    """O(m n^2 + m^2 n) log-space reference of E, A and log Z (direct sums, no scans)."""
    n, m = x.size, alphas.size
    lengths = np.diff(np.concatenate(([LO], x, [HI])))
    log_len = np.full(n + 1, -np.inf)
    log_len[lengths > 0] = np.log(lengths[lengths > 0])
    c = eps / (2 * utility_sensitivity(alphas, nb))
    t = np.diff(np.concatenate(([0.0], alphas, [1.0]))) * n
    g = np.arange(n + 1)
    e, a = np.full((m, n + 1), -np.inf), np.full((m, n + 1), -np.inf)
    e[0] = -c * np.abs(g - t[0])
    for j in range(m):
        if j:
            k = a[j - 1][None, :] - c * np.abs(g[:, None] - g[None, :] - t[j])
            e[j] = _ref_lse(np.where(g[None, :] < g[:, None], k, -np.inf), axis=1)
        for gg in range(n + 1):
            terms = [
                e[s, gg]
                - c * n * (alphas[j] - alphas[s])
                + (j - s + 1) * log_len[gg]
                - math.lgamma(j - s + 2)
                for s in range(j + 1)
            ]
            a[j, gg] = _ref_lse(np.array(terms))
    log_z = _ref_lse(a[m - 1] - c * np.abs(n - g - t[m]))
    return e, a, float(log_z)


def check_forward_matches_dense(seed: int, n: int, alphas: list[float], eps: float, nb: str):
    rng = np.random.default_rng(seed)
    x = np.sort(np.clip(np.round(rng.normal(0.5, 0.3, n), 2), LO, HI))  # ties, points at bounds
    al = np.array(alphas)
    fw = joint_exp_forward(x, LO, HI, al, eps, nb)
    e, a, log_z = _dense_forward(x, al, eps, nb)
    scale = 1.0
    for got, want in ((fw.entry, e), (fw.run_end, a)):
        fin = np.isfinite(want)
        assert np.array_equal(np.isfinite(got), fin)
        scale = max(scale, float(np.abs(want[fin]).max()))
        assert np.max(np.abs(got[fin] - want[fin])) <= 16 * np.spacing(scale)
    assert abs(fw.log_z - log_z) <= 16 * np.spacing(scale)


def _gap_tuples(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    edges = np.concatenate(([LO], x, [HI]))
    return np.clip(np.searchsorted(edges, out, side="right") - 1, 0, x.size)


def check_sampler_shape_and_order(x: list[float], alphas: list[float], nb: str) -> None:
    out = sample_joint_exp(np.array(x), LO, HI, np.array(alphas), 1.0, nb, size=4000, rng=3)
    assert out.shape == (4000, len(alphas)) and out.dtype == np.float64
    assert np.all(np.isfinite(out)) and out.min() >= LO and out.max() <= HI
    assert np.all(np.diff(out, axis=1) >= 0)
    edges = np.concatenate(([LO], x, [HI]))
    gaps = _gap_tuples(np.array(x), out)
    assert np.all(edges[gaps + 1] > edges[gaps])  # never in a zero-length gap


def check_sampler_law(x: list[float], alphas: list[float], eps: float, nb: str) -> None:
    exact = brute_force_gap_tuple_log_probabilities(np.array(x), LO, HI, np.array(alphas), eps, nb)
    size = 200_000
    out = sample_joint_exp(np.array(x), LO, HI, np.array(alphas), eps, nb, size=size, rng=2021)
    tuples, counts = np.unique(_gap_tuples(np.array(x), out), axis=0, return_counts=True)
    observed = dict(zip(map(tuple, tuples.tolist()), counts.tolist(), strict=True))
    assert all(math.isfinite(exact[t]) for t in observed)  # nothing outside the support
    keys = [t for t, v in exact.items() if math.isfinite(v)]
    expected = np.array([size * math.exp(exact[t]) for t in keys])
    obs = np.array([observed.get(t, 0) for t in keys], dtype=float)
    big = expected >= 5.0  # pool the rare cells so the chi-square approximation holds
    exp_c = np.append(expected[big], expected[~big].sum())
    obs_c = np.append(obs[big], obs[~big].sum())
    if exp_c[-1] == 0.0:
        exp_c, obs_c = exp_c[:-1], obs_c[:-1]
    exp_c *= obs_c.sum() / exp_c.sum()
    assert stats.chisquare(obs_c, exp_c).pvalue >= P_MIN


def check_within_gap_uniform(nb: str) -> None:
    """Given the gap tuple, outputs are sorted uniforms in their gaps (data leave a long gap)."""
    x = np.array([0.1, 0.15, 0.2])
    out = sample_joint_exp(x, LO, HI, np.array([0.7, 0.9]), 0.5, nb, size=60_000, rng=7)
    gaps = _gap_tuples(x, out)
    edges = np.concatenate(([LO], x, [HI]))
    u = (out - edges[gaps]) / (edges[gaps + 1] - edges[gaps])
    same = gaps[:, 0] == gaps[:, 1]
    assert same.sum() > 5000 and (~same).sum() > 5000
    pvals = [
        stats.kstest(1 - (1 - u[same, 0]) ** 2, "uniform").pvalue,  # min of two uniforms
        stats.kstest(u[same, 1] ** 2, "uniform").pvalue,  # max of two uniforms
        stats.kstest(u[~same].ravel(), "uniform").pvalue,  # alone in its gap
    ]
    assert min(pvals) >= P_MIN, pvals


def check_density_ratio(nb: str, alphas: list[float], eps: float) -> None:
    """max_o |log p_X(o) - log p_X'(o)| <= ε on a grid of output tuples, all small pairs."""
    grid = np.union1d((np.arange(24) + 0.5) / 24, [0.0, 0.3, 0.5, 1.0])
    pts = np.array(list(itertools.combinations_with_replacement(grid, len(alphas))))
    al = np.array(alphas)
    worst = 0.0
    for x, xp in small_neighbour_pairs([0.0, 0.3, 0.5, 1.0], nb, max_size=3):
        lp = joint_exp_log_density(joint_exp_forward(np.array(x), LO, HI, al, eps, nb), pts)
        lq = joint_exp_log_density(joint_exp_forward(np.array(xp), LO, HI, al, eps, nb), pts)
        worst = max(worst, float(np.max(np.abs(lp - lq))))
    assert worst <= eps + 1e-9, (worst, eps)


def check_density_integrates_to_one(x: list[float], alphas: list[float], eps: float, nb: str):
    """Σ over gap tuples of density(midpoints) × Π L^k / k! = 1: checks log Z and the density."""
    xa, m = np.array(x), len(alphas)
    edges = np.concatenate(([LO], xa, [HI]))
    fw = joint_exp_forward(xa, LO, HI, np.array(alphas), eps, nb)
    terms = []
    for t in itertools.combinations_with_replacement(range(xa.size + 1), m):
        lengths = [edges[g + 1] - edges[g] for g in t]
        if min(lengths) <= 0:
            continue
        mids = np.array([[0.5 * (edges[g] + edges[g + 1]) for g in t]])
        counts = {g: t.count(g) for g in t}
        vol = sum(
            k * math.log(edges[g + 1] - edges[g]) - math.lgamma(k + 1) for g, k in counts.items()
        )
        terms.append(float(joint_exp_log_density(fw, mids)[0]) + vol)
    assert abs(float(_ref_lse(np.array(terms)))) <= _tol(eps, xa.size, alphas, nb)


BIG_ALPHAS = [0.1, 0.25, 0.5, 0.75, 0.9]


def check_no_underflow_large_n(nb: str) -> None:
    rng = np.random.default_rng(11)
    x = np.sort(np.clip(np.round(rng.normal(0.0, 1.0, 100_000), 2), -3.0, 3.0))  # ties, bounds
    with warnings.catch_warnings(), np.errstate(divide="raise", invalid="raise", over="raise"):
        warnings.simplefilter("error")
        out = sample_joint_exp(x, -3.0, 3.0, np.array(BIG_ALPHAS), 50.0, nb, size=20, rng=5)
    assert out.shape == (20, 5) and np.all(np.isfinite(out)) and np.all(np.diff(out, axis=1) >= 0)
    ranks = np.searchsorted(x, out, side="right") / x.size
    assert np.max(np.abs(ranks - np.array(BIG_ALPHAS))) <= 0.01


# ------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("nb", NEIGHBOURING)
@pytest.mark.parametrize("alphas", ALPHAS.values(), ids=ALPHAS.keys())
@pytest.mark.parametrize("x", DATASETS.values(), ids=DATASETS.keys())
def test_dp_log_probabilities_equal_brute_force(x, alphas, nb, eps):
    check_dp_matches_brute_force(x, alphas, eps, nb)


@pytest.mark.parametrize("eps", [1e-8, 1.0, 1e4])
@pytest.mark.parametrize("nb", NEIGHBOURING)
def test_dp_equals_brute_force_n40_with_long_windows(nb, eps):
    x = sorted(np.round(np.random.default_rng(4).beta(2, 3, 40), 1).tolist())  # heavy ties
    check_dp_matches_brute_force(x, [0.3, 0.55], eps, nb)


@pytest.mark.parametrize("eps", [1e-8, 1.0, 50.0, 1e4])
@pytest.mark.parametrize("nb", NEIGHBOURING)
@pytest.mark.parametrize(("n", "alphas"), [(0, [0.5, 0.6]), (150, [0.05, 0.5, 0.51, 0.97])])
def test_forward_pass_equals_dense_reference(n, alphas, nb, eps):
    check_forward_matches_dense(17, n, alphas, eps, nb)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("nb", NEIGHBOURING)
@pytest.mark.parametrize("alpha", [0.5, 0.15, 0.9])
@pytest.mark.parametrize("x", DATASETS.values(), ids=DATASETS.keys())
def test_m1_reduces_to_single_quantile_em(x, alpha, nb, eps):
    check_m1_is_single_quantile_em(x, alpha, eps, nb)


def test_sensitivities():
    assert utility_sensitivity(np.array([0.5]), "replace_one") == 2.0
    assert utility_sensitivity(np.array([0.5]), "add_remove") == pytest.approx(1.0)
    assert utility_sensitivity(np.array([0.1, 0.5, 0.6]), "add_remove") == pytest.approx(1.8)


@pytest.mark.parametrize("nb", NEIGHBOURING)
@pytest.mark.parametrize("alphas", ALPHAS.values(), ids=ALPHAS.keys())
@pytest.mark.parametrize("x", DATASETS.values(), ids=DATASETS.keys())
def test_sampler_shape_order_bounds(x, alphas, nb):
    check_sampler_shape_and_order(x, alphas, nb)


def test_sampler_sizes_and_seeds():
    x, al = np.array([0.2, 0.5]), np.array([0.3, 0.7])
    assert sample_joint_exp(x, LO, HI, al, 1.0, "replace_one", size=0).shape == (0, 2)
    assert sample_joint_exp(x, LO, HI, al, 1.0, "replace_one").shape == (1, 2)
    a = sample_joint_exp(x, LO, HI, al, 1.0, "add_remove", size=5, rng=9)
    b = sample_joint_exp(x, LO, HI, al, 1.0, "add_remove", 5, np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("nb", NEIGHBOURING)
@pytest.mark.parametrize(
    ("alphas", "eps"), [([0.4], 2.0), ([0.3, 0.6], 2.0), ([0.2, 0.5, 0.9], 0.7)]
)
def test_sampler_law_matches_exact(alphas, eps, nb):
    check_sampler_law(DATASETS["n5_ties_bounds"], alphas, eps, nb)


@pytest.mark.parametrize("nb", NEIGHBOURING)
def test_within_gap_uniformity(nb):
    check_within_gap_uniform(nb)


@pytest.mark.parametrize("eps", [0.5, 3.0, 20.0])
@pytest.mark.parametrize("alphas", [[0.5], [0.2], [0.2, 0.7]])
@pytest.mark.parametrize("nb", NEIGHBOURING)
def test_density_ratio_is_at_most_e_to_the_eps(nb, alphas, eps):
    check_density_ratio(nb, alphas, eps)


@pytest.mark.parametrize("nb", NEIGHBOURING)
@pytest.mark.parametrize("alphas", [[0.5], [0.3, 0.6], [0.1, 0.5, 0.6]])
@pytest.mark.parametrize("x", DATASETS.values(), ids=DATASETS.keys())
def test_density_integrates_to_one(x, alphas, nb):
    check_density_integrates_to_one(x, alphas, 1.5, nb)


@pytest.mark.parametrize("nb", NEIGHBOURING)
def test_no_underflow_at_large_n(nb):
    check_no_underflow_large_n(nb)


GOOD = {"sorted_x": [0.2, 0.5], "lower": 0.0, "upper": 1.0, "alphas": [0.5], "epsilon": 1.0}
BAD = [
    ("sorted_x", [0.2, np.nan]),
    ("sorted_x", [0.2, np.inf]),
    ("sorted_x", [0.5, 0.2]),
    ("sorted_x", [-0.1, 0.5]),
    ("sorted_x", [0.5, 1.5]),
    ("sorted_x", [[0.2, 0.5]]),
    ("lower", np.nan),
    ("lower", "0"),
    ("upper", np.inf),
    ("lower", 1.0),
    ("upper", 0.0),
    ("alphas", []),
    ("alphas", [0.5, 0.5]),
    ("alphas", [0.6, 0.4]),
    ("alphas", [0.0]),
    ("alphas", [1.0]),
    ("alphas", [np.nan]),
    ("alphas", list(np.linspace(0, 1, 903)[1:-1])),
    ("epsilon", 0.0),
    ("epsilon", -1.0),
    ("epsilon", np.nan),
    ("epsilon", np.inf),
    ("epsilon", True),
]


@pytest.mark.parametrize(
    "fn", [sample_joint_exp, brute_force_gap_tuple_log_probabilities, gap_tuple_log_probabilities]
)
@pytest.mark.parametrize(("arg", "value"), BAD)
def test_validation_names_the_argument(fn, arg, value):
    kwargs = {**GOOD, arg: value}
    with pytest.raises(ValueError, match=arg):
        fn(neighbouring="replace_one", **kwargs)


def test_validation_of_bounds_width_neighbouring_size_outputs():
    with pytest.raises(ValueError, match="lower/upper"):
        sample_joint_exp([], -1e308, 1e308, [0.5], 1.0, "replace_one")
    with pytest.raises(ValueError, match="neighbouring"):
        sample_joint_exp([0.5], 0.0, 1.0, [0.5], 1.0, "swap")
    for size in (-1, 1.5, True):
        with pytest.raises(ValueError, match="size"):
            sample_joint_exp([0.5], 0.0, 1.0, [0.5], 1.0, "replace_one", size=size)
    fw = joint_exp_forward(np.array([0.5]), 0.0, 1.0, np.array([0.3, 0.6]), 1.0, "add_remove")
    for bad in ([[0.1]], [[0.6, 0.2]], [[0.1, 1.2]], [[np.nan, 0.2]]):
        with pytest.raises(ValueError, match="outputs"):
            joint_exp_log_density(fw, np.array(bad))


# ------------------------------------------------------------------------------ planted bugs

_orig_sensitivity = jes.utility_sensitivity
_orig_sliding = jes._sliding_lse


def _unsorted_place(gaps, edges, rng):
    lo, hi = edges[gaps], edges[gaps + 1]
    return lo + rng.random(gaps.shape) * (hi - lo)


def _squared_place(gaps, edges, rng):
    lo, hi = edges[gaps], edges[gaps + 1]
    return np.sort(lo + rng.random(gaps.shape) ** 2 * (hi - lo), axis=1)


BUGS: dict[str, tuple[str, Callable]] = {
    "volume L^k (no 1/k!)": ("_run_length_divisor", lambda r: np.ones(np.shape(r))),
    "halved sensitivity": ("utility_sensitivity", lambda a, nb: 0.5 * _orig_sensitivity(a, nb)),
    "swap constant for add/remove": ("utility_sensitivity", lambda a, nb: 2.0),
    "uniform (huge sensitivity)": ("utility_sensitivity", lambda a, nb: 1e12),
    "unmasked log": ("_masked_log", np.log),
    "window one too wide": ("_sliding_lse", lambda h, w: _orig_sliding(h, w + 1)),
    "rows not sorted": ("_place_in_gaps", _unsorted_place),
    "non-uniform within gap": ("_place_in_gaps", _squared_place),
    "mode instead of sample": ("_gumbel_argmax", lambda logits, rng: np.argmax(logits, axis=-1)),
}
M3, N7, N5 = ALPHAS["m3"], DATASETS["n7_ties"], DATASETS["n5_ties_bounds"]
CAUGHT_BY = [
    ("volume L^k (no 1/k!)", lambda: check_dp_matches_brute_force(N7, M3, 1.0, "replace_one")),
    ("volume L^k (no 1/k!)", lambda: check_sampler_law(N5, [0.2, 0.5, 0.9], 0.7, "add_remove")),
    ("volume L^k (no 1/k!)", lambda: check_density_integrates_to_one(N5, M3, 1.5, "add_remove")),
    ("halved sensitivity", lambda: check_density_ratio("replace_one", [0.5], 1.0)),
    ("halved sensitivity", lambda: check_density_ratio("add_remove", [0.5], 1.0)),
    ("halved sensitivity", lambda: check_m1_is_single_quantile_em(N7, 0.5, 1.0, "replace_one")),
    (
        "swap constant for add/remove",
        lambda: check_m1_is_single_quantile_em(N7, 0.15, 1.0, "add_remove"),
    ),
    ("uniform (huge sensitivity)", lambda: check_no_underflow_large_n("replace_one")),
    ("unmasked log", lambda: check_no_underflow_large_n("add_remove")),
    (
        "window one too wide",
        lambda: check_forward_matches_dense(17, 150, [0.05, 0.5], 1.0, "replace_one"),
    ),
    (
        "window one too wide",
        lambda: check_dp_matches_brute_force(N7, [0.25, 0.8], 1.0, "add_remove"),
    ),
    ("rows not sorted", lambda: check_sampler_shape_and_order(N5, [0.2, 0.5, 0.9], "add_remove")),
    ("non-uniform within gap", lambda: check_within_gap_uniform("replace_one")),
    ("mode instead of sample", lambda: check_sampler_law(N5, [0.4], 2.0, "replace_one")),
]


@pytest.mark.parametrize(
    ("bug", "check"), CAUGHT_BY, ids=[f"{b}-{i}" for i, (b, _) in enumerate(CAUGHT_BY)]
)
def test_planted_bug_is_caught(bug, check, monkeypatch):
    check()  # passes on the real module
    name, replacement = BUGS[bug]
    monkeypatch.setattr(jes, name, replacement)
    with pytest.raises((AssertionError, FloatingPointError, RuntimeWarning)):
        check()


def test_every_planted_bug_is_exercised():
    assert {b for b, _ in CAUGHT_BY} == set(BUGS)
