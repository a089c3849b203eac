"""``approximate_quantiles`` (Kaplan, Schnapp & Stemmer, "Differentially Private Approximate
Quantiles", ICML 2022): the recursion tree (depth ceil(log2(m + 1)), rescaled levels, each
output estimated once, ε per call), m = 1 as the quantile EM at ε, and for m = 2 the exact
joint law by numerical integration: the sampler against it (chi-square) and a privacy audit on
every small neighbouring pair (cell ratios <= e^ε), with planted bugs each check catches.
Fixed seeds; p-value threshold 1e-6."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from scipy import integrate, stats

from mechanisms import registry
from mechanisms.multi import approximate_quantiles as aq

P_MIN = 1e-6


def make(eps, alphas, nb="add_remove"):
    return registry.make("approximate_quantiles", epsilon=eps, alphas=alphas, neighbours=nb)


def tree_depth(nodes, position=0):
    node = nodes[position]
    below = [tree_depth(nodes, c) for c in (node.left, node.right) if c is not None]
    return 1 + max(below, default=0)


def check_tree_structure(m):
    mech = make(1.0, [(j + 1) / (m + 1) for j in range(m)])
    assert tree_depth(mech.nodes) == aq.recursion_depth(m) == math.ceil(math.log2(m + 1))
    assert sorted(node.index for node in mech.nodes) == list(range(m))
    assert all(node.mechanism.epsilon == 1.0 / mech.depth for node in mech.nodes)


# ------------------------------------------------------------ exact law for m = 2 (integration)


def em_gaps(data, lo, hi, alpha, eps):
    """(left ends, lengths, probabilities) of the add/remove quantile EM's gaps on [lo, hi]."""
    edges = np.array([lo, *data, hi])
    lengths = np.diff(edges)
    n = len(data)
    an = float(Fraction(repr(alpha)) * n)
    logw = np.full(n + 1, -np.inf)
    pos = lengths > 0
    logw[pos] = np.log(lengths[pos]) - eps * np.abs(np.arange(n + 1) - an)[pos] / (
        2 * max(alpha, 1 - alpha)
    )
    w = np.exp(logw - logw.max())
    return edges[:-1], lengths, w / w.sum()


def em_cdf(data, lo, hi, alpha, eps, t):
    left, lengths, prob = em_gaps(data, lo, hi, alpha, eps)
    frac = np.clip((t - left) / np.where(lengths > 0, lengths, 1.0), 0.0, 1.0)
    return float(np.sum(prob * np.where(lengths > 0, frac, t >= left)))


@cache
def exact_cells(x, alphas, eps_call, cuts):
    """P(v in cell a, w in cell c) for m = 2: v the root's EM (level α_1) on [0, 1], w the
    right call's EM (level (α_2 - α_1)/(1 - α_1)) on [v, 1] with the data above v."""
    a1, a2 = alphas
    beta = (a2 - a1) / (1 - a1)
    left, lengths, prob = em_gaps(list(x), 0.0, 1.0, a1, eps_call)
    k = len(cuts) - 1
    out = np.zeros((k, k))
    for i in range(len(x) + 1):
        if lengths[i] <= 0:
            continue
        density = prob[i] / lengths[i]
        above = [v for v in x[i:]]  # sorted data: the points strictly above any v in gap i

        def conditional(v, t, above=above):
            return em_cdf([u for u in above if u > v], v, 1.0, beta, eps_call, t)

        for a, c in itertools.product(range(k), range(k)):
            s0, s1 = max(cuts[a], left[i]), min(cuts[a + 1], left[i] + lengths[i])
            if s1 <= s0 or cuts[c + 1] <= s0:
                continue
            pts = [p for p in (cuts[c], cuts[c + 1]) if s0 < p < s1]
            value, _ = integrate.quad(
                lambda v, c=c: conditional(v, cuts[c + 1]) - conditional(v, cuts[c]),
                s0,
                s1,
                points=pts or None,
                epsabs=1e-13,
                epsrel=1e-11,
                limit=200,
            )
            out[a, c] += density * value
    return out


CUTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def check_law_for_m2(x, alphas, eps):
    mech = make(eps, list(alphas))
    release = mech.release(list(x), (0.0, 1.0))
    out = release.sample(4000, np.random.default_rng(12))
    exact = exact_cells(tuple(sorted(x)), tuple(alphas), eps / 2, CUTS)
    assert abs(exact.sum() - 1) < 1e-9
    ia = np.clip(np.searchsorted(CUTS, out[:, 0], side="right") - 1, 0, 3)
    ic = np.clip(np.searchsorted(CUTS, out[:, 1], side="right") - 1, 0, 3)
    observed = np.zeros((4, 4))
    np.add.at(observed, (ia, ic), 1)
    keep = exact.ravel() * 4000 >= 5
    obs, exp = observed.ravel()[keep], exact.ravel()[keep] * 4000
    obs, exp = np.append(obs, 4000 - obs.sum()), np.append(exp, 4000 - exp.sum())
    assert stats.chisquare(obs, exp).pvalue >= P_MIN


VALUES = [0.0, 0.3, 0.5, 1.0]


