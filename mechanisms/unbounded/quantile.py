"""Durfee's unbounded quantile estimator: AboveThreshold over a geometric grid.

Source: Durfee, "Unbounded Differentially Private Quantile and Maximum Estimation"
(NeurIPS 2023).  With a lower bound ``a`` the candidates are ``c_i = a - 1 + β^i``
(:mod:`mechanisms.unbounded.grid`); query ``i`` is ``q_i = #{x in S : x < c_i}`` against the
threshold ``T = α·n``, and AboveThreshold (:mod:`mechanisms.unbounded.above_threshold`:
``τ = T + Lap(b)``, ``ν_i ~ Lap(b)``) releases the first candidate with ``q_i + ν_i >= τ``
(the terminal value ``b``, or the largest float, if none: a public cap).

Without a lower bound (``a = -inf``), two invocations: the first, at ``ε/2``, runs the same
estimator at level 1 (the maximum) on the negated data with the grid starting at ``-b`` (0
if ``b = inf``), and its output, negated, is a private lower bound ``â`` (about the
minimum, a few grid steps below); the second, at ``ε/2``, is the estimator above with
``a = â`` (points below ``â`` count below every candidate).  Equal halves: the first only
has to land below the bulk of the data, which its geometric grid does at any ε, and an
equal split is what two invocations of one mechanism cost by basic composition (Dwork &
Roth, "The Algorithmic Foundations of Differential Privacy", Theorem 3.16): ε-DP overall.

Privacy of one invocation (derived here; the shifting argument of Lyu, Su & Li,
"Understanding the Sparse Vector Technique for Differential Privacy", VLDB 2017).  For
datasets ``S, S'`` with queries ``q_i, q'_i`` and thresholds ``T, T'``, substitute
``τ = τ' - s`` in ``P_S(k) = ∫ φ(τ - T) Π_{i<k} F(τ - q_i) F̄(τ - q_k) dτ``: if
``s >= max_{i<k}(q'_i - q_i)`` each ``F`` factor is at most its ``S'`` value, the density
costs ``e^{|s - (T' - T)|/b}`` and ``F̄`` (log-Lipschitz) ``e^{max(0, s - (q'_k - q_k))/b}``:

    P_S(k) <= exp(|s - (T' - T)|/b + max(0, s - (q'_k - q_k))/b) · P_{S'}(k).      (*)

(The terminal index has no ``F̄`` factor.)  The differences ``δ_i = q'_i - q_i`` are:

* add one point ``x`` (``S' = S ∪ {x}``): ``δ_i = 1[c_i > x]`` (0 then 1 as ``i`` grows) and
  ``T' - T = α``.  From ``S`` to ``S'``, ``s = max_{i<k} δ_i`` costs at most
  ``max(α, 1 - α)/b``; from ``S'`` to ``S`` (``δ → -δ``, ``α → -α``), ``s = 0`` costs at most
  ``(α + 1)/b`` and ``s = -α`` where every ``δ_i = 1`` costs ``(1 - α)/b``.  So
  ``b = (1 + α)/ε`` gives ε-DP for add/remove neighbours;
* replace one point (``n`` and ``T`` fixed): all ``δ_i`` in ``{0, 1}`` or all in ``{0, -1}``;
  (*) with ``s`` the largest ``δ_i`` before ``k`` costs at most ``2/b``: ``b = 2/ε`` gives
  ε-DP for replace-one neighbours.

The count has sensitivity 1; the threshold's ``α`` per added point is what makes the
add/remove scale ``(1 + α)/ε`` instead of the ``1/ε``-per-noise of monotone queries
(Lyu, Su & Li, Theorem 4 with ``c = 1``: ``2/ε``, which the replace-one case matches).
The first invocation without a lower bound has level 1: ``b = 2/(ε/2)`` for both
neighbourings.  The exact privacy audit (``tests/mechanisms/unbounded``) checks the pmf of
neighbouring datasets against ``e^ε``.

True value: the α-quantile ``x_(ceil(α·n))`` of the bounded data
(:func:`mechanisms.core.quantiles.quantile_value`), ``a`` for the empty dataset.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.core.guarantee import Neighbouring, check_neighbours
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.quantiles import check_alpha, quantile_value
from mechanisms.core.registration import register
from mechanisms.core.validation import check_real, check_rng, check_size
from mechanisms.unbounded.above_threshold import AboveThreshold
from mechanisms.unbounded.grid import GeometricGrid

FIRST_SHARE = 0.5
"""The share of ε of the first invocation without a lower bound (module docstring)."""
TAIL = 1e-17
CDF_ERROR = 1e-9
"""An absolute error bound of the releases' cdfs: the quadrature agrees with SciPy's adaptive
``quad`` to a relative 1e-9 (``tests/mechanisms/unbounded/test_above_threshold.py``), and a
cdf near 1 computed as ``exp`` of a log-integral carries that relative error as an absolute
one.  The exact privacy audit treats a cell probability below it as noise: in a cell of
probability 1e-14 (the terminal value b, where a cdf that rounds to 1.0 gives 0 for one
dataset and 1e-14 for its neighbour) the float error would otherwise read as a privacy loss."""
MAX_COMPONENTS = 4096
"""The most first-invocation candidates whose mixture :meth:`TwoStepRelease.cdf` sums: past
it the cdf raises ``NotImplementedError`` (the release is audited from samples).  The
first invocation targets the maximum of the negated data, whose count never exceeds its
threshold ``n``: once the noisy threshold is ``t`` above ``n``, each candidate is passed with
probability about ``1 - e^{-t/b}/2``, so the stopping index has a tail like ``1/k`` and, at
β = 1.001, its law can spread over ~10^5 candidates (seconds to minutes of quadrature)."""
"""Mass of the first invocation's law left out of the two-step cdf, on each side."""


