"""The statistics a mechanism can estimate: the truth T(S), and what a mechanism is told.

A :class:`Statistic` is a frozen value: it computes ``T(S)`` on sorted data
bounded to ``[a, b]`` (the harness never takes the truth from a mechanism), it
names the keyword options a mechanism needs to estimate it (``alpha`` for a
quantile), and its ``kind`` is what a mechanism class lists in its
``statistics`` attribute to say it supports it.

Built-ins:

* :class:`Median`, kind ``"median"``: the lower median ``x_(ceil(n/2))``
  (Duff paper, section 4.1), ``a`` for the empty dataset (the convention of
  :mod:`mechanisms.core.interface`).  It passes no option: every median mechanism estimates
  it by default.
* :class:`Quantile`, kind ``"quantile"``: the α-quantile ``x_(ceil(α·n))``, the
  inverse empirical cdf ``inf{r : F_n(r) >= α}``, with ``α·n`` computed exactly
  from ``α`` read as the decimal it was written as
  (:func:`mechanisms.core.quantiles.quantile_rank`); ``a`` for the empty dataset.
  ``Quantile(0.5)`` has the median's value on every dataset; it is a different
  *statistic of the sweep* only in that it passes ``alpha=0.5`` to the
  mechanism, so only quantile mechanisms accept it.

* :class:`Mean`, kind ``"mean"``: ``fsum(x) / n`` of the bounded data
  (:func:`mechanisms.core.data.mean_value`; ``a`` for the empty dataset).
* :class:`Mode`, kind ``"mode"``: the smallest most frequent value of the finite
  domain ``Y = {a, ..., b}`` (:mod:`mechanisms.core.domain`: bounded data rounded
  to integers; ``a`` for the empty dataset).
* :class:`MedianInterval`, kind ``"median_interval"``: a confidence interval for
  the median at level ``1 − α``, whose methods output intervals, not points
  (:mod:`mechanisms.intervals`).
* :class:`Quantiles`, kind ``"quantiles"``: m quantiles at once, the vector
  ``(x_(ceil(α_1·n)), ..., x_(ceil(α_m·n)))`` for levels ``0 < α_1 < ... < α_m < 1``
  (:func:`mechanisms.multi.release.true_quantiles`), whose methods
  (:mod:`mechanisms.multi`) output rows of m values; its T(S) is :meth:`Quantiles.values`.

The median and the quantiles are order statistics, so both have a **rank
error**: the number of data points strictly between ``T(S)`` and an estimate
``M(S)`` (Gillenwater, Joseph & Kulesza, "Differentially private quantiles",
ICML 2021, whose code calls it the number of misclassified points), a
scale-free error comparable across datasets (:func:`points_between`; for
:class:`Quantiles`, one per level).  It is 0 when ``M(S)`` lies in the
same gap as, or on, ``T(S)``; points equal to either end are not counted.  The
mean has no rank error: it is not an order statistic, so the points between it
and an estimate say nothing about how far the estimate is from being the mean
(moving one point far away moves the mean without changing any rank).

The mode's output is categorical, so its errors are counts: the **count gap**
``n_max - n_{M(S)}`` (the Duff utility of the output, section 4.1) and whether
it is 0, i.e. whether ``M(S)`` is *a* true mode; with ties at the top count,
every tied value is a hit.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mechanisms.core.data import lower_median, mean_value
from mechanisms.core.domain import count_of, domain_counts, mode_value
from mechanisms.core.population import clipped_mean, law_mode, law_quantile
from mechanisms.core.quantiles import check_alpha, quantile_value
from mechanisms.multi.release import check_levels, evenly_spaced, true_quantiles


@dataclass(frozen=True)
class Statistic(ABC):
    """A statistic of the sweep (subclasses are frozen dataclasses)."""

    kind: ClassVar[str]
    """What a mechanism lists in its ``statistics`` to support this statistic."""
    interval: ClassVar[bool] = False
    """Whether the mechanisms' outputs are intervals ``[lo, hi]`` (:class:`MedianInterval`)
    rather than point estimates."""
    vector: ClassVar[bool] = False
    """Whether T(S) and each output are vectors of m values (:class:`Quantiles`) rather than
    numbers."""

    @property
    @abstractmethod
    def id(self) -> str:
        """The ``statistic`` column of the results, unique among a sweep's statistics."""

    @abstractmethod
    def value(self, sorted_x: np.ndarray, lower: float, upper: float) -> float:
        """``T(S)`` of sorted data inside ``[lower, upper]``."""

    @classmethod
    def from_config(cls, **options: Any) -> list[Statistic]:
        """The statistics of one config entry (``conf/statistic/<name>.yaml``'s ``options``)."""
        return [cls(**options)]

    def mechanism_options(self) -> dict[str, Any]:
        """Keyword options a mechanism needs to estimate this statistic."""
        return {}

    def describe(self) -> dict[str, Any]:
        """What determines the numbers: the kind and the fields."""
        return {"kind": self.kind, **self.__dict__}

    def rank_errors(
        self, sorted_x: np.ndarray, truth: float, estimates: np.ndarray
    ) -> np.ndarray | None:
        """The number of points of ``sorted_x`` strictly between ``truth`` and each estimate
        (None for a statistic that is not an order statistic)."""
        return None

    def count_gaps(self, sorted_x: np.ndarray, estimates: np.ndarray) -> np.ndarray | None:
        """``n_max - n_y`` for each estimate ``y`` of a categorical statistic (None for others)."""
        return None

    def population_value(self, law: Any, lower: float, upper: float) -> float | None:
        """θ, the population counterpart of ``T(S)`` for i.i.d. draws of the frozen scipy
        ``law`` clipped to ``[lower, upper]`` (:mod:`mechanisms.core.population`); None when
        the statistic has none here (an interval, a vector, the mode of a continuous law)."""
        return None


