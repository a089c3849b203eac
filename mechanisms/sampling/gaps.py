"""What a rank EM's release reads of its data: the gaps' end points and log-scores, and the
window of gaps whose weight is not exactly 0 in float64.

Gap ``i`` (``i = 0..n``) of bounded data is ``[x_(i), x_(i+1)]``, with ``x_(0) = a`` and
``x_(n+1) = b`` (:mod:`mechanisms.sampling.piecewise`).  A release reads a few end points near
its mode, the log-scores of gaps at distances ``2**k`` from it (:func:`probe_gaps`), and
from them finds the window (:func:`window`); then it reads the end points and log-scores
of the window's gaps.  Two sources answer these reads with the same numbers, bit for bit:

* :class:`SortedGaps`, for data of fewer than :data:`mechanisms.core.selection.MIN_SAMPLED`
  points, which are sorted whole: every end point in one array ``[a, x_(1), ..., x_(n),
  b]`` and every log-score from one call of the score function on ``0..n``, so that each
  read is an index or a slice and a small release is a handful of numpy operations on
  whole arrays;
* :class:`SelectedGaps`, for larger data: end points read through
  :class:`mechanisms.core.selection.OrderStatistics` (which sorts only the ranks read) and
  log-scores computed for the gaps asked for only, so the cost after selection does not
  grow with ``n``.

Both give the same numbers because a score function maps gap indices to scores
element by element (:data:`LogScore`): the score of gap ``i`` read off the call on
``0..n`` is the float that a call on any array holding ``i`` returns.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from mechanisms.core.selection import MIN_SAMPLED, OrderStatistics

UNDERFLOW_MARGIN = -math.log(np.finfo(np.float64).tiny)
"""708.4: a gap whose weight is below ``e^-708.4 = 2**-1022`` (the smallest normal
float64) times the largest gets weight 0 in the sampler and the cdf
(:mod:`mechanisms.sampling.piecewise`)."""

GUESS_SPACING = math.log(2.0**20)
"""``ln 2**20``: the gaps at the mode may be up to ``2**20`` times narrower than the average
spacing ``(b − a)/(n + 1)`` before the window selected in advance is too small
(:func:`likely_positions`)."""

SIZES_KEPT = 1
"""How many sizes a mechanism keeps the utilities of every gap for (what the ``all_scores`` of
a small release, :class:`SortedGaps`, are made of): a work unit of a sweep releases one
dataset at every ε, and the arrays of more sizes (``8·n`` bytes each, for ``n`` below
:data:`mechanisms.core.selection.MIN_SAMPLED`) would outlive the releases."""

LogScore = Callable[[np.ndarray], np.ndarray]
"""Maps an int64 array of gap indices to their float64 log-scores, element by element (the
score of a gap does not depend on the other indices in the array)."""

RelativeScore = Callable[[np.ndarray, int], np.ndarray]
"""Maps an int64 array of gap indices and a reference gap to their log-scores shifted by a
constant ``c`` near the reference's score (``log_score(gaps) − c``, typically
``c = log_score(reference)``), computed from the exact utilities so that each value is
correct to a few ulps *of itself*, not of the (possibly huge) scores: what
:class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease` adds to the log lengths when
the scores would swamp them."""


@lru_cache(maxsize=1024)
def probe_gaps(n: int, mode: int) -> tuple[np.ndarray, int]:
    """The gaps ``mode - 2**k`` (``>= 0``) then ``mode + 2**k`` (``<= n``), ``k = 0, 1, ...``
    (read-only int64), and how many lie left of the mode: where a release probes the scores
    for its window's ends (:class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease`).  Cached:
    they depend on ``(n, mode)`` only."""
    steps = [1 << k for k in range(max(n, 1).bit_length() + 1)]
    left = [mode - step for step in steps if step <= mode]
    right = [mode + step for step in steps if step <= n - mode]
    probes = np.array(left + right, dtype=np.int64)
    probes.flags.writeable = False
    return probes, len(left)


def _shape_checked(scores: np.ndarray, size: int) -> np.ndarray:
    """``scores`` as float64, checked to hold ``size`` values (finiteness: the caller's)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (size,):
        raise ValueError("log_score must return one finite value per gap index")
    return scores


class Gaps(ABC):
    """End points ``x_(j)`` (``0 <= j <= n + 1``) and log-scores of the gaps of sorted data."""

    n: int

    @abstractmethod
    def edge(self, j: int) -> float:
        """``x_(j)`` for ``0 <= j <= n + 1``."""

    @abstractmethod
    def run(self, j: int) -> tuple[int, int]:
        """``numpy.searchsorted`` of ``x_(j)`` on ``x_(1), ..., x_(n)``, sides ``"left"`` and
        ``"right"`` (``0 <= j <= n``): the gaps on either side of the points tied with it."""

    @abstractmethod
    def edges(self, start: int, stop: int) -> np.ndarray:
        """``x_(j)`` for ``start <= j < stop`` (read-only use: it may be a view)."""

    @abstractmethod
    def scores(self, gaps: list[int]) -> list[float]:
        """The log-scores of a few gaps, unchecked."""

    @abstractmethod
    def probe_scores(self, gaps: np.ndarray) -> np.ndarray:
        """The log-scores of the gaps of the int64 array ``gaps``, unchecked."""

    @abstractmethod
    def window_scores(self, start: int, stop: int) -> np.ndarray:
        """The log-scores of gaps ``start <= i < stop`` (read-only use), one per gap
        (not checked to be finite)."""


class SortedGaps(Gaps):
    """Every end point in one array and every log-score from one call (module docstring)."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        log_score: LogScore,
        all_scores: np.ndarray | None = None,
    ) -> None:
        n = self.n = sorted_x.size
        self._edges = edges = np.empty(n + 2)
        edges[0], edges[1:-1], edges[-1] = lower, sorted_x, upper
        if all_scores is None:
            all_scores = all_gap_scores(n, log_score)
        self._scores = all_scores

    def edge(self, j: int) -> float:
        return self._edges.item(j)

    def run(self, j: int) -> tuple[int, int]:
        # Without ties at x_(j) (compared with its neighbours), no search is needed.
        edges, value = self._edges, self._edges.item(j)
        if j <= 1 or edges.item(j - 1) < value:
            below = 0 if j == 0 else j - 1  # no point is below a = x_(0) or x_(1)
        else:
            below = int(edges[1:-1].searchsorted(value, "left"))
        if j == self.n or edges.item(j + 1) > value:
            not_above = j
        else:
            not_above = int(edges[1:-1].searchsorted(value, "right"))
        return below, not_above

    def edges(self, start: int, stop: int) -> np.ndarray:
        return self._edges[start:stop]

    def scores(self, gaps: list[int]) -> list[float]:
        return [self._scores.item(g) for g in gaps]

    def probe_scores(self, gaps: np.ndarray) -> np.ndarray:
        return self._scores[gaps]

    def window_scores(self, start: int, stop: int) -> np.ndarray:
        return self._scores[start:stop]


class SelectedGaps(Gaps):
    """End points read through the order statistics, scores computed per request."""

    def __init__(
        self, order: OrderStatistics, lower: float, upper: float, log_score: LogScore
    ) -> None:
        self.n = order.size
        self._x = order
        self._lower, self._upper = float(lower), float(upper)
        self._log_score = log_score

    def edge(self, j: int) -> float:
        if j == 0:
            return self._lower
        return self._upper if j == self.n + 1 else float(self._x[j - 1])

    def run(self, j: int) -> tuple[int, int]:
        value = self.edge(j)
        return self._x.searchsorted(value, "left"), self._x.searchsorted(value, "right")

    def edges(self, start: int, stop: int) -> np.ndarray:
        out = np.empty(stop - start, dtype=np.float64)
        first, last = max(start, 1), min(stop, self.n + 1)
        if last > first:
            out[first - start : last - start] = self._x[first - 1 : last - 1]
        if start == 0:
            out[0] = self._lower
        if stop == self.n + 2:
            out[-1] = self._upper
        return out

    def scores(self, gaps: list[int]) -> list[float]:
        return self.probe_scores(np.asarray(gaps, dtype=np.int64)).tolist()

    def probe_scores(self, gaps: np.ndarray) -> np.ndarray:
        return np.asarray(self._log_score(gaps.copy()), dtype=np.float64)  # probes are cached

    def window_scores(self, start: int, stop: int) -> np.ndarray:
        return _shape_checked(self._log_score(np.arange(start, stop, dtype=np.int64)), stop - start)


def gaps_of(
    order: OrderStatistics,
    lower: float,
    upper: float,
    log_score: LogScore,
    all_scores: np.ndarray | None = None,
) -> Gaps:
    """The gaps of ``order``'s data, to be read after :meth:`OrderStatistics.select`: from one
    sorted array below :data:`mechanisms.core.selection.MIN_SAMPLED` points (the data are sorted
    whole there; ``all_scores``, if given, is :func:`all_gap_scores` of ``log_score``), through
    the order statistics above."""
    if order.size < MIN_SAMPLED:
        return SortedGaps(order.sorted(), lower, upper, log_score, all_scores)
    return SelectedGaps(order, lower, upper, log_score)


def all_gap_scores(n: int, log_score: LogScore) -> np.ndarray:
    """``log_score`` of every gap ``0..n`` (float64, checked to hold one value per gap, not to
    be finite): what :class:`SortedGaps` reads.  They depend on ``n`` and the mechanism's
    parameters only, so a mechanism may compute them once for all its releases of one size."""
    return _shape_checked(log_score(np.arange(n + 1, dtype=np.int64)), n + 1)


# ------------------------------------------------------------------- the window


def window(gaps: Gaps, mode: int, lower: float, upper: float) -> tuple[int, int]:
    """Gaps ``start <= i < stop`` outside of which every float64 weight is exactly 0: those
    whose score is at least ``P − 708.4 − log(b − a)``, with ``P`` the largest log mass of the
    positive-length gaps nearest ``mode`` (:mod:`mechanisms.sampling.piecewise`, module
    docstring)."""
    # Positive-length gaps nearest the mode: the gap itself, or the two gaps
    # around the run of points tied at x_(mode) (one exists since a < b).
    below, not_above = gaps.run(mode)  # below <= mode <= not_above
    near, logs, previous = [], [], -1
    for g in (below, mode, not_above):  # in increasing order
        if previous < g <= gaps.n:  # once each
            previous = g
            length = gaps.edge(g + 1) - gaps.edge(g)
            if length > 0:
                near.append(g)
                logs.append(math.log(length))
    floor = max([score + log for score, log in zip(gaps.scores(near), logs, strict=True)])
    return _probe(gaps.n, mode, floor, upper - lower, gaps.probe_scores)


def likely_positions(
    n: int, mode: int, lower: float, upper: float, log_score: LogScore
) -> tuple[int, int]:
    """Array positions ``[start, stop)`` that :func:`window` most likely reads: its window
    for a largest mass ``2**20`` times below that of a gap of length ``(b − a)/(n + 1)`` at
    the mode (:data:`GUESS_SPACING`; reads no data).  Data more concentrated than that only
    cost another selection pass (:class:`mechanisms.core.selection.OrderStatistics`)."""
    spacing = math.log((upper - lower) / (n + 1)) - GUESS_SPACING
    floor = float(log_score(np.array([mode], dtype=np.int64))[0]) + spacing
    start, stop = _probe(n, mode, floor, upper - lower, lambda probes: log_score(probes.copy()))
    return start - 1, stop + 1  # gap i is [x_(i), x_(i+1)]: positions i - 1 and i


def _probe(
    n: int, mode: int, floor: float, width: float, scores_of: Callable[[np.ndarray], np.ndarray]
) -> tuple[int, int]:
    """The window of the gaps whose score is at least ``floor − 708.4 − log(width)``.

    Scores are monotone on each side of the mode: probe at distances 2**k
    (:func:`probe_gaps`, their scores by ``scores_of``) and stop at the first probe below
    the cut (so the window is at most twice the exact one; the extra gaps have weight 0).
    Beyond ``2**53`` (huge ε) the floats of the scores and of the cut are spaced by more
    than 1, so the cut is lowered by four of its ulps: no gap whose exact score reaches
    the exact cut is left out by rounding (the release shifts the window's scores exactly,
    :mod:`mechanisms.sampling.piecewise`).  Reads no data.
    """
    probes, left = probe_gaps(n, mode)
    cut = floor - UNDERFLOW_MARGIN - math.log(width)
    if abs(cut) > 2.0**53:
        cut -= 4 * math.ulp(cut)
    scores = scores_of(probes).tolist()
    start, stop = 0, n + 1
    for i in range(left):  # the first probe below the cut on either side (never a NaN)
        if scores[i] < cut:
            start = int(probes[i]) + 1
            break
    for i in range(left, len(scores)):
        if scores[i] < cut:
            stop = int(probes[i])
            break
    return start, stop