def count_runs(sorted_x: np.ndarray, grid: GeometricGrid) -> tuple[np.ndarray, np.ndarray]:
    """The runs (starts, counts) of ``q_i = #{x < c_i}`` on the grid's candidates."""
    first = grid.first_index(sorted_x, strict=True)  # x counts at every i >= first
    index, size = np.unique(first, return_counts=True)
    keep = index < grid.end
    starts = np.concatenate([[0], index[keep]])
    counts = np.concatenate([[0], np.cumsum(size)[keep]])
    if starts.size > 1 and starts[1] == 0:
        starts, counts = starts[1:], counts[1:]
    return starts.astype(np.int64), counts.astype(np.float64)


def grid_law(
    sorted_x: np.ndarray, grid: GeometricGrid, level: float, scale: float
) -> AboveThreshold:
    """AboveThreshold on the grid's counts of ``sorted_x`` against ``level·n``."""
    starts, counts = count_runs(sorted_x, grid)
    return AboveThreshold(starts, counts, grid.end, level * sorted_x.size, scale)


class GridRelease(Release):
    """One invocation: the candidate AboveThreshold stops at, exact pmf and cdf."""

    cdf_error: float = CDF_ERROR
    """An absolute error bound of :meth:`cdf` (quadrature, module docstring of
    :mod:`mechanisms.unbounded.above_threshold`), read by the exact privacy audit."""

    def __init__(
        self, sorted_x: np.ndarray, lower: float, upper: float, alpha: float, grid: GeometricGrid,
        scale: float,
    ) -> None:  # fmt: skip
        self.lower, self.upper, self.n = float(lower), float(upper), int(sorted_x.size)
        self.true_value = quantile_value(sorted_x, alpha, lower)
        self.grid = grid
        self.law = grid_law(sorted_x, grid, alpha, scale)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        return self.grid.values(self.law.sample(size, rng))

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        q = np.asarray(x, dtype=np.float64)
        k = self.grid.last_at_most(q)
        out = np.where(k >= self.grid.end, 1.0, 0.0)
        inner = (k >= 0) & (k < self.grid.end)
        if inner.any():
            unique, back = np.unique(k[inner], return_inverse=True)
            out[inner] = self.law.cdf(unique)[back]
        return np.where(np.isnan(q), np.nan, out)

    def log_pmf(self, y: np.ndarray | float) -> np.ndarray:
        """``log P(M = y)``: the exact stopping probability of the one candidate at ``y``
        (``-inf`` off the grid); where several candidates round to one float, the cdf's
        jump."""
        q = np.asarray(y, dtype=np.float64)
        first = self.grid.first_index(q, strict=False)
        last = self.grid.last_at_most(q)
        on_grid = self.grid.values(first) == q
        out = np.full(q.shape, -np.inf)
        single = on_grid & (first == last)
        out[single] = self.law.log_pmf(first[single])
        merged = on_grid & (last > first)
        if merged.any():
            jump = self.cdf(q[merged]) - self.cdf(np.nextafter(q[merged], -np.inf))
            with np.errstate(divide="ignore"):
                out[merged] = np.log(jump)
        return np.where(np.isnan(q), np.nan, out)


def smallest(predicate: object, end: int) -> int:
    """The smallest ``g`` in ``[0, end]`` with ``predicate(g)`` (monotone; ``end`` if none)."""
    low, high = 0, end
    while low < high:
        middle = (low + high) // 2
        if predicate(middle):  # type: ignore[operator]
            high = middle
        else:
            low = middle + 1
    return low


