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

from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from mechanisms.base import Guarantee, Neighbouring, Release, check_neighbours
from mechanisms.monotone_search import SortedData
from mechanisms.registry import register
from mechanisms.validation import check_choice, check_open_unit

if TYPE_CHECKING:
    from mechanisms.error_bounds import Bound
from mechanisms.sampling import (
    SAMPLERS,
    PiecewiseUniformRelease,
    WindowedMechanism,
    score_epsilon,
)
from mechanisms.selection import OrderStatistics


def check_alpha(alpha: float) -> float:
    """Return ``alpha`` as a float, or raise ``ValueError`` unless it lies in (0, 1)."""
    return check_open_unit(alpha, "alpha")


@lru_cache(maxsize=1024)
def exact_alpha(alpha: float) -> Fraction:
    """``alpha`` as the decimal it was written as: the shortest repr of the float, exactly.

    So ``alpha = 0.1`` means 1/10 and the 0.1-quantile of 10 points is ``x_(1)``,
    not ``x_(2)`` (the binary float 0.1 is slightly above 1/10; numpy's float
    product ``0.55 * 100 = 55.00000000000001`` has the same problem).  Cached per
    ``alpha``: parsing the decimal costs more than a release's arithmetic.
    """
    return Fraction(repr(float(alpha)))


def split_alpha_n(n: int, alpha: float) -> tuple[int, float]:
    """``alpha·n = whole + fraction`` with ``whole`` an exact integer and ``0 <= fraction < 1``.

    With ``alpha = P/Q`` (:func:`exact_alpha`), ``P·n = whole·Q + rest`` in Python
    integers (exact) and ``fraction = rest/Q``, whose integer true division is
    correctly rounded: the float nearest to ``alpha·n - whole``.
    """
    exact = exact_alpha(alpha)
    whole, rest = divmod(exact.numerator * int(n), exact.denominator)
    return whole, rest / exact.denominator


def rank_distance(n: int, alpha: float, gaps: np.ndarray) -> np.ndarray:
    """``|g| = |(1 - alpha)·i - alpha·(n - i)| = |i - alpha·n|`` on the interior of gap ``i``."""
    whole, fraction = split_alpha_n(n, alpha)
    distance = np.subtract(gaps, whole, dtype=np.float64)  # exact: integers below 2**53
    distance -= fraction
    return np.abs(distance, out=distance)


def sensitivity(alpha: float, neighbouring: Neighbouring) -> float:
    """``Δu``: ``max(alpha, 1 - alpha)`` for add/remove (Theorem 3), 1 for replace-one (Thm 2)."""
    if neighbouring is Neighbouring.REPLACE_ONE:
        return 1.0
    return max(alpha, 1.0 - alpha)


def quantile_rank(n: int, alpha: float) -> int:
    """1-based rank ``ceil(alpha·n)`` of the alpha-quantile (``>= 1`` for ``n >= 1``):
    ``-floor(-P·n / Q)`` in Python integers, with ``alpha = P/Q`` (:func:`exact_alpha`)."""
    exact = exact_alpha(alpha)
    return -(-exact.numerator * int(n) // exact.denominator)


def quantile_value(sorted_x: SortedData, alpha: float, lower: float) -> float:
    """The alpha-quantile ``x_(ceil(alpha·n))`` of sorted data (an array, or data sorted only
    where read); ``lower`` for empty data."""
    if sorted_x.size == 0:
        return float(lower)
    return float(sorted_x[quantile_rank(sorted_x.size, alpha) - 1])


@register
class QuantileEM(WindowedMechanism):
    """EM with the rank utility of eq. 2.2; ε-DP for the chosen neighbouring.

    Options: ``alpha`` (the quantile, in (0, 1); 0.5 = median),
    ``neighbours`` (``"add_remove"`` or ``"replace_one"``), which fixes both
    ``Δu`` and the neighbouring relation of the guarantee, and ``sampler``
    (:data:`mechanisms.sampling.SAMPLERS`: inversion, the default and faster, or
    the Duff paper's racing sampler, Algorithm 1; the same distribution).
    """

    name = "quantile_em"
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

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            neighbouring=self.neighbouring,
            source=(
                "exponential mechanism (McSherry-Talwar) with the rank utility of "
                '"The Exponential Mechanism for Medians" eq. 2.2, '
                f"sensitivity {self.sensitivity:g} "
                f"(Theorem {3 if self.neighbouring is Neighbouring.ADD_REMOVE else 2})"
            ),
        )

    def _release_window(self, order: OrderStatistics, lower: float, upper: float) -> Release:
        n, alpha = order.size, self.alpha
        scale = score_epsilon(self.epsilon, n) / (2.0 * self.sensitivity)

        def log_score(gaps: np.ndarray) -> np.ndarray:
            distance = rank_distance(n, alpha, gaps)
            distance *= -scale
            return distance

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
        )

    def error_bounds(
        self, sorted_x: np.ndarray, lower: float, upper: float, eta: float
    ) -> list[Bound]:
        """Brown's lecture notes, attempt 3: a rank-error bound for any α and both
        neighbourings (:func:`mechanisms.error_bounds.quantile_em_bound`)."""
        from mechanisms import error_bounds  # imports this module: import here, not above

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
