"""``rank_distance_change``: the quantile EM's exact score shift at huge ε (adversarial
review, issue 26 "Inputs", finding 5).  ``|i - α·n| - |r - α·n|`` must be correct to an ulp
or two of itself, also where it is tiny next to the distances (α·n near a half-integer)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.core.quantiles import exact_alpha, rank_distance_change

ALPHAS = st.one_of(
    st.floats(min_value=5e-324, max_value=1.0, exclude_max=True),
    st.sampled_from([0.5, 0.1, 0.30000000000000004, 1 / 3, 1e-300, 0.9999999999999999]),
    st.sampled_from([0.5000000000090909, 0.4999999999909091]),  # α·11 = 5.5 ± 1e-10
)


def check(n: int, alpha: float, gaps: np.ndarray, reference: int) -> None:
    exact_n = exact_alpha(alpha) * n
    got = rank_distance_change(n, alpha, gaps, reference)
    for gap, value in zip(gaps.tolist(), got.tolist(), strict=True):
        exact = abs(gap - exact_n) - abs(reference - exact_n)
        if exact == 0:
            assert value == 0.0, (gap, value)
        else:
            assert abs(Fraction(value) - exact) <= abs(exact) * Fraction(2, 2**52), (gap, value)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(0, 10**9), ALPHAS, st.data())
def test_changes_are_correct_to_an_ulp_or_two_of_themselves(n, alpha, data) -> None:
    whole = int(exact_alpha(alpha) * n)
    near = [max(0, min(n, whole + d)) for d in range(-3, 5)]
    picked = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=8))
    gaps = np.array(sorted(set(near + picked)), dtype=np.int64)
    reference = data.draw(st.sampled_from(gaps.tolist()))
    check(n, alpha, gaps, reference)


def test_half_integer_quantiles_leave_a_tiny_exact_change() -> None:
    gaps = np.arange(12, dtype=np.int64)
    for alpha in (0.5000000000090909, 0.4999999999909091, 0.5):
        for reference in (5, 6):
            check(11, alpha, gaps, reference)
