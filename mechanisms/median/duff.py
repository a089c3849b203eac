"""Duff: the exponential mechanism with the dataset-distance utility, for medians and quantiles.

Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility Function
Family for the Exponential Mechanism", Definition 8:

    u_d(x, S) = -min{ d(S, S') : T(S') = x },

with ``d`` the add/remove distance (Definition 5) and ``T`` the lower median
(rank ``m = ceil(n/2)``; ``T(∅) = a`` by the convention of
:mod:`mechanisms.core.interface`).  Its sensitivity is 1 (Lemma 1), so the EM density is
``∝ exp(ε·u_d(x, S) / 2)`` (Definition 7) and the mechanism is ε-DP for
add/remove neighbours (Definition 1).  The α-quantile and the replace-one
(Hamming) distance, i.e. the inverse sensitivity mechanism of Asi & Duchi, are
derived in :mod:`mechanisms.median.duff_utility`; the median case is below.

Closed form (derived here, equal to the step function of section 4.1).  Let
``L = #{y < x}``, ``R = #{y > x}``, ``t = #{y = x}`` and ``D = L - R``.  An
edited dataset with ``L'`` points below ``x``, ``R'`` above and ``t' >= 1``
copies of ``x`` has lower median ``x`` iff ``L' < ceil(n'/2) <= L' + t'``
(``n' = L' + t' + R'``), i.e. iff ``-t' <= L' - R' <= t' - 1``.  Reaching it costs
at least ``|L' - L| + |R' - R| + |t' - t| >= |t' - t| + dist(D, [-t', t' - 1])``
and that is attained (add or remove points below/above ``x``, add/remove copies
of ``x``).  Each extra copy of ``x`` costs 1 and widens the interval by 1 on each
side, so it never helps; hence ``t' = max(t, 1)`` and

* ``x`` strictly inside a gap (``t = 0``): ``u_d = -(1 + max(0, D, -D - 1))``;
* ``x`` equal to a data value of multiplicity ``t``:
  ``u_d = -max(0, D - (t - 1), -t - D)``;
* the one exception: ``S = ∅`` and ``x = a``, where ``u_d = 0`` (``T(∅) = a``).

The last two cases have Lebesgue measure zero and do not affect the density.
On the interior of gap ``i`` (``i`` points below, ``n - i`` above, ``D = 2i - n``)
this is, with ``m = ceil(n/2)``: ``u = -(2k - [n odd])`` on gap ``m - k`` and
``u = -(2k - [n even])`` on gap ``m + k - 1`` (``k >= 1``), exactly the paper's
section 4.1 step function.  (The paper's range for the second case,
"``k <= m + 1(k even)``", should read ``k <= n - m + 1``, i.e. ``m + 1(n even)``.)
"""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar

import numpy as np

from mechanisms.core.bounds import Bound
from mechanisms.core.data import read_only
from mechanisms.core.guarantee import Neighbouring, check_neighbours
from mechanisms.core.interface import Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.quantiles import check_alpha
from mechanisms.core.registration import register
from mechanisms.core.selection import MIN_SAMPLED, OrderStatistics
from mechanisms.core.validation import check_choice
from mechanisms.median import error_bounds
from mechanisms.median.duff_utility import QuantileDistance, gap_utility, quantile_distance
from mechanisms.sampling.gaps import SIZES_KEPT
from mechanisms.sampling.piecewise import (
    SAMPLERS,
    PiecewiseUniformRelease,
    WindowedMechanism,
    score_epsilon,
)


def utility(
    sorted_x: np.ndarray,
    x: np.ndarray | float,
    lower: float,
    *,
    alpha: float = 0.5,
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE,
) -> np.ndarray:
    """``u(x, S)`` for the α-quantile at any points ``x`` in ``[lower, upper]``, ties included.

    ``sorted_x`` is the sorted bounded data and ``lower`` the bound ``a``, needed
    only for the empty dataset (``T(∅) = a``).  Add/remove: Duff (module
    docstring for the median, :mod:`mechanisms.median.duff_utility` for any α);
    replace-one: minus the inverse sensitivity ``len(x; S)`` (``-inf`` off ``a``
    for the empty dataset, which has no dataset of its size with another value).
    """
    data = np.asarray(sorted_x, dtype=np.float64)
    points = np.asarray(x, dtype=np.float64)
    n = data.size
    below = np.searchsorted(data, points, side="left")
    ties = np.searchsorted(data, points, side="right") - below
    at_lower = points == lower
    if neighbouring is Neighbouring.REPLACE_ONE and n == 0:
        return np.where(at_lower, 0.0, -np.inf)
    distance = QuantileDistance.of(n, alpha, neighbouring)(below, ties)
    if neighbouring is Neighbouring.ADD_REMOVE:  # S' = ∅ has T = a
        distance = np.where(at_lower, np.minimum(distance, n), distance)
    return -distance.astype(np.float64)


@lru_cache(maxsize=SIZES_KEPT)
def all_gap_utilities(n: int, alpha: float, neighbouring: Neighbouring) -> np.ndarray:
    """``u`` on every gap ``0..n`` (read-only): what :meth:`Duff._release_window`'s score
    function multiplies by ``ε/2``.  Public (``n`` and the options only), so kept for the
    last :data:`mechanisms.sampling.gaps.SIZES_KEPT` sizes."""
    gaps = np.arange(n + 1, dtype=np.int64)
    if alpha == 0.5 and neighbouring is Neighbouring.ADD_REMOVE:
        return read_only(gap_utility(n, gaps))
    return read_only(quantile_distance(n, alpha, neighbouring).gap_utility(gaps))


