"""The public tuning of the trimmed means at large n (adversarial review, issue 26 "Inputs",
finding 6).

``trimmed_mean_student_t`` and ``trimmed_mean_laplace_ln`` tune their parameters on public
reference data of the data's size; at n = 10^7 the search for its smooth sensitivity took
20-28 s on the first release.  Above :data:`SEARCHED_REFERENCE_SIZE` points it is now the
closed form :class:`ReferenceSmoothSensitivity` (microseconds per β); at and below it (the
sizes of the experiments) it is still the search, so the tuned parameters there are
unchanged bit for bit.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from mechanisms.mean import trimmed_mean as mean_mechanisms
from mechanisms.smooth.trimmed_mean import (
    SEARCHED_REFERENCE_SIZE,
    ReferenceSmoothSensitivity,
    TrimmedMeanSmoothSensitivity,
    reference_smooth_sensitivity,
    trim_count,
)
from mechanisms.smooth.tuning import EvenlySpaced

BETAS = np.concatenate(([0.0], np.geomspace(1e-14, 50.0, 60)))


def searched(n: int, m: int) -> TrimmedMeanSmoothSensitivity:
    return TrimmedMeanSmoothSensitivity(EvenlySpaced(n), m, 0.0, 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 10, 11, 100, 101, 1000, 4321])
@pytest.mark.parametrize("trim", [0, 1, 0.05, 0.1, 0.25, 0.49])
def test_closed_form_is_the_searched_smooth_sensitivity(n: int, trim: int | float) -> None:
    m = trim_count(trim, n)
    expected = searched(n, m).log(BETAS)
    got = ReferenceSmoothSensitivity(n, m).log(BETAS)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)


def test_the_sizes_of_the_experiments_still_search() -> None:
    for n in (1, 101, 1000, 10**4, SEARCHED_REFERENCE_SIZE):
        assert type(reference_smooth_sensitivity(n, trim_count(0.1, n))) is (
            TrimmedMeanSmoothSensitivity
        )
    big = SEARCHED_REFERENCE_SIZE + 1
    assert isinstance(reference_smooth_sensitivity(big, 10), ReferenceSmoothSensitivity)


@pytest.mark.parametrize("n", [1001, 20_000])
@pytest.mark.parametrize("epsilon", [0.1, 2.0])
def test_tuned_parameters_of_the_closed_form_are_those_of_the_search(n, epsilon) -> None:
    """What changes above the threshold: the noise scale by ~1e-12 (relative)."""
    m = trim_count(0.1, n)
    closed, search = ReferenceSmoothSensitivity(n, m), searched(n, m)
    for tune in (
        lambda ss: mean_mechanisms.student_t_parameters(ss, epsilon, 3.0),
        lambda ss: mean_mechanisms._lln(ss, epsilon),
    ):
        fast, slow = tune(closed), tune(search)
        # the noise scale SS_t/s: the same to ~1e-12 (t itself sits at a flat minimum)
        ratio = np.exp(closed.log(fast.t) - search.log(slow.t)) * slow.s / fast.s
        assert ratio == pytest.approx(1.0, abs=1e-9)
        assert fast.t == pytest.approx(slow.t, rel=1e-6)


def test_public_tuning_at_ten_million_points_takes_milliseconds() -> None:
    n = 10**7
    m = trim_count(0.1, n)
    reference_smooth_sensitivity.cache_clear()
    mean_mechanisms._public_student_t.cache_clear()
    mean_mechanisms._public_lln.cache_clear()
    start = time.perf_counter()
    student = mean_mechanisms._public_student_t(1.0, 3.0, n, m)
    lln = mean_mechanisms._public_lln(1.0, n, m)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, elapsed  # 20-28 s with the search
    assert student.t > 0 and student.s > 0 and lln.t > 0 and lln.sigma > 0
