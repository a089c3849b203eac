"""The racing sampler: exact log-space sampling of an EM whose utility takes finitely many values.

Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility Function
Family for the Exponential Mechanism", section 5 (eq. 5, Algorithm 1,
Proposition 5; the race is credited there to unpublished work of Ilya Mironov).

Decomposition (eq. 5).  If the utility takes the values ``u_0, ..., u_{N-1}``
on the *levels* ``A_k = {z : u(z) = u_k}`` of the output space (base measure
``μ``), the EM density ``∝ exp(s(z))`` with ``s = ε·u/(2Δu)`` is the mixture

    P(K = k) = p_k / Σ_j p_j,   p_k = exp(s_k)·μ(A_k),   output | K = k ~ Uniform(A_k).

Two kinds of level are supported:

* :class:`IntervalLevels`: ``A_k`` a finite union of intervals, ``μ`` the
  Lebesgue measure, ``μ(A_k)`` its total length (the median, quantile and mean
  Duff of the paper's section 4.1, whose levels are one or two intervals);
* :class:`FiniteLevels`: ``A_k`` a finite set, ``μ`` the counting measure,
  ``μ(A_k) = |A_k|`` given by its logarithm together with a vectorised uniform
  draw, so a level can be huge (the mode over a finite domain: "every value not
  in the data", 10^300 values, is one level of log size 690.8).

Why the race is exact (Proposition 5).  Let ``E_k = log(1/U_k)`` with ``U_k``
independent uniforms on (0, 1): ``E_k ~ Exp(1)``, so ``E_k/p_k ~ Exp(p_k)``
(rate ``p_k``).  For independent exponentials the minimum of those with
``j != k`` is ``Exp(Q)``, ``Q = Σ_{j != k} p_j`` (the survival functions
multiply), and ``P(Exp(p_k) <= Exp(Q)) = p_k/(p_k + Q)``; hence
``K = argmin_k E_k/p_k`` has ``P(K = k) = p_k/Σ_j p_j``.  ``log`` is increasing,
so ``K = argmin_k Z_k`` with ``Z_k = log E_k - log p_k = log log(1/U_k) - log p_k``,
Algorithm 1's statistic.  :func:`race` draws ``E_k`` with
``numpy.random.Generator.standard_exponential``, which is ``Exp(1)`` like
``log(1/U)``.

Why it never overflows or underflows.  Only ``log p_k = s_k + log μ(A_k)`` is
formed, a sum of two floats (``s_k = -1e5`` or ``log μ = 690.8`` are harmless),
and never exponentiated; its maximum is subtracted, so the best level has
``Z_k = log E_k`` exactly and the others add their handicap
``h_k = max_j log p_j - log p_k >= 0``.  ``exp`` appears only in
:attr:`RacingSampler.log_probabilities`, for reporting.  Levels of measure 0
(``log μ = -inf``, no ``log 0`` ever evaluated) do not enter the race.

Float64 limits.  The ``E_k`` are floats with about 53 bits of resolution, so a
level whose probability relative to the largest is below ~1e-16 is drawn with a
probability that is not resolved (possibly 0), as with any sampler driven by
53-bit uniforms; ``E_k = 0`` (probability about ``2**-53`` per entry) makes that
entry win.  ``h_k`` is rounded at the ulp of ``|log p_k|``: relative error
``|s_k|·2**-52`` in ``p_k`` (1.5e-11 for scores of 1e5).

Cost: ``N`` exponentials, logs and comparisons per draw (about 15 ns each),
vectorised over draws in tiles of at most :data:`TILE` entries, plus
``O(log P)`` per draw to pick one of the ``P`` intervals of the drawn level.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from mechanisms.core.validation import check_rng, check_size

TILE = 1 << 16
"""Entries (draws × levels) of the race processed at once: 512 KiB of float64."""

UniformDraw = Callable[[np.ndarray, np.random.Generator], np.ndarray]
"""Maps an int64 array of level indices to one uniform element of each level."""


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def race(log_weights: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1: ``size`` independent ``K`` with ``P(K = k) = p_k/Σ_j p_j``.

    ``log_weights`` holds ``log p_k`` up to a common additive constant, ``-inf``
    for a level of weight 0 (never drawn).  ``K = argmin_k (log E_k - log p_k)``
    with ``E_k ~ Exp(1)`` fresh for every draw (module docstring).  Returns int64
    indices into ``log_weights``.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64)
    if log_weights.ndim != 1 or np.isnan(log_weights).any() or np.isposinf(log_weights).any():
        raise ValueError("log_weights must be a 1-D array of floats below +inf (no NaN)")
    entrants = np.flatnonzero(log_weights > -np.inf)
    if entrants.size == 0:
        raise ValueError("log_weights: at least one level must have positive weight")
    size, rng = check_size(size), check_rng(rng)
    handicap = log_weights[entrants]
    handicap = handicap.max() - handicap  # 0 for the best level, exactly
    winners = np.empty(size, dtype=np.int64)
    rows = max(1, min(size, TILE // entrants.size))
    tile = np.empty((rows, entrants.size))
    for start in range(0, size, rows):
        z = tile[: min(rows, size - start)]
        rng.standard_exponential(out=z)
        with np.errstate(divide="ignore"):  # E = 0 gives -inf: that entry wins
            np.log(z, out=z)
        z += handicap
        z.argmin(axis=1, out=winners[start : start + z.shape[0]])
    return entrants[winners]


def _segmented_scan(values: np.ndarray, first: np.ndarray, op: np.ufunc) -> np.ndarray:
    """Inclusive scan of ``op`` restarting where a segment begins (``first[j]``: its start).

    Doubling (Hillis–Steele): after the round with step ``d`` entry ``j`` combines
    the last ``2d`` entries of its segment, so ``ceil(log2(longest segment))``
    vectorised rounds.  For ``np.add`` on positive terms each result is a sum of
    its segment's terms only, with relative error at most rounds·2**-53.
    """
    out = values.copy()
    index = np.arange(values.size)
    step = 1
    while True:
        combine = np.flatnonzero(index - step >= first)
        if combine.size == 0:
            return out
        out[combine] = op(out[combine], out[combine - step])  # right side: previous round
        step *= 2


class Levels(ABC):
    """``N`` sets ``A_0..A_{N-1}``: their log measures and a uniform draw from each."""

    @property
    @abstractmethod
    def log_measures(self) -> np.ndarray:
        """``log μ(A_k)`` for every level, ``-inf`` for measure 0 (length ``N``)."""

    @abstractmethod
    def uniform(self, levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One independent uniform element of ``A_k`` for each ``k`` in ``levels``."""