@register
class Duff(WindowedMechanism):
    """EM with the dataset-distance utility for the α-quantile; ε-DP for the chosen neighbouring.

    The registered name ``duff`` stands for the whole family: a sweep pairing it with the
    mode or the mean runs the family's class for it (``family = "duff"``:
    :class:`mechanisms.mode.duff.DuffMode`, :class:`mechanisms.mean.duff.DuffMean`).

    Density on gap ``i``: ``∝ exp(ε·u/2)`` with ``u = -min{d(S, S') : T_α(S') = x}``
    and ``T_α(S) = x_(ceil(α·n))`` (Duff paper, Definition 8, Lemma 1 (Δu = 1),
    section 4.1), sampled exactly by
    :class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease`.  Options:

    * ``alpha`` (in (0, 1), default 0.5: the lower median, with the paper's step
      function :func:`gap_utility`);
    * ``neighbours``: ``"add_remove"`` (default; ``d`` the add/remove distance:
      Duff, ε-DP for add/remove neighbours) or ``"replace_one"`` (``d`` the Hamming
      distance between datasets of the same size: the inverse sensitivity
      mechanism of Asi & Duchi, "Instance-optimality in differential privacy via
      approximate inverse sensitivity mechanisms", ε-DP for replace-one
      neighbours).  Both utilities have sensitivity 1 under their neighbouring;
    * ``sampler`` (:data:`mechanisms.sampling.piecewise.SAMPLERS`): ``"inverse_cdf"``
      (default) or the paper's racing sampler (Algorithm 1, ``"racing"``): the same
      distribution; inversion is faster at every size measured
      (``benchmarks/bench_racing.py``).

    Closed forms per gap and their derivation: :mod:`mechanisms.median.duff_utility`.
    """

    name = "duff"
    display_name = "Duff (EM)"
    figure = FigureStyle("#1f77b4", "o", 0)
    family = "duff"
    statistics: ClassVar[frozenset[str]] = frozenset({"median", "quantile"})

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alpha: float = 0.5,
        neighbours: str = "add_remove",
        sampler: str = "inverse_cdf",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.alpha = check_alpha(alpha)
        self.neighbouring = check_neighbours(neighbours)
        self.sampler = check_choice(sampler, SAMPLERS, "sampler")

    def source(self) -> str:
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return (
                "inverse sensitivity mechanism (Asi & Duchi, 'Instance-optimality in "
                "differential privacy via approximate inverse sensitivity mechanisms'): "
                "exponential mechanism with u = -(Hamming distance to a dataset with T = x), "
                "sensitivity 1 for replace-one neighbours"
            )
        return "Duff paper: exponential mechanism (Def. 7) with u_d of sensitivity 1 (Lemma 1)"

    def _release_window(self, order: OrderStatistics, lower: float, upper: float) -> Release:
        n = order.size
        half_epsilon = 0.5 * score_epsilon(self.epsilon, n)
        distance = quantile_distance(n, self.alpha, self.neighbouring)
        median = self.alpha == 0.5 and self.neighbouring is Neighbouring.ADD_REMOVE
        every_gap = None  # log_score on every gap, the same floats, when the data are small
        if n < MIN_SAMPLED:
            every_gap = np.multiply(
                all_gap_utilities(n, self.alpha, self.neighbouring), half_epsilon
            )

        def log_score(gaps: np.ndarray) -> np.ndarray:
            # the median: the paper's step function (the same numbers in fewer steps)
            u = gap_utility(n, gaps) if median else distance.gap_utility(gaps)
            u *= half_epsilon
            return u

        def relative_score(gaps: np.ndarray, reference: int) -> np.ndarray:
            # u are integers (exact in float64), so u - u(reference) is exact (huge ε)
            u = distance.gap_utility(gaps)
            u -= distance.gap_utility(np.array([reference], dtype=np.int64)).item()
            u *= half_epsilon
            return u

        return PiecewiseUniformRelease(
            order,
            lower,
            upper,
            log_score,
            mode=distance.mode,
            true_rank=distance.rank if n else 0,
            sampler=self.sampler,
            relative_score=relative_score,
            all_scores=every_gap,
        )

    def error_bounds(
        self, sorted_x: np.ndarray, lower: float, upper: float, eta: float
    ) -> list[Bound]:
        """The Duff paper's Corollary 1 (with C from the data, and with the paper's C) for
        the median under add/remove neighbours; none for other quantiles or replace-one."""
        if self.alpha != 0.5 or self.neighbouring is not Neighbouring.ADD_REMOVE:
            return []
        common = {"epsilon": self.epsilon, "eta": eta}
        return [
            error_bounds.duff_bound(sorted_x, lower, upper, **common),
            error_bounds.duff_bound_paper_c(sorted_x, lower, upper, **common),
        ]

    def __repr__(self) -> str:
        options = "" if self.alpha == 0.5 else f", alpha={self.alpha!r}"
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            options += f", neighbours={self.neighbouring.value!r}"
        return f"Duff(epsilon={self.epsilon:g}{options})"
