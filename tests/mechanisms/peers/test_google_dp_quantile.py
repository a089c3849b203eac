"""Google's quantile tree through python-dp (``google_dp_quantile``): what it computes, its
accuracy and bounds, its guarantee and inputs.  Its output law has no closed form (no cdf)
and its generator cannot be seeded, so the draws are checked by what holds for every draw:
the range, and at large ε (Laplace noise of scale h/ε rounded away) the noise-free read-out
of the tree, replicated here from ``quantile-tree.h``."""

from __future__ import annotations

import functools
import math
import subprocess
import sys

import numpy as np
import pytest
from harness_mechanisms import PROJECT_ROOT

from mechanisms import Neighbouring

NORMAL = np.random.default_rng(3).normal(size=2000)
BOUNDS = (-5.0, 5.0)


def google():
    pytest.importorskip("pydp")
    from mechanisms.peers.google_dp_quantile import GoogleDPQuantile

    return GoogleDPQuantile


def tree_counts(
    x: np.ndarray, lower: float, upper: float, height: int, branching: int
) -> list[np.ndarray]:
    """The exact counts of depths 1..h of Google's tree (``quantile-tree.h``): leaf
    ``int((x - a)/(b - a)·(L - 1))`` of ``L = B^h`` for the clamped point, and every ancestor
    but the root."""
    leaves = branching**height
    leaf = ((np.clip(x, lower, upper) - lower) / (upper - lower) * (leaves - 1)).astype(np.int64)
    levels = [np.bincount(leaf, minlength=leaves)]
    for _ in range(height - 1):
        levels.append(levels[-1].reshape(-1, branching).sum(axis=1))
    return levels[::-1]


def read_out(
    levels: list[np.ndarray], lower: float, upper: float, alpha: float, branching: int
) -> float:
    """``QuantileTree<double>::Privatized::GetQuantile`` on the (noisy) counts ``levels``
    (depths 1..h), line by line: ``alpha`` clamped to [0.005, 0.995]; at each node the
    children below 0.005 of their total count as 0, the walk goes to the first child whose
    running share reaches ``q - 1e-6``, with ``q`` rescaled to it; the output interpolates
    the range of the node where the walk ends at ``q``."""
    leaves = levels[-1].size
    q, first, span = min(max(alpha, 0.005), 0.995), 0, leaves  # node: leaves [first, first + span)
    for counts in levels:
        base = first // (span // branching)
        children = [float(c) for c in counts[base : base + branching]]
        total = sum(children)
        corrected = sum(c for c in children if c >= total * 0.005)
        if total <= 0 or corrected <= 0:
            break
        partial = 0.0
        for i, count in enumerate(children):
            partial += count if count >= total * 0.005 else 0.0
            if partial / corrected >= q - 1e-6:
                q = (q - (partial - count) / corrected) / (count / corrected)
                q = min(max(q, 0.0), 1.0)
                span //= branching
                first = (base + i) * span
                break
    left, right = first / leaves, (first + span) / leaves
    low, high = left * upper + (1 - left) * lower, right * upper + (1 - right) * lower
    return (1 - q) * low + q * high


def noise_free_read_out(
    x: np.ndarray, lower: float, upper: float, alpha: float, height: int, branching: int
) -> float:
    """The read-out of the exact tree (what every draw is at huge ε)."""
    return read_out(tree_counts(x, lower, upper, height, branching), lower, upper, alpha, branching)


def test_missing_pydp_hides_it_and_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['pydp'] = None\n"
        "import mechanisms\n"
        "from mechanisms.peers.google_dp_quantile import GoogleDPQuantile\n"
        "assert 'google_dp_quantile' not in mechanisms.available()\n"
        "calls = [lambda: mechanisms.get('google_dp_quantile'),\n"
        "         lambda: GoogleDPQuantile(epsilon=1.0)]\n"
        "for call in calls:\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as err:\n"
        "        print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert "needs the optional package 'pydp', part of the extra 'peers'" in line


