"""The finite public domain of the mode, and the counts every mode mechanism starts from.

The Duff paper (section 4.1) states the mode for data "with values from a
finite set Y".  Here ``Y = {a, a + 1, ..., b}``, the integers of the public
bounds ``[a, b]`` (``a`` and ``b`` integers): a Zipf sample over ``{1..M}`` has
bounds ``(1, M)``, a measurement rounded to integers has its rounded range.
``|Y| = b - a + 1`` may be huge (10⁶ and beyond): mechanisms use it as a number
and never build an array over ``Y``.

Data are mapped into ``Y`` without ever raising (only public inputs may raise):
a mechanism bounds them to ``[a, b]`` first (clip or drop, as for the median),
then this module rounds each value to the nearest integer (half to even,
``numpy.rint``), which stays inside ``[a, b]`` because both ends are integers.
The harness computes the true mode the same way.

The mode ``T(S)`` is the **smallest** most frequent value (``a`` for the empty
dataset, where every value has count 0).  When several values tie at the top
count, every one of them is a correct answer: the metrics count an estimate as
a hit when its count equals ``n_max``, so ties never turn a right answer into a
wrong one.
"""

from __future__ import annotations

import numpy as np

from mechanisms.core.validation import check_bounds

MAX_DOMAIN = 2**53
"""Largest ``|Y|``: every integer of ``[a, b]`` must be exact in float64."""


def check_domain(bounds: object) -> tuple[float, float]:
    """The public bounds ``(a, b)`` of a finite integer domain, as floats.

    ``ValueError`` naming ``bounds`` unless ``a < b`` are finite integers with
    ``|a|, |b| <= 2**53`` (every integer between them is a float64).
    """
    lower, upper = check_bounds(bounds)
    if not (lower.is_integer() and upper.is_integer()):
        raise ValueError(f"bounds of a finite domain must be integers, got {bounds!r}")
    if max(abs(lower), abs(upper)) > MAX_DOMAIN:
        raise ValueError(f"bounds of a finite domain must lie within ±2**53, got {bounds!r}")
    return lower, upper


def domain_size(lower: float, upper: float) -> int:
    """``|Y| = b - a + 1`` for checked bounds."""
    return int(upper) - int(lower) + 1


def domain_counts(sorted_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``Y`` present in bounded data and their counts ``n_y``.

    ``sorted_x`` is sorted data inside ``[a, b]``; each value is rounded to the
    nearest integer (half to even).  Rounding keeps the order, so the values come
    out sorted; both arrays are empty for empty data.
    """
    rounded = np.rint(sorted_x)
    if rounded.size == 0:
        return rounded, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], rounded[1:] != rounded[:-1])))
    counts = np.diff(np.append(starts, rounded.size))
    return rounded[starts], counts


def mode_value(sorted_x: np.ndarray, lower: float) -> float:
    """The smallest most frequent value of ``Y`` in the data; ``lower`` for empty data."""
    values, counts = domain_counts(sorted_x)
    if values.size == 0:
        return float(lower)
    return float(values[int(np.argmax(counts))])  # argmax: the first (smallest) of ties


def count_of(sorted_x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``n_y`` for each value of ``y`` (integers of ``Y``) in bounded sorted data."""
    rounded = np.rint(sorted_x)
    points = np.asarray(y, dtype=np.float64)
    return np.searchsorted(rounded, points, side="right") - np.searchsorted(rounded, points)
