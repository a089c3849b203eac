"""Independent per-level mechanisms: one single-quantile mechanism per level, rows sorted.

For levels ``α_1 < ... < α_m`` each level ``j`` runs its own single-quantile mechanism
``M_j`` (the registry's ``quantile_em``, ``duff`` or ``smooth_laplace`` configured with
``alpha = α_j``) on the same bounded data, independently; a row is the sorted vector
``sort(Z_1, ..., Z_m)`` (post-processing, so the guarantee is that of the vector).  The
single-quantile mechanisms are reached through :func:`mechanisms.core.registration.configure`
at construction time (the family layer does not import :mod:`mechanisms.median`).

Privacy (each class states its source by author and title):

* ``ind_exp`` (IndExp of Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles",
  ICML 2021, after Smith, "Privacy-preserving Statistical Estimation with Optimal
  Convergence Rates", STOC 2011): the quantile EM at ``ε/m`` per level; basic composition
  (Dwork & Roth, "The Algorithmic Foundations of Differential Privacy", Theorem 3.16) gives
  ε-DP for the EM's neighbouring.
* ``ind_duff``: Duff (Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility
  Function Family for the Exponential Mechanism") at ``ε/m`` per level; ε-DP likewise.
* ``smooth_laplace_per_level``: the Duff paper's smooth-sensitivity Laplace mechanism
  (Prop. 2) at ``(ε/m, δ/m)`` per level; basic composition gives (ε, δ)-DP.
* ``laplace_ln_per_level``: Bun & Steinke's LaplaceLN ("Average-Case Averages: Private
  Algorithms for Smooth Sensitivity and Mean Estimation", NeurIPS 2019) per level at CDP
  parameter ``ε/√m`` (ρ = ε²/(2m)-zCDP each, public tuning): zCDP composes additively (Bun &
  Steinke, "Concentrated Differential Privacy: Simplifications, Extensions, and Lower
  Bounds", TCC 2016, Lemma 2.3), so the vector is ε²/2-zCDP, as one LaplaceLN at ε, reported
  also as (ε', δ)-DP by the same conversion; the JointExp paper runs it so.
* ``app_ind_exp``: the quantile EM at the per-level ε₀ that Dong, Durfee & Rogers' optimal
  non-adaptive composition of ε₀-bounded-range mechanisms allows for the overall (ε, δ)
  (:mod:`mechanisms.multi.composition`: Theorem 3, ε₀ by bisection); (ε, δ)-DP.  The levels
  are public and fixed before any draw, so the composition is non-adaptive, and the quantile
  EM with density ``∝ exp(ε₀ u / (2Δu))`` is ε₀-BR (its loss is a ``[-ε₀/2, ε₀/2]`` term plus a
  constant).

Exact law: the ``Z_j`` are independent with the exact cdfs ``F_j`` of the single-quantile
releases (:meth:`IndependentRelease.level_cdf`), so coordinate ``j`` of the sorted row has the
Poisson-binomial tail :func:`mechanisms.multi.release.order_statistic_cdf` as its exact cdf
(:meth:`IndependentRelease.marginal_cdf`).

Complexity: the release sorts once (``O(n log n)``) and builds the m single-quantile
releases on the sorted data (``O(window + log n)`` each for the EMs); a draw costs
``O(m log window)``; ``marginal_cdf`` costs ``O(m²)`` per point.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from mechanisms.core.guarantee import Guarantee
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.registration import configure, get, register
from mechanisms.core.validation import check_rng, check_size
from mechanisms.multi.base import MultiQuantileMechanism
from mechanisms.multi.composition import per_level_epsilon
from mechanisms.multi.release import QuantilesRelease, order_statistic_cdf

BASIC_COMPOSITION = (
    'basic composition (Dwork & Roth, "The Algorithmic Foundations of Differential Privacy", '
    "Theorem 3.16) of"
)


class IndependentRelease(QuantilesRelease):
    """Sorted rows of independent single-quantile releases, one per level."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        alphas: tuple[float, ...],
        levels: list[Release],
    ) -> None:
        self._set_common(sorted_x, lower, upper, alphas)
        self._levels = levels

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        out = np.empty((size, self.m))
        for j, level in enumerate(self._levels):
            out[:, j] = level.sample(size, rng)
        out.sort(axis=1)  # post-processing
        return out

    def level_cdf(self, j: int, x: np.ndarray | float) -> np.ndarray:
        """``F_j(x) = P(Z_j <= x)``: the exact cdf of level ``j``'s own mechanism (unsorted)."""
        return np.asarray(self._levels[self._check_level(j)].cdf(x), dtype=np.float64)

    def marginal_cdf(self, j: int, x: np.ndarray | float) -> np.ndarray:
        """``P(o_j <= x)`` of the sorted row: at least ``j + 1`` of the ``Z_k`` are ``<= x``."""
        j = self._check_level(j)
        points = np.atleast_1d(np.asarray(x, dtype=np.float64))
        cdfs = np.array([np.asarray(level.cdf(points), dtype=np.float64) for level in self._levels])
        return order_statistic_cdf(cdfs, j)


def basic_share(epsilon: float, delta: float | None, m: int) -> tuple[float, float | None]:
    """``(ε/m, δ/m)``: each level's share under basic composition (δ None for pure DP)."""
    return epsilon / m, None if delta is None else delta / m


