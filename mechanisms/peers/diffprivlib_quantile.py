"""IBM diffprivlib's DP quantile (``diffprivlib.tools.quantile``) as a mechanism.

What the library computes (diffprivlib 0.6, ``tools/quantiles.py``; Smith 2011;
the quantile EM of Harvard Privacy Tools Project, "The Exponential Mechanism for
Medians", 2020): clip the ``k`` data points to ``[a, b]``, sort, append ``a``
and ``b``, and run its ``Exponential`` mechanism over the ``k + 1`` gaps with
utility ``u_i = -|i - alpha·k|`` (``i`` points below gap ``i``), ``sensitivity=1``
and base measure the gap lengths, then draw uniformly inside the chosen gap.  So
the output density on gap ``i`` is

    ∝ exp(ε_lib · u_i / 2),                                         (eq. 2.2)

the continuous quantile EM, which :mod:`mechanisms.median.quantile_em` implements
with ``neighbours="replace_one"`` (``Δu = 1``).  The adapter's :meth:`cdf` is
that density's exact cdf (:class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease`,
with the library's float ``alpha·k``); :meth:`sample` calls the library, one
call per estimate, seeded from the ``rng`` it is given.

Neighbouring and guarantee.  diffprivlib's documentation names no neighbouring
relation for ``quantile``; its sensitivity 1 is that of ``u`` when one point is
*replaced* (``i`` moves by at most 1; Theorem 2 of that note), so a call
with ``epsilon=ε_lib`` is ε_lib-DP for replace-one neighbours.  Under add/remove
``u`` moves by at most ``max(alpha, 1 - alpha)`` (Theorem 3), so the same call
is ``max(alpha, 1 - alpha)·ε_lib``-DP.  Option ``neighbours`` picks the
relation of the stated guarantee: ``"replace_one"`` (default, the library's
own calibration) calls it with ``ε_lib = ε``; ``"add_remove"`` with
``ε_lib = ε / max(alpha, 1 - alpha)``, which gives ``quantile_em``'s default
(add/remove) distribution exactly.

Numerics: diffprivlib samples in float64 with ``exp(scale·(u - max u))·length``
normalised by a cumulative sum and a ``RandomState`` uniform; it takes the
maximum before multiplying by the lengths (diffprivlib issue #107), so when many
points tie at the mode its weights can all underflow.  The datasets of this
benchmark have no ties, where it is exact to float rounding.

The cdf at huge ε.  There the library's weights are ``exp(scale·(u_i - max u))``
with its own float utilities ``u_i = -|i - alpha·k|`` (``alpha·k`` a float): gaps
whose float utility ties with the best get mass in proportion to their lengths,
the others ``exp(-huge) = 0``.  The cdf follows the same arithmetic: when its
scores would swamp the log lengths (:data:`mechanisms.sampling.piecewise.EXACT_SCORES`)
it uses ``scale·(u_i - max u)`` computed as the library computes it, so the cdf is
the library's distribution at every ε (checked against its samples at ε up to 1e300
in ``tests/mechanisms/peers``); ε is capped like the rank EMs'
(:func:`mechanisms.sampling.piecewise.score_epsilon`, the same distribution).  Where
the library fails: when every gap of the best float utility has length 0 (ties at
the quantile, or at ``a``/``b``) and ε is huge, or ties push the positive-length gaps
so far down that their weights underflow (issue #107), its weights are all 0 and
``diffprivlib.tools.quantile`` raises ``RuntimeError`` ("Can't find a candidate"), an
error that depends on the data.  The adapter then draws that estimate from the cdf's
distribution, the exact EM with the library's utilities (mass on the best
positive-length gaps), and counts it in ``library_failures``.
``epsilon / max(alpha, 1 - alpha)`` beyond float64 (add/remove, ε above ~9e307) is
refused with a ``ValueError`` naming epsilon: the library would then take
``scale = inf`` and weigh every gap within ``1e-8`` of the best utility.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.core.guarantee import check_neighbours
from mechanisms.core.interface import Release
from mechanisms.core.quantiles import check_alpha, quantile_value, sensitivity
from mechanisms.core.registration import register
from mechanisms.core.validation import check_rng, check_size
from mechanisms.peers import PeerMechanism, require
from mechanisms.sampling.piecewise import PiecewiseUniformRelease, score_epsilon

MIN_WIDTH = 1e-5
"""diffprivlib widens bounds narrower than this (``check_bounds(min_separation=1e-5)``)."""


class DiffprivlibRelease(Release):
    """diffprivlib's quantile on one dataset: library draws, exact piecewise-uniform cdf."""

    def __init__(
        self, sorted_x: np.ndarray, lower: float, upper: float, alpha: float, library_epsilon: float
    ) -> None:
        self.lower, self.upper, self.n = float(lower), float(upper), int(sorted_x.size)
        self.alpha, self.library_epsilon = alpha, library_epsilon
        self.library_failures = 0  # draws the library could not make (module docstring)
        self._x = sorted_x
        alpha_k = alpha * self.n  # the library's float product
        scale = 0.5 * score_epsilon(library_epsilon, self.n)

        def log_score(gaps: np.ndarray) -> np.ndarray:
            return -scale * np.abs(gaps - alpha_k)

        def library_score(gaps: np.ndarray, reference: int) -> np.ndarray:
            # at huge ε: scale·(u - u_ref) with the library's float utilities u, u_ref that
            # of the best positive-length gap: the library's max u wherever it can sample
            utility = -np.abs(gaps - alpha_k)
            utility -= -abs(reference - alpha_k)
            return scale * utility

        mode = min(max(math.floor(alpha_k + 0.5), 0), self.n)
        self.true_value = quantile_value(sorted_x, alpha, lower)
        self._exact = PiecewiseUniformRelease(
            sorted_x,
            lower,
            upper,
            log_score,
            mode=mode,
            true_value=self.true_value,
            relative_score=library_score,
        )

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` calls of ``diffprivlib.tools.quantile``, each with a fresh accountant."""
        size, rng = check_size(size), check_rng(rng)
        diffprivlib = require("diffprivlib", DiffprivlibQuantile.name)
        state = np.random.RandomState(int(rng.integers(2**32)))
        out = np.empty(size)
        for j in range(size):
            try:
                with np.errstate(all="ignore"):  # exp(-huge) = 0 at huge ε; 0/0 (#107)
                    out[j] = diffprivlib.tools.quantile(
                        self._x,
                        self.alpha,
                        epsilon=self.library_epsilon,
                        bounds=(self.lower, self.upper),
                        random_state=state,
                        accountant=diffprivlib.BudgetAccountant(),
                    )
            except RuntimeError:  # every weight 0: "Can't find a candidate" (module docstring)
                self.library_failures += 1
                out[j] = self._exact.sample(1, rng)[0]
        return out

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """Exact cdf of the distribution the library samples (see the module docstring)."""
        return self._exact.cdf(x)


@register
class DiffprivlibQuantile(PeerMechanism):
    """diffprivlib's exponential-mechanism quantile; ε-DP for the chosen ``neighbours``.

    Options: ``alpha`` (the quantile; 0.5 = median) and ``neighbours``
    (``"replace_one"``, the library's calibration, or ``"add_remove"``).
    """

    name = "diffprivlib_quantile"
    statistics = frozenset({"median", "quantile"})
    library = "diffprivlib"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alpha: float = 0.5,
        neighbours: str = "replace_one",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        require(self.library, self.name)
        self.alpha = check_alpha(alpha)
        self.neighbouring = check_neighbours(neighbours)
        # diffprivlib scores with Δu = 1: its ε is ours divided by our Δu.
        self.library_epsilon = self.epsilon / sensitivity(self.alpha, self.neighbouring)
        if not math.isfinite(self.library_epsilon):
            raise ValueError(
                f"epsilon: diffprivlib's epsilon = epsilon / max(alpha, 1 - alpha) overflows "
                f"float64, got epsilon={epsilon!r}"
            )

    def source(self) -> str:
        return (
            f"diffprivlib.tools.quantile(epsilon={self.library_epsilon:.6g}): exponential "
            "mechanism with utility -|i - alpha k|, sensitivity 1 (Harvard Privacy Tools "
            'Project, "The Exponential Mechanism for Medians", Theorems 2-3)'
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        if upper - lower < MIN_WIDTH:
            raise ValueError(f"bounds: diffprivlib needs b - a >= {MIN_WIDTH:g}")
        return DiffprivlibRelease(sorted_x, lower, upper, self.alpha, self.library_epsilon)

    def __repr__(self) -> str:
        return (
            f"DiffprivlibQuantile(epsilon={self.epsilon:g}, alpha={self.alpha:g}, "
            f"neighbours={self.neighbouring.value!r})"
        )
