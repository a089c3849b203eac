"""The plug-in interface in one import: what a mechanism written outside the package needs.

A stable facade over :mod:`mechanisms.core` (where each name is defined and
documented), so plug-ins written against earlier versions keep running::

    from mechanisms.base import Guarantee, Mechanism, Neighbouring, Release, lower_median
"""

from mechanisms.core.data import bound_data, lower_median, mean_value, read_only, sorted_bounded
from mechanisms.core.guarantee import NEIGHBOURS, Guarantee, Neighbouring, check_neighbours
from mechanisms.core.interface import (
    BOUNDING_METHODS,
    Mechanism,
    OutputDistribution,
    Release,
    ReleaseT,
)

__all__ = [
    "BOUNDING_METHODS",
    "NEIGHBOURS",
    "Guarantee",
    "Mechanism",
    "Neighbouring",
    "OutputDistribution",
    "Release",
    "ReleaseT",
    "bound_data",
    "check_neighbours",
    "lower_median",
    "mean_value",
    "read_only",
    "sorted_bounded",
]
