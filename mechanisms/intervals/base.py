"""Confidence intervals for the median: the interface every interval method implements.

Shape (as :mod:`mechanisms.core.interface`, after ``scipy.stats`` frozen distributions): an
:class:`IntervalMechanism` is configured once from ε (δ where used), the
miscoverage ``alpha`` (level ``1 − α``) and its options;
``method.release(data, bounds)`` bounds the data by clipping to ``[a, b]``, sorts
them, and returns an :class:`IntervalRelease`: *the distribution of the interval
on that one dataset*, with ``sample(size, rng)`` (an array of shape ``(size, 2)``,
``lo <= hi``, both inside ``[a, b]``) and, where it can be computed exactly,
``coverage(t) = P(lo <= t <= hi)`` for a point ``t``.

Coverage (Honaker & Vadhan, CS208 lecture slides "DP Foundations: Exponential and
Gaussian Mechanisms", "Confidence Interval Construction"): an interval for ``y*``
has proper coverage if ``P(y* ∈ [lo, hi]) = 1 − α``; here the probability is over
the sample *and* the mechanism's randomness.  Each method states its ``target``
(which ``y*``: :data:`POPULATION_MEDIAN` or :data:`SAMPLE_MEDIAN`) and its
``coverage_claim``: :data:`GUARANTEED` (a proof that the coverage is at least
``1 − α``, see the method's docstring) or :data:`APPROXIMATE` (measured, not
proven).  ``release.coverage(t)`` is conditional on the dataset; averaging it over
datasets drawn from a distribution whose median is ``t`` gives the coverage.

Conventions shared with the point mechanisms: data and bounds go through
:func:`mechanisms.core.validation.check_data` and
:func:`mechanisms.core.validation.check_bounds`, the
data are bounded by clipping, the empty dataset is valid input, and errors
depend only on public inputs (ε, δ, α, options, bounds).  Methods whose target
ranks depend on ``n`` treat ``n`` as public: their guarantee is for replace-one
neighbours (datasets of the same size).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from mechanisms.core.data import lower_median
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Mechanism, OutputDistribution, Release
from mechanisms.core.quantiles import check_alpha
from mechanisms.core.validation import check_delta, check_epsilon, check_rng, check_size

POPULATION_MEDIAN = "population median of i.i.d. data"
"""Target: any median ``m`` of the distribution the i.i.d. data are drawn from
(``P(X <= m) >= 1/2`` and ``P(X >= m) >= 1/2``), assumed to lie in ``[a, b]``."""
SAMPLE_MEDIAN = "sample median"
"""Target: the lower median of the bounded dataset (``release.true_value``)."""
TARGETS = (POPULATION_MEDIAN, SAMPLE_MEDIAN)

GUARANTEED = "guaranteed"
"""Coverage at least ``nominal_coverage >= 1 − α`` is proven for the target."""
APPROXIMATE = "approximate"
"""Coverage ``≈ 1 − α`` is expected but not proven: measure it."""


# ------------------------------------------------------------------- endpoints


class Endpoint(ABC):
    """The distribution of one end of an interval."""

    @abstractmethod
    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent draws."""

    @abstractmethod
    def cdf(self, t: float) -> float:
        """``P(E <= t)``."""

    @abstractmethod
    def cdf_below(self, t: float) -> float:
        """``P(E < t)``."""


class PointMass(Endpoint):
    """A deterministic end (a non-private order statistic, or a bound)."""

    def __init__(self, value: float) -> None:
        self.value = float(value)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(check_size(size), self.value)

    def cdf(self, t: float) -> float:
        return float(self.value <= t)

    def cdf_below(self, t: float) -> float:
        return float(self.value < t)


class ShiftedRelease(Endpoint):
    """``clip(Y + shift, lower, upper)`` with ``Y`` drawn from an atomless ``release``.

    ``release`` is a mechanism's output distribution with an exact cdf and no atoms
    (an exponential mechanism with a density); the clip puts atoms at ``lower`` and
    ``upper``, which :meth:`cdf` and :meth:`cdf_below` account for.
    """

    def __init__(self, release: Release, shift: float, lower: float, upper: float) -> None:
        self.release = release
        self.shift = float(shift)
        self.lower = float(lower)
        self.upper = float(upper)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.clip(self.release.sample(size, rng) + self.shift, self.lower, self.upper)

    def _inner(self, t: float) -> float:
        return float(self.release.cdf(t - self.shift))

    def cdf(self, t: float) -> float:
        if t < self.lower:
            return 0.0
        return 1.0 if t >= self.upper else self._inner(t)

    def cdf_below(self, t: float) -> float:
        if t <= self.lower:
            return 0.0
        return 1.0 if t > self.upper else self._inner(t)


# -------------------------------------------------------------------- releases