def test_installed_pydp_is_found_by_the_builtin_discovery() -> None:
    pytest.importorskip("pydp")
    code = (
        "import mechanisms\n"
        "assert 'google_dp_quantile' in mechanisms.available()\n"
        "print(mechanisms.make('google_dp_quantile', epsilon=1.0, branching=10))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "GoogleDPQuantile(epsilon=1, alpha=0.5, height=4, branching=10)"


# ------------------------------------------------------------------ what it computes


@pytest.mark.parametrize("alpha", [0.001, 0.1, 0.3, 0.5, 0.9])
@pytest.mark.parametrize(("height", "branching"), [(4, 16), (3, 10), (8, 3)])
@pytest.mark.parametrize("bounds", [BOUNDS, (-1.0, 2.0)])
def test_at_large_epsilon_it_is_the_noise_free_read_out_of_the_tree(
    alpha: float, height: int, branching: int, bounds: tuple[float, float]
) -> None:
    """ε = 1e6: noise of scale h/ε rounds to 0 on the integer counts, so every draw is the
    read-out of the exact tree: the algorithm of the module docstring, to the last bit."""
    release = google()(epsilon=1e6, alpha=alpha, height=height, branching=branching).release(
        NORMAL, bounds
    )
    expected = noise_free_read_out(NORMAL, *bounds, alpha, height, branching)
    np.testing.assert_allclose(release.sample(5, np.random.default_rng(0)), expected, rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9])
def test_at_large_epsilon_estimates_are_near_the_true_quantile(alpha: float) -> None:
    """Within 0.03 of the alpha-quantile of 2000 normal points on [-5, 5], noise-free: the
    error is the tree's own, mostly its dropping of children below 0.5% of their siblings
    (0.02 at alpha = 0.9, where the upper tail is dropped; a leaf is 1.5e-4 wide)."""
    release = google()(epsilon=1e4, alpha=alpha).release(NORMAL, BOUNDS)
    truth = np.quantile(NORMAL, alpha, method="inverted_cdf")
    assert release.true_value == truth
    sample = release.sample(200, np.random.default_rng(0))
    assert np.abs(sample - truth).max() < 0.03


def test_quantiles_near_0_or_1_are_clamped_by_the_library() -> None:
    """Google's ClampQuantile: alpha = 0.001 is read as the 0.005-quantile (documented)."""
    low, clamped = (
        google()(epsilon=1e6, alpha=alpha)
        .release(NORMAL, BOUNDS)
        .sample(3, np.random.default_rng(0))
        for alpha in (0.001, 0.005)
    )
    np.testing.assert_array_equal(low, clamped)
    assert abs(low[0] - np.quantile(NORMAL, 0.001, method="inverted_cdf")) > 0.4


@pytest.mark.parametrize("epsilon", [1e-3, 1.0, 1e6])
@pytest.mark.parametrize("where", ["below", "above", "normal"])
def test_draws_respect_the_bounds(epsilon: float, where: str) -> None:
    """Data clipped to [a, b] (all below, all above, or spread): every draw in [a, b], and at
    large ε data piled at a bound give an estimate within a leaf of it."""
    lower, upper = 0.1, 0.7
    data = {"below": np.full(300, -3.0), "above": np.full(300, 9.0), "normal": NORMAL}[where]
    release = google()(epsilon=epsilon, alpha=0.5).release(data, (lower, upper))
    sample = release.sample(500, np.random.default_rng(0))
    assert sample.shape == (500,) and sample.dtype == np.float64
    assert ((lower <= sample) & (sample <= upper)).all()
    leaf = (upper - lower) / 16**4
    if epsilon == 1e6 and where == "above":
        assert (sample >= upper - 2 * leaf).all()
    if epsilon == 1e6 and where == "below":
        assert (sample <= lower + 2 * leaf).all()


def test_the_release_is_a_distribution_without_a_cdf() -> None:
    release = google()(epsilon=1.0, alpha=0.3).release(NORMAL, (-2.5, 3.0))
    assert (release.lower, release.upper, release.n) == (-2.5, 3.0, NORMAL.size)
    assert release.true_value == np.quantile(np.clip(NORMAL, -2.5, 3.0), 0.3, method="inverted_cdf")
    with pytest.raises(NotImplementedError, match="no closed form"):
        release.cdf(0.0)
    for size in (0, 1):
        assert release.sample(size, np.random.default_rng(0)).shape == (size,)
    first, second = (release.sample(20, np.random.default_rng(3)) for _ in range(2))
    assert not np.array_equal(first, second)  # the library's own generator: the seed is unused
    empty = google()(epsilon=1.0).release([], (-1.0, 3.0)).sample(50, np.random.default_rng(0))
    assert ((empty >= -1.0) & (empty <= 3.0)).all()


