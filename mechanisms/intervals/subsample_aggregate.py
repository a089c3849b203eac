"""Subsample and aggregate: a confidence interval from any DP point estimator of the median.

Nissim, Raskhodnikova & Smith, "Smooth sensitivity and sampling in private data
analysis" (STOC 2007) introduced subsample and aggregate; Smith, "Privacy-preserving
statistical estimation with optimal convergence rates" (STOC 2011) uses it for
estimation.  Here the aggregation is an order-statistic interval of the block
estimates.

The method.  Each data point is assigned to one of ``k`` blocks independently and
uniformly at random (the assignment never looks at the values); the estimator
(any :class:`mechanisms.core.interface.Mechanism` that estimates the median, at its full ε)
is run once on each block, giving ``e_1, ..., e_k``; the interval is
``[e_(l), e_(k+1−l)]`` clipped to ``[a, b]``, with ``l`` the sign-test rank of
:mod:`mechanisms.intervals.nonprivate` for ``k`` values.

Privacy (parallel composition, then post-processing).  For neighbours ``S`` and
``S'`` (in the estimator's own neighbouring relation) couple the assignments so
that every shared point goes to the same block: only the block of the added,
removed or replaced point differs, and it differs by one neighbouring step, so
for every fixed assignment the vector ``(e_1, ..., e_k)`` has privacy loss at most
the estimator's ε (δ); averaging over the assignment, whose law does not depend
on the data, keeps the bound; the interval is a function of the estimates.  So
the method has exactly the estimator's guarantee.  (Fixed-size blocks would not
work under add/remove: the block sizes would depend on ``n``.)

Coverage (approximate, measured, not proven).  Given the block sizes the
estimates are independent; if each has ``P(e_j <= m) = 1/2`` for the population
median ``m`` (e.g. a symmetric distribution, bounds symmetric about ``m`` and an
estimator that commutes with the reflection), the interval covers ``m`` with
probability ``1 − 2·P(Binomial(k, 1/2) <= l − 1)``, its ``nominal_coverage``.  In
general it covers the median of the estimator's sampling distribution on about
``n/k`` points, which differs from ``m`` by the estimator's bias at that size
(privacy noise, skewness, and for a lower median the even-sized blocks, below
``m`` with probability ``1/2 + P(Binomial(size, 1/2) = size/2)/2``): the coverage
of ``m`` is only approximately nominal.
``coverage(t)`` has no exact form (a mixture over assignments): it raises
``NotImplementedError``.  The number of blocks must be public and cannot depend
on ``n`` (add/remove neighbours), hence a fixed option; more blocks resolve the
estimates' median better, fewer blocks give each estimate more data (less privacy
noise and less small-sample bias).
"""

from __future__ import annotations

import numpy as np

from mechanisms.core.guarantee import Guarantee
from mechanisms.core.interface import Mechanism
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import configure, register, resolve
from mechanisms.core.validation import check_integer, check_rng, check_size
from mechanisms.intervals.base import (
    APPROXIMATE,
    POPULATION_MEDIAN,
    IntervalMechanism,
    IntervalRelease,
)
from mechanisms.intervals.nonprivate import order_statistic_coverage, sign_test_rank

DEFAULT_BLOCKS = 10
"""Default ``k`` (sign-test pair ``(2, 9)``, nominal 0.9785 at α = 0.05), chosen on
simulated N(0, 1) and U(0, 1) data with Duff: 10 blocks covered 0.96-0.98 for
n ∈ {100, 1000}, ε ∈ {0.5, 2}; 20 blocks were about 10% narrower at n = 1000 but
covered only 0.82 at n = 100, ε = 2 (blocks of 5 points, where the lower median of
an even-sized block is biased low)."""

MAX_BLOCKS = 10**6
"""Largest ``blocks``: each draw releases the estimator once per block (and the sign-test
rank tabulates a binomial cdf over the blocks), so more could not run."""


