"""Exact log-space sampler for exponential mechanisms that are constant between data points.

The exponential mechanism (EM) on ``[a, b]`` with Lebesgue base measure and a
utility that only depends on how many data points lie below and above the
output (Duff paper, section 4.1; the quantile EM of "The Exponential Mechanism
for Medians", eq. 2.2) has a
density that is constant on each *gap* between consecutive sorted points.  With
``x_(0) = a``, ``x_(n+1) = b`` and ``x_(1) <= ... <= x_(n)`` the bounded data,
gap ``i`` (``i = 0..n``) is ``[x_(i), x_(i+1)]``: ``i`` is the number of data
points below its interior.  Given per-gap log-scores ``s_i`` (``ε·u_i / (2Δu)``),
the EM is the mixture

    P(gap i) = exp(s_i + log len_i) / Σ_j exp(s_j + log len_j),
    output | gap i ~ Uniform(gap i),

the decomposition of the Duff paper, section 5, eq. 5 (there grouped by utility
level rather than by gap).  Zero-length gaps (ties, points at ``a`` or ``b``)
have mass exactly 0.

Numerics (diffprivlib issue #107: the weights of all positive-length gaps can
underflow when many points tie at the mode, because the largest *score* belongs
to a zero-length gap).  Everything is done in log space, the maximum is taken
over ``s_i + log len_i`` (*after* the length is included), and ``log 0`` is never
evaluated (masked ``np.log``): ties and points at the bounds give ``-inf`` log
masses and no warnings.

The sampler and the cdf give weight 0 to every gap whose weight is below
``2**-1022 = e^-708.4`` (the smallest normal float64) times the largest one: its
probability is below ``2.3e-308``, which no 53-bit uniform can resolve, and
``exp`` would underflow there anyway.  Only the window of the other gaps is
materialised.  The scores must be unimodal in the gap index (non-decreasing up
to ``mode``, non-increasing after it), which holds for every rank-based EM.  A
lower bound ``P`` on the largest log mass is read off the positive-length gaps
nearest ``mode``; since ``log len_i <= log(b - a)``, a gap with
``s_i < P - 708.4 - log(b - a)`` has weight below ``e^-708.4`` times the
largest, so the window leaves out nothing else.  Its ends are found by probing
the scores at distances ``2**k`` from the mode (one vectorised call; the window
is at most twice the necessary one).  The cost after the sort is therefore
``O(window + log n)``, with a window of about ``2·(708 + log((b - a)/len))``
divided by the score drop per gap (~2000 gaps for Duff at ε = 1), and ``O(n)``
only when ε is so small that every gap counts.  Given the unsorted data's
:class:`mechanisms.core.selection.OrderStatistics` instead of sorted data, the release
first sorts the window it will most likely read (the same probes, with the largest
log mass guessed from the average spacing minus
:data:`mechanisms.sampling.gaps.GUESS_SPACING`), by
selection in ``O(n)``; any read outside it widens it, so the release is the same,
bit for bit, whatever the guess.  Below :data:`mechanisms.core.selection.MIN_SAMPLED`
points the data are sorted whole, and the release reads every end point and score
from two arrays (:mod:`mechanisms.sampling.gaps`): the same numbers in a few numpy
operations on whole arrays.  ``log_masses`` and
``probabilities`` cover all gaps and are computed on first use.
``sample(size)`` costs ``O(size · log window)``.

What "exact" means in float64
-----------------------------
* ``log_masses`` (normalised log probabilities of the gaps) are
  ``(s_i + log len_i - max) - log Σ``, a few roundings each: absolute error a few
  ulps of ``max(|s_i|, |log len_i|)``, i.e. the probability of a gap is exact to a
  relative ``|s_i|·2**-52`` or so.  That is how the window's log masses are formed
  while its scores are at most :data:`EXACT_SCORES` ``= 2**24`` in magnitude: a
  relative error below ``2**-27`` (7e-9) in the worst case, ~1e-15 for the gaps
  near the mode at ordinary ε (scores near 0).  Larger scores (ε beyond ~3e7, or
  ties that push the mass far from the mode: diffprivlib #107) would swamp the log
  lengths (at ε = 1e16, ``s + log len`` rounds to a multiple of 0.5 and gaps of equal
  score get equal mass whatever their lengths), so there the release asks the
  mechanism's ``relative_score`` for the window's scores minus that of its best
  positive-length gap, computed from the exact (integer or rational) utilities, and
  adds the log lengths to those: every kept gap then has
  ``|s_i - s_ref| <= 708.4 + log((b - a)/len) < 2200`` and its probability is exact
  to a relative ``2**-40`` or so, at every ε.  The threshold keeps every release at
  ordinary ε (up to 1e4, ties included) bit for bit what it was.  A score function
  without a ``relative_score`` keeps the ``|s_i|·2**-52`` bound.
  Far tails whose probability underflows keep finite, accurate log masses.  The
  normaliser omits the gaps of weight below ``2**-1022`` times the largest: a
  relative error below ``(n + 1)·2**-1022``.
* ``sample`` draws the gap by inversion: ``U = rng.random()`` is a uniform
  multiple of ``2**-53`` in ``[0, 1)``, and gap ``i`` is returned when
  ``C_{i-1} <= U < C_i``, with ``C`` the float64 cumulative sum of the window's
  weights rescaled so that its last entry is exactly 1.  So gap ``i`` is drawn
  with probability ``p_i`` rounded to the ``2**-53`` grid of ``U``, give or take
  the rounding of the cumulative sum (at most half an ulp of ``C_i``, i.e.
  ``<= 2**-54``, per gap): an absolute error below ``2**-52`` per gap.  Gaps with
  ``p_i`` below that resolution may never be drawn; zero-length gaps never are.
  The paper's racing sampler (Algorithm 1, ``sampler="racing"``,
  :mod:`mechanisms.sampling.racing`) has the same kind of limit: its ``Exp(1)`` variables
  are floats with 53-bit resolution, so the probability of a level whose weight
  is below ~1e-16 of the largest is not resolved.
  Inside the chosen gap the output is ``x_(i) + len_i·V`` with a second 53-bit
  uniform ``V``, clipped to the gap.
* ``cdf`` is the same cumulative sum plus the exact linear part of the current
  gap: absolute error a few ``2**-53``.  Probabilities of sets in the right tail
  (``1 - cdf`` below ~``1e-15``) are not resolved by any cdf; use ``log_masses``.
"""