# ------------------------------------------------------------------ guarantee and inputs


def test_the_guarantee_is_pure_dp_for_add_remove() -> None:
    mechanism = google()(epsilon=0.7, height=3, branching=8)
    guarantee = mechanism.guarantee
    assert (guarantee.epsilon, guarantee.delta) == (0.7, 0.0)
    assert guarantee.neighbouring is Neighbouring.ADD_REMOVE
    assert "QuantileTree" in guarantee.source and "Laplace" in guarantee.source
    assert "8-ary tree of height 3" in guarantee.source


def test_the_extreme_accepted_parameters_work() -> None:
    """The smallest ε the library takes, on the deepest tree it can index (2**31 - 1 nodes)."""
    release = google()(epsilon=2.0**-50, height=30, branching=2).release([0.3, 0.4], (0.0, 1.0))
    sample = release.sample(3, np.random.default_rng(0))
    assert ((sample >= 0.0) & (sample <= 1.0)).all()
    wide = (
        google()(epsilon=1e308).release(NORMAL, (0.0, 1.7e308)).sample(3, np.random.default_rng(0))
    )
    assert ((wide >= 0.0) & (wide <= 1.7e308)).all()


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"epsilon": 2.0**-51}, "epsilon"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1e-6}, "delta"),
        ({"epsilon": 1.0, "alpha": 1.0}, "alpha"),
        ({"epsilon": 1.0, "height": 0}, "height"),
        ({"epsilon": 1.0, "branching": 1}, "branching"),
        ({"epsilon": 1.0, "height": 2.0}, "height"),
        ({"epsilon": 1.0, "height": 8}, "height, branching"),  # 16^8 leaves hang the library
        ({"epsilon": 1.0, "height": 31, "branching": 2}, "height, branching"),
    ],
)
def test_bad_options_are_refused_naming_them(arguments: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        google()(**arguments)


def test_bad_release_and_sample_inputs_are_refused_naming_them() -> None:
    mechanism = google()(epsilon=1.0)
    with pytest.raises(ValueError, match="bounds"):
        mechanism.release(NORMAL, (1.0, 0.0))
    with pytest.raises(ValueError, match="data"):
        mechanism.release([0.1, math.inf], BOUNDS)
    release = mechanism.release(NORMAL, BOUNDS)
    with pytest.raises(ValueError, match="size"):
        release.sample(-1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        release.sample(3, None)  # type: ignore[arg-type]


# ------------------------------------------------ agreement with an independent quantile tree

AGREEMENT_DATA = np.random.default_rng(8).normal(0.45, 0.2, 300)
AGREEMENT_LEVELS = (0.25, 0.5, 0.75)
AGREEMENT_TREE = {"height": 3, "branching": 4}
AGREEMENT_DRAWS = 10_000
AGREEMENT_FALSE_ALARM = 1e-9
STATISTICS = 4
"""The three sorted coordinates and the spread ``o_3 - o_1`` (the levels share one tree)."""


def reference_rows(
    draws: int, epsilon: float, height: int, branching: int, noise: float = 1.0
) -> np.ndarray:
    """Google's algorithm written out (module docstring of ``google_dp_quantile``): every
    count of the tree plus Laplace noise of scale ``noise·h/ε`` rounded to an integer
    (``LaplaceMechanism::AddInt64Noise``: the noised tree holds ``int64``), one noisy tree
    per row read at every level (:func:`read_out`), rows sorted as the adapter sorts them."""
    rng = np.random.default_rng(1)
    exact = tree_counts(AGREEMENT_DATA, 0.0, 1.0, height, branching)
    scale = noise * height / epsilon
    out = np.empty((draws, len(AGREEMENT_LEVELS)))
    for row in out:
        noisy = [c + np.round(rng.laplace(0.0, scale, c.size)) for c in exact]
        row[:] = [read_out(noisy, 0.0, 1.0, a, branching) for a in AGREEMENT_LEVELS]
    return np.sort(out, axis=1)


def two_sample_distance(a: np.ndarray, b: np.ndarray) -> float:
    """``sup_x |F̂_a(x) - F̂_b(x)|`` of two samples (the Kolmogorov-Smirnov statistic)."""
    points = np.union1d(a, b)
    cdf_a = np.searchsorted(np.sort(a), points, side="right") / a.size
    cdf_b = np.searchsorted(np.sort(b), points, side="right") / b.size
    return float(np.abs(cdf_a - cdf_b).max())


def agreement_threshold(draws: int) -> float:
    """``t`` such that two samples of ``draws`` from one law have a distance ``>= t`` in any of
    the :data:`STATISTICS` statistics with probability ``<= AGREEMENT_FALSE_ALARM``.

    Dvoretzky-Kiefer-Wolfowitz with Massart's constant ("The tight constant in the
    Dvoretzky-Kiefer-Wolfowitz inequality", Ann. Probab. 1990), valid for every law and
    every n: ``P(sup|F̂ - F| > u) <= 2 exp(-2 n u²)``.  The distance of two samples is at most
    the sum of their distances to the law, so ``t = 2u`` with each of the ``2·STATISTICS``
    deviations ``> u`` at probability ``AGREEMENT_FALSE_ALARM / (2·STATISTICS)``: unlike the
    asymptotic Kolmogorov p-value this holds at 1e-9 for every n.
    """
    per_deviation = AGREEMENT_FALSE_ALARM / (2 * STATISTICS)
    return 2.0 * math.sqrt(math.log(2.0 / per_deviation) / (2.0 * draws))


def largest_distance(first: np.ndarray, second: np.ndarray) -> float:
    """The largest two-sample distance over the :data:`STATISTICS` statistics of two row sets."""

    def statistics(rows: np.ndarray) -> list[np.ndarray]:
        return [*rows.T, rows[:, -1] - rows[:, 0]]

    pairs = zip(statistics(first), statistics(second), strict=True)
    return max(two_sample_distance(a, b) for a, b in pairs)


@functools.lru_cache(maxsize=1)
def library_rows(epsilon: float) -> np.ndarray:
    """:data:`AGREEMENT_DRAWS` rows of ``google_dp_quantiles`` (python-dp's own generator;
    drawn once for the tests below)."""
    pytest.importorskip("pydp")
    from mechanisms.peers.google_dp_quantiles import GoogleDPQuantiles

    mechanism = GoogleDPQuantiles(epsilon=epsilon, alphas=AGREEMENT_LEVELS, **AGREEMENT_TREE)
    release = mechanism.release(AGREEMENT_DATA, (0.0, 1.0))
    return release.sample(AGREEMENT_DRAWS, np.random.default_rng(0))


def test_the_library_tree_agrees_with_an_independent_implementation() -> None:
    """Same algorithm, same noise, same neighbours ⇒ same law: python-dp's unseedable rows
    against :func:`reference_rows`, every coordinate and the spread within
    :func:`agreement_threshold` (0.069 at 10 000 draws; measured 0.007-0.013 at 20 000).
    A correct adapter fails with probability <= 1e-9."""
    rows = library_rows(1.0)
    reference = reference_rows(AGREEMENT_DRAWS, 1.0, **AGREEMENT_TREE)
    assert largest_distance(rows, reference) < agreement_threshold(AGREEMENT_DRAWS)


@pytest.mark.parametrize(
    "planted",
    [{"noise": 0.5}, {"branching": 5}, {"height": 4}],
    ids=["half_noise", "branching_5", "height_4"],
)
def test_the_agreement_check_rejects_a_different_tree(planted: dict) -> None:
    """Planted bugs: the reference with half the noise (an adapter calling the library at 2ε),
    another branching factor or another height is rejected.  Measured distances to the
    library's law at 20 000 draws: 0.154, 0.179 and 0.226, above twice the threshold (0.137),
    so by the same inequality a planted change passes with probability <= 1e-9."""
    tree = {**AGREEMENT_TREE, **{k: v for k, v in planted.items() if k != "noise"}}
    wrong = reference_rows(AGREEMENT_DRAWS, 1.0, noise=planted.get("noise", 1.0), **tree)
    assert largest_distance(library_rows(1.0), wrong) >= agreement_threshold(AGREEMENT_DRAWS)
