"""Helpers on a mechanism's data: bounding, sorting, the statistics of sorted data.

The conventions are those of :mod:`mechanisms.core.interface`: the lower median is
``x_(ceil(n/2))`` and every statistic of the empty dataset is the lower bound ``a``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from mechanisms.core.selection import OrderStatistics


def bound_data(x: np.ndarray, lower: float, upper: float, method: str) -> np.ndarray:
    """Bound ``x`` to ``[lower, upper]`` by clipping or by dropping outside points."""
    if method == "clip":
        # a plain array's clip method is the call np.clip dispatches to, without the dispatch
        return x.clip(lower, upper) if type(x) is np.ndarray else np.clip(x, lower, upper)
    return x[(x >= lower) & (x <= upper)]


def sorted_bounded(x: np.ndarray, lower: float, upper: float, method: str) -> np.ndarray:
    """``x`` bounded to ``[lower, upper]`` (:func:`bound_data`), sorted; always a fresh array."""
    bounded = bound_data(x, lower, upper, method)
    bounded.sort()
    return bounded


def lower_median(sorted_x: np.ndarray | OrderStatistics, lower: float) -> float:
    """The lower median ``x_(ceil(n/2))`` of sorted data; ``lower`` for empty data."""
    if sorted_x.size == 0:
        return float(lower)
    return float(sorted_x[(sorted_x.size - 1) // 2])


def mean_value(sorted_x: np.ndarray, lower: float) -> float:
    """The mean of bounded data, ``fsum(x) / n`` (the exactly rounded sum, so independent of
    the order of the points); ``lower`` for empty data (the convention of this module)."""
    if sorted_x.size == 0:
        return float(lower)
    return exact_mean(sorted_x)


def exact_mean(values: np.ndarray) -> float:
    """``fsum(values) / n`` for a non-empty float array, also where the sum overflows float64
    (wide bounds: ``n`` points near ``1e308``): then in units of the power of two ``u`` with
    ``u <= max |x| < 2u``, ``fsum(x/u)/n·u`` (exact scalings: the correctly rounded sum,
    divided by ``n`` once)."""
    try:
        return math.fsum(values.tolist()) / values.size
    except OverflowError:  # the exactly rounded sum is beyond float64; the mean is not
        unit = math.ldexp(1.0, math.frexp(float(np.max(np.abs(values))))[1] - 1)
        return math.fsum((values / unit).tolist()) / values.size * unit


def sum_unit(width: float, n: int) -> float:
    """A unit for sums of up to ``n + 1`` terms of magnitude at most ``width``: 1 when they
    cannot overflow float64, else the power of two ``u`` with ``u <= width < 2u``.  Dividing
    by it is exact, so sums in that unit are the same floats, and stay below ``2(n + 1)``."""
    if width * (n + 1) < sys.float_info.max / 4:
        return 1.0
    return math.ldexp(1.0, math.frexp(width)[1] - 1)


def read_only(array: np.ndarray) -> np.ndarray:
    """``array`` itself, made read-only (a release's arrays are shared with its caller)."""
    array.flags.writeable = False
    return array