from __future__ import annotations

import math
import sys
from abc import abstractmethod

import numpy as np

from mechanisms.core.data import read_only
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.selection import OrderStatistics
from mechanisms.core.validation import check_choice, check_rng, check_size
from mechanisms.sampling.gaps import (
    UNDERFLOW_MARGIN,
    LogScore,
    RelativeScore,
    gaps_of,
    likely_positions,
    window,
)
from mechanisms.sampling.racing import RacingSampler

SAMPLERS = ("inverse_cdf", "racing")
"""How :meth:`PiecewiseUniformRelease.sample` picks the gap (class docstring)."""

EXACT_SCORES = 2.0**24
"""Largest magnitude of a window's log-scores that are added to the log lengths as they are:
beyond it a release with a ``relative_score`` shifts them exactly first (module docstring,
"What exact means")."""


def score_epsilon(epsilon: float, n: int) -> float:
    """``min(ε, max_float/(n + 2))``: the ε of a rank EM's log-scores, which then stay finite.

    For Duff (``ε·u/2``, ``|u| <= n + 1``) and the quantile EM
    (``ε·|g|/(2Δu)``, ``|g| <= n``, ``2Δu >= 1``) the scores overflow only for
    ε above ``max_float/(n + 1) > 1e292`` (n below 2**53).  There the float64
    output distribution is the same at both ε: every gap below the best level
    among positive-length gaps has a score lower by at least ``ε·2**-55`` (Duff:
    ``ε/2``; quantile EM: distinct float distances differ by at least
    ``2**-54``), so its relative weight is at most ``e^{-1e275}·(b - a)/len``
    with ``(b - a)/len < e^{1455}``: exactly 0 at both ε, and both are uniform
    on the best gaps.  Only the far-tail :attr:`PiecewiseUniformRelease.log_masses`,
    below ``-1e275`` either way, are those of the smaller ε.
    """
    return min(epsilon, sys.float_info.max / (n + 2))


