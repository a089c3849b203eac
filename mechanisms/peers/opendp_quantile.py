"""OpenDP's DP quantile (``opendp.measurements.make_private_quantile``) as a mechanism.

What the library computes (OpenDP 0.16, feature ``"contrib"``; Smith 2011,
McKenna & Sheldon 2020): on a public, sorted list of ``candidates`` it scores
each candidate ``c`` by the integer

    s(c) = |(den - num)·#(x < c) - num·#(x > c)|,      alpha ≈ num/den,

(``den·|g|`` for the rank term ``g`` of eq. 2.2 of Harvard Privacy Tools Project,
"The Exponential Mechanism for Medians", 2020; ``alpha`` is exact when its binary
fraction has a denominator below 10**4, else ``num`` is the float product
``alpha·10**4`` truncated, as OpenDP casts it: 0.285 becomes 2849/10**4)
and returns a candidate by a noisy *min* with noise scale ``τ = scale·den``:

* ``selection="permute_and_flip"`` (output measure ``max_divergence``, OpenDP's
  pure-DP path): permute-and-flip — visit the candidates in uniformly random
  order and return ``c`` with probability ``p_c = exp(-(s(c) - min s)/τ)``;
* ``selection="exponential"`` (output measure ``zero_concentrated_divergence``):
  Gumbel noisy min, i.e. the exponential mechanism ``P(c) ∝ exp(-s(c)/τ)``.

Both use exact arithmetic (rationals, exact Bernoulli/Gumbel sampling from
OpenDP's own cryptographically secure RNG, which cannot be seeded: the ``rng``
given to :meth:`OpenDPRelease.sample` is checked but unused, so these rows are
not reproducible bit for bit).

Privacy (input metric ``symmetric_distance``, d_in = 1: add/remove one record).
``s`` moves by at most ``den·max(alpha, 1 - alpha)`` per added/removed point,
and OpenDP's privacy map gives ``ε = 2·max(num, den - num)/(den·scale)`` for
permute-and-flip, and ``ρ = ε²/8`` for the Gumbel version, whose pure guarantee
is ε-DP by the exponential-mechanism theorem (McSherry & Talwar; bounded range
gives the ρ).  The adapter sets ``scale = 2·max(num, den - num)/(den·ε)``, so the
candidate weights are ``exp(-ε·|g'|/(2·max(alpha', 1 - alpha')))`` with
``alpha' = num/den``: for an exactly represented alpha, exactly
:mod:`mechanisms.median.quantile_em` with ``neighbours="add_remove"``, restricted to the
grid.  The adapter checks the library's own map (``measurement.map(1)``) against
the stated guarantee at every release.

Candidates: ``candidates`` equally spaced points on ``[a, b]`` (``numpy.linspace``,
public; at most :data:`MAX_CANDIDATES`).  The output is always a grid point, so the
error includes up to half a grid step.

Range of ε: OpenDP must be able to build the measurement and certify ε (or ρ) in
float64: ``scale`` a normal float with ``scale·den`` finite, and for the Gumbel
version ``ρ = ε²/8`` neither overflowing nor rounded up to a subnormal.  That is ε from
about ``1e-304`` to ``1e304`` for permute-and-flip (``1e-308`` to ``4e307`` for alphas of
denominator 2) and from about ``1e-157`` to ``1e154`` for the exponential selection.
Configuring outside it is a ``ValueError`` naming epsilon (:func:`certified_scale`
builds and certifies the measurement once per ``(alpha, ε, selection)``).

Output distribution (:meth:`OpenDPRelease.cdf`, exact up to quadrature):
the EM's is a softmax of ``-s/τ``.  Permute-and-flip returns ``c`` iff, with
arrival times ``t_j`` i.i.d. uniform on ``[0, 1]``, ``c`` is accepted and every
candidate arriving before it is rejected:

    P(c) = p_c · ∫_0^1 Π_{j ≠ c} (1 - p_j·t) dt,

evaluated per distinct score (candidates with equal scores have equal
probabilities) by composite Gauss-Legendre quadrature on panels doubling away
from 0, the last one ``[e, 1]`` with ``e`` in ``(1/4, 1/2]`` (so every node is
below 1: at ``t = 1`` the top candidate's factor ``log(1 - t)`` is ``-inf``);
the probabilities are checked to sum to 1 (``Σ_c p_c(1 - p_c t)^-1 Π_j (1 - p_j t)
= -d/dt Π_j (1 - p_j t)``, whose integral is 1).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Release
from mechanisms.core.quantiles import check_alpha, quantile_value
from mechanisms.core.registration import register
from mechanisms.core.validation import check_choice, check_integer, check_rng, check_size
from mechanisms.peers import PeerMechanism, require

SELECTIONS = ("permute_and_flip", "exponential")
ALPHA_DENOMINATOR = 10_000
"""OpenDP's alpha granularity when alpha's exact fraction has a larger denominator."""
MAX_CANDIDATES = 10**7
"""Largest ``candidates``: the grid is passed to OpenDP as a Python list (10**7 floats are
about 0.3 GB there), and a larger one could not even be allocated."""
NODES, WEIGHTS = np.polynomial.legendre.leggauss(24)
NORMALISATION_TOLERANCE = 1e-9


def opendp_alpha(alpha: float) -> tuple[int, int]:
    """``(num, den)``: alpha as OpenDP's quantile scorer represents it."""
    exact = Fraction(alpha)
    if exact.denominator < ALPHA_DENOMINATOR:
        return exact.numerator, exact.denominator
    return int(alpha * ALPHA_DENOMINATOR), ALPHA_DENOMINATOR  # truncated, as OpenDP casts it