class PerLevelMechanism(MultiQuantileMechanism):
    """Base of the independent per-level methods (module docstring).

    A subclass names the registered single-quantile mechanism (:attr:`single`) and may
    override :meth:`level_privacy` (default: basic composition, :func:`basic_share`).
    """

    single: ClassVar[str]
    method: ClassVar[str] = ""
    """The method's own source, by author and title (prefixed to the guarantee's source)."""

    def _prepare(self) -> None:
        self.level_epsilon, self.level_delta = self.level_privacy()
        single = get(self.single)
        self.levels: list[Mechanism] = [
            configure(
                single,
                epsilon=self.level_epsilon,
                delta=self.level_delta,
                alpha=alpha,
                neighbours=self.neighbouring.value,
            )
            for alpha in self.alphas
        ]

    def level_privacy(self) -> tuple[float, float | None]:
        """Each level's (ε, δ): basic composition by default."""
        return basic_share(self.epsilon, self.delta, self.m)

    def composition(self) -> str:
        """How the levels' guarantees compose (the middle of :meth:`source`)."""
        delta = "" if self.level_delta is None else f", delta = {self.level_delta:.6g}"
        return f"{BASIC_COMPOSITION} {self.m} levels at epsilon = {self.level_epsilon:.6g}{delta}"

    def source(self) -> str:
        inner = self.levels[0].guarantee.source
        return (
            f"{self.method}: {self.composition()} each, sorted afterwards (post-processing); "
            f"each level: {inner}"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        releases = []
        for mechanism in self.levels:
            release = mechanism._release(sorted_x, lower, upper)
            if not isinstance(release, Release):  # pragma: no cover - registry invariant
                raise TypeError(f"{self.single} must release a point estimate")
            releases.append(release)
        return IndependentRelease(sorted_x, lower, upper, self.alphas, releases)


INDEXP = (
    'IndExp (Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021; '
    'Smith, "Privacy-preserving Statistical Estimation with Optimal Convergence Rates", '
    "STOC 2011)"
)


@register
class IndExp(PerLevelMechanism):
    """The quantile EM per level at ε/m, sorted: ε-DP (module docstring).

    Options: ``alphas`` or ``m``; ``neighbours`` (``"add_remove"`` or ``"replace_one"``: the
    EM's sensitivity ``max(α, 1 - α)`` or 1).
    """

    name = "ind_exp"
    display_name = "IndExp"
    single = "quantile_em"
    method = INDEXP


@register
class IndDuff(PerLevelMechanism):
    """Duff per level at ε/m, sorted: ε-DP (module docstring).  Options as :class:`IndExp`."""

    name = "ind_duff"
    display_name = "IndDuff"
    single = "duff"
    method = "independent Duff per level (as IndExp of Gillenwater, Joseph & Kulesza, 2021)"


@register
class SmoothLaplacePerLevel(PerLevelMechanism):
    """The smooth-sensitivity Laplace mechanism per level at (ε/m, δ/m), clipped to
    ``[a, b]`` and sorted: (ε, δ)-DP (module docstring).  Options as :class:`IndExp`."""

    name = "smooth_laplace_per_level"
    display_name = "SmoothLaplace per level"
    single = "smooth_laplace"
    requires_delta = True
    method = "independent smooth-sensitivity Laplace per level"


@register
class LaplaceLNPerLevel(PerLevelMechanism):
    """LaplaceLN per level at CDP parameter ε/√m (public tuning), clipped and sorted:
    ε²/2-zCDP, reported as (ε', δ)-DP (module docstring).  Options as :class:`IndExp`."""

    name = "laplace_ln_per_level"
    display_name = "LaplaceLN per level"
    single = "laplace_ln"
    requires_delta = True
    method = "independent LaplaceLN per level (as the JointExp paper's baseline)"

    def level_privacy(self) -> tuple[float, float | None]:
        return self.epsilon / math.sqrt(self.m), self.delta

    def composition(self) -> str:
        return (
            "additive composition of zCDP (Bun & Steinke, TCC 2016, Lemma 2.3) of "
            f"{self.m} levels at CDP epsilon = {self.level_epsilon:.6g} (rho = "
            f"{0.5 * self.level_epsilon**2:.6g} each)"
        )

    @property
    def guarantee(self) -> Guarantee:
        """ρ = m·(ε/√m)²/2 = ε²/2-zCDP, as (ε', δ)-DP by the levels' own conversion."""
        whole = configure(
            get(self.single), epsilon=self.epsilon, delta=self.delta,
            neighbours=self.neighbouring.value,
        )  # fmt: skip
        return dataclasses.replace(whole.guarantee, source=self.source())


@register
class AppIndExp(PerLevelMechanism):
    """The quantile EM per level at the optimal-composition ε₀: (ε, δ)-DP (module docstring).

    Options as :class:`IndExp`; δ is the overall δ of the composition (the EMs are pure).
    """

    name = "app_ind_exp"
    display_name = "AppIndExp"
    single = "quantile_em"
    requires_delta = True
    method = INDEXP + " with approximate-DP composition"

    def level_privacy(self) -> tuple[float, float | None]:
        return per_level_epsilon(self.epsilon, self.required_delta, self.m), None

    def composition(self) -> str:
        return (
            "the optimal non-adaptive composition of bounded-range mechanisms (Dong, Durfee & "
            'Rogers, "Optimal Differential Privacy Composition for Exponential Mechanisms", '
            f"ICML 2020, Theorem 3) of {self.m} exponential mechanisms, each "
            f"epsilon_0-bounded-range with epsilon_0 = {self.level_epsilon:.6g} (the largest "
            f"such that the composition is (epsilon, delta)-DP, by bisection)"
        )
