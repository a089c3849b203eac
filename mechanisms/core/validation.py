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
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np

_FLOAT64 = np.dtype(np.float64)
"""The dtype of the arrays a release computes with (a singleton: compared with ``is``)."""


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
    (no parsing), other objects, arrays that are not 1-D, NaN or ±inf, and
    **masked arrays** (``numpy.ma.MaskedArray``, even with nothing masked): numpy
    reads through the mask, so a masked entry would be released as a data point;
    pass ``data.compressed()`` for the unmasked values.

    The empty dataset is accepted: it is a neighbour of every one-point dataset
    under add/remove, so refusing it would reveal emptiness through an exception;
    every mechanism releases from its distribution on the empty dataset (whose
    lower median is the lower bound ``a``; module docstring).
    """
    if type(data) is np.ndarray and data.dtype is _FLOAT64 and data.ndim == 1:
        x = data  # the common case (a release's hot path): nothing to convert
    else:
        x = _as_data_array(data)
    if not np.logical_and.reduce(np.isfinite(x)):  # .all(), without its Python wrapper
        raise ValueError("data contains NaN or infinite values")
    return x


def _as_data_array(data: object) -> np.ndarray:
    """``data`` as a 1-D float64 array (:func:`check_data`'s rules but finiteness)."""
    if isinstance(data, np.ma.MaskedArray):
        raise ValueError(
            "data must not be a masked array (its masked entries would be read as data); "
            "pass data.compressed() for the unmasked values"
        )
    try:
        array = np.asarray(data)
    except (TypeError, ValueError):  # ragged nesting
        raise ValueError("data must be a 1-D array of real numbers") from None
    if array.ndim != 1:
        raise ValueError(f"data must be 1-D, got an array of shape {array.shape}")
    return array if array.dtype == np.float64 else _as_float64(array)


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


def check_bounds(bounds: object, *, infinite: bool = False) -> tuple[float, float]:
    """Return the public range ``(a, b)`` as floats with ``a < b`` and ``b - a`` finite.

    ``bounds`` must hold exactly two real numbers, each an ``int``, ``float``,
    ``fractions.Fraction``, ``decimal.Decimal`` or numpy real (never a ``bool`` or
    ``numpy.bool_``: ``(False, True)`` is not ``(0, 1)``), in a tuple, a list, another
    sequence (a Hydra ``ListConfig``) or a 1-D numpy array.  Anything else is a
    ``ValueError`` naming ``bounds``: strings and bytes (``"09"`` is not ``(0, 9)``,
    ``b"\x00\x14"`` not ``(0, 20)``, ``("0", "20")`` is not parsed), mappings, sets and
    iterators (no order, or read only once), masked arrays and arrays that are not 1-D.

    ``b - a`` is the global sensitivity of the median and the length of the
    exponential mechanisms' base measure, so it must be a float64 too
    (``(-1e308, 1e308)`` is refused: its width overflows).

    ``infinite=True`` (a mechanism that needs no bounds,
    :attr:`mechanisms.core.interface.Mechanism.accepts_infinite_bounds`) also accepts
    ``a = -inf`` and ``b = inf`` and any width; NaN and ``a >= b`` are still refused.
    """
    lower, upper = _real_pair(bounds)
    if lower < upper and upper - lower < math.inf:  # so both are finite (the common case)
        return lower, upper
    if infinite and not (math.isnan(lower) or math.isnan(upper)):
        if not lower < upper:
            raise ValueError(f"bounds must satisfy a < b, got {bounds!r}")
        return lower, upper
    if not (math.isfinite(lower) and math.isfinite(upper)):
        raise ValueError(f"bounds must be finite, got {bounds!r}")
    if not lower < upper:
        raise ValueError(f"bounds must satisfy a < b, got {bounds!r}")
    if not math.isfinite(upper - lower):
        raise ValueError(f"bounds: the width b - a overflows float64, got {bounds!r}")
    return lower, upper


_PLAIN_PAIRS = (tuple, list)
_PLAIN_REALS = (int, float, np.float64)
"""Exact types (``type(x) in``: never ``bool``, a subclass of ``int``) read without further
checks by :func:`_real_pair`."""


def _real_pair(bounds: object) -> tuple[float, float]:
    """The two entries of ``bounds`` as floats (possibly ±inf or NaN; :func:`check_bounds`
    checks the values); ``ValueError`` naming ``bounds`` unless it is a sequence or 1-D
    array of exactly two real numbers (not booleans)."""
    if type(bounds) in _PLAIN_PAIRS and len(bounds) == 2:  # type: ignore[arg-type]
        first: Any = bounds[0]  # type: ignore[index]
        second: Any = bounds[1]  # type: ignore[index]
        if type(first) is float and type(second) is float:
            return first, second
        if (
            type(first) in _PLAIN_REALS
            and type(second) in _PLAIN_REALS
            and (abs(first) < 2**1023 and abs(second) < 2**1023)
        ):  # the common case, without the ABC checks below (a release's hot path)
            return float(first), float(second)
    wanted = f"bounds must be a pair (a, b) of numbers, got {bounds!r}"
    if isinstance(bounds, np.ma.MaskedArray | str | bytes | bytearray):
        raise ValueError(wanted)
    if isinstance(bounds, np.ndarray):
        if bounds.ndim != 1:
            raise ValueError(wanted)
        items = bounds.tolist() if bounds.dtype.kind == "O" else list(bounds)
    elif isinstance(bounds, Sequence) and not isinstance(bounds, memoryview):
        items = list(bounds)
    else:  # a number, None, a mapping, a set, an iterator, ...
        raise ValueError(wanted)
    if len(items) != 2 or not all(_is_real_number(value) for value in items):
        raise ValueError(wanted)
    try:
        with np.errstate(over="ignore"):  # a long double beyond float64's range: ±inf
            return float(items[0]), float(items[1])
    except (OverflowError, ValueError):  # a Python int beyond float64's range, Decimal('sNaN')
        raise ValueError(f"bounds must be finite, got {bounds!r}") from None


def check_integer(
    value: object, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` as an ``int``; ``ValueError`` naming ``name`` unless it is an integer
    (``int`` or ``numpy.integer``, never ``bool``) of at least ``minimum`` and at most
    ``maximum``.

    The one integer check of the project, in the spirit of scikit-learn's
    ``check_scalar``: configs, options and sizes all go through it.
    """
    bounds = [f">= {minimum}"] if minimum is not None else []
    bounds += [f"<= {maximum}"] if maximum is not None else []
    wanted = " ".join(["an integer", " and ".join(bounds)]).strip()
    integer = isinstance(value, (int, np.integer)) and not isinstance(value, bool | np.bool_)
    if not integer:
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    number = int(value)  # type: ignore[call-overload]
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return number


def check_size(size: int) -> int:
    """Validate a sample size (a non-negative integer)."""
    if type(size) is int and size >= 0:  # the common case, without check_integer's messages
        return size
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