class SubsampleRelease(IntervalRelease):
    """The interval of :class:`SubsampleAggregate` on one dataset (sampled, no exact coverage)."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        method: SubsampleAggregate,
    ) -> None:
        self._set_common(sorted_x, lower, upper, method.nominal_coverage(sorted_x.size))
        self._x = sorted_x
        self._method = method

    def _one(self, rng: np.random.Generator) -> tuple[float, float]:
        method = self._method
        blocks = rng.integers(method.blocks, size=self.n)
        bounds = (self.lower, self.upper)
        estimates = np.array(
            [
                method.estimator.release(self._x[blocks == j], bounds).sample(1, rng)[0]
                for j in range(method.blocks)
            ]
        )
        estimates.sort()
        rank = method.rank
        ends = np.clip(estimates[[rank - 1, method.blocks - rank]], self.lower, self.upper)
        return float(ends[0]), float(ends[1])

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        out = np.empty((size, 2))
        for row in range(size):
            out[row] = self._one(rng)
        return out


@register
class SubsampleAggregate(IntervalMechanism):
    """Subsample and aggregate any DP median estimator into an interval (module docstring).

    Options: ``estimator``, a registered mechanism name or the class path
    ``package.module.ClassName`` of one (configured with this method's ε and δ),
    or a :class:`mechanisms.core.interface.Mechanism` whose ε and δ equal this method's
    (:meth:`wrapping` takes them from it); ``blocks``, the number ``k`` of blocks
    (at least ``log2(2/α)`` so that a sign-test pair exists; default
    :data:`DEFAULT_BLOCKS`).  ``requires_delta`` and the neighbouring relation
    follow the estimator.
    """

    name = "subsample_aggregate"
    display_name = "Subsample and aggregate"
    figure = FigureStyle("#7570b3", "D", 19, fixed_neighbouring=True)
    target = POPULATION_MEDIAN
    coverage_claim = APPROXIMATE

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        alpha: float = 0.05,
        estimator: str | Mechanism = "duff",
        blocks: int = DEFAULT_BLOCKS,
    ) -> None:
        self._kind = self._estimator_class(estimator)
        super().__init__(epsilon=epsilon, delta=delta, alpha=alpha)
        self.estimator = self._configured(estimator)
        self.neighbouring = self.estimator.neighbouring
        self.blocks = check_integer(blocks, "blocks", minimum=1, maximum=MAX_BLOCKS)
        rank = sign_test_rank(self.blocks, self.alpha)
        if rank is None:
            raise ValueError(
                f"blocks: {self.blocks} block estimates cannot reach level 1 - alpha "
                f"(alpha={self.alpha:g}); use more blocks"
            )
        self.rank = rank

    def _delta_required(self) -> bool:
        return self._kind.requires_delta

    @classmethod
    def wrapping(
        cls, mechanism: Mechanism, *, alpha: float = 0.05, blocks: int = DEFAULT_BLOCKS
    ) -> SubsampleAggregate:
        """The interval of ``mechanism`` at its own ε and δ."""
        return cls(
            epsilon=mechanism.epsilon,
            delta=mechanism.delta,
            alpha=alpha,
            estimator=mechanism,
            blocks=blocks,
        )

    @staticmethod
    def _estimator_class(estimator: object) -> type[Mechanism]:
        if isinstance(estimator, Mechanism):
            kind = type(estimator)
        elif isinstance(estimator, str):
            try:
                kind = resolve(estimator)
            except ValueError as error:
                raise ValueError(f"estimator: {error}") from None
        else:
            raise ValueError(
                f"estimator must be a mechanism name or a Mechanism, got {type(estimator).__name__}"
            )
        if "median" not in kind.statistics or kind.may_refuse:
            raise ValueError(
                f"estimator: {kind.name!r} must estimate the median and never refuse (⊥)"
            )
        return kind

    def _configured(self, estimator: str | Mechanism) -> Mechanism:
        if isinstance(estimator, str):
            return configure(self._kind, epsilon=self.epsilon, delta=self.delta)
        if estimator.epsilon != self.epsilon or estimator.delta != self.delta:
            raise ValueError(
                f"epsilon: the estimator {estimator!r} has other privacy parameters than "
                f"epsilon={self.epsilon:g}, delta={self.delta}; use SubsampleAggregate.wrapping"
            )
        return estimator

    @property
    def guarantee(self) -> Guarantee:
        inner = self.estimator.guarantee
        return Guarantee(
            epsilon=inner.epsilon,
            delta=inner.delta,
            neighbouring=inner.neighbouring,
            rho=inner.rho,
            data_dependent_tuning=inner.data_dependent_tuning,
            source=(
                f"subsample and aggregate over {self.blocks} random blocks (parallel "
                f"composition, then post-processing) of: {inner.source}"
            ),
        )

    def nominal_coverage(self, n: int) -> float:
        return order_statistic_coverage(self.blocks, self.rank)

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> IntervalRelease:
        return SubsampleRelease(sorted_x, lower, upper, self)

    def __repr__(self) -> str:
        return (
            f"SubsampleAggregate(estimator={self.estimator!r}, alpha={self.alpha:g}, "
            f"blocks={self.blocks})"
        )
