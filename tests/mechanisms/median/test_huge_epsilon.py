"""The rank exponential mechanisms are exact at every ε the validation accepts (adversarial
review, issue 26 "Inputs", finding 5).

At huge ε the log-score (about ``-ε/4``) swamped ``log(gap length)``: at ε = 1e16,
``s + log len`` rounds to a multiple of 0.5, so gaps of equal utility got equal mass
whatever their lengths (``quantile_em`` and ``duff`` with ``neighbours="replace_one"``
were off by 4e-4 relative at ε = 1e14 and 3e-2 at 1e16).  The releases now shift the
window's scores exactly (integer or rational utilities) before adding the log lengths
(:mod:`mechanisms.sampling.piecewise`, "What exact means"); at ordinary ε nothing
changes, bit for bit.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import mechanisms
import mechanisms.sampling.piecewise
from mechanisms.core.quantiles import exact_alpha

BOUNDS = (-3.0, 3.0)
# 11 points: the lower median is x_(6) = -0.1, between gaps 5 = [-0.5, -0.1] (length 0.4)
# and 6 = [-0.1, 0.0] (length 0.1), tied at the best utility for replace-one (both rank
# EMs) and for the quantile EM's |i - n/2| (both neighbourings).
DATA = np.array([-2.5, -2.0, -1.5, -1.0, -0.5, -0.1, 0.0, 0.3, 1.0, 2.0, 2.5])
TIED = [
    ("duff", {"neighbours": "replace_one"}),
    ("quantile_em", {"neighbours": "replace_one"}),
    ("quantile_em", {"neighbours": "add_remove"}),
]
HUGE = [1e8, 1e14, 1e16, 1e100, 1e300, 1.7976931348623157e308]
GRID = np.linspace(-3.0, 3.0, 241)


def limit_cdf(points: np.ndarray) -> np.ndarray:
    """The ε → ∞ limit: uniform on gaps 5 and 6, i.e. on [-0.5, 0.0] (mass 0.8 and 0.2)."""
    return np.clip((points + 0.5) / 0.5, 0.0, 1.0)


@pytest.mark.parametrize(("name", "options"), TIED)
@pytest.mark.parametrize("epsilon", HUGE)
def test_tied_gaps_get_mass_in_proportion_to_their_lengths(name, options, epsilon) -> None:
    for sampler in ("inverse_cdf", "racing"):
        release = mechanisms.make(name, epsilon=epsilon, sampler=sampler, **options).release(
            DATA, BOUNDS
        )
        np.testing.assert_allclose(release.cdf(GRID), limit_cdf(GRID), rtol=0, atol=1e-12)
        probabilities = release.probabilities
        assert probabilities[5] == pytest.approx(0.8, abs=1e-12)
        assert probabilities[6] == pytest.approx(0.2, abs=1e-12)
        assert math.fsum(np.exp(release.log_masses)) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("name", "options"), TIED)
@pytest.mark.parametrize("sampler", ["inverse_cdf", "racing"])
def test_draws_follow_the_lengths_at_huge_epsilon(name, options, sampler) -> None:
    release = mechanisms.make(name, epsilon=1e16, sampler=sampler, **options).release(DATA, BOUNDS)
    draws = release.sample(4000, np.random.default_rng(1))
    assert np.all((draws >= -0.5) & (draws <= 0.0))
    assert np.mean(draws <= -0.1) == pytest.approx(0.8, abs=0.03)  # 0.5 before the fix


def test_a_tiny_utility_difference_is_resolved_at_huge_epsilon() -> None:
    """alpha·n = 5.5 + 1e-10: gaps 5 and 6 are at distances 0.5 ± 1e-10 of the quantile, so
    at ε = 1e10 (scores near -2.5e9) the weights differ by a factor e^{-1} exactly, which
    the float sum ``s + log len`` resolved only to ~5e-7."""
    alpha = 0.5000000000090909
    n, epsilon = DATA.size, 1e10
    exact = exact_alpha(alpha) * n
    distance = [abs(i - exact) for i in range(n + 1)]
    scale = epsilon / 2.0  # replace-one: Δu = 1
    lengths = np.diff(np.concatenate(([BOUNDS[0]], DATA, [BOUNDS[1]])))
    best = min(distance)
    log_weights = np.array(
        [
            -scale * float(d - best) + math.log(length)
            for d, length in zip(distance, lengths, strict=True)
        ]
    )
    expected = np.exp(log_weights - log_weights.max())
    expected /= expected.sum()
    release = mechanisms.make(
        "quantile_em", epsilon=epsilon, alpha=alpha, neighbours="replace_one"
    ).release(DATA, BOUNDS)
    assert float(distance[5] - distance[6]) == pytest.approx(2e-10, rel=1e-6)
    np.testing.assert_allclose(release.probabilities, expected, rtol=1e-12, atol=1e-300)
    assert release.cdf(-0.1) == pytest.approx(expected[:6].sum(), rel=1e-12)


def bits(values) -> np.ndarray:
    return np.atleast_1d(np.asarray(values, dtype=np.float64)).view(np.uint64)


def datasets(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n)
    return {
        "normal": rng.normal(size=n),
        "ties": np.round(rng.normal(size=n), 1),
        "two_values": rng.choice([-0.5, 0.5], size=n),
        "at_bounds": rng.choice([-3.0, 3.0, 0.25], size=n),
    }


@pytest.mark.parametrize("name", ["duff", "quantile_em"])
@pytest.mark.parametrize("n", [0, 1, 11, 101, 1000])
def test_ordinary_epsilon_releases_are_unchanged_bit_for_bit(monkeypatch, name, n) -> None:
    """Up to ε = 1e4 (ties included) the exact shift never engages: every release is the
    one computed without it (EXACT_SCORES = inf), bit for bit."""
    grid = itertools.product(
        datasets(n).items(),
        (0.1, 0.5, 2.0, 50.0, 1e4),
        (0.1, 0.5, 0.9),
        ("add_remove", "replace_one"),
        ("inverse_cdf", "racing"),
    )
    points = np.linspace(-3.5, 3.5, 71)
    for (label, x), epsilon, alpha, neighbours, sampler in grid:
        options = {"alpha": alpha, "neighbours": neighbours, "sampler": sampler}
        mechanism = mechanisms.make(name, epsilon=epsilon, **options)
        new = mechanism.release(x, BOUNDS)
        with monkeypatch.context() as patch:
            patch.setattr(mechanisms.sampling.piecewise, "EXACT_SCORES", math.inf)
            old = mechanism.release(x, BOUNDS)
        case = (label, epsilon, alpha, neighbours, sampler)
        assert np.array_equal(bits(new.log_masses), bits(old.log_masses)), case
        assert np.array_equal(bits(new.cdf(points)), bits(old.cdf(points))), case
        draws = [r.sample(50, np.random.default_rng(3)) for r in (new, old)]
        assert np.array_equal(bits(draws[0]), bits(draws[1])), case


@pytest.mark.parametrize("epsilon", [1e8, 1e16, 1e300])
def test_duff_mean_and_interval_ends_are_exact_at_huge_epsilon(epsilon) -> None:
    """The other users of the exact shift: valid releases, all mass on the best level."""
    x = np.array([-1.0, -0.5, 0.0, 0.5, 2.0])
    mean = mechanisms.make("duff_mean", epsilon=epsilon).release(x, BOUNDS)
    levels = mean.levels
    inside = np.linspace(levels.lower_ends[0], levels.upper_ends[0], 5)
    np.testing.assert_allclose(
        mean.cdf(inside), (inside - inside[0]) / (inside[-1] - inside[0]), atol=1e-12
    )
    interval = mechanisms.make("dp_order_statistic", epsilon=epsilon).release(
        np.linspace(-2.0, 2.0, 101), BOUNDS
    )
    ends = interval.sample(20, np.random.default_rng(0))
    assert np.all(np.isfinite(ends)) and np.all(ends[:, 0] <= ends[:, 1])


def test_relative_scores_are_exact_integers_for_duff() -> None:
    """Duff's utilities are integers, so the shifted scores are ε/2 times exact integers."""
    n, epsilon = DATA.size, 1e300
    release = mechanisms.make("duff", epsilon=epsilon, neighbours="replace_one").release(
        DATA, BOUNDS
    )
    log_masses = release.log_masses
    # every other gap is at least one utility level (ε/2 = 5e299) below the best two
    assert np.all(log_masses[[i for i in range(n + 1) if i not in (5, 6)]] < -1e299)
    assert np.exp(log_masses[[5, 6]]).tolist() == pytest.approx([0.8, 0.2], abs=1e-15)