def points_between(
    sorted_x: np.ndarray, truth: float | np.ndarray, estimates: np.ndarray
) -> np.ndarray:
    """The number of points of ``sorted_x`` strictly between ``truth`` and each estimate
    (module docstring), elementwise: ``truth`` broadcasts against ``estimates``."""
    low, high = np.minimum(estimates, truth), np.maximum(estimates, truth)
    between = np.searchsorted(sorted_x, high, side="left")
    between -= np.searchsorted(sorted_x, low, side="right")
    return np.maximum(between, 0)


@dataclass(frozen=True)
class OrderStatistic(Statistic):
    """A statistic that is one of the data points: it has a rank error."""

    def rank_errors(
        self, sorted_x: np.ndarray, truth: float, estimates: np.ndarray
    ) -> np.ndarray | None:
        return points_between(sorted_x, truth, estimates)


@dataclass(frozen=True)
class AlphaStatistic(Statistic):
    """A statistic with a level ``alpha`` in (0, 1) that the mechanisms are given; a config
    entry stands for one per ``alpha`` (a number or a list of numbers)."""

    alpha: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_alpha(self.alpha))

    @classmethod
    def from_config(cls, **options: Any) -> list[Statistic]:
        alphas = options.pop("alpha", None)
        if options:
            raise ValueError(f"{cls.kind}: unknown options {', '.join(sorted(options))}")
        if not isinstance(alphas, list | tuple):
            alphas = [alphas]
        return [cls(alpha) for alpha in alphas]

    @property
    def id(self) -> str:
        return f"{self.kind}({self.alpha!r})"

    def mechanism_options(self) -> dict[str, Any]:
        return {"alpha": self.alpha}


@dataclass(frozen=True)
class Quantile(OrderStatistic, AlphaStatistic):
    """The α-quantile ``x_(ceil(α·n))`` (module docstring)."""

    kind: ClassVar[str] = "quantile"

    def value(self, sorted_x: np.ndarray, lower: float, upper: float) -> float:
        return quantile_value(sorted_x, self.alpha, lower)

    def population_value(self, law: Any, lower: float, upper: float) -> float | None:
        return law_quantile(law, self.alpha, lower, upper)


@dataclass(frozen=True)
class Median(OrderStatistic):
    """The lower median ``x_(ceil(n/2))`` (module docstring)."""

    kind: ClassVar[str] = "median"

    @property
    def id(self) -> str:
        return "median"

    def value(self, sorted_x: np.ndarray, lower: float, upper: float) -> float:
        return lower_median(sorted_x, lower)

    def population_value(self, law: Any, lower: float, upper: float) -> float | None:
        return law_quantile(law, 0.5, lower, upper)


@dataclass(frozen=True)
class Mean(Statistic):
    """The mean of the bounded data (module docstring)."""

    kind: ClassVar[str] = "mean"

    @property
    def id(self) -> str:
        return "mean"

    def value(self, sorted_x: np.ndarray, lower: float, upper: float) -> float:
        return mean_value(sorted_x, lower)

    def population_value(self, law: Any, lower: float, upper: float) -> float | None:
        return clipped_mean(law, lower, upper)


