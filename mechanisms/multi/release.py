"""The release of an m-quantiles mechanism, and the levels option shared by all of them.

A :class:`QuantilesRelease` is the output distribution of one m-quantiles mechanism on one
bounded dataset: ``sample(size, rng)`` draws ``size`` rows of m values, each row
non-decreasing and inside ``[lower, upper]``; ``true_value`` holds the m exact quantiles
``x_(ceil(α_j n))`` (:func:`mechanisms.core.quantiles.quantile_value`: α·n in exact
arithmetic, ``lower`` for the empty dataset).  Where a method's output law is known exactly,
``marginal_cdf(j, x)`` is ``P(o_j <= x)`` for coordinate ``j`` (0-based) of the sorted row;
elsewhere it raises ``NotImplementedError``.

Levels (:func:`check_levels`): ``alphas``, strictly increasing in (0, 1), or ``m``, the
evenly spaced levels ``j / (m + 1)``, ``j = 1..m``: those of ``numpy.linspace(0, 1, m + 2)[1:-1]``
(Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021), each the float
nearest the fraction (:func:`evenly_spaced`); neither: the quartiles ``(0.25, 0.5, 0.75)``.

Order statistics of independent coordinates (:func:`order_statistic_cdf`): if a row is the
sorted vector of independent ``Z_1..Z_m`` with cdfs ``F_k``, its coordinate ``j`` (0-based) is
``<= x`` iff at least ``j + 1`` of the ``Z_k`` are, so ``P(o_j <= x)`` is the upper tail of a
Poisson-binomial law with success probabilities ``F_k(x)``, summed exactly by the dynamic
program ``P_k(c) = P_{k-1}(c) (1 - F_k) + P_{k-1}(c - 1) F_k`` (O(m²) per point).
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from mechanisms.core.interface import OutputDistribution
from mechanisms.core.quantiles import quantile_value
from mechanisms.core.sorted_data import SortedData
from mechanisms.core.validation import check_integer, check_open_unit

DEFAULT_LEVELS = (0.25, 0.5, 0.75)
"""The levels when neither ``alphas`` nor ``m`` is given (the registry's default
configuration): the quartiles, i.e. ``m = 3``."""
MAX_LEVELS = 900
"""Most levels any method accepts (the JointExp sampler's exactness bound)."""


def evenly_spaced(m: int) -> tuple[float, ...]:
    """The m levels ``j / (m + 1)``, ``j = 1..m``, of ``linspace(0, 1, m + 2)[1:-1]`` (GJK 2021's
    experiments), each the float nearest the fraction: ``numpy.linspace`` rounds some of them
    off by an ulp (``0.30000000000000004`` for 3/10), which :func:`quantile_rank` would read as
    a level above 3/10 (the 0.3-quantile of 10 points would become ``x_(4)``)."""
    return tuple(j / (m + 1) for j in range(1, m + 1))


def check_levels(alphas: Sequence[float] | np.ndarray | None, m: int | None) -> tuple[float, ...]:
    """The levels as a tuple of floats; ``ValueError`` naming ``alphas`` or ``m`` if invalid.

    ``alphas``: a non-empty sequence of real numbers, strictly increasing, each in (0, 1);
    ``m``: an integer in ``1..MAX_LEVELS`` (:func:`evenly_spaced`); not both.
    """
    if alphas is not None and m is not None:
        raise ValueError("alphas, m: give the levels as alphas or their number m, not both")
    if alphas is None:
        if m is None:
            return DEFAULT_LEVELS
        count = check_integer(m, "m", minimum=1)
        if count > MAX_LEVELS:
            raise ValueError(f"m must be at most {MAX_LEVELS}, got {m!r}")
        return evenly_spaced(count)
    if isinstance(alphas, str | bytes) or not isinstance(alphas, Sequence | np.ndarray):
        raise ValueError(f"alphas must be a sequence of levels in (0, 1), got {alphas!r}")
    if isinstance(alphas, np.ndarray) and alphas.ndim != 1:
        raise ValueError(f"alphas must be one-dimensional, got shape {alphas.shape}")
    levels = tuple(check_open_unit(a, "alphas") for a in list(alphas))
    if not levels:
        raise ValueError("alphas must hold at least one level")
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"alphas: at most {MAX_LEVELS} levels, got {len(levels)}")
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise ValueError(f"alphas must be strictly increasing, got {levels!r}")
    return levels


def true_quantiles(sorted_x: SortedData, alphas: Sequence[float], lower: float) -> np.ndarray:
    """``x_(ceil(α_j n))`` for every level (``lower`` for empty data), as a float array."""
    return np.array([quantile_value(sorted_x, a, lower) for a in alphas], dtype=np.float64)


def order_statistic_cdf(cdfs: np.ndarray, j: int) -> np.ndarray:
    """``P(at least j + 1 of m independent events)``, event k of probability ``cdfs[k]``.

    ``cdfs`` has shape ``(m, K)`` (K points); returns shape ``(K,)``: the cdf of coordinate
    ``j`` of the sorted vector of independent variables with cdfs ``F_k`` (module docstring).
    """
    p = np.clip(np.asarray(cdfs, dtype=np.float64), 0.0, 1.0)
    m = p.shape[0]
    # counts[c] = P(exactly c of the first k events), for c = 0..m
    counts = np.zeros((m + 1, *p.shape[1:]))
    counts[0] = 1.0
    for k in range(m):
        shifted = counts[:-1] * p[k]
        counts *= 1.0 - p[k]
        counts[1:] += shifted
    return np.clip(counts[j + 1 :].sum(axis=0), 0.0, 1.0)


class QuantilesRelease(OutputDistribution):
    """The output distribution of an m-quantiles mechanism on one bounded dataset.

    Attributes: ``lower``/``upper`` (the public bounds), ``n`` (size of the bounded data),
    ``alphas`` (the levels, a tuple) and ``true_value`` (the m exact quantiles, an array).
    """

    alphas: tuple[float, ...]
    true_value: np.ndarray  # type: ignore[assignment]  # m values, not one

    def _set_common(
        self, sorted_x: SortedData, lower: float, upper: float, alphas: Sequence[float]
    ) -> None:
        self.lower, self.upper = float(lower), float(upper)
        self.n = int(sorted_x.size)
        self.alphas = tuple(float(a) for a in alphas)
        self.true_value = true_quantiles(sorted_x, self.alphas, self.lower)

    @property
    def m(self) -> int:
        """The number of levels."""
        return len(self.alphas)

    @abstractmethod
    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent outputs: a float array of shape ``(size, m)``, every row
        non-decreasing, every value in ``[lower, upper]``."""

    def marginal_cdf(self, j: int, x: np.ndarray | float) -> np.ndarray:
        """``P(o_j <= x)`` for coordinate ``j`` (0-based) of a sorted output row, exactly;
        ``NotImplementedError`` where the method's law has no exact form here."""
        raise NotImplementedError(f"{type(self).__name__} has no exact marginal cdf")

    def _check_level(self, j: int) -> int:
        """``j`` as an int in ``0..m-1``; ``ValueError`` naming ``j`` otherwise."""
        index = check_integer(j, "j", minimum=0)
        if index >= self.m:
            raise ValueError(f"j must be a level index in 0..{self.m - 1}, got {j!r}")
        return index
