"""The ``joint_exp`` mechanism (Gillenwater, Joseph & Kulesza, "Differentially Private
Quantiles", ICML 2021) as wired into the registry: its release's gap-tuple law against the
sampler module's independent brute force at the mechanism's declared ε and neighbouring, the
exact marginal cdfs against samples, and a privacy audit of joint probabilities on every small
neighbouring pair (the ratio of the probabilities of each common cell tuple is at most e^ε),
each with planted bugs it catches.  Fixed seeds; p-value threshold 1e-6."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special, stats
from small_neighbours import small_neighbour_pairs

from mechanisms import registry
from mechanisms.multi import joint_exp as jx
from mechanisms.multi import joint_exp_sampler as jes

P_MIN = 1e-6
VALUES = [0.0, 0.3, 0.5, 1.0]


def release(x, alphas, eps, nb):
    mech = registry.make("joint_exp", epsilon=eps, alphas=alphas, neighbours=nb)
    return mech.release(np.array(x, dtype=float), (0.0, 1.0))


def check_release_law_matches_brute_force(x, alphas, eps, nb):
    got = release(x, alphas, eps, nb).gap_tuple_log_probabilities()
    want = jes.brute_force_gap_tuple_log_probabilities(
        np.sort(np.array(x, dtype=float)), 0.0, 1.0, np.array(alphas), eps, nb
    )
    assert got.keys() == want.keys()
    for t, w in want.items():
        assert (got[t] == w) if math.isinf(w) else abs(got[t] - w) <= 1e-10, (t, got[t], w)


def check_marginal_cdf_matches_samples(nb):
    """Data leaving one long gap, so runs of two outputs in a gap are frequent."""
    r = release([0.1, 0.15, 0.2], [0.7, 0.9], 0.5, nb)
    out = r.sample(20_000, np.random.default_rng(7))
    for j in range(2):
        p = stats.kstest(out[:, j], lambda v, j=j: r.marginal_cdf(j, v)).pvalue
        assert p >= P_MIN, (j, p)


def cell_tuple_log_probabilities(r, x, cuts, m):
    """log P(o lies in the cell tuple τ) for every non-decreasing m-tuple of cells ``cuts``.

    Cells refine the gaps of ``x``; given the gap tuple, the k outputs in a gap of length L are
    sorted uniforms, so P(τ | t) = Π_gaps k! Π_cells (ℓ_c / L)^{k_c} / k_c!.
    """
    gap_lp = r.gap_tuple_log_probabilities()
    edges = np.concatenate(([0.0], np.sort(x), [1.0]))
    lo, hi = cuts[:-1], cuts[1:]
    gap_of = np.searchsorted(edges, 0.5 * (lo + hi), side="right") - 1
    out = {}
    for tau in itertools.combinations_with_replacement(range(lo.size), m):
        t = tuple(int(gap_of[c]) for c in tau)
        lp = gap_lp[t]
        for g in set(t):
            k = t.count(g)
            length = edges[g + 1] - edges[g]
            lp += math.lgamma(k + 1) - k * math.log(length)
        for c in set(tau):
            kc = tau.count(c)
            lp += kc * math.log(hi[c] - lo[c]) - math.lgamma(kc + 1)
        out[tau] = lp
    return out


def check_joint_privacy(nb, alphas, eps):
    grid = np.linspace(0.0, 1.0, 4)
    worst = 0.0
    # every pair with n <= 3 (add/remove) or n <= 2 (replace-one)
    for x, xp in small_neighbour_pairs(VALUES, nb, max_size=3 if nb == "add_remove" else 2):
        cuts = np.union1d(np.union1d(grid, x), xp)
        p = cell_tuple_log_probabilities(release(x, alphas, eps, nb), x, cuts, len(alphas))
        q = cell_tuple_log_probabilities(release(xp, alphas, eps, nb), xp, cuts, len(alphas))
        total = special.logsumexp(list(p.values()))
        assert abs(total) < 1e-9  # the cell tuples partition the output space
        for tau, lp in p.items():
            worst = max(worst, abs(lp - q[tau]))
    assert worst <= eps + 1e-9, (worst, eps)
    return worst


# ------------------------------------------------------------------------------------ tests

SMALL = {"n0": [], "n3_ties": [0.2, 0.2, 0.7], "n5_bounds": [0.0, 0.3, 0.3, 0.9, 1.0]}


@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
@pytest.mark.parametrize("alphas", [[0.5], [0.2, 0.6], [0.1, 0.5, 0.55]])
@pytest.mark.parametrize("x", SMALL.values(), ids=SMALL.keys())
def test_release_law_is_the_brute_force_law(x, alphas, nb):
    check_release_law_matches_brute_force(x, alphas, 1.3, nb)


@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
def test_marginal_cdf_matches_samples(nb):
    check_marginal_cdf_matches_samples(nb)


def test_marginal_cdf_refuses_large_data():
    r = release(np.linspace(0, 1, 400), [0.2, 0.4, 0.6], 1.0, "add_remove")
    with pytest.raises(NotImplementedError):
        r.marginal_cdf(0, 0.5)


@pytest.mark.parametrize(
    ("alphas", "eps"), [([0.5], 1.0), ([0.3, 0.6], 2.0), ([0.2, 0.5, 0.7], 0.8)]
)
@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
def test_joint_probabilities_of_neighbours_differ_by_at_most_e_to_the_eps(nb, alphas, eps):
    worst = check_joint_privacy(nb, alphas, eps)
    assert worst >= 0.3 * eps  # the audit is not vacuous


# ------------------------------------------------------------------------------ planted bugs

_orig_forward = jes.joint_exp_forward
_orig_sensitivity = jes.utility_sensitivity


def _swapped_betainc(a, b, u):
    return special.betainc(b, a, u)


BUGS = {
    "halved sensitivity": (
        jes,
        "utility_sensitivity",
        lambda a, nb: 0.5 * _orig_sensitivity(a, nb),
    ),
    "release at 2ε": (
        jes,
        "joint_exp_forward",
        lambda x, lo, hi, a, eps, nb: _orig_forward(x, lo, hi, a, 2 * eps, nb),
    ),
    "release ignores neighbours": (
        jes,
        "joint_exp_forward",
        lambda x, lo, hi, a, eps, nb: _orig_forward(x, lo, hi, a, eps, "replace_one"),
    ),
    "order statistic's Beta swapped": (jx, "special", SimpleNamespace(betainc=_swapped_betainc)),
}
CAUGHT_BY = [
    ("halved sensitivity", lambda: check_joint_privacy("add_remove", [0.3, 0.6], 2.0)),
    ("release at 2ε", lambda: check_joint_privacy("replace_one", [0.5], 1.0)),
    (
        "release at 2ε",
        lambda: check_release_law_matches_brute_force([0.2, 0.7], [0.4], 1.0, "replace_one"),
    ),
    (
        "release ignores neighbours",
        lambda: check_release_law_matches_brute_force([0.2, 0.7], [0.2, 0.6], 1.0, "add_remove"),
    ),
    ("order statistic's Beta swapped", lambda: check_marginal_cdf_matches_samples("add_remove")),
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
