"""``tree_quantiles`` and ``tree_quantiles_gaussian``: the exact counts against a per-node
count, the count vector's sensitivity on small neighbouring pairs, the noise scale against the
formulas and the noisy counts' law (KS), the read-out rule on fixed noise (a worked example and
a naive loop), the lazily noised sampler against the read-out of whole noisy trees, and planted
bugs each check catches.  Fixed seeds; p-value threshold 1e-6."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mechanisms import registry
from mechanisms.multi import tree
from mechanisms.noise.gaussian import gaussian_delta

P_MIN = 1e-6


def make(name="tree_quantiles", eps=1.0, nb="add_remove", **options):
    delta = 1e-6 if name == "tree_quantiles_gaussian" else None
    return registry.make(name, epsilon=eps, delta=delta, neighbours=nb, **options)


def naive_counts(x, lower, upper, b, h):
    """Per node: the points in [a + i w, a + (i + 1) w), the last node closed at b."""
    out = []
    for level in range(1, h + 1):
        w = (upper - lower) / b**level
        counts = []
        for i in range(b**level):
            lo, hi = lower + i * w, lower + (i + 1) * w
            last = i == b**level - 1
            counts.append(sum(1 for v in x if lo <= v < hi or (last and v == hi)))
        out.append(np.array(counts, dtype=float))
    return out


def naive_read_out(noisy, alpha, lower, upper, b):
    """The read-out rule as stated in the module docstring, one level at a time in a loop."""
    node, depth, q = 0, 0, alpha
    for counts in noisy:
        c = [max(0.0, float(v)) for v in counts[node * b : node * b + b]]
        total = sum(c)
        if total <= 0:
            break
        acc = 0.0
        for k, ck in enumerate(c):
            if acc + ck >= q * total:
                q = min(1.0, max(0.0, (q * total - acc) / ck))
                node, depth = node * b + k, depth + 1
                break
            acc += ck
    width = (upper - lower) / b**depth
    return lower + (node + q) * width


# ---------------------------------------------------------------- checks (reused by planted bugs)


def check_noise_scale(name, nb):
    mech = make(name, eps=0.8, nb=nb, branching=4, height=3)
    factor = 2 if nb == "replace_one" else 1
    if name == "tree_quantiles":
        assert mech.noise_scale == pytest.approx(factor * 3 / 0.8, rel=1e-15)
        law = stats.laplace(scale=factor * 3 / 0.8)
    else:
        sigma = mech.noise_scale
        l2 = math.sqrt(factor * 3)
        assert gaussian_delta(sigma, 0.8, l2) <= 1e-6 < gaussian_delta(sigma * (1 - 1e-6), 0.8, l2)
        law = stats.norm(scale=sigma)
    release = mech.release(np.random.default_rng(1).uniform(size=40), (0.0, 1.0))
    rng = np.random.default_rng(2)
    noise = np.concatenate(
        [
            np.concatenate(
                [nc - c for nc, c in zip(release.noisy_counts(rng), release.counts, strict=True)]
            )
            for _ in range(60)
        ]
    )
    assert stats.kstest(noise, law.cdf).pvalue >= P_MIN


WORKED_LEVEL1 = np.array([2.0, -0.5, 1.0])
WORKED_LEVEL2 = np.array([1.0, 1.0, 0.0, 5.0, 5.0, 5.0, -1.0, -2.0, 0.0])


def check_worked_example():
    """B = 3, h = 2 on [0, 9].  Level 1 clamps to (2, 0, 1): α = 1/2 → child 0 with q = 3/4,
    then (1, 1, 0) → leaf 1 with q = 1/2: 1.5.  α = 2/3 → C_1 = 2 >= 2: child 0 with q = 1,
    then leaf 1 with q = 1: 2.0 (not the empty child 1, nor child 2).  α = 0.9 → child 2 with
    q = 0.7, whose children clamp to 0: stop there, 6 + 0.7 · 3 = 8.1."""
    got = tree.read_out([WORKED_LEVEL1, WORKED_LEVEL2], np.array([0.5, 2 / 3, 0.9]), 0.0, 9.0, 3)
    np.testing.assert_allclose(got, [1.5, 2.0, 8.1], rtol=0, atol=1e-12)


def check_read_out_matches_naive_loop():
    rng = np.random.default_rng(4)
    alphas = np.sort(rng.uniform(size=6))
    for _ in range(200):
        noisy = [rng.integers(-3, 6, size=3**level).astype(float) for level in (1, 2, 3)]
        got = tree.read_out(noisy, alphas, -1.0, 2.0, 3)
        want = [naive_read_out(noisy, a, -1.0, 2.0, 3) for a in alphas]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        assert np.all(np.diff(got) >= 0)


def small_release(eps=0.5):
    x = np.random.default_rng(6).beta(2, 5, 60)
    return make(eps=eps, branching=4, height=3, alphas=[0.2, 0.5, 0.52, 0.8]).release(x, (0.0, 1.0))


def check_lazy_sampler_is_the_whole_tree_read_out():
    release = small_release()
    lazy = release.sample(3000, np.random.default_rng(8))
    rng = np.random.default_rng(9)
    alphas = np.array(release.alphas)
    whole = np.array(
        [tree.read_out(release.noisy_counts(rng), alphas, 0.0, 1.0, 4) for _ in range(3000)]
    )
    for j in range(4):
        assert stats.ks_2samp(lazy[:, j], whole[:, j]).pvalue >= P_MIN, j


def check_rows_sorted():
    out = small_release(eps=0.2).sample(3000, np.random.default_rng(10))
    assert np.all(np.diff(out, axis=1) >= 0)


# ------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize(("b", "h"), [(2, 1), (3, 2), (4, 3)])
def test_counts_are_per_node_counts(b, h):
    x = [-2.0, -2.0, -1.0, 0.0, 0.5, 1.0, 1.0 + 1 / 9, 2.9, 3.0, 4.0, 4.0]
    release = make(branching=b, height=h).release(x, (-2.0, 4.0))
    clipped = np.clip(x, -2.0, 4.0)
    for got, want in zip(release.counts, naive_counts(clipped, -2.0, 4.0, b, h), strict=True):
        np.testing.assert_array_equal(got, want)
    assert [c.size for c in release.counts] == [b**level for level in range(1, h + 1)]


@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
def test_count_vector_sensitivity_on_small_neighbours(nb):
    values = [0.0, 0.2, 0.5, 0.74, 1.0]
    b, h = 2, 3
    mech = make(nb=nb, branching=b, height=h)
    l1_bound = tree.count_sensitivity(h, mech.neighbouring, 1)
    l2_bound = tree.count_sensitivity(h, mech.neighbouring, 2)
    worst1 = worst2 = 0.0
    for n in range(3):
        for xs in itertools.combinations_with_replacement(values, n):
            if nb == "add_remove":
                others = [[*xs, v] for v in values]
            else:
                others = [[*xs[:i], v, *xs[i + 1 :]] for i in range(n) for v in values]
            a = np.concatenate(mech.release(list(xs), (0.0, 1.0)).counts)
            for other in others:
                d = a - np.concatenate(mech.release(other, (0.0, 1.0)).counts)
                worst1, worst2 = (
                    max(worst1, np.abs(d).sum()),
                    max(worst2, float(np.sqrt((d**2).sum()))),
                )
    assert worst1 == l1_bound and worst2 == pytest.approx(l2_bound)


@pytest.mark.parametrize("nb", ["add_remove", "replace_one"])
@pytest.mark.parametrize("name", ["tree_quantiles", "tree_quantiles_gaussian"])
def test_noise_scale_and_law(name, nb):
    check_noise_scale(name, nb)


def test_read_out_worked_example():
    check_worked_example()


def test_read_out_matches_a_naive_loop():
    check_read_out_matches_naive_loop()


def test_sample_with_zero_noise_is_the_read_out_of_the_exact_counts(monkeypatch):
    release = small_release()
    monkeypatch.setattr(release, "draw_noise", lambda rng, shape: np.zeros(shape))
    out = release.sample(5, np.random.default_rng(0))
    want = tree.read_out(release.counts, np.array(release.alphas), 0.0, 1.0, 4)
    np.testing.assert_allclose(out, np.broadcast_to(want, (5, 4)), rtol=0, atol=1e-15)
    # with exact counts the read-out is within a leaf of the true quantiles
    assert np.all(np.abs(want - release.true_value) <= 1 / 64)


def test_empty_data_reads_the_levels_off_the_root_when_all_counts_clamp_to_zero(monkeypatch):
    release = make(alphas=[0.1, 0.7]).release([], (2.0, 4.0))
    monkeypatch.setattr(release, "draw_noise", lambda rng, shape: -np.ones(shape))
    np.testing.assert_allclose(release.sample(2, np.random.default_rng(0)), [[2.2, 3.4]] * 2)


def test_lazy_sampler_is_the_whole_tree_read_out():
    check_lazy_sampler_is_the_whole_tree_read_out()


def test_rows_are_sorted_without_sorting():
    check_rows_sorted()


# ------------------------------------------------------------------------------ planted bugs


def _strict(self, children, branching):
    """The rule with the first child whose C_k > q T (instead of >=): ties go to the next."""
    c = np.maximum(children, 0.0)
    cum = np.cumsum(c, axis=-1)
    total = cum[..., -1]
    go = self.active & (total > 0)
    target = self.q * total
    k = np.minimum(np.sum(cum <= target[..., None], axis=-1), branching - 1)
    below = np.take_along_axis(cum, np.maximum(k - 1, 0)[..., None], axis=-1)[..., 0]
    before = np.where(k > 0, below, 0.0)
    chosen = np.take_along_axis(c, k[..., None], axis=-1)[..., 0]
    ratio = np.divide(target - before, chosen, out=np.zeros_like(target), where=go & (chosen > 0))
    self.q = np.where(go, np.clip(ratio, 0.0, 1.0), self.q)
    self.node = np.where(go, self.node * branching + k, self.node)
    self.depth = np.where(go, self.depth + 1, self.depth)
    self.active = go


BUGS = {
    "sensitivity of one level": (tree, "count_sensitivity", lambda h, nb, norm: 1.0),
    "ties go to the next child": (tree.Descent, "step", _strict),
    "negative counts not clamped": (tree, "clamp", lambda counts: counts),
    "noise not shared within a tree": (
        tree,
        "visit_keys",
        lambda t, node, parents: np.arange(t.size),
    ),
}
CAUGHT_BY = [
    ("sensitivity of one level", lambda: check_noise_scale("tree_quantiles", "add_remove")),
    (
        "sensitivity of one level",
        lambda: check_noise_scale("tree_quantiles_gaussian", "replace_one"),
    ),
    ("ties go to the next child", check_worked_example),
    ("negative counts not clamped", check_worked_example),
    ("negative counts not clamped", check_read_out_matches_naive_loop),
    ("noise not shared within a tree", check_rows_sorted),
    ("noise not shared within a tree", check_lazy_sampler_is_the_whole_tree_read_out),
]


@pytest.mark.parametrize(
    ("bug", "check"), CAUGHT_BY, ids=[f"{b}-{i}" for i, (b, _) in enumerate(CAUGHT_BY)]
)
def test_planted_bug_is_caught(bug, check, monkeypatch):
    check()
    owner, name, replacement = BUGS[bug]
    monkeypatch.setattr(owner, name, replacement)
    with pytest.raises(AssertionError):
        check()


def test_every_planted_bug_is_exercised():
    assert {b for b, _ in CAUGHT_BY} == set(BUGS)