class TwoStepRelease(Release):
    """No lower bound: a private lower bound from the negated data, then :class:`GridRelease`
    (module docstring).  The law is the mixture over the first invocation's output; its cdf
    sums the components of all but ``2·TAIL`` of the first law's mass."""

    cdf_error: float = CDF_ERROR
    """As :attr:`GridRelease.cdf_error` (a mixture of such cdfs)."""

    def __init__(
        self, sorted_x: np.ndarray, upper: float, alpha: float, beta: float,
        scales: tuple[float, float],
    ) -> None:  # fmt: skip
        self.lower, self.upper, self.n = -math.inf, float(upper), int(sorted_x.size)
        self.true_value = quantile_value(sorted_x, alpha, self.lower)
        self._x, self._alpha, self._beta, self._scale = sorted_x, alpha, beta, scales[1]
        start = -upper if math.isfinite(upper) else 0.0
        self.first_grid = GeometricGrid(start, math.inf, beta)
        self.first = grid_law(-sorted_x[::-1], self.first_grid, 1.0, scales[0])
        self._weights: tuple[np.ndarray, np.ndarray] | None = None
        self._second: dict[int, GridRelease] = {}

    def second(self, g: int) -> GridRelease:
        """The second invocation given that the first stopped at index ``g`` (kept)."""
        if g not in self._second:
            lower = -float(self.first_grid.values(np.array([g]))[0])
            grid = GeometricGrid(lower, self.upper, self._beta)
            self._second[g] = GridRelease(
                self._x, lower, self.upper, self._alpha, grid, self._scale
            )
        return self._second[g]

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        first = self.first.sample(size, rng)
        out = np.empty(size)
        for g in np.unique(first):
            chosen = first == g
            out[chosen] = self.second(int(g)).sample(int(chosen.sum()), rng)
        return out

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """The first invocation's indices holding all but ``2·TAIL`` of its mass, and their
        probabilities."""
        if self._weights is None:
            law, end = self.first, self.first.end
            low = smallest(lambda g: law.cdf(np.array([g]))[0] > TAIL, end)
            high = smallest(lambda g: law.log_survival(np.array([g + 1]))[0] < math.log(TAIL), end)
            if high - low >= MAX_COMPONENTS:
                raise NotImplementedError(
                    f"the first invocation's law spreads over {high - low + 1} candidates "
                    f"(more than {MAX_COMPONENTS}): its mixture's cdf is not computed; audit "
                    "this release from samples"
                )
            index = np.arange(low, high + 1)
            self._weights = (index, np.exp(law.log_pmf(index)))
        return self._weights

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        q = np.asarray(x, dtype=np.float64)
        out = np.zeros(q.shape)
        for g, weight in zip(*self.weights(), strict=True):
            out = out + weight * self.second(int(g)).cdf(q)
        return np.minimum(out, 1.0)


@register
class UnboundedQuantile(Mechanism[Release]):
    """Durfee's AboveThreshold quantile over ``c_i = a - 1 + β^i``; ε-DP (module docstring).

    Options: ``alpha`` (the quantile, in (0, 1)), ``beta`` (the grid ratio, > 1, default
    1.001: a relative resolution of 0.1%), ``neighbours`` (``"add_remove"``: noise scale
    ``(1 + α)/ε``; ``"replace_one"``: ``2/ε``).  Bounds may be infinite: ``(a, inf)`` runs
    one invocation from ``a``, ``(-inf, b)`` and ``(-inf, inf)`` two.
    """

    name = "unbounded_quantile"
    display_name = "Unbounded quantile (AboveThreshold)"
    figure = FigureStyle("#8c564b", "h", 30)
    statistics = frozenset({"median", "quantile"})
    accepts_infinite_bounds = True

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alpha: float = 0.5,
        beta: float = 1.001,
        neighbours: str = "add_remove",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.alpha = check_alpha(alpha)
        self.beta = check_real(beta, "beta", minimum=1.0)
        self.neighbouring = check_neighbours(neighbours)

    def source(self) -> str:
        return (
            "AboveThreshold over a geometric grid (Durfee, 'Unbounded Differentially Private "
            "Quantile and Maximum Estimation', NeurIPS 2023) with Lap(b) threshold and query "
            f"noise, b = {self.scale_factor(self.alpha):g}/epsilon per invocation (shifting "
            "argument of Lyu, Su & Li, 'Understanding the Sparse Vector Technique for "
            "Differential Privacy'); without a lower bound two invocations at epsilon/2 each, "
            "basic composition"
        )

    def scale_factor(self, level: float) -> float:
        """``b·ε`` of one invocation at ``level``: ``1 + level`` (add/remove) or 2."""
        return 2.0 if self.neighbouring is Neighbouring.REPLACE_ONE else 1.0 + level

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        if math.isfinite(lower):
            grid = GeometricGrid(lower, upper, self.beta)
            scale = self.scale_factor(self.alpha) / self.epsilon
            return GridRelease(sorted_x, lower, upper, self.alpha, grid, scale)
        first = FIRST_SHARE * self.epsilon
        scales = (
            self.scale_factor(1.0) / first,
            self.scale_factor(self.alpha) / (self.epsilon - first),
        )
        return TwoStepRelease(sorted_x, upper, self.alpha, self.beta, scales)

    def __repr__(self) -> str:
        return (
            f"UnboundedQuantile(epsilon={self.epsilon:g}, alpha={self.alpha:g}, "
            f"beta={self.beta:g}, neighbours={self.neighbouring.value!r})"
        )
