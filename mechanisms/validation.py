"""The input checks of every mechanism, for plug-ins: a facade over
:mod:`mechanisms.core.validation`, where each check is defined and documented."""

from mechanisms.core.validation import (
    check_bounds,
    check_choice,
    check_data,
    check_delta,
    check_epsilon,
    check_flag,
    check_integer,
    check_open_unit,
    check_real,
    check_rng,
    check_size,
)

__all__ = [
    "check_bounds",
    "check_choice",
    "check_data",
    "check_delta",
    "check_epsilon",
    "check_flag",
    "check_integer",
    "check_open_unit",
    "check_real",
    "check_rng",
    "check_size",
]
