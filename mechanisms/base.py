"""The interface every median mechanism implements, its guarantee, and input checks.

Shape (after ``scipy.stats`` frozen distributions): a :class:`Mechanism` is
configured once from its privacy parameters; ``mechanism.release(data, bounds)``
bounds and sorts the data and returns a :class:`Release`, *the output
distribution of the mechanism on that one dataset*, with ``sample`` and an exact
``cdf``.  All per-dataset work happens in ``release``; ``sample`` only draws.

Conventions shared by all mechanisms
------------------------------------
* The statistic is the **lower median** of the bounded data: the element of
  rank ``m = ceil(n / 2)`` (1-based), i.e. ``(n + 1) / 2`` for odd ``n`` and
  ``n / 2`` for even ``n`` (Duff paper, section 4.1).
* The lower median of the empty dataset is defined as the lower bound ``a``.
  The empty dataset is reachable under add/remove neighbours (and after
  ``bounding="drop"``), so every mechanism must handle it; with this convention
  the smooth sensitivity formulas stay valid (padding ``x_i = a`` for ``i < 1``).
* Errors depend only on public arguments (smartnoise-sdk #572): ε, δ, the
  options and the bounds, never the data's values or size.  The documented
  exceptions, rejected before any private step, are data that are not a 1-D
  array of real numbers (:func:`check_data`) and NaN or infinite data.
* Extreme but valid parameters either give the exact release (noise scales
  beyond float64's range are kept as ``significand·2**exponent``, tiny ε takes
  the β → 0 limit of the tuned mechanisms) or a ``ValueError`` naming
  epsilon, delta or bounds and saying what is not representable in float64.
"""

from __future__ import annotations

import enum
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

import numpy as np

from mechanisms.selection import OrderStatistics

if TYPE_CHECKING:
    from mechanisms.error_bounds import Bound

BOUNDING_METHODS = ("clip", "drop")


class Neighbouring(enum.StrEnum):
    """Which datasets count as neighbours in the privacy definition."""

    ADD_REMOVE = "add_remove"
    """S' is S with one element added or removed (Duff paper, Definition 1)."""
    REPLACE_ONE = "replace_one"
    """S' is S with one element replaced by another (same size)."""


@dataclass(frozen=True)
class Guarantee:
    """A mechanism's privacy guarantee, as data.

    ``epsilon`` and ``delta`` are the (ε, δ)-DP guarantee the mechanism
    satisfies (``delta == 0`` for pure DP).  For mechanisms analysed in
    zero-concentrated DP, ``rho`` is the ρ-zCDP guarantee and (ε, δ) is what it
    was converted to.  ``data_dependent_tuning`` is True when parameters were
    chosen by optimising over the private data (the Duff paper's "oracle"
    choice), in which case the stated guarantee does **not** cover the release.
    """

    epsilon: float
    delta: float
    neighbouring: Neighbouring
    rho: float | None = None
    data_dependent_tuning: bool = False
    source: str = ""

    @property
    def kind(self) -> str:
        """``"pure"``, ``"approximate"`` or ``"zcdp"``."""
        if self.rho is not None:
            return "zcdp"
        return "pure" if self.delta == 0 else "approximate"

    def __str__(self) -> str:
        if self.rho is not None:
            core = f"{self.rho:.6g}-zCDP => ({self.epsilon:.6g}, {self.delta:.3g})-DP"
        elif self.delta == 0:
            core = f"{self.epsilon:.6g}-DP"
        else:
            core = f"({self.epsilon:.6g}, {self.delta:.3g})-DP"
        text = f"{core}, {self.neighbouring.value} neighbours"
        if self.data_dependent_tuning:
            text += ", NOT private: parameters tuned on the private data"
        return text


# --------------------------------------------------------------------------- checks


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


NEIGHBOURS = tuple(member.value for member in Neighbouring)


def check_neighbours(value: str) -> Neighbouring:
    """The ``neighbours`` option, ``"add_remove"`` or ``"replace_one"``, as a Neighbouring."""
    return Neighbouring(check_choice(value, NEIGHBOURS, "neighbours"))


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


# ---------------------------------------------------------------------- interfaces


def mean_value(sorted_x: np.ndarray, lower: float) -> float:
    """The mean of bounded data, ``fsum(x) / n`` (the exactly rounded sum, so independent of
    the order of the points); ``lower`` for empty data (the convention of this module)."""
    if sorted_x.size == 0:
        return float(lower)
    return math.fsum(sorted_x.tolist()) / sorted_x.size