class IntervalRelease(OutputDistribution):
    """The distribution of a method's interval on one bounded dataset.

    Attributes: ``lower``/``upper`` (the public bounds), ``n`` (size of the bounded
    data), ``true_value`` (the lower median of the bounded data, the
    :data:`SAMPLE_MEDIAN` target) and ``nominal_coverage`` (what the method claims
    for datasets of this size: a proven lower bound if its ``coverage_claim`` is
    :data:`GUARANTEED`; 1 when it answers ``[a, b]``).
    """

    nominal_coverage: float

    def _set_common(self, sorted_x: np.ndarray, lower: float, upper: float, nominal: float) -> None:
        self.lower, self.upper = float(lower), float(upper)
        self.n = int(sorted_x.size)
        self.true_value = lower_median(sorted_x, lower)
        self.nominal_coverage = float(nominal)

    @abstractmethod
    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent intervals: an array of shape ``(size, 2)``, ``lo <= hi``."""

    def coverage(self, t: float) -> float:
        """``P(lo <= t <= hi)`` on this dataset, exactly; ``NotImplementedError`` where
        the method's interval distribution has no exact form."""
        raise NotImplementedError(f"{type(self).__name__} has no exact coverage")


class IndependentEndpoints(IntervalRelease):
    """``[min(L, U), max(L, U)]`` for independent ends ``L`` and ``U``.

    Sorting is post-processing and never loses coverage: ``L <= t <= U`` implies
    ``min <= t <= max``.  Exact coverage: the sorted interval misses ``t`` iff both
    ends lie above ``t`` or both below, so

        coverage(t) = 1 − P(L > t)·P(U > t) − P(L < t)·P(U < t).
    """

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        ends: tuple[Endpoint, Endpoint],
        nominal_coverage: float,
    ) -> None:
        self._set_common(sorted_x, lower, upper, nominal_coverage)
        self.ends = ends

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        first, second = (end.sample(size, rng) for end in self.ends)
        return np.column_stack((np.minimum(first, second), np.maximum(first, second)))

    def coverage(self, t: float) -> float:
        t = float(t)
        low, high = self.ends
        above = (1.0 - low.cdf(t)) * (1.0 - high.cdf(t))
        below = low.cdf_below(t) * high.cdf_below(t)
        return max(0.0, 1.0 - above - below)


def whole_range(sorted_x: np.ndarray, lower: float, upper: float) -> IndependentEndpoints:
    """The interval ``[a, b]``: the answer of a method that cannot reach ``1 − α``
    for this public ``n`` (it covers any target inside the bounds)."""
    return IndependentEndpoints(sorted_x, lower, upper, (PointMass(lower), PointMass(upper)), 1.0)


# ------------------------------------------------------------------- mechanisms


class IntervalMechanism(Mechanism[IntervalRelease]):
    """A confidence-interval method for the median, configured with ε, δ and α.

    A mechanism whose output is an interval: it is registered, configured and
    swept like the point mechanisms (statistic kind ``"median_interval"``,
    :class:`mechanisms.statistics.MedianInterval`, which passes ``alpha``).
    Subclasses set ``name``, ``display_name``, ``target``, ``coverage_claim``,
    ``requires_epsilon`` (False only for the non-private baseline, which takes no
    ε) and ``requires_delta``, and implement :attr:`guarantee`,
    :meth:`nominal_coverage` and :meth:`_release`.  Data are always clipped to
    the bounds (``bounding = "clip"``).
    """

    statistics: ClassVar[frozenset[str]] = frozenset({"median_interval"})
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE
    target: ClassVar[str] = POPULATION_MEDIAN
    coverage_claim: ClassVar[str] = GUARANTEED

    # Not Mechanism.__init__, which requires ε: the non-private baseline refuses one.
    def __init__(
        self, *, epsilon: float | None = None, delta: float | None = None, alpha: float = 0.05
    ) -> None:
        if self.requires_epsilon:
            if epsilon is None:
                raise ValueError(f"epsilon: {self.name} needs epsilon > 0")
            self.epsilon = check_epsilon(epsilon)
        elif epsilon is not None:
            raise ValueError(f"epsilon: {self.name} is not private and takes no epsilon")
        else:
            self.epsilon = math.inf
        self.delta = check_delta(delta, required=self._delta_required(), mechanism=self.name)
        self.alpha = check_alpha(alpha)
        self.bounding = "clip"

    def _delta_required(self) -> bool:
        """Whether δ is required (in (0, 1)) or refused: ``requires_delta`` unless a method's
        δ follows one of its options."""
        return self.requires_delta

    @abstractmethod
    def nominal_coverage(self, n: int) -> float:
        """The coverage the method claims for ``n`` points (``release.nominal_coverage``)."""

    def __repr__(self) -> str:
        epsilon = "" if not self.requires_epsilon else f"epsilon={self.epsilon:g}, "
        delta = "" if self.delta is None else f"delta={self.delta:g}, "
        return f"{type(self).__name__}({epsilon}{delta}alpha={self.alpha:g})"
