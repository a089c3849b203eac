"""The peer-library adapters: their distributions, guarantees and the missing-extra error."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from harness_mechanisms import PROJECT_ROOT
from missing_peers import import_errors_without, names_the_extra
from scipy import stats

from mechanisms import Neighbouring
from mechanisms.median.quantile_em import QuantileEM

DATA = np.array([0.12, 0.3, 0.31, 0.45, 0.5, 0.52, 0.8, 0.9, 0.91])

FALSE_ALARM = 1e-9
"""Largest probability that one check of a correct sampler fails (OpenDP's is unseedable)."""


def l1_threshold(draws: int, support: int, false_alarm: float = FALSE_ALARM) -> float:
    """``t`` with ``P(‖P̂ - P‖₁ >= t) <= false_alarm`` for ``draws`` i.i.d. draws from any
    ``P`` on ``support`` points, ``P̂`` their empirical distribution.

    Weissman, Ordentlich, Seroussi, Verdú & Weinberger, "Inequalities for the L1
    deviation of the empirical distribution" (HP Labs, 2003), Theorem 2.1 with
    ``φ(π_P) >= 2``: ``P(‖P̂ - P‖₁ >= t) <= (2^k - 2)·exp(-n t²/2)``.  Unlike a
    chi-square p-value this holds for every ``n``, not only asymptotically.
    """
    return math.sqrt(2.0 / draws * math.log((2.0**support - 2.0) / false_alarm))


def l1_distance(sample: np.ndarray, support: np.ndarray, probabilities: np.ndarray) -> float:
    """``‖P̂ - P‖₁`` of the draws ``sample`` from ``support`` against ``probabilities``."""
    counts = np.array([(sample == value).sum() for value in support])
    assert counts.sum() == sample.size  # every draw is a candidate
    return float(np.abs(counts / sample.size - probabilities).sum())


def test_missing_libraries_hide_the_peers_and_name_the_extra() -> None:
    """Without opendp and diffprivlib (``sys.modules[...] = None``), in a fresh process:
    the built-in discovery imports the adapter modules, leaves the peers out of
    ``available()``, and ``get``/``make``/the classes raise an ImportError naming the extra."""
    lines = import_errors_without(
        ("opendp", "diffprivlib"),
        "from mechanisms.peers.opendp_quantile import OpenDPQuantile\n"
        "names = set(mechanisms.available())\n"
        "assert 'duff' in names and not names & {'opendp_quantile', 'diffprivlib_quantile'}\n"
        "report(lambda: mechanisms.get('opendp_quantile'))\n"
        "report(lambda: mechanisms.make('diffprivlib_quantile', epsilon=1.0))\n"
        "report(lambda: OpenDPQuantile(epsilon=1.0))\n",
    )
    assert len(lines) == 3
    for line, package in zip(lines, ("opendp", "diffprivlib", "opendp"), strict=True):
        assert names_the_extra(line, package)
        assert 'pip install "duff-bench[peers]"' in line and 'pip install -e ".[peers]"' in line


def test_installed_peers_are_found_by_the_builtin_discovery() -> None:
    """In a fresh process, with nothing imported by hand, the peers are listed and made."""
    pytest.importorskip("opendp")
    pytest.importorskip("diffprivlib")
    code = (
        "import mechanisms\n"
        "assert {'opendp_quantile', 'diffprivlib_quantile'} <= set(mechanisms.available())\n"
        "assert mechanisms.get('diffprivlib_quantile').__name__ == 'DiffprivlibQuantile'\n"
        "print(mechanisms.make('opendp_quantile', epsilon=1.0, candidates=11))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OpenDPQuantile(epsilon=1, alpha=0.5, candidates=11")


# ------------------------------------------------------------------------ diffprivlib


def test_diffprivlib_samples_follow_its_exact_cdf() -> None:
    pytest.importorskip("diffprivlib")
    from mechanisms.peers.diffprivlib_quantile import DiffprivlibQuantile

    release = DiffprivlibQuantile(epsilon=2.0).release(DATA, (0.0, 1.0))
    sample = release.sample(1500, np.random.default_rng(11))
    assert stats.kstest(sample, release.cdf).pvalue > 1e-3
    again = release.sample(1500, np.random.default_rng(11))
    np.testing.assert_array_equal(sample, again)  # seeded from the rng it is given


@pytest.mark.parametrize("neighbours", ["replace_one", "add_remove"])
def test_diffprivlib_is_the_quantile_em_with_the_same_neighbours(neighbours: str) -> None:
    pytest.importorskip("diffprivlib")
    from mechanisms.peers.diffprivlib_quantile import DiffprivlibQuantile

    ours = QuantileEM(epsilon=1.3, neighbours=neighbours).release(DATA, (0.0, 1.0))
    peer = DiffprivlibQuantile(epsilon=1.3, neighbours=neighbours)
    release = peer.release(DATA, (0.0, 1.0))
    grid = np.linspace(-0.1, 1.1, 2001)
    np.testing.assert_allclose(release.cdf(grid), ours.cdf(grid), atol=1e-14)
    assert release.true_value == ours.true_value == 0.5
    assert peer.guarantee.neighbouring is Neighbouring(neighbours)
    assert peer.library_epsilon == (1.3 if neighbours == "replace_one" else 2.6)


def test_diffprivlib_rejects_bounds_it_would_widen() -> None:
    pytest.importorskip("diffprivlib")
    from mechanisms.peers.diffprivlib_quantile import DiffprivlibQuantile

    with pytest.raises(ValueError, match="bounds: diffprivlib needs b - a >= 1e-05"):
        DiffprivlibQuantile(epsilon=1.0).release([0.0], (0.0, 1e-6))


# ----------------------------------------------------------------------------- OpenDP


def enumerated_permute_and_flip(p: np.ndarray) -> np.ndarray:
    """Permute-and-flip's output law by visiting every order of the candidates."""
    exact = np.zeros(p.size)
    orders = list(itertools.permutations(range(p.size)))
    for order in orders:
        rejected = 1.0
        for candidate in order:  # the first accepted candidate is returned
            exact[candidate] += rejected * p[candidate] / len(orders)
            rejected *= 1.0 - p[candidate]
    return exact


@pytest.mark.parametrize(
    "p",
    [
        np.exp([0.0, -0.3, -0.3, -1.7, -4.0, 0.0]),
        # Σ p = 4 + 2^-50: panels doubling from 1/(4 Σ p) used to end at 1 - 2^-52, and
        # quadrature nodes rounded to t = 1 gave log(1 - t) = -inf and NaN probabilities
        np.array([1.0, 1.0, 1.0, 1.0, 8.9e-16]),
    ],
)
def test_permute_and_flip_probabilities_match_enumeration(p: np.ndarray) -> None:
    pytest.importorskip("opendp")
    from mechanisms.peers.opendp_quantile import permute_and_flip_probabilities

    exact = enumerated_permute_and_flip(p)
    np.testing.assert_allclose(permute_and_flip_probabilities(np.log(p)), exact, rtol=1e-10)


DRAWS = 1000
SAMPLER_CASES = [("permute_and_flip", 1.0, 11), ("exponential", 2.0, 21)]
"""(selection, ε, candidates) on DATA: settings where ε doubled or halved moves the
output law far in L1, so DRAWS = 1000 draws (a second or two) separate them."""


@pytest.mark.parametrize(("selection", "epsilon", "candidates"), SAMPLER_CASES)
def test_opendp_samples_follow_its_distribution(
    selection: str, epsilon: float, candidates: int
) -> None:
    """OpenDP's own (unseedable) draws against the adapter's exact law: fails with
    probability <= FALSE_ALARM = 1e-9 if the sampler is right (:func:`l1_threshold`)."""
    pytest.importorskip("opendp")
    from mechanisms.peers.opendp_quantile import OpenDPQuantile

    mechanism = OpenDPQuantile(epsilon=epsilon, candidates=candidates, selection=selection)
    release = mechanism.release(DATA, (0.0, 1.0))
    sample = release.sample(DRAWS, np.random.default_rng(0))
    probabilities = release.probabilities
    assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
    assert l1_distance(sample, release.candidates, probabilities) < l1_threshold(DRAWS, candidates)
    np.testing.assert_allclose(release.cdf(release.candidates), np.cumsum(probabilities))
    assert release.cdf(-0.5) == 0.0 and release.cdf(1.0) == 1.0
    assert mechanism.guarantee.neighbouring is Neighbouring.ADD_REMOVE


@pytest.mark.parametrize("factor", [2.0, 0.5])
@pytest.mark.parametrize(("selection", "epsilon", "candidates"), SAMPLER_CASES)
def test_the_sampling_check_rejects_a_wrong_epsilon(
    selection: str, epsilon: float, candidates: int, factor: float
) -> None:
    """Planted bug: draws at ε·factor, checked against the law at ε, are rejected.

    Power: draws from a law Q pass only if ‖P̂ - P‖₁ < t, hence only if
    ‖P̂ - Q‖₁ > ‖Q - P‖₁ - t >= t when ‖Q - P‖₁ >= 2t, which by the same
    inequality has probability <= 1e-9.  Here t = 0.238 (11 candidates) and 0.266
    (21), and ‖Q - P‖₁ = 0.596 and 0.611 (permute-and-flip, ε doubled and halved),
    0.616 and 0.731 (exponential): a wrong scale passes with probability below 1e-20.
    The draws come from numpy's seeded generator standing in for a mis-scaled sampler.
    """
    pytest.importorskip("opendp")
    from mechanisms.peers.opendp_quantile import OpenDPQuantile

    def law(eps: float) -> np.ndarray:
        mechanism = OpenDPQuantile(epsilon=eps, candidates=candidates, selection=selection)
        return mechanism.release(DATA, (0.0, 1.0)).probabilities

    right, wrong = law(epsilon), law(epsilon * factor)
    support = np.linspace(0.0, 1.0, candidates)
    threshold = l1_threshold(DRAWS, candidates)
    assert np.abs(wrong - right).sum() >= 2 * threshold  # the power statement above
    sample = np.random.default_rng(5).choice(support, DRAWS, p=wrong)
    assert l1_distance(sample, support, right) >= threshold


def test_opendp_exponential_is_the_quantile_em_on_a_grid() -> None:
    """On a fine grid its output law approaches quantile_em(add_remove) to within a grid step."""
    pytest.importorskip("opendp")
    from mechanisms.peers.opendp_quantile import OpenDPQuantile

    candidates = 20_001
    peer = OpenDPQuantile(epsilon=0.8, candidates=candidates, selection="exponential")
    release = peer.release(DATA, (0.0, 1.0))
    ours = QuantileEM(epsilon=0.8).release(DATA, (0.0, 1.0))
    grid = np.linspace(0.0, 1.0, 997)
    # each gap holds len/h ± 1 candidates of equal weight: the two laws differ by about
    # the mass of one grid step h around any point, at most max density × h each way
    lengths = np.diff(ours.edges)
    density = np.max(ours.probabilities[lengths > 0] / lengths[lengths > 0])
    step = 1.0 / (candidates - 1)
    difference = np.abs(release.cdf(grid) - ours.cdf(grid)).max()
    assert difference < 2 * density * step
    assert difference > 0  # a different law, not a copy of ours


def test_opendp_options_are_checked() -> None:
    pytest.importorskip("opendp")
    from mechanisms.peers.opendp_quantile import OpenDPQuantile

    with pytest.raises(ValueError, match="candidates must be an integer >= 2"):
        OpenDPQuantile(epsilon=1.0, candidates=1)
    with pytest.raises(ValueError, match="selection must be one of"):
        OpenDPQuantile(epsilon=1.0, selection="gumbel")


@pytest.mark.parametrize("alpha", [0.5, 0.3, 0.285, 0.043, 0.56789, 0.123456789, 0.99999])
def test_opendp_alpha_scores_and_guarantee_are_the_librarys(alpha: float) -> None:
    """The adapter's scores are OpenDP's own (alpha truncated to 1e-4 as the library casts it,
    0.285 → 2849/10**4) and the library certifies exactly the stated ε."""
    pytest.importorskip("opendp")
    import opendp.prelude as dp

    from mechanisms.peers.opendp_quantile import OpenDPQuantile, candidate_scores

    dp.enable_features("contrib")
    x, candidates = np.arange(10.0), np.array([0.5, 2.5, 4.5, 7.5, 9.5])
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    scorer = dp.t.make_quantile_score_candidates(
        domain, dp.symmetric_distance(), candidates.tolist(), alpha
    )
    assert candidate_scores(x, candidates, alpha).tolist() == list(scorer(x.tolist()))
    release = OpenDPQuantile(epsilon=1.3, alpha=alpha, candidates=11).release(x, (0.0, 10.0))
    assert release._measurement.map(1) == pytest.approx(1.3, rel=1e-12)


def upper_tail_error(cdf_of_probabilities) -> float:
    """Largest relative error of ``1 - cdf`` against exact sums (fsum), over the candidates
    whose upper tail holds between 1e-14 and 1e-8 (the tail cells the audit divides)."""
    from mechanisms.peers.opendp_quantile import OpenDPQuantile

    data = np.random.default_rng(5).normal(5.0, 1.0, size=1319)
    release = OpenDPQuantile(epsilon=0.1, candidates=100_001).release(data, (0.0, 10.0))
    p = release.probabilities / math.fsum(release.probabilities)
    cdf = cdf_of_probabilities(release, p)
    tails = np.cumsum(p[::-1])[::-1]  # a first guess of P(output >= c_i), to pick candidates
    chosen = np.flatnonzero((tails > 1e-14) & (tails < 1e-8))[::25]
    assert chosen.size > 10
    errors = [abs((1.0 - cdf[i]) - math.fsum(p[i + 1 :])) / math.fsum(p[i + 1 :]) for i in chosen]
    return max(errors)


def test_opendp_cdf_is_accurate_in_the_upper_tail() -> None:
    """The audit divides tail cells of the cdf: a left-to-right cumulative sum over 100 001
    candidates (a planted bug, the adapter's former cdf) is off by orders of magnitude
    there, which the privacy audit reported as a violation."""
    pytest.importorskip("opendp")

    def adapter(release, p):
        return release.cdf(release.candidates)

    def left_to_right(release, p):
        return np.cumsum(p)

    assert upper_tail_error(adapter) < 0.02
    assert upper_tail_error(left_to_right) > 0.3