def _log_lengths(lengths: np.ndarray, positive: bool) -> np.ndarray:
    """``log len_i``, ``-inf`` for a zero length without evaluating ``log 0`` (no warning).

    ``positive``: all lengths are known to be positive, so the plain ``np.log`` gives the
    same floats as the masked one (a few microseconds faster: no mask).
    """
    if positive:
        return np.log(lengths)
    return np.log(lengths, out=np.full(lengths.size, -np.inf), where=lengths > 0)


def _check_finite(scores: np.ndarray) -> None:
    """``ValueError`` unless every log-score is finite."""
    if not np.isfinite(scores).all():
        raise ValueError("log_score must return one finite value per gap index")


def _racing_sampler(edges: np.ndarray, scores: np.ndarray, keep: np.ndarray) -> RacingSampler:
    """Algorithm 1 over the window's gaps of nonzero weight (``keep``), grouped into levels by
    score; ``edges`` and ``scores`` are the window's."""
    kept = np.flatnonzero(keep)
    return RacingSampler.on_intervals(edges[kept], edges[kept + 1], scores[kept])


def _swamps(scores: np.ndarray, mode: int) -> bool:
    """Whether the largest ``|score|`` of a window, unimodal with its largest score at position
    ``mode``, exceeds :data:`EXACT_SCORES` (read at both ends and the mode: ``O(1)``)."""
    largest = max(abs(scores.item(0)), abs(scores.item(-1)), abs(scores.item(mode)))
    return largest > EXACT_SCORES  # False for a NaN: the finiteness checks report it


def _best_positive(scores: np.ndarray, lengths: np.ndarray) -> int:
    """Position of the largest score among the window's positive-length gaps."""
    return int(np.argmax(np.where(lengths > 0, scores, -np.inf)))


def _kept(log_masses: np.ndarray) -> np.ndarray:
    """The gaps whose weight is not below ``2**-1022`` times the largest (``log_masses``
    relative to the largest: ``0`` there)."""
    return log_masses > -UNDERFLOW_MARGIN


def _checked_data(
    sorted_x: np.ndarray | OrderStatistics, lower: float, upper: float, mode: int
) -> OrderStatistics:
    """The order statistics of ``sorted_x`` after checking its shape, the bounds and the
    mode's range."""
    if isinstance(sorted_x, OrderStatistics):
        order = sorted_x
    else:
        x = np.asarray(sorted_x, dtype=np.float64)
        if x.ndim != 1:
            raise ValueError(f"sorted_x must be 1-D, got shape {x.shape}")
        order = OrderStatistics.of_sorted(x)
    if not (math.isfinite(upper - lower) and lower < upper):
        raise ValueError(
            f"bounds: need a < b with b - a finite in float64, got ({lower!r}, {upper!r})"
        )
    known = order.within is not None and lower <= order.within[0] and order.within[1] <= upper
    if order.size and not known:
        smallest, largest = order.extremes()
        if not (lower <= smallest and largest <= upper):
            raise ValueError("sorted_x must lie inside [lower, upper]")
    if not 0 <= mode <= order.size:
        raise ValueError(f"mode must be a gap index in 0..{order.size}, got {mode!r}")
    return order


