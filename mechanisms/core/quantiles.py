"""Quantile arithmetic: exact α·n, the rank of the α-quantile, its value, the rank utility.

``alpha`` is read as the decimal it was written as (0.1 is exactly 1/10) and
``alpha·n`` is split exactly into an integer and a fraction with Python integers,
so ranks are exact at any n.  Sources: the quantile exponential mechanism of
"The Exponential Mechanism for Medians" (Harvard Privacy Tools Project lecture
notes, 2020), eq. 2.2 and Theorems 2-3 for the sensitivities; the conventions are
those of :mod:`mechanisms.median.quantile_em`'s docstring.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.sorted_data import SortedData
from mechanisms.core.validation import check_open_unit


def check_alpha(alpha: float) -> float:
    """Return ``alpha`` as a float, or raise ``ValueError`` unless it lies in (0, 1)."""
    return check_open_unit(alpha, "alpha")


@lru_cache(maxsize=1024)
def exact_alpha(alpha: float) -> Fraction:
    """``alpha`` as the decimal it was written as: the shortest repr of the float, exactly.

    So ``alpha = 0.1`` means 1/10 and the 0.1-quantile of 10 points is ``x_(1)``,
    not ``x_(2)`` (the binary float 0.1 is slightly above 1/10; numpy's float
    product ``0.55 * 100 = 55.00000000000001`` has the same problem).  Cached per
    ``alpha``: parsing the decimal costs more than a release's arithmetic.
    """
    return Fraction(repr(float(alpha)))


def split_alpha_n(n: int, alpha: float) -> tuple[int, float]:
    """``alpha·n = whole + fraction`` with ``whole`` an exact integer and ``0 <= fraction < 1``.

    With ``alpha = P/Q`` (:func:`exact_alpha`), ``P·n = whole·Q + rest`` in Python
    integers (exact) and ``fraction = rest/Q``, whose integer true division is
    correctly rounded: the float nearest to ``alpha·n - whole``.
    """
    exact = exact_alpha(alpha)
    whole, rest = divmod(exact.numerator * int(n), exact.denominator)
    return whole, rest / exact.denominator


def rank_distance(n: int, alpha: float, gaps: np.ndarray) -> np.ndarray:
    """``|g| = |(1 - alpha)·i - alpha·(n - i)| = |i - alpha·n|`` on the interior of gap ``i``."""
    whole, fraction = split_alpha_n(n, alpha)
    distance = np.subtract(gaps, whole, dtype=np.float64)  # exact: integers below 2**53
    distance -= fraction
    return np.abs(distance, out=distance)


def rank_distance_change(n: int, alpha: float, gaps: np.ndarray, reference: int) -> np.ndarray:
    """``|i - alpha·n| - |reference - alpha·n|`` for the gap indices ``i`` of ``gaps``, each
    correct to an ulp or two *of itself* (not of the distances, which may be ``~n``).

    With ``alpha·n = whole + f`` exactly (:func:`split_alpha_n`), a gap ``i <= whole`` is
    at ``(whole - i) + f`` and a gap ``i > whole`` at ``(i - whole - 1) + (1 - f)``, so a
    change is an integer ``M`` plus ``0`` or ``±g`` with ``g = f - (1 - f) = (2·rest - Q)/Q``
    (``alpha = P/Q``).  ``g = g_hi + g_lo`` is split into two floats exactly enough
    (``g_lo`` is ``g - g_hi`` rounded), and ``(M ± g_hi) ± g_lo`` is summed in that order:
    where the change is small (``|M| <= 1`` and ``|g_hi| >= 1/2``, or ``M = 0``), ``M ± g_hi``
    is exact (Sterbenz) and the result is rounded once; elsewhere it is at least 1/2 and
    rounded a few times at its own ulp.  The exponential mechanisms use it to shift their
    scores exactly at huge ε (:mod:`mechanisms.sampling.piecewise`).
    """
    exact = exact_alpha(alpha)
    whole, rest = divmod(exact.numerator * int(n), exact.denominator)
    g = Fraction(2 * rest - exact.denominator, exact.denominator)
    g_hi = float(g)
    g_lo = float(g - Fraction(g_hi))
    i = np.asarray(gaps, dtype=np.int64)
    right = i > whole
    integer = np.where(right, i - (whole + 1), whole - i)  # |i - alpha·n| minus its f or 1 - f
    reference_right = reference > whole
    integer -= reference - (whole + 1) if reference_right else whole - reference
    # f - (1 - f) = g where i is left of alpha·n and the reference right, -g the other way
    side = np.subtract(reference_right, right, dtype=np.float64)
    change = integer.astype(np.float64)
    change += side * g_hi
    change += side * g_lo
    return change


def sensitivity(alpha: float, neighbouring: Neighbouring) -> float:
    """``Δu``: ``max(alpha, 1 - alpha)`` for add/remove (Theorem 3), 1 for replace-one (Thm 2)."""
    if neighbouring is Neighbouring.REPLACE_ONE:
        return 1.0
    return max(alpha, 1.0 - alpha)


def quantile_rank(n: int, alpha: float) -> int:
    """1-based rank ``ceil(alpha·n)`` of the alpha-quantile (``>= 1`` for ``n >= 1``):
    ``-floor(-P·n / Q)`` in Python integers, with ``alpha = P/Q`` (:func:`exact_alpha`)."""
    exact = exact_alpha(alpha)
    return -(-exact.numerator * int(n) // exact.denominator)


def quantile_value(sorted_x: SortedData, alpha: float, lower: float) -> float:
    """The alpha-quantile ``x_(ceil(alpha·n))`` of sorted data (an array, or data sorted only
    where read); ``lower`` for empty data."""
    if sorted_x.size == 0:
        return float(lower)
    return float(sorted_x[quantile_rank(sorted_x.size, alpha) - 1])