class OutputDistribution(ABC):
    """The distribution of a mechanism's output on one bounded dataset: what every release has.

    Attributes: ``lower``/``upper`` (the public bounds), ``n`` (size of the
    bounded data) and ``true_value`` (the non-private statistic).  A point
    estimate's is a :class:`Release`; a confidence interval's is a
    :class:`mechanisms.intervals.IntervalRelease`, whose sample has two columns.
    """

    lower: float
    upper: float
    n: int
    true_value: float

    @abstractmethod
    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``size`` independent private outputs."""


class Release(OutputDistribution):
    """The output distribution of a point-estimate mechanism on one bounded dataset.

    Beside the attributes of :class:`OutputDistribution`: ``refusal_probability``,
    the exact probability of the answer "no result" (⊥): 0 unless the mechanism's
    class sets ``may_refuse`` (propose-test-release, the stability-based
    histogram).  A ⊥ is a NaN in :meth:`sample`'s output and is not counted by
    :meth:`cdf`, so ``cdf(upper) = 1 - refusal_probability``.
    """

    refusal_probability: float = 0.0

    @abstractmethod
    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """``P(M(S) <= x)``, vectorised, exact up to floating-point error (atoms included)."""


ReleaseT = TypeVar("ReleaseT", bound=OutputDistribution, covariant=True)
"""What a mechanism's :meth:`Mechanism.release` returns (a :class:`Release` for a point
estimate, an interval's release for a confidence-interval method)."""


class Mechanism(ABC, Generic[ReleaseT]):
    """A DP mechanism configured with its privacy parameters.

    Subclasses set ``name``, ``requires_delta`` and ``neighbouring`` and
    implement :meth:`_release` on sorted bounded data and :attr:`guarantee`.
    Point estimators derive from ``Mechanism[Release]``; the confidence-interval
    methods of :mod:`mechanisms.intervals` from ``Mechanism[IntervalRelease]``.
    """

    name: ClassVar[str]
    display_name: ClassVar[str] = ""
    """The name figures and tables show for this class ("": the config label)."""
    requires_epsilon: ClassVar[bool] = True
    """False only for a non-private reference method, which takes no ε (the harness
    then configures it without one; its guarantee states ε = ∞)."""
    requires_delta: ClassVar[bool] = False
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
    statistics: ClassVar[frozenset[str]] = frozenset({"median"})
    """The statistics (:mod:`mechanisms.statistics` kinds) this class can estimate;
    one that supports ``"quantile"`` takes an ``alpha`` option."""
    may_refuse: ClassVar[bool] = False
    """Whether a release may answer ⊥ (a NaN in its sample; :class:`Release`)."""

    @classmethod
    def for_statistic(cls, kind: str) -> type[Mechanism]:
        """The class that estimates statistic ``kind`` for this one: itself, unless the
        class names a family (``duff``: :class:`mechanisms.duff.Duff` for order statistics,
        another class for the mode and the mean)."""
        return cls

    def __init__(
        self, *, epsilon: float, delta: float | None = None, bounding: str = "clip"
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, required=self.requires_delta, mechanism=self.name)
        self.bounding = check_choice(bounding, BOUNDING_METHODS, "bounding")

    @property
    def required_delta(self) -> float:
        """δ of a mechanism with ``requires_delta`` (checked to lie in (0, 1) on construction)."""
        if self.delta is None:
            raise ValueError(f"delta: {self.name} does not use delta")
        return self.delta

    @property
    @abstractmethod
    def guarantee(self) -> Guarantee:
        """The privacy guarantee of every release of this mechanism."""

    def release(self, data: object, bounds: object) -> ReleaseT:
        """Bound ``data`` to ``bounds = (a, b)`` and return the output distribution.

        ``bounding="drop"`` with replace-one neighbours is refused (a public choice):
        dropping changes ``n``, so a replace-one pair of raw data can become an
        add/remove pair of bounded data, which a replace-one guarantee does not cover.
        """
        if self.bounding == "drop" and self.neighbouring is Neighbouring.REPLACE_ONE:
            raise ValueError(
                f"bounding: {self.name} with replace-one neighbours needs bounding='clip' "
                "(dropping points changes n, which replace-one guarantees hold fixed)"
            )
        x = check_data(data)
        lower, upper = check_bounds(bounds)
        order = OrderStatistics(bound_data(x, lower, upper, self.bounding), (lower, upper))
        return self._release_from(order, lower, upper)

    def _release_from(self, order: OrderStatistics, lower: float, upper: float) -> ReleaseT:
        """Build the release from the order statistics of the bounded data: by default
        :meth:`_release` on all of them, sorted.  A mechanism that reads only a window of
        ranks overrides this and sorts only the window (:mod:`mechanisms.selection`)."""
        return self._release(order.sorted(), lower, upper)

    @abstractmethod
    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ReleaseT:
        """Build the release from sorted data already inside ``[lower, upper]``."""

    def error_bounds(
        self, sorted_x: np.ndarray, lower: float, upper: float, eta: float
    ) -> list[Bound]:
        """High-probability error bounds of this mechanism's release on sorted data
        inside ``[lower, upper]``, each holding with probability ``>= 1 - eta``
        (:mod:`mechanisms.error_bounds`); none unless a class declares them."""
        return []

    def __repr__(self) -> str:
        delta = "" if self.delta is None else f", delta={self.delta:g}"
        return f"{type(self).__name__}(epsilon={self.epsilon:g}{delta})"
