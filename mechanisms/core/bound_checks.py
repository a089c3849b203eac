"""Evaluating error bounds on a release: every bound a mechanism declares on some data, and the
exact probability (from the release's cdf) that its error stays within a bound."""

from __future__ import annotations

import math

import numpy as np

from mechanisms.core.bounds import ABS_ERROR, DEFAULT_ETA, Bound, check_eta
from mechanisms.core.data import sorted_bounded
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.quantiles import split_alpha_n
from mechanisms.core.validation import check_bounds, check_data


def declares_bounds(cls: type) -> bool:
    """Whether mechanism class ``cls`` declares error bounds (overrides
    :meth:`mechanisms.core.interface.Mechanism.error_bounds`)."""
    return getattr(cls, "error_bounds", Mechanism.error_bounds) is not Mechanism.error_bounds


def mechanism_bounds(
    mechanism: Mechanism, data: object, bounds: object, eta: float = DEFAULT_ETA
) -> list[Bound]:
    """Every bound ``mechanism``'s class declares (its ``error_bounds``, with its own ε,
    options and bounding) on ``data``; an empty list for a class that declares none."""
    sorted_x, lower, upper = bounded_sorted(mechanism, data, bounds)
    return list(mechanism.error_bounds(sorted_x, lower, upper, check_eta(eta)))


def _cdf_below(release: Release, x: float) -> float:
    """``P(M < x)``: the cdf just below ``x`` (excludes an atom at ``x``)."""
    return float(release.cdf(np.nextafter(x, -np.inf)))


def exact_coverage(release: Release, bound: Bound, sorted_x: np.ndarray | None = None) -> float:
    """``P(quantity <= bound.value)`` on this dataset, from the release's exact cdf.

    Absolute error: ``P(T − t <= M <= T + t)``.  Rank error (needs the sorted
    bounded data): ``P(x_(lo) <= M < x_(hi))`` with :func:`rank_window` of ``value``.
    """
    if bound.quantity == ABS_ERROR:
        centre = release.true_value
        return float(release.cdf(centre + bound.value)) - _cdf_below(release, centre - bound.value)
    if sorted_x is None:
        raise ValueError("sorted_x: a rank-error bound needs the sorted bounded data")
    lo, hi = rank_window(sorted_x.size, bound.details["alpha"], bound.value)
    if lo >= hi:
        return 0.0
    left = order_statistic(sorted_x, lo, release.lower, release.upper)
    right = 1.0 if hi > sorted_x.size else _cdf_below(release, float(sorted_x[hi - 1]))
    return right - _cdf_below(release, left)


def bounded_sorted(
    mechanism: Mechanism, data: object, bounds: object
) -> tuple[np.ndarray, float, float]:
    """``(sorted_x, a, b)``: the sorted bounded data ``mechanism.release`` works on."""
    lower, upper = check_bounds(bounds)
    return sorted_bounded(check_data(data), lower, upper, mechanism.bounding), lower, upper


def rank_window(n: int, alpha: float, k: float) -> tuple[int, int]:
    """``(lo, hi)`` with ``{y : rank error <= k} = [x_(lo), x_(hi))`` (``hi = n + 1``: up to b).

    ``#{x_i <= y} >= j`` iff ``y >= x_(j)``, and ``<= j`` iff ``y < x_(j+1)``.
    """
    whole, fraction = split_alpha_n(n, alpha)
    lo = max(0, whole + math.ceil(fraction - k))
    hi = min(n + 1, whole + math.floor(fraction + k) + 1)
    return lo, hi


def order_statistic(sorted_x: np.ndarray, j: int, lower: float, upper: float) -> float:
    """``x_(j)`` (1-based) with ``x_(0) = a`` and ``x_(n+1) = b``."""
    if j <= 0:
        return float(lower)
    return float(upper) if j > sorted_x.size else float(sorted_x[j - 1])