class PiecewiseUniformRelease(Release):
    """EM output distribution on ``[lower, upper]`` with a density constant on each gap.

    Parameters
    ----------
    sorted_x:
        The bounded data, sorted, inside ``[lower, upper]`` (length ``n``), or their
        :class:`mechanisms.core.selection.OrderStatistics`, of which only the window is
        then sorted (selection, ``O(n)``).  A reference is kept (no copy); the
        caller must not modify it afterwards.  Sortedness is checked only inside
        the window (a full check would cost a pass over the data); the bounds are
        checked.
    lower, upper:
        The public bounds ``a < b``; ``upper - lower`` must be finite in float64.
    log_score:
        Vectorised map from gap indices ``i`` (int64 array, values in ``0..n``)
        to the unnormalised log density on the interior of gap
        ``i = [x_(i), x_(i+1)]``, i.e. ``ε·u/(2Δu)`` there.  Additive constants
        are irrelevant.  Must be unimodal: non-decreasing on ``0..mode`` and
        non-increasing on ``mode..n``.
    mode:
        A gap index where ``log_score`` is largest.
    relative_score:
        Optional (:data:`mechanisms.sampling.gaps.RelativeScore`): ``log_score`` shifted
        by a constant near the score of a reference gap, computed from the exact
        utilities.  Used instead of ``log_score`` for the window's log masses (and the
        race) when the window's scores exceed :data:`EXACT_SCORES` in magnitude, so that
        the scores never swamp the log lengths (module docstring, "What exact means").
    true_value, true_rank:
        The non-private statistic, or its rank ``k`` (``x_(k)``; ``lower`` for
        ``k = 0``), read once the window is sorted; defaults to the lower median
        (:func:`mechanisms.core.data.lower_median`).
    sampler:
        ``"inverse_cdf"`` (default): the gap by inversion of the window's
        cumulative sum (module docstring).  ``"racing"``: the Duff paper's
        Algorithm 1 (:mod:`mechanisms.sampling.racing`) over the *levels* of the window,
        each level the union of the positive-length gaps with bitwise-equal
        score (the paper races per level, and fewer entries make each draw
        cheaper: the quantile EM's ``|i - alpha·n|`` takes each value on two gaps,
        Duff's utility on one), then a gap of the level with probability
        proportional to its length, then a uniform point in it.  The race
        covers exactly the gaps of nonzero weight in the cumulative sum (weight
        above ``2**-1022`` times the largest, module docstring), so both
        sample the same distribution, the one whose exact :meth:`cdf` is given.
        The race costs ``O(levels)`` per draw (Duff: about ``1416/ε`` levels, at
        most ``n + 1``), inversion ``O(log window)``, so inversion is the
        default (``benchmarks/bench_racing.py``).
    all_scores:
        Optional: ``log_score`` of every gap ``0..n``, read instead of calling ``log_score``
        below :data:`mechanisms.core.selection.MIN_SAMPLED` points.
    """

    def __init__(
        self,
        sorted_x: np.ndarray | OrderStatistics,
        lower: float,
        upper: float,
        log_score: LogScore,
        mode: int,
        *,
        true_value: float | None = None,
        true_rank: int | None = None,
        sampler: str = "inverse_cdf",
        relative_score: RelativeScore | None = None,
        all_scores: np.ndarray | None = None,
    ) -> None:
        self.sampler = check_choice(sampler, SAMPLERS, "sampler")
        x = _checked_data(sorted_x, lower, upper, mode)
        mode = int(mode)
        self.lower = float(lower)
        self.upper = float(upper)
        self.n = x.size
        self._x = x
        self._log_score = log_score
        # (relative_score, reference gap) when the scores are shifted exactly, else None
        self._shift: tuple[RelativeScore, int] | None = None
        self._full_log_masses: np.ndarray | None = None

        x.select(lambda: likely_positions(x.size, mode, self.lower, self.upper, log_score))
        gaps = self._gaps = gaps_of(x, lower, upper, log_score, all_scores)
        if true_rank is not None or true_value is None:  # x_(0) = a; ceil(n/2): lower median
            k = (self.n + 1) // 2 if true_rank is None else true_rank
            if not 0 <= k <= self.n:
                raise ValueError(f"true_rank must be a rank in 0..{self.n}, got {true_rank!r}")
            true_value = gaps.edge(k)
        self.true_value = float(true_value)
        start, stop = window(gaps, mode, self.lower, self.upper)
        edges = gaps.edges(start, stop + 1)
        lengths = edges[1:] - edges[:-1]
        shortest = np.minimum.reduce(lengths)  # lengths.min(), without its Python wrapper
        if shortest < 0:
            raise ValueError("sorted_x must be sorted")
        scores = gaps.window_scores(start, stop)
        if relative_score is not None and _swamps(scores, mode - start):
            # the scores would swamp log(length): shift them exactly (module docstring)
            self._shift = (relative_score, start + _best_positive(scores, lengths))
            scores = self._shifted(self._shift, np.arange(start, stop, dtype=np.int64))
        log_masses = _log_lengths(lengths, shortest > 0)
        log_masses += scores
        # max AFTER adding log(length) (diffprivlib #107).  log Z = peak + log(sum of the
        # weights) is kept as two terms: their float sum would round at the ulp of |peak|.
        self._peak = np.maximum.reduce(log_masses)
        if not math.isfinite(self._peak):  # a NaN or +inf score (or no finite one)
            _check_finite(scores)
        log_masses -= self._peak
        # the largest weight is exactly 1; zero length or below 2**-1022 gives 0
        # (masking also skips exp's slow path for results that underflow).  With every
        # log mass above -708.4 (hence finite, and so every score) no mask is needed.
        if np.minimum.reduce(log_masses) > -UNDERFLOW_MARGIN:
            weights = np.exp(log_masses)
        else:
            _check_finite(scores)
            weights = np.exp(log_masses, out=np.zeros(log_masses.size), where=_kept(log_masses))
        self._racer = None
        if sampler == "racing":
            self._racer = _racing_sampler(edges, scores, _kept(log_masses))
        self._weights = weights  # their (pairwise) sum normalises log_masses, if asked for
        cumulative = np.add.accumulate(weights)
        cumulative /= cumulative[-1]  # so that cumulative[-1] == 1.0 exactly
        self._window_edges, self._right_edges = edges, edges[1:]
        self._lengths = lengths
        self._cumulative = cumulative

    # -------------------------------------------------------------- internals

    @staticmethod
    def _shifted(shift: tuple[RelativeScore, int], gaps: np.ndarray) -> np.ndarray:
        """``relative_score(gaps, reference)``, checked to hold one value per gap."""
        relative_score, reference = shift
        scores = np.asarray(relative_score(gaps, reference), dtype=np.float64)
        if scores.shape != gaps.shape:
            raise ValueError("relative_score must return one finite value per gap index")
        return scores

    def _log_masses_of(self, gaps: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """``log_score(i) + log(len_i)`` (or the exactly shifted score, if the window's was)
        for the gap indices ``gaps``, ``-inf`` for zero-length gaps (no ``log 0``), the
        scores checked to be finite: :attr:`log_masses` before normalisation.  (The
        window's own are computed in ``__init__``, the same floats.)"""
        if self._shift is not None:
            scores = self._shifted(self._shift, gaps)
        else:
            scores = np.asarray(self._log_score(gaps), dtype=np.float64)
        if scores.shape != gaps.shape:
            raise ValueError("log_score must return one finite value per gap index")
        _check_finite(scores)
        out = _log_lengths(lengths, bool((lengths > 0).all()))
        out += scores
        return out

    # ------------------------------------------------------------------ views

    @property
    def log_masses(self) -> np.ndarray:
        """Normalised log probability of every gap ``0..n`` (read-only; ``-inf`` if zero length).

        Computed on first use (``O(n)``); exact in the far tails too.
        """
        if self._full_log_masses is None:
            edges = self._gaps.edges(0, self.n + 2)
            gaps = np.arange(self.n + 1, dtype=np.int64)
            log_masses = self._log_masses_of(gaps, edges[1:] - edges[:-1])
            log_masses -= self._peak
            log_masses -= math.log(self._weights.sum())
            self._full_log_masses = read_only(log_masses)
        return self._full_log_masses

    @property
    def probabilities(self) -> np.ndarray:
        """``exp(log_masses)``: the probability of each gap (0 where it underflows)."""
        return read_only(np.exp(self.log_masses))

    @property
    def edges(self) -> np.ndarray:
        """``[a, x_(1), ..., x_(n), b]`` (a new array); gap ``i`` is ``[edges[i], edges[i+1]]``."""
        return self._gaps.edges(0, self.n + 2).copy()

    # --------------------------------------------------------------- Release

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``size`` outputs: a gap (by ``sampler``), then a uniform point inside it.

        Inversion: ``U`` then ``V`` are the first and second halves of one call
        ``rng.random(2·size)`` (the same numbers as two calls of ``size``: a generator's
        doubles come one after the other), the gap is ``i`` with
        ``C_{i-1} <= U < C_i`` and the output ``x_(i) + len_i·V``, clipped to the gap.
        """
        size = check_size(size)
        rng = check_rng(rng)
        if self._racer is not None:
            return self._racer.sample(size, rng)
        uniforms = rng.random(2 * size)
        # U < 1 == cumulative[-1], so the index stays in the window; a gap is
        # chosen iff cumulative[i-1] <= U < cumulative[i], never for zero mass.
        gap = self._cumulative.searchsorted(uniforms[:size], side="right")
        out = self._lengths[gap]
        out *= uniforms[size:]
        out += self._window_edges[gap]
        return np.minimum(out, self._right_edges[gap], out=out)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """``P(M(S) <= x)``: mass of the gaps left of ``x`` plus the linear part of its gap."""
        edges = self._window_edges
        q = np.asarray(x, dtype=np.float64)
        out = np.where(q >= edges[-1], 1.0, 0.0)
        inside = (q >= edges[0]) & (q < edges[-1])
        qi = q[inside]
        # edges[gap] <= q < edges[gap + 1], so the gap containing q has positive length.
        gap = np.searchsorted(edges, qi, side="right") - 1
        left = edges[gap]
        fraction = (qi - left) / (edges[gap + 1] - left)
        before = np.where(gap > 0, self._cumulative[np.maximum(gap - 1, 0)], 0.0)
        # Interpolate towards the cumulative sum itself, so the cdf never
        # decreases at a gap's right end by a rounding error.
        out[inside] = before + (self._cumulative[gap] - before) * fraction
        out[np.isnan(q)] = np.nan
        return out


class WindowedMechanism(Mechanism[Release]):
    """A mechanism whose release reads only a window of order statistics (a rank EM whose
    :class:`PiecewiseUniformRelease` materialises only the gaps of nonzero weight): it is
    built from the bounded data's :class:`mechanisms.core.selection.OrderStatistics` by
    :meth:`_release_window`, so ``release`` selects the window instead of sorting.

    ``_release(sorted_x)`` stays the hook a subclass may replace: one that does gets the
    fully sorted data, as :class:`mechanisms.core.interface.Mechanism` promises.
    """

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return self._release_window(OrderStatistics.of_sorted(sorted_x), lower, upper)

    def _release_from(self, order: OrderStatistics, lower: float, upper: float) -> Release:
        if type(self)._release is not WindowedMechanism._release:
            return super()._release_from(order, lower, upper)
        return self._release_window(order, lower, upper)

    @abstractmethod
    def _release_window(self, order: OrderStatistics, lower: float, upper: float) -> Release:
        """Build the release from the order statistics of data inside ``[lower, upper]``."""
