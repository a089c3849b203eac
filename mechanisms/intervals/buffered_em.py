r"""The buffered rank exponential mechanism: a private order statistic whose rank error has a
data-independent bound, and the coverage of the interval built from two of them.

Why a buffer (the base-measure subtlety)
----------------------------------------
G. Brown's lecture notes ("Exponential Mechanism and Inverse Sensitivity", Claim
1.1) bound the exponential mechanism's (EM's) utility loss by
``(2Δ/ε)(t + ln|Y|)`` with probability ``1 − e^{−t}``, for a *finite* output set
``Y``.  For outputs in ``[a, b]`` with the Lebesgue base measure the same ratio
argument (the notes' attempt 3) divides by the measure of a good set, which for
the rank utility of the quantile EM is a gap between data points: arbitrarily
small when the data are concentrated.  So the plain quantile EM has no rank-error
bound that does not look at the data (n points within ``η`` of each other put
mass of order ``(b − a)/η · e^{−κ·rank}`` far from the target), and no widening of
its target rank computed from public inputs can guarantee coverage.  The fix,
used by Drechsler, Globus-Harris, McMillan, Sarathy & Smith ("Nonparametric
differentially private confidence intervals for the median"), is a public
buffer ``θ > 0`` (their "granularity").

The mechanism
-------------
Sorted bounded data ``x_(1) <= ... <= x_(n)`` in ``[a, b]``, ``R = b − a``,
``θ = granularity·R``, target rank ``k ∈ {0, ..., n}``.  On ``[a − θ, b + θ]`` the EM
with the Lebesgue base measure and utility

    u_k(y) = −dist(k, [A(y), B(y)]),   A(y) = #{i : x_i < y − θ},  B(y) = #{i : x_i < y + θ},

density ``∝ exp(ε_e·u_k(y)/2)``.

*Privacy*: replacing one point moves ``A`` and ``B`` by at most 1 each, hence
``u_k`` by at most 1 (``Δu = 1``), and the EM is ε_e-DP for replace-one
neighbours (McSherry & Talwar, "Mechanism design via differential privacy"; ``k``
depends only on the public ``n``).

*Sampling*: with ``z_i = x_(i) − θ`` for ``i <= k`` and ``x_(i) + θ`` for ``i > k``
(Drechsler et al.'s "move the points ``θ`` away from the quantile"),
``#{z_i < y} = min(k, B(y)) + max(0, A(y) − k)``, and in each of the three cases
``B <= k``, ``A >= k``, ``A < k < B`` one checks ``|#{z_i < y} − k| = dist(k, [A, B])``.
So this EM is the quantile EM of "The Exponential Mechanism for Medians" (eq. 2.2,
``α·N = k``, replace-one ``Δu = 1``) run on ``z`` over ``[a − θ, b + θ]``, sampled
exactly by :class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease` with gap scores
``−κ|i − k|``, ``κ = ε_e/2``.  (``u_k(y)`` is also at least the quantile EM's
utility at every ``y'`` within ``θ`` of ``y``, the θ-approximation of the inverse
sensitivity utility of Asi & Duchi, "Instance-optimality in differential privacy
via approximate inverse sensitivity mechanisms".)

The data-independent bound
--------------------------
``u_k = 0`` on ``Z = (x_(k) − θ, x_(k+1) + θ]`` (``[a − θ, x_(1) + θ]`` for
``k = 0``, ``(x_(n) − θ, b + θ]`` for ``k = n``), so ``λ(Z) >= 2θ`` whatever the
data: the buffer is why the output range is ``[a − θ, b + θ]`` and not ``[a, b]``.
For ``s > 0`` the set ``{u_k <= −s}`` misses ``Z``, so

    P(u_k(Y) <= −s) <= (R + 2θ − λ(Z))/λ(Z) · e^{−κs} <= ρ·e^{−κs},

with ``ρ = R/(2θ) = 1/(2·granularity)``.

Coverage
--------
Lower end ``L = clip(Y − θ, a, b)`` from the EM at rank ``k``, upper end
``U = clip(Y' + θ, a, b)`` from an independent EM at rank ``n − k``.  Let ``m`` in
``[a, b]`` be a median of the data's distribution, ``C = #{x_i <= m}``,
``D = #{x_i >= m}``; both are stochastically at least ``B ~ Binomial(n, 1/2)``
(:mod:`mechanisms.intervals.nonprivate`).  If ``L > m`` then ``Y − θ > m``, every
``x_i <= m`` counts in ``A(Y)``, so ``A(Y) >= C`` and ``u_k(Y) <= −(C − k)``.  If
``U < m`` then ``B'(Y') <= #{x_i < m} = n − D`` and ``u_{n−k}(Y') <= −(D − k)``.
With ``g_k(c) = 1`` for ``c <= k`` and ``min(1, ρe^{−κ(c − k)})`` for ``c > k``, a
non-increasing function of ``c``:

    P(L > m) <= E[g_k(C)] <= E[g_k(B)] = F(k)
             = P(B <= k) + Σ_{c > k} P(B = c)·min(1, ρe^{−κ(c − k)}),

the same for ``P(U < m)``, and the (sorted) interval covers ``m`` with probability
at least ``1 − 2F(k)`` (:func:`failure_bound`).  Privacy of the interval: each end
is ε/2-DP, so the pair is ε-DP by basic composition; shifting, clipping and
sorting are post-processing.  A method picks ``k`` from public ``(n, ε, α,
granularity)`` so that ``F(k) <= α/2``; when no ``k >= 0`` does, it answers
``[a, b]``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from functools import lru_cache

import numpy as np
from scipy import stats

from mechanisms.core.validation import check_open_unit
from mechanisms.intervals.base import (
    IndependentEndpoints,
    IntervalMechanism,
    IntervalRelease,
    ShiftedRelease,
    whole_range,
)
from mechanisms.sampling.piecewise import PiecewiseUniformRelease, score_epsilon

DEFAULT_GRANULARITY = 1e-3
"""Default buffer ``θ/(b − a)``: ``ρ = 500``, so ``ln ρ ≈ 6.2`` ranks per unit of κ."""
TAIL_EXPONENT = 60.0
""":func:`failure_bound` sums the terms with ``κ(c − k)`` up to this beyond where the
weights drop below 1 and bounds the rest by ``e^{−60}``-scale terms (added, not dropped)."""


def buffered_em(
    sorted_x: np.ndarray, lower: float, upper: float, *, rank: int, epsilon: float, buffer: float
) -> PiecewiseUniformRelease:
    """The buffered rank EM (module docstring) at target ``rank``, ε_e = ``epsilon``.

    Outputs lie in ``[lower − buffer, upper + buffer]``; ``true_value`` is ``x_(rank)``
    (``lower`` for ``rank = 0``).
    """
    n = sorted_x.size
    shifted = np.concatenate((sorted_x[:rank] - buffer, sorted_x[rank:] + buffer))
    kappa = score_epsilon(epsilon, n) / 2.0

    def log_score(gaps: np.ndarray) -> np.ndarray:
        score = np.abs(np.subtract(gaps, rank, dtype=np.float64))
        score *= -kappa
        return score

    def relative_score(gaps: np.ndarray, reference: int) -> np.ndarray:
        # integer distances: the change is exact (huge ε)
        score = np.abs(np.subtract(gaps, rank, dtype=np.float64))
        score -= abs(reference - rank)
        score *= -kappa
        return score

    return PiecewiseUniformRelease(
        shifted,
        lower - buffer,
        upper + buffer,
        log_score,
        mode=rank,
        true_value=float(lower) if rank == 0 else float(sorted_x[rank - 1]),
        relative_score=relative_score,
    )


@lru_cache(maxsize=4096)
def failure_bound(n: int, rank: int, *, kappa: float, log_rho: float) -> float:
    """``F(k) = P(B <= k) + Σ_{c > k} P(B = c)·min(1, ρe^{−κ(c − k)})``, ``B ~ Bin(n, 1/2)``.

    Cached: every release of a method at the same ``(n, ε, α)`` reports the same bound.

    The bound on ``P(L > m)`` of the module docstring.  The weights are 1 up to
    ``d = c − k <= ln ρ/κ``; beyond, the terms are summed while ``κ·d`` grows by
    :data:`TAIL_EXPONENT` and the rest is bounded by its first weight (which
    exceeds the whole remaining sum), so the value never underestimates ``F``.
    """
    full = max(0.0, log_rho / kappa)  # weight 1 for c − k <= full (none if ρ < 1)
    last_full = n if full >= n - rank else rank + math.floor(full)
    total = float(stats.binom.cdf(last_full, n, 0.5))
    if last_full >= n:
        return min(1.0, total)
    span = n if TAIL_EXPONENT / kappa >= n else math.ceil(TAIL_EXPONENT / kappa)
    last = min(n, last_full + span)
    counts = np.arange(last_full + 1, last + 1)
    with np.errstate(over="ignore"):  # κ·d beyond float64 (huge ε): weight e^{-inf} = 0
        weights = np.exp(log_rho - kappa * (counts - rank))
    total += float(np.dot(stats.binom.pmf(counts, n, 0.5), weights))
    if last < n:
        total += math.exp(log_rho - kappa * (last + 1 - rank))
    return min(1.0, total)


class BufferedEMInterval(IntervalMechanism):
    """An interval from two buffered rank EMs at ranks ``k`` and ``n − k`` (module docstring).

    ε-DP for replace-one neighbours (ε/2 per end).  Options: ``granularity`` (the
    buffer ``θ`` as a fraction of ``b − a``, in (0, 1); default
    :data:`DEFAULT_GRANULARITY`).  Subclasses choose the rank: :meth:`lower_rank`
    returns a ``k`` with ``F(k) <= α/2``, or ``None`` (the answer is then ``[a, b]``).
    """

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        alpha: float = 0.05,
        granularity: float = DEFAULT_GRANULARITY,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, alpha=alpha)
        self.granularity = check_open_unit(granularity, "granularity")
        self.endpoint_epsilon = self.epsilon / 2.0
        if self.kappa == 0.0:
            raise ValueError(f"epsilon: epsilon/4 underflows float64, got epsilon={epsilon!r}")

    @property
    def kappa(self) -> float:
        """``κ = ε_e/2``: the log-density drop per rank of each end's EM (``Δu = 1``)."""
        return self.endpoint_epsilon / 2.0

    @property
    def log_rho(self) -> float:
        """``ln ρ = ln(R/(2θ)) = −ln(2·granularity)``."""
        return -math.log(2.0 * self.granularity)

    @abstractmethod
    def lower_rank(self, n: int) -> int | None:
        """The target rank ``k`` of the lower end (``n − k`` for the upper end); ``None``
        when no rank reaches ``1 − α`` (the answer is then ``[a, b]``)."""

    def failure_bound(self, n: int, rank: int) -> float:
        """:func:`failure_bound` with this method's κ and ρ."""
        return failure_bound(n, rank, kappa=self.kappa, log_rho=self.log_rho)

    def nominal_coverage(self, n: int) -> float:
        rank = self.lower_rank(n)
        return 1.0 if rank is None else 1.0 - 2.0 * self.failure_bound(n, rank)

    def endpoint_releases(
        self, sorted_x: np.ndarray, lower: float, upper: float, rank: int
    ) -> tuple[PiecewiseUniformRelease, PiecewiseUniformRelease]:
        """The two EMs (before the ``∓θ`` shift and the clip): ranks ``rank`` and ``n − rank``."""
        buffer = self.granularity * (upper - lower)
        if not math.isfinite((upper + buffer) - (lower - buffer)):
            raise ValueError(f"bounds: the buffered range overflows float64, got {(lower, upper)}")
        common = {"epsilon": self.endpoint_epsilon, "buffer": buffer}
        return (
            buffered_em(sorted_x, lower, upper, rank=rank, **common),
            buffered_em(sorted_x, lower, upper, rank=sorted_x.size - rank, **common),
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> IntervalRelease:
        n = sorted_x.size
        rank = self.lower_rank(n)
        if rank is None:
            return whole_range(sorted_x, lower, upper)
        low, high = self.endpoint_releases(sorted_x, lower, upper, rank)
        buffer = self.granularity * (upper - lower)
        ends = (
            ShiftedRelease(low, -buffer, lower, upper),
            ShiftedRelease(high, buffer, lower, upper),
        )
        nominal = 1.0 - 2.0 * self.failure_bound(n, rank)
        return IndependentEndpoints(sorted_x, lower, upper, ends, nominal)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.epsilon:g}, alpha={self.alpha:g}, "
            f"granularity={self.granularity:g})"
        )