@dataclass(frozen=True)
class Mode(Statistic):
    """The smallest most frequent value of ``Y = {a, ..., b}`` (module docstring)."""

    kind: ClassVar[str] = "mode"

    @property
    def id(self) -> str:
        return "mode"

    def value(self, sorted_x: np.ndarray, lower: float, upper: float) -> float:
        return mode_value(sorted_x, lower)

    def population_value(self, law: Any, lower: float, upper: float) -> float | None:
        return law_mode(law, lower, upper)

    def count_gaps(self, sorted_x: np.ndarray, estimates: np.ndarray) -> np.ndarray | None:
        _, counts = domain_counts(sorted_x)
        top = int(counts.max()) if counts.size else 0
        return top - count_of(sorted_x, estimates)


@dataclass(frozen=True)
class MedianInterval(AlphaStatistic):
    """A confidence interval for the median at level ``1 − α`` (``alpha`` is the miscoverage).

    The methods are those of :mod:`mechanisms.intervals` (kind ``"median_interval"``),
    which take ``alpha``.  ``T(S)`` is the lower median of the bounded data, the
    :data:`mechanisms.intervals.SAMPLE_MEDIAN` target; a method whose target is the
    population median is measured against the dataset's
    (:meth:`experiments.data.datasets.Dataset.population_median`).  A release's sample is
    an array of shape ``(trials, 2)``: the intervals ``[lo, hi]``.
    """

    kind: ClassVar[str] = "median_interval"
    interval: ClassVar[bool] = True

    def value(self, sorted_x: np.ndarray, lower: float, upper: float) -> float:
        return lower_median(sorted_x, lower)


MAX_ID_LEVELS = 8
"""Most levels an id spells out; more are named by their number and a digest (ids name
directories of the results)."""


@dataclass(frozen=True)
class Quantiles(Statistic):
    """m quantiles at once: ``T(S) = (x_(ceil(α_1·n)), ..., x_(ceil(α_m·n)))`` (module docstring).

    A config entry gives the levels as ``alphas`` (one list: one statistic) or as ``m``, the
    evenly spaced levels ``linspace(0, 1, m + 2)[1:-1]`` of Gillenwater, Joseph & Kulesza,
    "Differentially Private Quantiles" (ICML 2021) (a number, or a list of numbers: one
    statistic each; :func:`mechanisms.multi.release.check_levels`).  The mechanisms of
    :mod:`mechanisms.multi` are given ``alphas``; a release's sample has shape ``(trials, m)``.
    """

    kind: ClassVar[str] = "quantiles"
    vector: ClassVar[bool] = True
    alphas: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "alphas", check_levels(self.alphas, None))

    @classmethod
    def from_config(cls, **options: Any) -> list[Statistic]:
        alphas, counts = options.pop("alphas", None), options.pop("m", None)
        if options:
            raise ValueError(f"{cls.kind}: unknown options {', '.join(sorted(options))}")
        if (alphas is None) == (counts is None):
            raise ValueError(f"{cls.kind}: give the levels as alphas (a list) or m, not both")
        if alphas is not None:
            return [cls(tuple(alphas))]
        counts = counts if isinstance(counts, list | tuple) else [counts]
        return [cls(check_levels(None, count)) for count in counts]

    @property
    def m(self) -> int:
        """The number of levels."""
        return len(self.alphas)

    @property
    def id(self) -> str:
        """``quantiles(m=K)`` for evenly spaced levels, else the levels (or, past
        :data:`MAX_ID_LEVELS`, their number and the first 8 hex digits of their SHA-256)."""
        if self.alphas == evenly_spaced(self.m):
            return f"{self.kind}(m={self.m})"
        if self.m > MAX_ID_LEVELS:
            digest = hashlib.sha256(repr(self.alphas).encode()).hexdigest()[:8]
            return f"{self.kind}(m={self.m},{digest})"
        return f"{self.kind}({','.join(map(repr, self.alphas))})"

    def value(self, sorted_x: np.ndarray, lower: float, upper: float) -> float:
        """Not a number: T(S) is the vector :meth:`values` (``TypeError``)."""
        raise TypeError(f"{self.id}: T(S) is a vector of {self.m} values; use values()")

    def values(self, sorted_x: np.ndarray, lower: float, upper: float) -> np.ndarray:
        """``T(S)``, the m order statistics (``lower`` for the empty dataset)."""
        return true_quantiles(sorted_x, self.alphas, lower)

    def mechanism_options(self) -> dict[str, Any]:
        return {"alphas": self.alphas}

    def level_rank_errors(
        self, sorted_x: np.ndarray, truth: np.ndarray, estimates: np.ndarray
    ) -> np.ndarray:
        """The rank error of each level of each row: shape ``(trials, m)`` for estimates of
        that shape and the m true values ``truth`` (:func:`points_between`)."""
        return points_between(sorted_x, truth, estimates)


MEDIAN = Median()
"""The statistic of every sweep that names none."""
