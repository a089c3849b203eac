"""The correctness checks have power: each fails on a deliberately broken mechanism.

Four classic bugs of exponential-mechanism code, planted with ``monkeypatch``:

* a count off by one (one more point counted below the output);
* the factor 2 of ``exp(ε·u / (2Δu))`` dropped;
* the sensitivity Δu halved;
* the ``log(length)`` term of a gap's mass dropped (diffprivlib issue #107's area).

Each is run through the same check the suite uses on the real mechanism
(brute-force utility, exact reference masses, exact privacy loss on neighbouring
pairs) and must make it fail, while the unbroken mechanism passes it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mechanisms.median.duff
import mechanisms.median.quantile_em
from mechanisms.median.duff import Duff, utility
from mechanisms.median.duff_utility import gap_utility
from mechanisms.sampling.piecewise import PiecewiseUniformRelease
from tests.mechanisms.median import test_duff
from tests.mechanisms.median.test_duff import check_against_bfs, reference_log_masses
from tests.mechanisms.median.test_em_privacy import (
    add_remove_pairs,
    partition,
    privacy_loss,
    release,
)
from tests.mechanisms.sampling.test_piecewise import assert_matches_reference, linear_score, make


def small_datasets() -> list[tuple[float, ...]]:
    return [data for n in range(4) for data in itertools.product(test_duff.GRID, repeat=n)]


def bfs_check_fails() -> bool:
    try:
        for data in small_datasets():
            check_against_bfs(data)
    except AssertionError:
        return True
    return False


def worst_add_remove_loss(name: str, options: dict, epsilon: float) -> float:
    return max(
        privacy_loss(s, t, partition(first, second))
        for first, second in add_remove_pairs(np.random.default_rng(0))
        for s, t in [
            (release(name, options, epsilon, first), release(name, options, epsilon, second))
        ]
    )


def release_matches_reference(epsilon: float = 1.0) -> bool:
    # uneven gaps and ties (one decimal): every term of the mass matters
    x = np.sort(np.round(np.random.default_rng(3).uniform(-3.0, 3.0, size=60), 1))
    got = Duff(epsilon=epsilon).release(x, (-3.0, 3.0)).log_masses
    expected = reference_log_masses(x, -3.0, 3.0, epsilon)
    finite = np.isfinite(expected)
    return bool(np.allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12))


# ------------------------------------------------------------ count off by one


def test_brute_force_utility_check_catches_a_count_off_by_one(monkeypatch) -> None:
    assert not bfs_check_fails()

    def off_by_one(sorted_x, points, lower):  # one more point counted below every output
        return utility(np.concatenate([[lower], sorted_x]), points, lower)

    monkeypatch.setattr(test_duff, "utility", off_by_one)
    assert bfs_check_fails()


def test_reference_mass_check_catches_a_gap_index_off_by_one(monkeypatch) -> None:
    assert release_matches_reference()
    monkeypatch.setattr(
        mechanisms.median.duff, "gap_utility", lambda n, gaps: gap_utility(n, gaps + 1)
    )
    assert not release_matches_reference()


# ------------------------------------------------ factor 2 dropped, Δu halved


def test_privacy_check_catches_the_factor_two_dropped(monkeypatch) -> None:
    epsilon = 1.0
    assert worst_add_remove_loss("duff", {}, epsilon) <= epsilon * (1 + 1e-9)
    # exp(ε·u) instead of exp(ε·u/2): the same as doubling the utility
    monkeypatch.setattr(
        mechanisms.median.duff, "gap_utility", lambda n, gaps: 2 * gap_utility(n, gaps)
    )
    assert worst_add_remove_loss("duff", {}, epsilon) > 1.5 * epsilon


def test_privacy_check_catches_the_sensitivity_halved(monkeypatch) -> None:
    epsilon, options = 1.0, {"alpha": 0.5}
    assert worst_add_remove_loss("quantile_em", options, epsilon) <= epsilon * (1 + 1e-9)
    true_sensitivity = mechanisms.core.quantiles.sensitivity
    monkeypatch.setattr(
        mechanisms.median.quantile_em, "sensitivity", lambda *args: true_sensitivity(*args) / 2
    )
    assert worst_add_remove_loss("quantile_em", options, epsilon) > 1.5 * epsilon


# ------------------------------------------------------ log-length dropped


def test_reference_checks_catch_the_log_length_dropped(monkeypatch) -> None:
    x = np.array([0.1, 0.15, 0.2, 0.9, 2.5, 2.5, 2.6])
    score = linear_score(0.5, 3.0)
    assert_matches_reference(make(x, 0.0, 3.0, score, 3), x, 0.0, 3.0, score)
    assert release_matches_reference()

    def without_length(self, gaps, lengths):
        return np.where(lengths > 0, np.asarray(self._log_score(gaps), dtype=np.float64), -np.inf)

    monkeypatch.setattr(PiecewiseUniformRelease, "_log_masses_of", without_length)
    with pytest.raises(AssertionError):
        assert_matches_reference(make(x, 0.0, 3.0, score, 3), x, 0.0, 3.0, score)
    assert not release_matches_reference()