def _measurement(candidates: list[float], alpha: float, scale: float, selection: str) -> Any:
    """OpenDP's quantile measurement (``make_private_quantile``) on these candidates."""
    dp = require("opendp.prelude", OpenDPQuantile.name)
    dp.enable_features("contrib")
    pure = selection == "permute_and_flip"
    measure = dp.max_divergence() if pure else dp.zero_concentrated_divergence()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    return dp.m.make_private_quantile(
        domain, dp.symmetric_distance(), measure, candidates, alpha, scale
    )


def _certified_epsilon(measurement: Any, selection: str) -> float:
    """The ε OpenDP certifies for ``d_in = 1``: its map, or ``√(8ρ)`` for the Gumbel version
    (compared as an ε: ``ρ = ε²/8`` underflows long before ``√(8ρ)`` does)."""
    certified = float(measurement.map(1))
    return certified if selection == "permute_and_flip" else math.sqrt(8.0 * certified)


@lru_cache(maxsize=256)
def certified_scale(alpha: float, epsilon: float, selection: str) -> float:
    """OpenDP's ``scale = 2·max(num, den - num)/(den·ε)`` that makes the quantile ε-DP
    (module docstring), once OpenDP has built the measurement (on two candidates) and
    certified at most ε for it; ``ValueError`` naming epsilon where float64 cannot
    (module docstring, "Range of ε")."""
    num, den = opendp_alpha(alpha)
    scale = 2.0 * max(num, den - num) / (den * epsilon)
    refused = f"epsilon: OpenDP cannot run the quantile at epsilon={epsilon!r} in float64"
    if not sys.float_info.min <= scale < math.inf:
        raise ValueError(f"{refused} (noise scale {scale!r})")
    dp = require("opendp.prelude", OpenDPQuantile.name)
    try:
        certified = _certified_epsilon(_measurement([0.0, 1.0], alpha, scale, selection), selection)
    except dp.OpenDPException as error:
        raise ValueError(f"{refused}: {str(error).strip()[:200]}") from None
    if not certified <= epsilon * (1 + 1e-9):
        raise ValueError(f"{refused}: it certifies {certified!r} (as an epsilon)")
    return scale


def candidate_scores(sorted_x: np.ndarray, candidates: np.ndarray, alpha: float) -> np.ndarray:
    """OpenDP's integer scores ``|(den - num)·#(x < c) - num·#(x > c)|`` (lower is better)."""
    num, den = opendp_alpha(alpha)
    below = np.searchsorted(sorted_x, candidates, side="left")
    above = sorted_x.size - np.searchsorted(sorted_x, candidates, side="right")
    return np.abs((den - num) * below - num * above)


def permute_and_flip_probabilities(log_p: np.ndarray) -> np.ndarray:
    """``P(c) = p_c ∫_0^1 Π_{j≠c}(1 - p_j t) dt`` for ``p = exp(log_p)`` with ``max log_p = 0``.

    Computed per distinct ``log_p`` value; raises ``ArithmeticError`` if the
    probabilities do not sum to 1 within ``NORMALISATION_TOLERANCE``.
    """
    levels, index, counts = np.unique(log_p, return_inverse=True, return_counts=True)
    p = np.exp(levels)  # tiny levels underflow to 0: they are never returned
    total = float(counts @ p)  # S = Σ_j p_j >= 1; the integrand decays like exp(-S t)
    edges = [0.0, min(1.0, 1.0 / total) / 4.0]
    while 2.0 * edges[-1] <= 0.5:  # the last panel [e, 1] has e in (1/4, 1/2]: all nodes < 1
        edges.append(2.0 * edges[-1])
    edges.append(1.0)
    left, right = np.array(edges[:-1]), np.array(edges[1:])
    half = 0.5 * (right - left)
    t = ((left + right)[:, None] / 2.0 + np.multiply.outer(half, NODES)).ravel()
    w = np.multiply.outer(half, WEIGHTS).ravel()
    log_one_minus = np.log1p(-np.multiply.outer(p, t))  # levels × nodes; t < 1
    log_f = counts @ log_one_minus  # log Π_j (1 - p_j t)
    integrals = np.exp(log_f - log_one_minus) @ w  # ∫ Π_{j≠c}(1 - p_j t) dt per level
    per_candidate = p * integrals
    mass = float(counts @ per_candidate)
    if not abs(mass - 1.0) <= NORMALISATION_TOLERANCE:
        raise ArithmeticError(f"permute-and-flip probabilities sum to {mass!r}, not 1")
    return per_candidate[index]


