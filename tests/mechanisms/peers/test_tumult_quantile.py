"""Tumult Core's quantile (``tumult_quantile``): its exact law, its draws, guarantee and inputs.

Tumult's generator cannot be seeded, so each check of its draws is a Kolmogorov-Smirnov
distance against a threshold that a correct sampler exceeds with probability at most
:data:`FALSE_ALARM` (the Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant,
valid at every sample size), and each such test also shows that it rejects the
sampler's law at ε doubled or halved (its power).
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from harness_mechanisms import PROJECT_ROOT
from scipy import stats

from mechanisms import Neighbouring
from mechanisms.median.quantile_em import QuantileEM
from mechanisms.peers.tumult_quantile import tumult_em

DATA = np.array([0.12, 0.3, 0.31, 0.45, 0.5, 0.52, 0.8, 0.9, 0.91])
BOUNDS = (0.0, 1.0)
FALSE_ALARM = 1e-9
"""Largest probability that one check of a correct (unseedable) sampler fails."""
DRAWS = 5000
"""Library draws per check (about 0.2 ms each on DATA)."""
OURS = 200_000
"""Draws of quantile_em (seeded, fast) in the two-sample check."""
GRID = np.linspace(-0.05, 1.05, 4401)


def dkw(draws: int, false_alarm: float) -> float:
    """``t`` with ``P(sup|F̂ - F| > t) <= false_alarm`` for ``draws`` i.i.d. draws from a
    continuous ``F`` (Massart, "The tight constant in the Dvoretzky-Kiefer-Wolfowitz
    inequality", Ann. Probab. 1990: ``P(sup|F̂ - F| > t) <= 2·exp(-2 n t²)``)."""
    return math.sqrt(math.log(2.0 / false_alarm) / (2.0 * draws))


def two_sample_threshold(first: int, second: int) -> float:
    """The two-sample KS distance that two correct samples of one law exceed with probability
    at most FALSE_ALARM (each strays from it by ``dkw`` at FALSE_ALARM / 2)."""
    return dkw(first, FALSE_ALARM / 2) + dkw(second, FALSE_ALARM / 2)


def tumult():
    pytest.importorskip("tmlt.core")
    from mechanisms.peers.tumult_quantile import TumultQuantile

    return TumultQuantile


def test_missing_tumult_is_hidden_and_its_error_says_how_to_install() -> None:
    """Without Tumult Core (``sys.modules['tmlt'] = None``), in a fresh process: not listed,
    and ``get``/``make``/the class raise an ImportError with the install recipe (not the
    extra, which cannot hold it)."""
    code = (
        "import sys\n"
        "sys.modules['tmlt'] = None\n"
        "import mechanisms\n"
        "from mechanisms.peers.tumult_quantile import TumultQuantile\n"
        "assert 'duff' in mechanisms.available()\n"
        "assert 'tumult_quantile' not in mechanisms.available()\n"
        "calls = [lambda: mechanisms.get('tumult_quantile'),\n"
        "         lambda: mechanisms.make('tumult_quantile', epsilon=1.0),\n"
        "         lambda: TumultQuantile(epsilon=1.0)]\n"
        "for call in calls:\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as err:\n"
        "        print(str(err).replace('\\n', ' '))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert "needs the optional package 'tmlt.core'" in line
        assert 'pip install --no-deps "tmlt.core>=0.20,<0.21"' in line


def test_installed_tumult_is_found_by_the_builtin_discovery() -> None:
    """In a fresh process (listing it does not import Tumult Core, which takes ~4 s)."""
    pytest.importorskip("tmlt.core")
    code = (
        "import sys, mechanisms\n"
        "assert 'tumult_quantile' in mechanisms.available()\n"
        "print(mechanisms.get('tumult_quantile').__name__, 'tmlt.core' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "TumultQuantile False"
    assert repr(tumult()(epsilon=1.0, alpha=0.25)) == "TumultQuantile(epsilon=1, alpha=0.25)"


# ------------------------------------------------------------------ the exact law


@pytest.mark.parametrize("alpha", [0.5, 0.3, 0.75])
@pytest.mark.parametrize("epsilon", [0.3, 2.0, 40.0, 1e300])
def test_its_law_is_quantile_em_with_add_remove_neighbours(alpha: float, epsilon: float) -> None:
    """The EM Tumult samples (binary q) has quantile_em(add_remove)'s cdf (decimal alpha):
    equal to rounding, at huge ε too (uniform on the best gaps by length).  Needs no
    library: :func:`tumult_em` is what the release's cdf is."""
    peer = tumult_em(DATA, *BOUNDS, alpha, epsilon)
    ours = QuantileEM(epsilon=epsilon, alpha=alpha).release(DATA, BOUNDS)
    np.testing.assert_allclose(peer.cdf(GRID), ours.cdf(GRID), rtol=0, atol=1e-12)
    assert peer.true_value == ours.true_value


def test_ties_get_no_mass_and_no_data_give_the_uniform_law() -> None:
    """Median of [0, .4, .4, .4, 1] on [0, 1] at ε = 1e6: the gaps [0, .4] and [.4, 1]
    (|i - 2.5| = 3/2 each) share the mass by length, the empty gaps at 0, .4 and 1 get none."""
    tied = tumult_em(np.array([0.0, 0.4, 0.4, 0.4, 1.0]), *BOUNDS, 0.5, 1e6)
    np.testing.assert_allclose(tied.cdf(np.array([0.2, 0.4, 0.7])), [0.2, 0.4, 0.7], atol=1e-12)
    empty = tumult_em(np.array([]), -1.0, 3.0, 0.5, 1.0)
    np.testing.assert_allclose(empty.cdf(np.array([-1.0, 0.0, 3.0])), [0.0, 0.25, 1.0])


# ------------------------------------------------------------------ the draws


def ks_distance(sample: np.ndarray, cdf) -> float:
    return float(stats.kstest(sample, cdf).statistic)


CASES = [(0.5, 2.0), (0.3, 1.0)]
"""(alpha, ε) on DATA where halving or doubling ε moves the law by > 0.14 in KS distance."""


@pytest.mark.parametrize(("alpha", "epsilon"), CASES)
def test_draws_follow_the_exact_cdf_and_quantile_ems_draws(alpha: float, epsilon: float) -> None:
    """DRAWS library draws against (1) the exact cdf and (2) OURS seeded draws of
    quantile_em(add_remove) at the same ε: each fails with probability <= FALSE_ALARM if
    the sampler is right, and the laws at 2ε and ε/2 are more than twice each threshold
    away, so a sampler with the wrong scale passes either with probability <= FALSE_ALARM."""
    release = tumult()(epsilon=epsilon, alpha=alpha).release(DATA, BOUNDS)
    sample = release.sample(DRAWS, np.random.default_rng(0))
    one, two = dkw(DRAWS, FALSE_ALARM), two_sample_threshold(DRAWS, OURS)
    ours = QuantileEM(epsilon=epsilon, alpha=alpha).release(DATA, BOUNDS)
    for factor in (2.0, 0.5):  # power
        wrong = QuantileEM(epsilon=epsilon * factor, alpha=alpha).release(DATA, BOUNDS)
        assert np.abs(wrong.cdf(GRID) - ours.cdf(GRID)).max() > 2 * max(one, two)
    assert ks_distance(sample, release.cdf) < one
    ours_sample = ours.sample(OURS, np.random.default_rng(1))
    assert stats.ks_2samp(sample, ours_sample).statistic < two


@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_the_check_rejects_draws_at_a_wrong_epsilon(factor: float) -> None:
    """Planted bug: quantile_em's seeded draws at ε·factor, checked against the law at ε."""
    alpha, epsilon = CASES[0]
    law = tumult_em(DATA, *BOUNDS, alpha, epsilon)
    wrong = QuantileEM(epsilon=epsilon * factor, alpha=alpha).release(DATA, BOUNDS)
    sample = wrong.sample(DRAWS, np.random.default_rng(7))
    assert ks_distance(sample, law.cdf) >= dkw(DRAWS, FALSE_ALARM)


def test_at_huge_epsilon_it_is_uniform_on_the_best_gaps_by_length() -> None:
    """ε = 1e300, median of 9 points: gaps [0.45, 0.5] and [0.5, 0.52] tie (|i - 4.5| = 1/2),
    so P(output <= 0.5) = 0.05/0.07 = 5/7 and nothing falls outside [0.45, 0.52].  (The
    library takes ~5 ms per draw at this ε: 500 draws.)"""
    release = tumult()(epsilon=1e300).release(DATA, BOUNDS)
    assert release.cdf(0.5) == pytest.approx(5 / 7, abs=1e-12)
    draws = 500
    sample = release.sample(draws, np.random.default_rng(0))
    assert ((sample >= 0.45) & (sample <= 0.52)).all()
    assert abs((sample <= 0.5).mean() - 5 / 7) < dkw(draws, FALSE_ALARM)


def test_draws_have_the_shape_and_range_and_ignore_the_seed() -> None:
    release = tumult()(epsilon=1.0, alpha=0.3).release(DATA * 10 - 2, (-3.0, 4.0))
    assert release.true_value == pytest.approx(1.1)  # x_(3) of the clipped data
    for size in (0, 1, 50):
        sample = release.sample(size, np.random.default_rng(3))
        assert sample.shape == (size,) and sample.dtype == np.float64
        assert ((sample >= -3.0) & (sample <= 4.0)).all()
    first, second = (release.sample(8, np.random.default_rng(3)) for _ in range(2))
    assert not np.array_equal(first, second)  # Tumult's own RNG: the seed is not used
    empty = tumult()(epsilon=1.0).release([], (-1.0, 3.0)).sample(20, np.random.default_rng(0))
    assert ((empty >= -1.0) & (empty <= 3.0)).all()


# ------------------------------------------------------------------ guarantee and inputs


@pytest.mark.parametrize("epsilon", [1e-300, 0.1, 1.2345678901234567e-16, 2.0, 1e308])
def test_the_guarantee_is_the_librarys_certificate(epsilon: float) -> None:
    """ε-DP for add/remove (Tumult's SymmetricDifference at d_in = 1), certified by the
    library's own privacy_function at the exact ε, and sampled with the float ε itself."""
    mechanism = tumult()(epsilon=epsilon)
    from tmlt.core.utils.exact_number import ExactNumber

    guarantee = mechanism.guarantee
    assert (guarantee.epsilon, guarantee.delta) == (epsilon, 0.0)
    assert guarantee.neighbouring is Neighbouring.ADD_REMOVE
    assert "NoisyQuantile" in guarantee.source and "SymmetricDifference" in guarantee.source
    release = mechanism.release(DATA, BOUNDS)
    measurement = release._measurement
    assert repr(measurement.input_metric) == "SymmetricDifference()"
    assert measurement.privacy_function(1) == ExactNumber(Fraction(epsilon))
    assert measurement.privacy_function(2) == ExactNumber(2 * Fraction(epsilon))  # a replacement
    assert release.library_epsilon == epsilon


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"epsilon": 1.0, "alpha": 0.0}, "alpha"),
        ({"epsilon": 1.0, "alpha": 1.0}, "alpha"),
        ({"epsilon": 1.0, "alpha": math.nan}, "alpha"),
        ({"epsilon": 1.0, "delta": 1e-6}, "delta"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
    ],
)
def test_bad_options_are_refused_naming_them(arguments: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        tumult()(**arguments)


def test_bad_release_and_sample_inputs_are_refused_naming_them() -> None:
    mechanism = tumult()(epsilon=1.0)
    with pytest.raises(ValueError, match="bounds"):
        mechanism.release(DATA, (1.0, 0.0))
    with pytest.raises(ValueError, match="data"):
        mechanism.release([0.1, math.nan], BOUNDS)
    release = mechanism.release(DATA, BOUNDS)
    with pytest.raises(ValueError, match="size"):
        release.sample(-1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        release.sample(3, 0)  # type: ignore[arg-type]
