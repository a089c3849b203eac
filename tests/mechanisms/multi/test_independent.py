"""The independent per-level methods (``ind_exp``, ``ind_duff``, ``app_ind_exp``,
``smooth_laplace_per_level``): each level's exact cdf against an independent computation of the
quantile EM at ε/m, the sorted row's marginal cdfs against enumeration over subsets and against
samples, the per-level privacy on every small neighbouring pair (cell ratios <= e^{ε/m}, or
e^{ε₀} for app_ind_exp), with planted bugs each check catches.  Fixed seeds."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from small_neighbours import small_neighbour_pairs

from mechanisms import registry
from mechanisms.core.registration import configure as real_configure
from mechanisms.multi import independent
from mechanisms.multi import release as release_module
from mechanisms.multi.composition import per_level_epsilon

P_MIN = 1e-6
VALUES = [0.0, 0.3, 0.5, 1.0]


def make(name, eps, alphas, nb):
    delta = 1e-6 if registry.get(name).requires_delta else None
    return registry.make(name, epsilon=eps, delta=delta, alphas=alphas, neighbours=nb)


def em_cdf(x, alpha, eps, nb, grid):
    """Independent: the quantile EM with P(gap i) ∝ L_i exp(-ε |i - α n| / (2Δ)),
    Δ = max(α, 1 - α) (add/remove) or 1 (replace-one), α n exact, piecewise-linear cdf."""
    x = sorted(x)
    n = len(x)
    edges = [0.0, *x, 1.0]
    delta_u = 1.0 if nb == "replace_one" else max(alpha, 1 - alpha)
    an = Fraction(repr(alpha)) * n
    logw = [
        math.log(edges[i + 1] - edges[i]) - eps * float(abs(i - an)) / (2 * delta_u)
        if edges[i + 1] > edges[i]
        else -math.inf
        for i in range(n + 1)
    ]
    top = max(logw)
    w = [math.exp(v - top) for v in logw]
    total = math.fsum(w)
    out = []
    for g in grid:
        acc = 0.0
        for i in range(n + 1):
            if g >= edges[i + 1]:
                acc += w[i]
            elif g > edges[i]:
                acc += w[i] * (g - edges[i]) / (edges[i + 1] - edges[i])
        out.append(acc / total)
    return np.array(out)


GRID = np.linspace(0.0, 1.0, 41)


def check_level_cdf_is_the_em_at_eps_over_m(x, alphas, eps, nb):
    r = make("ind_exp", eps, alphas, nb).release(x, (0.0, 1.0))
    for j, a in enumerate(alphas):
        want = em_cdf(x, a, eps / len(alphas), nb, GRID)
        assert np.max(np.abs(r.level_cdf(j, GRID) - want)) <= 1e-12, (j, a)


def check_marginal_is_the_order_statistic(name, x, alphas, eps, nb):
    """P(o_j <= g) = Σ over subsets S of size >= j + 1 of Π_S F_k Π_not S (1 - F_k)."""
    r = make(name, eps, alphas, nb).release(x, (0.0, 1.0))
    f = np.array([r.level_cdf(k, GRID) for k in range(len(alphas))])
    m = len(alphas)
    for j in range(m):
        want = np.zeros(GRID.size)
        for mask in itertools.product([0, 1], repeat=m):
            if sum(mask) >= j + 1:
                term = np.ones(GRID.size)
                for k, bit in enumerate(mask):
                    term *= f[k] if bit else 1 - f[k]
                want += term
        assert np.max(np.abs(r.marginal_cdf(j, GRID) - want)) <= 1e-12, j


def check_marginal_matches_samples(name, nb):
    r = make(name, 1.5, [0.2, 0.5, 0.8], nb).release([0.1, 0.3, 0.35, 0.9], (0.0, 1.0))
    out = r.sample(20_000, np.random.default_rng(11))
    for j in range(3):
        p = stats.kstest(out[:, j], lambda v, j=j: r.marginal_cdf(j, v)).pvalue
        assert p >= P_MIN, (j, p)


def check_level_privacy(name, nb, alphas, eps):
    """Every level's cell probabilities (cells: a grid refined by both datasets' points)
    differ by at most e^{level ε} between neighbours."""
    mech = make(name, eps, alphas, nb)
    m = len(alphas)  # the share the guarantee rests on, not the mechanism's own attribute
    bound = per_level_epsilon(eps, 1e-6, m) if name == "app_ind_exp" else eps / m
    worst = 0.0
    for x, xp in small_neighbour_pairs(VALUES, nb, max_size=3):
        cuts = np.union1d(np.union1d(np.linspace(0, 1, 7), x), xp)
        r, rp = mech.release(x, (0.0, 1.0)), mech.release(xp, (0.0, 1.0))
        for j in range(len(alphas)):
            p, q = np.diff(r.level_cdf(j, cuts)), np.diff(rp.level_cdf(j, cuts))
            assert np.all(p > 0) and np.all(q > 0)
            worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
    assert worst <= bound + 1e-9, (worst, bound)
    return worst


# ------------------------------------------------------------------------------------ tests

DATA = {
    "n0": [],
    "n4_ties_bounds": [0.0, 0.2, 0.2, 1.0],
    "n7": [0.05, 0.1, 0.3, 0.31, 0.6, 0.7, 0.95],
}


@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
@pytest.mark.parametrize("x", DATA.values(), ids=DATA.keys())
def test_level_cdf_is_the_quantile_em_at_eps_over_m(x, nb):
    check_level_cdf_is_the_em_at_eps_over_m(x, [0.15, 0.5, 0.8], 2.0, nb)


@pytest.mark.parametrize("name", ["ind_exp", "ind_duff", "smooth_laplace_per_level"])
def test_marginal_cdf_is_the_order_statistic_of_the_levels(name):
    check_marginal_is_the_order_statistic(
        name, DATA["n7"], [0.2, 0.4, 0.45, 0.9], 1.0, "add_remove"
    )


@pytest.mark.parametrize("name", ["ind_exp", "app_ind_exp"])
def test_marginal_cdf_matches_samples(name):
    check_marginal_matches_samples(name, "replace_one")


@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
@pytest.mark.parametrize("name", ["ind_exp", "ind_duff", "app_ind_exp"])
def test_each_level_is_private_at_its_share(name, nb):
    worst = check_level_privacy(name, nb, [0.25, 0.6], 1.5)
    assert worst >= 0.25 * make(name, 1.5, [0.25, 0.6], nb).level_epsilon  # not vacuous


def test_level_shares():
    ind = make("ind_exp", 1.0, [0.1, 0.2, 0.3, 0.4], "add_remove")
    assert ind.level_epsilon == 0.25 and ind.level_delta is None
    assert all(level.epsilon == 0.25 for level in ind.levels)
    assert [level.alpha for level in ind.levels] == [0.1, 0.2, 0.3, 0.4]
    slp = make("smooth_laplace_per_level", 1.0, [0.1, 0.2, 0.3, 0.4], "replace_one")
    assert (slp.level_epsilon, slp.level_delta) == (0.25, 0.25e-6)
    assert all(level.neighbouring.value == "replace_one" for level in slp.levels)
    app = make("app_ind_exp", 1.0, [0.1, 0.2, 0.3, 0.4], "add_remove")
    assert app.level_epsilon == per_level_epsilon(1.0, 1e-6, 4) > 0.25
    assert app.guarantee.delta == 1e-6
    assert str(round(app.level_epsilon, 4)) in app.guarantee.source


# ------------------------------------------------------------------------------ planted bugs


def _no_neighbours(cls, **kwargs):
    return real_configure(cls, **{**kwargs, "neighbours": "add_remove"})


BUGS = {
    "no split of ε": (independent, "basic_share", lambda eps, delta, m: (eps, delta)),
    "levels ignore neighbours": (independent, "configure", _no_neighbours),
    "marginal = unsorted level": (release_module, "order_statistic_cdf", lambda cdfs, j: cdfs[j]),
}
CAUGHT_BY = [
    (
        "no split of ε",
        lambda: check_level_cdf_is_the_em_at_eps_over_m(DATA["n7"], [0.15, 0.5], 2.0, "add_remove"),
    ),
    ("no split of ε", lambda: check_level_privacy("ind_exp", "add_remove", [0.25, 0.6], 1.5)),
    ("no split of ε", lambda: check_level_privacy("ind_duff", "replace_one", [0.25, 0.6], 1.5)),
    (
        "levels ignore neighbours",
        lambda: check_level_cdf_is_the_em_at_eps_over_m(
            DATA["n7"], [0.15, 0.5], 2.0, "replace_one"
        ),
    ),
    ("marginal = unsorted level", lambda: check_marginal_matches_samples("ind_exp", "add_remove")),
]


@pytest.mark.parametrize(
    ("bug", "check"), CAUGHT_BY, ids=[f"{b}-{i}" for i, (b, _) in enumerate(CAUGHT_BY)]
)
def test_planted_bug_is_caught(bug, check, monkeypatch):
    check()
    module, name, replacement = BUGS[bug]
    monkeypatch.setattr(module, name, replacement)
    if module is release_module:  # imported by name into independent
        monkeypatch.setattr(independent, name, replacement)
    with pytest.raises(AssertionError):
        check()


def test_every_planted_bug_is_exercised():
    assert {b for b, _ in CAUGHT_BY} == set(BUGS)


@pytest.mark.parametrize("m", [1, 4, 9])
def test_laplace_ln_per_level_spends_the_zcdp_of_one_laplace_ln(m: int) -> None:
    """ρ adds up (Bun & Steinke 2016, Lemma 2.3): m levels at ε/√m are ε²/2-zCDP, reported
    as one LaplaceLN at ε would be; a level at ε/m (basic composition's share) would not."""
    whole = registry.make("laplace_ln", epsilon=1.5, delta=1e-6)
    per_level = registry.make("laplace_ln_per_level", epsilon=1.5, delta=1e-6, m=m)
    rhos = [level.guarantee.rho for level in per_level.levels]
    assert math.fsum(rhos) == pytest.approx(whole.guarantee.rho, rel=1e-12)
    assert per_level.guarantee.rho == whole.guarantee.rho
    assert per_level.guarantee.epsilon == whole.guarantee.epsilon
    assert per_level.guarantee.delta == 1e-6 and "Lemma 2.3" in per_level.guarantee.source
