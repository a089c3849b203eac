"""Input checks shared by every mechanism: one place for what counts as a valid ε, δ, α,
integer, choice, dataset, pair of bounds and generator.

Each check returns the value in the type the mechanisms compute with, or raises a
``ValueError`` whose message names the argument (scikit-learn's ``check_scalar`` is
the model): only public inputs may raise, and data only for not being a 1-D array of
finite real numbers (:mod:`mechanisms.core.interface`, "Conventions").
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from decimal import Decimal

import numpy as np


def check_real(
    value: object,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_minimum: bool = True,
    open_maximum: bool = True,
) -> float:
    """``value`` as a finite ``float`` in the stated range; ``ValueError`` naming ``name`` if not.

    The one real-number check of the project (with :func:`check_integer`, in the
    spirit of scikit-learn's ``check_scalar``): ε, δ, α, timeouts and config values
    all go through it.  Accepted: ``int``, ``float``, ``fractions.Fraction``,
    ``decimal.Decimal`` and numpy reals; refused: ``bool``, strings, NaN, ±inf and
    values outside the range (``open_*``: the end itself is excluded).
    """
    low = "" if minimum is None else f"{'>' if open_minimum else '>='} {minimum:g}"
    high = "" if maximum is None else f"{'<' if open_maximum else '<='} {maximum:g}"
    wanted = " and ".join(part for part in (low, high) if part)
    wanted = f"a finite number {wanted}" if wanted else "a finite number"
    if not _is_real_number(value):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (OverflowError, ValueError):  # a huge Fraction or Decimal, Decimal('sNaN')
        raise ValueError(f"{name} must be {wanted}, got {value!r}") from None
    below = minimum is not None and (number <= minimum if open_minimum else number < minimum)
    above = maximum is not None and (number >= maximum if open_maximum else number > maximum)
    if not math.isfinite(number) or below or above:
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return number


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float, or raise ``ValueError`` unless finite and > 0."""
    return check_real(epsilon, name, minimum=0.0)


def check_open_unit(value: object, name: str) -> float:
    """Return ``value`` as a float; ``ValueError`` naming ``name`` unless it lies in (0, 1)."""
    return check_real(value, name, minimum=0.0, maximum=1.0)


def check_delta(delta: float | None, *, required: bool, mechanism: str) -> float | None:
    """Validate δ: required in (0, 1) for approximate-DP mechanisms, absent otherwise."""
    if not required:
        if delta is not None:
            raise ValueError(
                f"delta: {mechanism} does not use delta (its guarantee has delta = 0); "
                f"got delta={delta!r}"
            )
        return None
    if delta is None:
        raise ValueError(f"delta: {mechanism} needs delta in (0, 1)")
    return check_open_unit(delta, "delta")


def check_choice(value: str, choices: tuple[str, ...], name: str) -> str:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_data(data: object) -> np.ndarray:
    """Return ``data`` as a 1-D float64 array of finite real numbers (possibly empty).

    Accepted: sequences and arrays of integers (signed or unsigned) and floats, and
    object arrays whose entries are all real numbers (``int``, ``float``,
    ``fractions.Fraction``, ``decimal.Decimal``, numpy integers and floats).
    Rejected with a ``ValueError`` naming ``data``: booleans (a mask passed as
    data is a mistake more often than a 0/1 sample; convert with
    ``.astype(float)``), complex numbers (no silent loss of the imaginary part),
    ``datetime64``/``timedelta64`` (no silent unit counts), strings and bytes
    (no parsing), other objects, arrays that are not 1-D, and NaN or ±inf.

    The empty dataset is accepted: it is a neighbour of every one-point dataset
    under add/remove, so refusing it would reveal emptiness through an exception;
    every mechanism releases from its distribution on the empty dataset (whose
    lower median is the lower bound ``a``; module docstring).
    """
    try:
        array = np.asarray(data)
    except (TypeError, ValueError):  # ragged nesting
        raise ValueError("data must be a 1-D array of real numbers") from None
    if array.ndim != 1:
        raise ValueError(f"data must be 1-D, got an array of shape {array.shape}")
    x = array if array.dtype == np.float64 else _as_float64(array)
    if not np.logical_and.reduce(np.isfinite(x)):  # .all(), without its Python wrapper
        raise ValueError("data contains NaN or infinite values")
    return x


def _as_float64(array: np.ndarray) -> np.ndarray:
    """A 1-D array of another dtype than float64 as float64 (:func:`check_data`'s rules)."""
    kind = array.dtype.kind
    if kind == "O" and not all(_is_real_number(value) for value in array):
        raise ValueError("data must hold real numbers only, got an object array with other entries")
    if kind == "b":
        raise ValueError(
            "data must hold real numbers, got booleans (use data.astype(float) for a 0/1 sample)"
        )
    if kind not in "iufO":
        raise ValueError(f"data must hold real numbers (int or float), got dtype {array.dtype}")
    try:
        with np.errstate(over="ignore"):  # a long double beyond float64's range becomes ±inf
            return array.astype(np.float64)
    except (OverflowError, ValueError):  # a Python int beyond float64's range, Decimal('sNaN')
        raise ValueError("data contains values that are not finite float64 numbers") from None


def _is_real_number(value: object) -> bool:
    """True for ints, floats, fractions, decimals and numpy reals; False for bools and others."""
    return isinstance(value, numbers.Real | Decimal) and not isinstance(value, bool | np.bool_)


def check_bounds(bounds: object) -> tuple[float, float]:
    """Return the public range ``(a, b)`` as floats with ``a < b`` and ``b - a`` finite.

    ``b - a`` is the global sensitivity of the median and the length of the
    exponential mechanisms' base measure, so it must be a float64 too
    (``(-1e308, 1e308)`` is refused: its width overflows).
    """
    try:
        if not isinstance(bounds, Iterable):
            raise TypeError
        lower, upper = map(float, bounds)
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be a pair (a, b) of numbers, got {bounds!r}") from None
    if not (math.isfinite(lower) and math.isfinite(upper)):
        raise ValueError(f"bounds must be finite, got {bounds!r}")
    if not lower < upper:
        raise ValueError(f"bounds must satisfy a < b, got {bounds!r}")
    if not math.isfinite(upper - lower):
        raise ValueError(f"bounds: the width b - a overflows float64, got {bounds!r}")
    return lower, upper


def check_integer(value: object, name: str, *, minimum: int | None = None) -> int:
    """``value`` as an ``int``; ``ValueError`` naming ``name`` unless it is an integer
    (``int`` or ``numpy.integer``, never ``bool``) of at least ``minimum``.

    The one integer check of the project, in the spirit of scikit-learn's
    ``check_scalar``: configs, options and sizes all go through it.
    """
    wanted = "an integer" if minimum is None else f"an integer >= {minimum}"
    integer = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not integer or (minimum is not None and value < minimum):  # type: ignore[operator]
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def check_size(size: int) -> int:
    """Validate a sample size (a non-negative integer)."""
    return check_integer(size, "size", minimum=0)


def check_rng(rng: object) -> np.random.Generator:
    """Require a ``numpy.random.Generator`` (no hidden global state)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def check_flag(value: object, name: str) -> bool:
    """``value`` as a ``bool``: Python's or numpy's True or False; ``clip_output=1`` or
    ``"no"`` is a ``ValueError`` naming ``name``, not a guess."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)
