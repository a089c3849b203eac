"""Helpers on a mechanism's data: bounding, sorting, the statistics of sorted data.

The conventions are those of :mod:`mechanisms.core.interface`: the lower median is
``x_(ceil(n/2))`` and every statistic of the empty dataset is the lower bound ``a``.
"""

from __future__ import annotations

import math

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
    return math.fsum(sorted_x.tolist()) / sorted_x.size


def read_only(array: np.ndarray) -> np.ndarray:
    """``array`` itself, made read-only (a release's arrays are shared with its caller)."""
    array.flags.writeable = False
    return array
