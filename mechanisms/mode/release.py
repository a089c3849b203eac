"""The output distribution of a mode mechanism over the finite domain ``Y = {a, ..., b}``.

Every mode mechanism of this package treats the values of ``Y`` symmetrically: the
probability of an output ``y`` depends only on its count ``n_y``.  So its
distribution is described by **levels**, the sets of values sharing one count: one
level per distinct count of the values present in the data (at most ``sqrt(2n)``
levels) and, for mechanisms that can output values absent from the data, one more
level holding every *unseen* value (count 0), of size ``|Y| - #distinct``, possibly
10¹² (:mod:`mechanisms.core.domain`).  A release stores, per level, the count, the
number of values and the log probability of *each* value of the level; nothing is
ever built over ``Y``:

* ``sample`` draws a level (by the mechanism's own procedure), then a uniform value
  of it: a seen value by its index in the level, an unseen value by its rank ``r``
  among the unseen integers of ``[a, b]``, mapped past the seen values: with
  ``o_1 < ... < o_m`` the seen values' offsets from ``a`` and ``g_i = o_i - (i - 1)``
  the number of unseen integers below ``o_i``, the value is ``a + r + k`` with
  ``k = #{i : g_i <= r}`` (``searchsorted``).  Cost ``O(size · log m)``.
* ``pmf``/``log_pmf`` look up the level of each queried value (``O(log m)`` each);
  ``cdf(x)`` adds the seen values up to ``x`` (a prefix sum in value order) and
  ``#{unseen values <= x}`` times the unseen level's probability.

Mechanisms that may answer ⊥ (:attr:`mechanisms.core.interface.Mechanism.may_refuse`) draw
level ``-1`` for it; it is a NaN in the sample.

This module also holds what all mode mechanisms share: :class:`ModeMechanism` (the
finite domain's bounds check, then bounding and rounding by
:func:`mechanisms.core.domain.domain_counts`) and :func:`exponential_mechanism`, the
exponential mechanism (McSherry & Talwar, "Mechanism design via differential
privacy") with log weight ``scale · n_y`` over ``Y``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from scipy.special import logsumexp

from mechanisms.core.data import read_only, sorted_bounded
from mechanisms.core.domain import check_domain, domain_counts, domain_size, mode_value
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.validation import check_data, check_rng, check_size
from mechanisms.sampling.racing import FiniteLevels, RacingSampler

LevelDraw = Callable[[int, np.random.Generator], np.ndarray]
"""Draws ``size`` independent level indices (int64; ``-1`` for ⊥) with the given rng."""

SAMPLERS = ("inverse_cdf", "racing")
"""How :func:`exponential_mechanism` draws the level (its docstring)."""


class DomainLevels:
    """The values of ``Y = {a..b}`` grouped by count (module docstring).

    ``sorted_x`` is sorted data inside ``[a, b]`` (integers ``a < b``); its values
    are rounded by :func:`mechanisms.core.domain.domain_counts`.  Levels are
    ordered by decreasing count; with ``unseen`` (and ``|Y| > #distinct``) the last
    level holds the unseen values, count 0.  Attributes: ``lower``, ``upper``,
    ``size`` (``|Y|``), ``values``/``counts`` (the distinct seen values, sorted,
    and their counts), ``level_counts`` (float64), ``level_sizes`` (int64) and
    ``unseen_level`` (its index, ``-1`` if there is none).
    """

    def __init__(
        self, sorted_x: np.ndarray, lower: float, upper: float, *, unseen: bool = True
    ) -> None:
        self.lower, self.upper = float(lower), float(upper)
        self.size = domain_size(lower, upper)
        self.values, self.counts = domain_counts(sorted_x)
        distinct = np.unique(self.counts)[::-1]  # decreasing
        self._level_of_value = np.searchsorted(-distinct, -self.counts).astype(np.int64)
        sizes = np.bincount(self._level_of_value, minlength=distinct.size).astype(np.int64)
        self._members = self.values[np.lexsort((self.values, self._level_of_value))]
        self._starts = np.cumsum(sizes) - sizes
        unseen_size = self.size - self.values.size
        self.unseen_level = distinct.size if unseen and unseen_size > 0 else -1
        if self.unseen_level >= 0:
            distinct = np.append(distinct, 0)
            sizes = np.append(sizes, unseen_size)
        self.level_counts = read_only(distinct.astype(np.float64))
        self.level_sizes = read_only(sizes)
        self._lower_int = int(lower)
        offsets = self.values.astype(np.int64) - self._lower_int  # exact: |values| <= 2**53
        self._unseen_below = offsets - np.arange(offsets.size, dtype=np.int64)

    @property
    def level_of_value(self) -> np.ndarray:
        """The level of each seen value (aligned with ``values``)."""
        return self._level_of_value

    def uniform(self, levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One uniformly drawn value of each level in ``levels`` (float64; one rng call)."""
        levels = np.asarray(levels, dtype=np.int64)
        ranks = rng.integers(0, self.level_sizes[levels])
        out = np.empty(levels.size, dtype=np.float64)
        unseen = levels == self.unseen_level
        seen = ~unseen
        out[seen] = self._members[self._starts[levels[seen]] + ranks[seen]]
        rank = ranks[unseen]
        offset = rank + np.searchsorted(self._unseen_below, rank, side="right")
        out[unseen] = (offset + self._lower_int).astype(np.float64)
        return out

    def level_of(self, y: np.ndarray | float) -> np.ndarray:
        """The level of each point of ``y``; ``-1`` off ``Y`` (not an integer of ``[a, b]``,
        NaN) and for unseen values when there is no unseen level."""
        q = np.asarray(y, dtype=np.float64)
        out = np.full(q.shape, -1, dtype=np.int64)
        inside = (q >= self.lower) & (q <= self.upper) & (q == np.floor(q))
        points = q[inside]
        out[inside] = self.unseen_level
        if self.values.size:
            j = np.minimum(np.searchsorted(self.values, points), self.values.size - 1)
            found = self.values[j] == points
            out[inside] = np.where(found, self._level_of_value[j], self.unseen_level)
        return out

    def count_at_most(self, x: np.ndarray) -> np.ndarray:
        """``#{y in Y : y <= x}`` for each point of ``x`` (int64; NaN gives 0)."""
        q = np.asarray(x, dtype=np.float64)
        out = np.where(q >= self.upper, self.size, 0).astype(np.int64)
        inside = (q >= self.lower) & (q < self.upper)
        out[inside] = np.floor(q[inside]).astype(np.int64) - self._lower_int + 1
        return out


class ModeRelease(Release):
    """A mode mechanism's output distribution over ``Y``, described by levels.

    ``log_probabilities`` gives ``log P(M = y)`` for one value ``y`` of each level
    (an array, or a function computing it on first use: a noisy-max integral is
    needed by ``pmf``/``cdf`` only, never by ``sample``); ``draw`` draws levels
    (``-1`` for ⊥); ``refusal_probability`` is the exact ``P(⊥)``.
    """

    def __init__(
        self,
        levels: DomainLevels,
        *,
        n: int,
        true_value: float,
        log_probabilities: np.ndarray | Callable[[], np.ndarray],
        draw: LevelDraw,
        refusal_probability: float = 0.0,
    ) -> None:
        self.levels = levels
        self.lower, self.upper = levels.lower, levels.upper
        self.n = int(n)
        self.true_value = float(true_value)
        self.refusal_probability = float(refusal_probability)
        self._log_probabilities = log_probabilities
        self._draw = draw
        self._cumulative: np.ndarray | None = None

    @property
    def level_log_probabilities(self) -> np.ndarray:
        """``log P(M = y)`` for one value ``y`` of each level (read-only)."""
        if callable(self._log_probabilities):
            self._log_probabilities = read_only(np.asarray(self._log_probabilities()))
        return self._log_probabilities

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` draws: a level by the mechanism's procedure, then a uniform value of it."""
        size, rng = check_size(size), check_rng(rng)
        chosen = np.asarray(self._draw(size, rng), dtype=np.int64)
        out = np.full(size, np.nan)
        answered = chosen >= 0
        out[answered] = self.levels.uniform(chosen[answered], rng)
        return out

    def log_pmf(self, y: np.ndarray | float) -> np.ndarray:
        """``log P(M = y)``, vectorised: ``-inf`` off ``Y`` and NaN at NaN.  ``P(⊥)`` is
        :attr:`refusal_probability`."""
        q = np.asarray(y, dtype=np.float64)
        level = self.levels.level_of(q)
        log_p = self.level_log_probabilities
        out = np.full(q.shape, -np.inf)
        out[level >= 0] = log_p[level[level >= 0]]
        out[np.isnan(q)] = np.nan
        return out

    def pmf(self, y: np.ndarray | float) -> np.ndarray:
        """``P(M = y) = exp(log_pmf(y))`` (relative precision kept down to underflow)."""
        return np.exp(self.log_pmf(y))

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """``P(M <= x)`` (⊥ not counted): seen values up to ``x`` plus the unseen ones."""
        levels = self.levels
        if self._cumulative is None:
            p = np.exp(self.level_log_probabilities)
            seen = p[levels.level_of_value] if p.size else np.zeros(0)
            self._cumulative = read_only(np.concatenate(([0.0], np.cumsum(seen))))
        q = np.asarray(x, dtype=np.float64)
        seen_below = np.searchsorted(levels.values, q, side="right")
        out = self._cumulative[seen_below]
        if levels.unseen_level >= 0:
            unseen_below = levels.count_at_most(q) - seen_below
            out = out + unseen_below * math.exp(self.level_log_probabilities[-1])
        out = np.asarray(out, dtype=np.float64)
        out[np.isnan(q)] = np.nan
        return out


class ModeMechanism(Mechanism[Release]):
    """A mechanism for the mode over the finite domain ``Y`` of integer bounds ``(a, b)``.

    ``release`` checks the bounds with :func:`mechanisms.core.domain.check_domain`,
    bounds the data like every mechanism (clip or drop) and passes the sorted
    bounded data to :meth:`_release`.
    """

    statistics: ClassVar[frozenset[str]] = frozenset({"mode"})

    def release(self, data: object, bounds: object) -> ModeRelease:
        """Bound ``data`` to the domain of ``bounds = (a, b)`` and return the distribution."""
        x = check_data(data)
        lower, upper = check_domain(bounds)
        return self._release(sorted_bounded(x, lower, upper, self.bounding), lower, upper)

    @abstractmethod
    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ModeRelease:
        """The release on sorted data inside ``[lower, upper]``."""


def inverse_cdf_draw(log_weights: np.ndarray) -> LevelDraw:
    """Levels with ``P(k) ∝ exp(log_weights[k])`` by inversion of the cumulative weights.

    The weights are rescaled so that the largest is 1 and the cumulative sum ends at
    exactly 1; level ``k`` is drawn iff ``C_{k-1} <= U < C_k`` for a 53-bit uniform
    ``U`` (as in :mod:`mechanisms.sampling.piecewise`): a level whose weight is below ``2**-53``
    of the total may never be drawn, one of weight 0 never is.
    """
    weights = np.exp(log_weights - log_weights.max())
    cumulative = np.cumsum(weights)
    cumulative /= cumulative[-1]

    def draw(size: int, rng: np.random.Generator) -> np.ndarray:
        return np.searchsorted(cumulative, rng.random(size), side="right").astype(np.int64)

    return draw


def exponential_mechanism(
    sorted_x: np.ndarray, lower: float, upper: float, scale: float, sampler: str
) -> ModeRelease:
    """The EM over ``Y`` with ``P(M = y) ∝ exp(scale · n_y)``.

    Per level ``k`` (count ``c_k``, ``m_k`` values) the log weight is
    ``s_k + log m_k`` with ``s_k = scale·(c_k - n_max)`` (0 for the top level; the
    constant ``n_max`` cancels in the normalisation), and each value of the level has
    ``log P = s_k - log Σ_j exp(s_j + log m_j)``: exact in log space to a few ulps of
    ``|s_k|``, also where ``P`` underflows.  The level is drawn by ``sampler``:
    ``"inverse_cdf"`` (:func:`inverse_cdf_draw`, ``O(log L)`` per draw for ``L``
    levels) or ``"racing"``, the Duff paper's Algorithm 1 (:mod:`mechanisms.sampling.racing`,
    :class:`~mechanisms.sampling.racing.FiniteLevels` with the counting measure, ``O(L)`` per
    draw): the same distribution.  ``scale`` must keep ``scale·n`` finite
    (:func:`mechanisms.sampling.piecewise.score_epsilon`).
    """
    levels = DomainLevels(sorted_x, lower, upper)
    scores = scale * (levels.level_counts - levels.level_counts[0])
    log_sizes = np.log(levels.level_sizes.astype(np.float64))
    log_weights = scores + log_sizes
    log_probabilities = scores - logsumexp(log_weights)
    if sampler == "racing":
        racer = RacingSampler(scores, FiniteLevels(log_sizes, levels.uniform))
        draw: LevelDraw = racer.sample_levels
    else:
        draw = inverse_cdf_draw(log_weights)
    return ModeRelease(
        levels,
        n=sorted_x.size,
        true_value=mode_value(sorted_x, lower),
        log_probabilities=log_probabilities,
        draw=draw,
    )