def check_privacy_for_m2(nb, alphas, eps):
    """max over cells of |log P_X - log P_X'| <= ε for every neighbouring pair (n <= 2).

    The exact law uses the per-call ε of the declared guarantee's analysis: ε/2 (two depths)
    for add/remove, ε/4 for replace-one; the mechanism's own per-call ε is read from it, so a
    planted bug in it shows as a larger ratio."""
    eps_call = make(eps, list(alphas), nb).call_epsilon
    pairs = []
    for n in range(3):
        for xs in itertools.combinations_with_replacement(VALUES, n):
            if nb == "add_remove":
                pairs += [(xs, tuple(sorted([*xs, v]))) for v in VALUES]
            else:
                pairs += [
                    (xs, tuple(sorted([*xs[:i], v, *xs[i + 1 :]])))
                    for i in range(n)
                    for v in VALUES
                ]
    worst = 0.0
    for x, xp in pairs:
        p = exact_cells(x, tuple(alphas), eps_call, CUTS)
        q = exact_cells(xp, tuple(alphas), eps_call, CUTS)
        both = (p > 1e-12) & (q > 1e-12)
        assert np.array_equal(p > 1e-12, q > 1e-12)
        worst = max(worst, float(np.max(np.abs(np.log(p[both]) - np.log(q[both])))))
    assert worst <= eps + 1e-7, (worst, eps)
    return worst


# ------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 8, 15, 16, 40])
def test_recursion_tree(m):
    check_tree_structure(m)


def test_rescaled_levels_and_call_epsilon():
    mech = make(3.0, [0.1, 0.2, 0.5, 0.8])  # middle level: the 2nd (0.2)
    root = mech.nodes[0]
    assert (root.index, root.level) == (1, 0.2)
    levels = {node.index: node.level for node in mech.nodes}
    assert levels[0] == pytest.approx(0.5) and levels[2] == pytest.approx(0.375)
    # right of 0.2: 0.375 and 0.75; right of 0.375 within them: (0.75 - 0.375) / (1 - 0.375)
    assert levels[3] == pytest.approx(0.6)
    assert mech.depth == 3 and mech.call_epsilon == 1.0
    assert make(3.0, [0.1, 0.2, 0.5, 0.8], "replace_one").call_epsilon == 0.5


def test_one_level_is_the_quantile_em_at_epsilon():
    x = np.random.default_rng(2).uniform(size=30)
    out = make(1.5, [0.3]).release(x, (0.0, 1.0)).sample(3000, np.random.default_rng(3))[:, 0]
    em = registry.make("quantile_em", epsilon=1.5, alpha=0.3).release(x, (0.0, 1.0))
    assert stats.kstest(out, em.cdf).pvalue >= P_MIN


def test_law_for_two_levels_matches_numerical_integration():
    check_law_for_m2((0.1, 0.2, 0.6), (0.3, 0.7), 3.0)


@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
def test_privacy_for_two_levels(nb):
    worst = check_privacy_for_m2(nb, (0.4, 0.7), 2.0)
    assert worst >= 0.2  # the audit is not vacuous


def test_zero_width_subdomain_outputs_its_end(monkeypatch):
    """If the root's draw lands on a bound, the calls on the empty side output that bound."""
    release = make(1.0, [0.2, 0.5, 0.8]).release([0.4, 0.6], (0.0, 1.0))
    from mechanisms.sampling.piecewise import PiecewiseUniformRelease

    monkeypatch.setattr(
        PiecewiseUniformRelease, "sample", lambda self, size, rng: np.array([self.lower])
    )
    np.testing.assert_array_equal(release.sample(1, np.random.default_rng(0)), [[0.0, 0.0, 0.0]])


# ------------------------------------------------------------------------------ planted bugs

BUGS = {
    "ε not split over the depths": (aq, "depth_epsilon", lambda eps, m, nb: eps),
    "depth ceil(log2 m)": (aq, "recursion_depth", lambda m: max(1, math.ceil(math.log2(m)))),
    "levels above not rescaled": (aq, "rescale_above", lambda levels, p: levels),
}
CAUGHT_BY = [
    ("ε not split over the depths", lambda: check_privacy_for_m2("add_remove", (0.4, 0.7), 2.0)),
    ("depth ceil(log2 m)", lambda: check_tree_structure(2)),
    ("depth ceil(log2 m)", lambda: check_privacy_for_m2("add_remove", (0.4, 0.7), 2.0)),
    ("levels above not rescaled", lambda: check_law_for_m2((0.1, 0.2, 0.6), (0.3, 0.7), 3.0)),
]


@pytest.mark.parametrize(
    ("bug", "check"), CAUGHT_BY, ids=[f"{b}-{i}" for i, (b, _) in enumerate(CAUGHT_BY)]
)
def test_planted_bug_is_caught(bug, check, monkeypatch):
    check()
    module, name, replacement = BUGS[bug]
    monkeypatch.setattr(module, name, replacement)
    with pytest.raises(AssertionError):
        check()


def test_every_planted_bug_is_exercised():
    assert {b for b, _ in CAUGHT_BY} == set(BUGS)
