"""The peers' cdfs against their own samples at extreme ε (adversarial review, issue 26
"Inputs", finding 5), and their ε ranges.

diffprivlib's cdf is ours (:mod:`mechanisms.peers.diffprivlib_quantile`): at ε = 1e300 it
disagreed with the library's draws by 0.17, because the float sum ``score + log length``
swamped the lengths of the tied gaps that the library weighs by length.  OpenDP's cdf is
computed from its exact scores; out of the ε range where OpenDP can build and certify the
measurement in float64, the adapter now raises a ``ValueError`` naming epsilon instead of
OpenDP's own exceptions or a ``RuntimeError``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mechanisms
from mechanisms.peers.opendp_quantile import MAX_CANDIDATES

BOUNDS = (-3.0, 3.0)
# gaps 5 = [-0.5, -0.1] and 6 = [-0.1, 0.0] tie at the library's best utility -0.5
DATA = np.array([-2.5, -2.0, -1.5, -1.0, -0.5, -0.1, 0.0, 0.3, 1.0, 2.0, 2.5])


def l1_threshold(draws: int, support: int, false_alarm: float = 1e-9) -> float:
    """``t`` with ``P(‖P̂ - P‖₁ >= t) <= false_alarm`` (Weissman et al. 2003, Theorem 2.1)."""
    return math.sqrt(2.0 / draws * math.log((2.0**support - 2.0) / false_alarm))


@pytest.mark.parametrize("epsilon", [1e14, 1e16, 1e300])
@pytest.mark.parametrize("neighbours", ["replace_one", "add_remove"])
def test_diffprivlib_cdf_matches_its_draws_at_huge_epsilon(epsilon, neighbours) -> None:
    release = mechanisms.make(
        "diffprivlib_quantile", epsilon=epsilon, neighbours=neighbours
    ).release(DATA, BOUNDS)
    # the library weighs the two tied gaps by their lengths: 0.8 and 0.2
    assert release.cdf(-0.1) == pytest.approx(0.8, abs=1e-12)  # was 0.5
    np.testing.assert_allclose(release.cdf(np.array([-0.5, 0.0])), [0.0, 1.0], atol=1e-12)
    draws = release.sample(600, np.random.default_rng(2))
    assert release.library_failures == 0
    assert np.all((draws >= -0.5) & (draws <= 0.0))
    below = np.mean(draws <= -0.1)
    # two cells, 600 draws: |P̂ - P|₁ = 2|below - 0.8| < 0.26 but for a 1e-9 chance
    assert 2 * abs(below - float(release.cdf(-0.1))) < l1_threshold(600, 2)
    assert abs(below - 0.8) < 0.1


def test_diffprivlib_epsilon_beyond_float64_is_refused_naming_epsilon() -> None:
    # add/remove: the library's ε = ε/max(α, 1 - α) = 2ε overflows
    with pytest.raises(ValueError, match="epsilon"):
        mechanisms.make("diffprivlib_quantile", epsilon=1.7e308, neighbours="add_remove")
    release = mechanisms.make("diffprivlib_quantile", epsilon=1.7e308).release(DATA, BOUNDS)
    assert release.cdf(-0.1) == pytest.approx(0.8, abs=1e-12)


def test_diffprivlib_failures_are_drawn_from_the_exact_distribution() -> None:
    """Ties at the median and ε = 1e300: every gap of the library's best utility has length
    0, its weights are all 0 and it raises RuntimeError (issue #107), a data-dependent error;
    the adapter draws from the exact EM instead, uniform on the best positive gaps."""
    x = np.array([0.1] * 5 + [0.5] * 11 + [0.9] * 5)
    release = mechanisms.make("diffprivlib_quantile", epsilon=1e300).release(x, (0.0, 1.0))
    draws = release.sample(200, np.random.default_rng(0))
    assert release.library_failures == 200
    assert np.all((draws >= 0.1) & (draws <= 0.9))
    np.testing.assert_allclose(release.cdf(np.array([0.1, 0.5, 0.9])), [0.0, 0.5, 1.0])
    assert abs(np.mean(draws <= 0.5) - 0.5) < 0.15


@pytest.mark.parametrize(
    ("selection", "epsilon"),
    [("permute_and_flip", 1e300), ("permute_and_flip", 1e10), ("exponential", 1e150)],
)
def test_opendp_cdf_matches_its_draws_at_huge_epsilon(selection, epsilon) -> None:
    release = mechanisms.make(
        "opendp_quantile", epsilon=epsilon, candidates=61, selection=selection
    ).release(DATA, BOUNDS)
    probabilities = release.probabilities
    support = np.flatnonzero(probabilities > 0)
    # the best candidates (scores tied at the minimum) share the mass equally
    np.testing.assert_allclose(probabilities[support], 1.0 / support.size, rtol=1e-9)
    draws = release.sample(400, np.random.default_rng(0))
    counts = np.array([(draws == release.candidates[i]).sum() for i in support])
    assert counts.sum() == draws.size
    distance = np.abs(counts / draws.size - probabilities[support]).sum()
    assert distance < l1_threshold(draws.size, support.size)


@pytest.mark.parametrize(
    ("selection", "epsilon"),
    [
        ("permute_and_flip", 5e-324),
        ("permute_and_flip", 1e-310),
        ("permute_and_flip", 1.7e308),
        ("exponential", 1e-200),
        ("exponential", 1e300),
    ],
)
def test_opendp_epsilon_out_of_float64_range_is_refused_naming_epsilon(selection, epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        mechanisms.make("opendp_quantile", epsilon=epsilon, selection=selection)


def test_opendp_candidates_are_capped_naming_candidates() -> None:
    with pytest.raises(ValueError, match="candidates"):
        mechanisms.make("opendp_quantile", epsilon=1.0, candidates=MAX_CANDIDATES + 1)