class IntervalLevels(Levels):
    """Levels that are finite unions of intervals, with the Lebesgue measure.

    Piece ``j`` is ``[left_j, right_j]`` and belongs to level ``level_j``
    (``N = max(level) + 1`` levels; pieces of one level must not overlap).
    Zero-length pieces (ties, points at the bounds) have measure 0 and are
    dropped; a level without positive-length pieces has ``log μ = -inf``.

    ``uniform`` picks piece ``j`` of level ``k`` with probability
    ``len_j/μ(A_k)`` by bisection in the level's own cumulative lengths (computed
    per level and scaled by a power of two, so a short level next to long ones
    keeps its relative precision and no total length overflows), then returns
    ``left_j + len_j·W`` (clipped to ``right_j``) with a uniform ``W``: two
    53-bit uniforms per draw.
    """

    def __init__(self, left: np.ndarray, right: np.ndarray, level: np.ndarray) -> None:
        left, right = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
        level = np.asarray(level)
        if not (left.ndim == 1 and left.shape == right.shape == level.shape):
            raise ValueError("left, right and level must be 1-D arrays of one length")
        if level.dtype.kind not in "iu" or (level < 0).any():
            raise ValueError("level must hold non-negative integers")
        lengths = right - left
        if not np.isfinite(lengths).all() or (lengths < 0).any():
            raise ValueError("intervals must satisfy left <= right with a finite length")
        count = int(level.max()) + 1 if level.size else 0
        keep = np.flatnonzero(lengths > 0)
        order = keep[np.argsort(level[keep], kind="stable")]
        self._left, self._lengths = left[order], lengths[order]
        self._right = right[order]
        pieces = np.bincount(level[order], minlength=count)
        self._stops = np.cumsum(pieces)
        self._starts = self._stops - pieces
        first = np.repeat(self._starts, pieces)
        filled = pieces > 0
        # Lengths times 2**-e, exactly, with 2**e just above the level's longest piece:
        # the level's sums then lie in [0.5, pieces] and can neither overflow nor
        # lose a short level's precision next to long ones.
        exponent = _segmented_scan(np.frexp(self._lengths)[1], first, np.maximum)
        shift = np.zeros(count, dtype=np.int64)
        shift[filled] = exponent[self._stops[filled] - 1]
        scaled = np.ldexp(self._lengths, -np.repeat(shift, pieces))
        cumulative = _segmented_scan(scaled, first, np.add)
        self._cumulative = _segmented_scan(cumulative, first, np.maximum)  # non-decreasing
        self._measures = np.zeros(count)  # μ(A_k)·2**-shift_k
        self._measures[filled] = self._cumulative[self._stops[filled] - 1]
        log_measures = np.full(count, -np.inf)
        log_measures[filled] = np.log(self._measures[filled]) + shift[filled] * math.log(2.0)
        self._log_measures = _read_only(log_measures)

    @property
    def log_measures(self) -> np.ndarray:
        return self._log_measures

    def uniform(self, levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        target = rng.random(levels.size) * self._measures[levels]
        low, high = self._starts[levels], self._stops[levels] - 1
        # The first piece whose cumulative length exceeds the target (the last if none).
        active = low < high
        while active.any():
            middle = (low + high) // 2
            beyond = self._cumulative[middle] <= target
            low = np.where(active & beyond, middle + 1, low)
            high = np.where(active & ~beyond, middle, high)
            active = low < high
        out = self._left[low] + self._lengths[low] * rng.random(levels.size)
        return np.minimum(out, self._right[low], out=out)


class FiniteLevels(Levels):
    """Levels that are finite sets, with the counting measure, given by their log sizes.

    ``log_sizes[k] = log |A_k|`` (``-inf`` for an empty level) and
    ``uniform(levels, rng)`` returns one uniformly drawn element of ``A_k`` for
    each ``k`` in the int64 array ``levels`` (vectorised; a level can be far too
    large to list, such as every value of a 10^300-element domain that is not
    in the data).
    """

    def __init__(self, log_sizes: np.ndarray, uniform: UniformDraw) -> None:
        log_sizes = np.asarray(log_sizes, dtype=np.float64)
        if log_sizes.ndim != 1 or not ((log_sizes >= 0) | np.isneginf(log_sizes)).all():
            raise ValueError("log_sizes must be 1-D, each >= 0 (a size >= 1) or -inf (empty)")
        if np.isposinf(log_sizes).any():
            raise ValueError("log_sizes must be finite or -inf")
        self._log_measures = _read_only(log_sizes.copy())
        self._uniform = uniform

    @property
    def log_measures(self) -> np.ndarray:
        return self._log_measures

    def uniform(self, levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = np.asarray(self._uniform(levels, rng))
        if out.shape != levels.shape:
            raise ValueError("uniform must return one element per requested level")
        return out


class RacingSampler:
    """The EM with log density ``log_scores[k]`` on level ``A_k`` of ``levels``.

    ``P(K = k) ∝ exp(log_scores[k])·μ(A_k)`` (eq. 5 of the Duff paper), ``K``
    drawn by :func:`race`, then a uniform element of ``A_K``.  ``log_scores``
    must be finite (e.g. ``ε·u_k/(2Δu)``); additive constants are irrelevant.

    Attributes: ``levels`` and ``log_weights``, the read-only
    ``log p_k - max_j log p_j`` (0 for the most likely level, ``-inf`` for
    measure 0) that the race uses.
    """

    def __init__(self, log_scores: np.ndarray, levels: Levels) -> None:
        scores = np.asarray(log_scores, dtype=np.float64)
        log_measures = levels.log_measures
        if scores.shape != log_measures.shape or not np.isfinite(scores).all():
            raise ValueError("log_scores must hold one finite value per level")
        log_weights = scores + log_measures  # -inf stays -inf: finite + -inf, no warning
        if not (log_weights > -np.inf).any():
            raise ValueError("levels: at least one level must have positive measure")
        log_weights -= log_weights.max()
        self.levels = levels
        self.log_weights = _read_only(log_weights)

    @classmethod
    def on_intervals(
        cls, left: np.ndarray, right: np.ndarray, log_density: np.ndarray
    ) -> RacingSampler:
        """The EM with log density ``log_density[i]`` on ``[left_i, right_i]``.

        Intervals with bitwise-equal ``log_density`` form one level (the paper's
        ``A_k``: equal utility), so the race has one entry per distinct value.
        """
        level_scores, level = np.unique(np.asarray(log_density), return_inverse=True)
        return cls(level_scores, IntervalLevels(left, right, level))

    @property
    def log_probabilities(self) -> np.ndarray:
        """Normalised ``log P(K = k)`` for every level (``-inf`` for measure 0)."""
        return self.log_weights - np.log(np.exp(self.log_weights).sum())

    def sample_levels(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent levels ``K`` (int64), by :func:`race`."""
        return race(self.log_weights, size, rng)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent outputs of the EM: a level by the race, then uniform in it."""
        levels = self.sample_levels(size, rng)
        return self.levels.uniform(levels, rng)