class OpenDPRelease(Release):
    """OpenDP's quantile on one dataset: library draws, exact distribution on the grid."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        *,
        alpha: float,
        epsilon: float,
        candidates: np.ndarray,
        selection: str,
    ) -> None:
        self.lower, self.upper, self.n = float(lower), float(upper), int(sorted_x.size)
        self.alpha, self.selection, self.candidates = alpha, selection, candidates
        self.true_value = quantile_value(sorted_x, alpha, lower)
        self._x, self._epsilon = sorted_x, epsilon
        self._cumulative: np.ndarray | None = None
        self.scale = certified_scale(alpha, epsilon, selection)
        self._measurement = _measurement(candidates.tolist(), alpha, self.scale, selection)
        certified = _certified_epsilon(self._measurement, selection)
        if certified > epsilon * (1 + 1e-9):
            raise RuntimeError(
                f"OpenDP certifies epsilon {certified!r} for d_in = 1, above the stated {epsilon!r}"
            )
        self._data = sorted_x.tolist()

    @property
    def measurement(self) -> Any:
        """The OpenDP measurement this release invokes (certified at construction)."""
        return self._measurement

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` invocations of the OpenDP measurement (its own RNG; ``rng`` unused)."""
        size = check_size(size)
        check_rng(rng)
        return np.array([self._measurement(self._data) for _ in range(size)], dtype=np.float64)

    @property
    def probabilities(self) -> np.ndarray:
        """Probability of each candidate (see the module docstring)."""
        den = opendp_alpha(self.alpha)[1]
        scores = candidate_scores(self._x, self.candidates, self.alpha)
        with np.errstate(over="ignore"):  # beyond float64 at huge ε: p = e^{-inf} = 0
            log_p = -(scores - scores.min()) / (self.scale * den)
        if self.selection == "permute_and_flip":
            return permute_and_flip_probabilities(log_p)
        weights = np.exp(log_p)
        return weights / weights.sum()

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """``P(output <= x)``: total probability of the candidates ``<= x``.

        Each tail is summed from its far end (small terms first), and ``1 - P(output
        > x)`` is used above the median candidate: a left-to-right cumulative sum over
        100 001 candidates carries an absolute error near 1e-12 into the upper tail,
        which made tail cells of the privacy audit look like violations.
        """
        if self._cumulative is None:
            p = self.probabilities / self.probabilities.sum()
            below = np.cumsum(p)  # P(output <= c_i)
            above = np.append(np.cumsum(p[::-1])[::-1][1:], 0.0)  # P(output > c_i)
            self._cumulative = np.where(below <= 0.5, below, 1.0 - above)
        q = np.asarray(x, dtype=np.float64)
        index = np.searchsorted(self.candidates, q, side="right") - 1
        out = np.where(index >= 0, self._cumulative[np.maximum(index, 0)], 0.0)
        out[np.isnan(q)] = np.nan
        return out


@register
class OpenDPQuantile(PeerMechanism):
    """OpenDP's quantile on a grid of candidates; ε-DP, add/remove neighbours.

    Options: ``alpha`` (0.5 = median), ``candidates`` (number of equally spaced
    grid points on ``[a, b]``, >= 2) and ``selection`` (``"permute_and_flip"``,
    OpenDP's pure-DP mechanism, or ``"exponential"``, the exponential mechanism).
    """

    name = "opendp_quantile"
    statistics = frozenset({"median", "quantile"})
    library = "opendp"
    neighbouring = Neighbouring.ADD_REMOVE

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alpha: float = 0.5,
        candidates: int = 100_001,
        selection: str = "permute_and_flip",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        require(self.library, self.name)
        self.alpha = check_alpha(alpha)
        self.candidates = check_integer(candidates, "candidates", minimum=2, maximum=MAX_CANDIDATES)
        self.selection = check_choice(selection, SELECTIONS, "selection")
        certified_scale(self.alpha, self.epsilon, self.selection)  # ValueError out of range

    def source(self) -> str:
        how = (
            "permute-and-flip, OpenDP's max_divergence map"
            if self.selection == "permute_and_flip"
            else f"Gumbel noisy min = exponential mechanism (OpenDP certifies rho = "
            f"{self.epsilon**2 / 8:.6g}-zCDP)"
        )
        return f"OpenDP make_private_quantile, symmetric_distance d_in = 1, {how}"

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        grid = np.linspace(lower, upper, self.candidates)
        if not (np.diff(grid) > 0).all():
            raise ValueError(
                f"candidates: {self.candidates} grid points on [{lower!r}, {upper!r}] repeat"
            )
        return OpenDPRelease(
            sorted_x,
            lower,
            upper,
            alpha=self.alpha,
            epsilon=self.epsilon,
            candidates=grid,
            selection=self.selection,
        )

    def __repr__(self) -> str:
        return (
            f"OpenDPQuantile(epsilon={self.epsilon:g}, alpha={self.alpha:g}, "
            f"candidates={self.candidates}, selection={self.selection!r})"
        )
