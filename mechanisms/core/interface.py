"""The interface every median mechanism implements, and its guarantee.

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
  array of real numbers (:func:`mechanisms.core.validation.check_data`) and NaN or infinite data.
* Extreme but valid parameters either give the exact release (noise scales
  beyond float64's range are kept as ``significand·2**exponent``, tiny ε takes
  the β → 0 limit of the tuned mechanisms) or a ``ValueError`` naming
  epsilon, delta or bounds and saying what is not representable in float64.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

import numpy as np

from mechanisms.core.data import bound_data
from mechanisms.core.guarantee import Guarantee, Neighbouring
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.selection import OrderStatistics
from mechanisms.core.validation import (
    check_bounds,
    check_choice,
    check_data,
    check_delta,
    check_epsilon,
)

if TYPE_CHECKING:
    from mechanisms.core.bounds import Bound

BOUNDING_METHODS = ("clip", "drop")


# ---------------------------------------------------------------------- interfaces


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
    accepts_infinite_bounds: ClassVar[bool] = False
    """Whether ``release`` accepts ``a = -inf`` and/or ``b = inf`` (a mechanism that needs no
    bounds: :mod:`mechanisms.unbounded`); every other class refuses them with a
    ``ValueError`` naming ``bounds`` (:func:`mechanisms.core.validation.check_bounds`)."""

    figure: ClassVar[FigureStyle | None] = None
    """Colour, marker and drawing order in figures and tables
    (:mod:`mechanisms.core.presentation`); None: chosen from the run's label."""
    figure_variants: ClassVar[tuple[FigureStyle, ...]] = ()
    """Option values that make a separately named and drawn variant of this class."""
    family: ClassVar[str] = ""
    """Classes of one family (``"duff"``) share a configured name across statistics: the
    registry runs the family's class for the statistic asked for
    (:func:`mechanisms.registry.for_statistic`); "" for a class that is its own family."""

    @classmethod
    def installed(cls) -> bool:
        """Whether the libraries this class needs are installed (always, but for peers)."""
        return True

    @classmethod
    def check_installed(cls) -> None:
        """Raise ``ImportError`` naming the missing extra unless :meth:`installed`."""
        return None

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

    guarantee_source: ClassVar[str] = ""
    """What the guarantee rests on, by author and title (the ``source`` of
    :attr:`guarantee`); a class whose source depends on its options overrides
    :meth:`source` instead."""

    def source(self) -> str:
        """The ``source`` of :attr:`guarantee`: :attr:`guarantee_source` unless overridden."""
        return self.guarantee_source

    @property
    def tuned_on_data(self) -> bool:
        """Whether this configuration chooses its parameters on the private data (the Duff
        paper's "oracle" tuning), in which case its guarantee does not cover the release."""
        return False

    @property
    def guarantee(self) -> Guarantee:
        """The privacy guarantee of every release of this mechanism, from the class's
        declaration: ε-DP, or (ε, δ)-DP for a class that ``requires_delta``, for
        :attr:`neighbouring`, resting on :meth:`source` and flagged by
        :attr:`tuned_on_data`.  A class whose guarantee is of another kind (zCDP, a wrapped
        estimator's, none at all) overrides this property; one that declares no source
        raises ``NotImplementedError`` (a guarantee is never assumed)."""
        source = self.source()
        if not source:
            raise NotImplementedError(
                f"{type(self).__qualname__} declares no guarantee: set the class attribute "
                "guarantee_source (or override the guarantee property)"
            )
        return Guarantee(
            epsilon=self.epsilon,
            delta=self.required_delta if self.requires_delta else 0.0,
            neighbouring=self.neighbouring,
            data_dependent_tuning=self.tuned_on_data,
            source=source,
        )

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
        lower, upper = check_bounds(bounds, infinite=self.accepts_infinite_bounds)
        order = OrderStatistics(bound_data(x, lower, upper, self.bounding), (lower, upper))
        return self._release_from(order, lower, upper)

    def _release_from(self, order: OrderStatistics, lower: float, upper: float) -> ReleaseT:
        """Build the release from the order statistics of the bounded data: by default
        :meth:`_release` on all of them, sorted.  A mechanism that reads only a window of
        ranks overrides this and sorts only the window (:mod:`mechanisms.core.selection`)."""
        return self._release(order.sorted(), lower, upper)

    @abstractmethod
    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ReleaseT:
        """Build the release from sorted data already inside ``[lower, upper]``."""

    def error_bounds(
        self, sorted_x: np.ndarray, lower: float, upper: float, eta: float
    ) -> list[Bound]:
        """High-probability error bounds of this mechanism's release on sorted data
        inside ``[lower, upper]``, each holding with probability ``>= 1 - eta``
        (:mod:`mechanisms.median.error_bounds`); none unless a class declares them."""
        return []

    def __repr__(self) -> str:
        delta = "" if self.delta is None else f", delta={self.delta:g}"
        return f"{type(self).__name__}(epsilon={self.epsilon:g}{delta})"
