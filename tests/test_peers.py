"""The peer-library adapters: their distributions, guarantees and the missing-extra error."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from conftest import PROJECT_ROOT
from scipy import stats

from mechanisms import Neighbouring
from mechanisms.quantile_em import QuantileEM

DATA = np.array([0.12, 0.3, 0.31, 0.45, 0.5, 0.52, 0.8, 0.9, 0.91])


def chi_square_pvalue(sample: np.ndarray, support: np.ndarray, probabilities: np.ndarray) -> float:
    counts = np.array([(sample == value).sum() for value in support])
    assert counts.sum() == sample.size  # every draw is a candidate
    keep = probabilities * sample.size >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(probabilities[keep], probabilities[~keep].sum()) * sample.size
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return float(stats.chisquare(observed, expected).pvalue)


def test_missing_libraries_give_an_import_error_naming_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules.update(opendp=None, diffprivlib=None)\n"
        "import mechanisms\n"
        "import mechanisms.peers.diffprivlib_quantile, mechanisms.peers.opendp_quantile\n"
        "assert {'opendp_quantile', 'diffprivlib_quantile'} <= set(mechanisms.available())\n"
        "for name in ('opendp_quantile', 'diffprivlib_quantile'):\n"
        "    try:\n"
        "        mechanisms.make(name, epsilon=1.0)\n"
        "    except ImportError as err:\n"
        "        print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    for line, package in zip(lines, ("opendp", "diffprivlib"), strict=True):
        assert f"needs the optional package {package!r}" in line
        assert 'pip install -e ".[peers]"' in line


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


def test_permute_and_flip_probabilities_match_enumeration() -> None:
    pytest.importorskip("opendp")
    from mechanisms.peers.opendp_quantile import permute_and_flip_probabilities

    log_p = np.array([0.0, -0.3, -0.3, -1.7, -4.0, 0.0])
    p = np.exp(log_p)
    exact = np.zeros(p.size)
    orders = list(itertools.permutations(range(p.size)))
    for order in orders:
        rejected = 1.0
        for candidate in order:  # the first accepted candidate is returned
            exact[candidate] += rejected * p[candidate] / len(orders)
            rejected *= 1.0 - p[candidate]
    np.testing.assert_allclose(permute_and_flip_probabilities(log_p), exact, rtol=1e-10)


@pytest.mark.parametrize("selection", ["permute_and_flip", "exponential"])
def test_opendp_samples_follow_its_distribution(selection: str) -> None:
    pytest.importorskip("opendp")
    from mechanisms.peers.opendp_quantile import OpenDPQuantile

    mechanism = OpenDPQuantile(epsilon=1.5, candidates=11, selection=selection)
    release = mechanism.release(DATA, (0.0, 1.0))
    sample = release.sample(3000, np.random.default_rng(0))
    probabilities = release.probabilities
    assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
    assert chi_square_pvalue(sample, release.candidates, probabilities) > 1e-3
    np.testing.assert_allclose(release.cdf(release.candidates), np.cumsum(probabilities))
    assert release.cdf(-0.5) == 0.0 and release.cdf(1.0) == 1.0
    assert mechanism.guarantee.neighbouring is Neighbouring.ADD_REMOVE


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
