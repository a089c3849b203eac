"""The exponential mechanism for quantiles with the rank utility.

Source: Harvard Privacy Tools Project, "The Exponential Mechanism for Medians"
(lecture notes, 2020), eq. 2.2.

Utility for the alpha-quantile of a dataset ``x`` of size ``N``, at output ``r``:

    u(x, r) = max(alpha, 1 - alpha)·N - |(1 - alpha)·#(x < r) - alpha·#(x > r)|,        (eq. 2.2)

and the EM outputs ``r ∈ [a, b]`` with density ``∝ exp(ε·u(x, r) / (2Δu))``
(the notes' Definition 1).  Sensitivity of the rank term
``g(r) = (1 - alpha)·#(x < r) - alpha·#(x > r)``:

* add/remove one point: ``g`` moves by ``1 - alpha`` (point below ``r``) or ``alpha``
  (above), so ``Δu = max(alpha, 1 - alpha)`` (same notes, Theorem 3);
* replace one point: ``g`` moves by at most ``(1 - alpha) + alpha = 1``, so ``Δu = 1``
  (Theorem 2).

Under add/remove the term ``max(alpha, 1 - alpha)·N`` itself changes with ``N``, which
Theorem 3 does not account for.  It is harmless: an additive term ``c(x)`` that
does not depend on ``r`` cancels in the EM's normalisation, so the EM with ``u``
*is* the EM with ``u' = u - c(x) = -|g|``, whose sensitivity is ``max(alpha, 1 - alpha)``;
the usual ratio argument ``p_x(r)/p_x'(r) = exp(ε(u'(x,r) - u'(x',r))/(2Δu))·Z'/Z
<= e^{ε/2}·e^{ε/2}`` then gives ε-DP.  The implementation uses ``u'`` directly
(large constants would only cost float precision).

On the interior of gap ``i`` (``i`` points below, ``N - i`` above),
``g = i - alpha·N``.  ``alpha`` is read as the decimal it was written as
(:func:`exact_alpha`: 0.1 is exactly 1/10, ``P/Q`` in lowest terms) and ``alpha·N``
is split exactly into an integer and a fraction by integer division,
``P·N = whole·Q + rest`` (Python integers, so no rounding at any ``N``), so ``|g|``
is correct to one rounding even for ``N = 1e7``.

True value: ``x_(k)`` with ``k = ceil(alpha·N)`` in exact arithmetic, the inverse
empirical cdf ``inf{r : F_N(r) >= alpha}`` (numpy ``method="inverted_cdf"``, which
however computes ``alpha·N`` in floats and gives ``x_(56)`` for the 0.55-quantile
of 100 points), and the lower median for ``alpha = 1/2``.  It is consistent with the utility: with
``alpha·N = j + f`` (``0 <= f < 1``), ``|g|`` is minimised on gap ``j`` if ``f = 0`` (and
``x_(j)`` is that gap's left end), else on gap ``j`` or ``j + 1`` or at the point
``x_(j+1)`` between them (where ``g = alpha - f``); in every case ``x_(ceil(alpha·N))`` is
a maximiser of ``u`` or an endpoint of a maximising gap.  ``T(∅) = a``.

With ``alpha = 1/2`` and add/remove neighbours the gap log-weights are
``-ε·|2i - N|/2``, while Duff's are ``-ε·(1 + max(2i - N, N - 2i - 1))/2``: equal
up to a constant for ``2i >= N`` and larger by ``ε/2`` below the median
(``|D|`` versus ``|D + 1|`` with ``D = #below - #above``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from mechanisms.core.bounds import Bound
from mechanisms.core.data import read_only
from mechanisms.core.guarantee import Neighbouring, check_neighbours
from mechanisms.core.interface import Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.quantiles import (
    check_alpha,
    quantile_rank,
    rank_distance,
    rank_distance_change,
    sensitivity,
    split_alpha_n,
)
from mechanisms.core.registration import register
from mechanisms.core.selection import MIN_SAMPLED, OrderStatistics
from mechanisms.core.validation import check_choice
from mechanisms.median import error_bounds
from mechanisms.sampling.gaps import SIZES_KEPT
from mechanisms.sampling.piecewise import (
    SAMPLERS,
    PiecewiseUniformRelease,
    WindowedMechanism,
    score_epsilon,
)


@lru_cache(maxsize=SIZES_KEPT)
def all_rank_distances(n: int, alpha: float) -> np.ndarray:
    """``|g|`` on every gap ``0..n`` (read-only): what :meth:`QuantileEM._release_window`'s
    score function multiplies by ``-ε/(2Δu)``.  Public (``n`` and α only), so kept for the
    last :data:`mechanisms.sampling.gaps.SIZES_KEPT` sizes."""
    return read_only(rank_distance(n, alpha, np.arange(n + 1, dtype=np.int64)))


@register
class QuantileEM(WindowedMechanism):
    """EM with the rank utility of eq. 2.2; ε-DP for the chosen neighbouring.

    Options: ``alpha`` (the quantile, in (0, 1); 0.5 = median),
    ``neighbours`` (``"add_remove"`` or ``"replace_one"``), which fixes both
    ``Δu`` and the neighbouring relation of the guarantee, and ``sampler``
    (:data:`mechanisms.sampling.piecewise.SAMPLERS`: inversion, the default and faster, or
    the Duff paper's racing sampler, Algorithm 1; the same distribution).
    """

    name = "quantile_em"
    display_name = "Quantile EM"
    figure = FigureStyle("#17becf", "D", 1)
    statistics = frozenset({"median", "quantile"})

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
        self.sampler = check_choice(sampler, SAMPLERS, "sampler")
        self.neighbouring = check_neighbours(neighbours)
        self.sensitivity = sensitivity(self.alpha, self.neighbouring)

    def source(self) -> str:
        return (
            "exponential mechanism (McSherry-Talwar) with the rank utility of "
            '"The Exponential Mechanism for Medians" eq. 2.2, '
            f"sensitivity {self.sensitivity:g} "
            f"(Theorem {3 if self.neighbouring is Neighbouring.ADD_REMOVE else 2})"
        )

    def _release_window(self, order: OrderStatistics, lower: float, upper: float) -> Release:
        n, alpha = order.size, self.alpha
        scale = score_epsilon(self.epsilon, n) / (2.0 * self.sensitivity)

        def log_score(gaps: np.ndarray) -> np.ndarray:
            distance = rank_distance(n, alpha, gaps)
            distance *= -scale
            return distance

        def relative_score(gaps: np.ndarray, reference: int) -> np.ndarray:
            change = rank_distance_change(n, alpha, gaps, reference)  # exact, at huge ε
            change *= -scale
            return change

        every_gap = None  # log_score on every gap, the same floats, when the data are small
        if n < MIN_SAMPLED:
            every_gap = np.multiply(all_rank_distances(n, alpha), -scale)
        whole, fraction = split_alpha_n(n, alpha)
        mode = whole + (fraction > 0.5)  # the gap index nearest to alpha·n
        return PiecewiseUniformRelease(
            order,
            lower,
            upper,
            log_score,
            mode=mode,
            true_rank=quantile_rank(n, alpha) if n else 0,
            sampler=self.sampler,
            relative_score=relative_score,
            all_scores=every_gap,
        )

    def error_bounds(
        self, sorted_x: np.ndarray, lower: float, upper: float, eta: float
    ) -> list[Bound]:
        """Brown's lecture notes, attempt 3: a rank-error bound for any α and both
        neighbourings (:func:`mechanisms.median.error_bounds.quantile_em_bound`)."""
        bound = error_bounds.quantile_em_bound(
            sorted_x,
            lower,
            upper,
            epsilon=self.epsilon,
            eta=eta,
            alpha=self.alpha,
            neighbouring=self.neighbouring,
        )
        return [bound]

    def __repr__(self) -> str:
        return (
            f"QuantileEM(epsilon={self.epsilon:g}, alpha={self.alpha:g}, "
            f"neighbours={self.neighbouring.value!r})"
        )
