"""JointExp: one exponential mechanism over sorted m-tuples of outputs.

Source: Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles" (ICML 2021), the
exponential mechanism of McSherry & Talwar, "Mechanism Design via Differential Privacy"
(FOCS 2007).  With ``α_0 = 0``, ``α_{m+1} = 1``, ``o_0 = -inf``, ``o_{m+1} = +inf``, the output
``lower <= o_1 <= ... <= o_m <= upper`` has density

    p(o) ∝ exp(ε u(X, o) / (2Δ)),
    u(X, o) = -Σ_{j=1}^{m+1} | #{x ∈ X : o_{j-1} < x <= o_j} - (α_j - α_{j-1}) n |,

with ``Δ = 2`` under replace-one neighbours (the paper's swap sensitivity) and
``Δ = 2 (1 - min_j (α_j - α_{j-1}))`` under add/remove (derived in
:mod:`mechanisms.multi.joint_exp_sampler`).  ε-DP for the chosen neighbouring.

Sampling is exact (:mod:`mechanisms.multi.joint_exp_sampler`): the release runs the
log-space forward pass, ``O(m² n)`` time and ``O(m n)`` memory (after the ``O(n log n)``
sort); each draw costs ``O(m n)`` (backward sampling of the gap tuple, then sorted uniforms
inside the gaps).  :meth:`JointExpRelease.gap_tuple_log_probabilities` gives the exact law of
the gap tuples and :meth:`JointExpRelease.marginal_cdf` the exact marginal cdfs, both by
enumerating the gap tuples (small data only; for the privacy audit and the tests).

Marginal of coordinate ``j`` given the gap tuple ``t``: the ``k`` outputs sharing ``t_j``'s gap
``[e_g, e_{g+1}]`` are ``k`` sorted uniforms there and ``o_j`` is the ``r``-th of them
(``r = j - s + 1``, ``s`` the first output of the run), so
``P(o_j <= x | t) = I_{(x - e_g)/(e_{g+1} - e_g)}(r, k - r + 1)`` (a Beta(r, k - r + 1) cdf),
0 left of the gap and 1 right of it; ``P(o_j <= x) = Σ_t P(t) P(o_j <= x | t)``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from mechanisms.core.registration import register
from mechanisms.core.validation import check_rng, check_size
from mechanisms.multi import joint_exp_sampler as jes
from mechanisms.multi.base import MultiQuantileMechanism
from mechanisms.multi.release import QuantilesRelease

ENUMERATION_LIMIT = 200_000
"""Most gap tuples :meth:`JointExpRelease.marginal_cdf` and
:meth:`JointExpRelease.gap_tuple_log_probabilities` enumerate (beyond: ``NotImplementedError``)."""


class JointExpRelease(QuantilesRelease):
    """The JointExp output law on one dataset: the forward pass, sampled exactly."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        alphas: tuple[float, ...],
        epsilon: float,
        neighbouring: str,
    ) -> None:
        self._set_common(sorted_x, lower, upper, alphas)
        self.epsilon = float(epsilon)
        self.neighbouring = neighbouring
        self.sensitivity = jes.utility_sensitivity(np.array(alphas), neighbouring)
        self._forward = jes.joint_exp_forward(
            sorted_x, lower, upper, np.array(alphas), epsilon, neighbouring
        )

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        with np.errstate(under="ignore"):  # negligible terms underflow, as in the sampler
            gaps = jes._sample_gap_tuples(self._forward, size, rng)
            return jes._place_in_gaps(gaps, self._forward.edges, rng)

    def _enumerable(self) -> None:
        count = math.comb(self.n + self.m, self.m)  # non-decreasing m-tuples of n + 1 gaps
        if count > ENUMERATION_LIMIT:
            raise NotImplementedError(
                f"JointExp's exact law is enumerated over its {count} gap tuples only up to "
                f"{ENUMERATION_LIMIT} (small data)"
            )

    def gap_tuple_log_probabilities(self) -> dict[tuple[int, ...], float]:
        """``log P(gap tuple)`` for every non-decreasing tuple of gap indices ``0..n``, the law
        of the sampler's gap tuples (gap ``g = [x_(g), x_(g+1)]``, ``x_(0) = lower``,
        ``x_(n+1) = upper``); small data only (:data:`ENUMERATION_LIMIT`)."""
        self._enumerable()
        edges = self._forward.edges
        return jes.gap_tuple_log_probabilities(
            edges[1:-1],
            self.lower,
            self.upper,
            np.array(self.alphas),
            self.epsilon,
            self.neighbouring,
        )

    def marginal_cdf(self, j: int, x: np.ndarray | float) -> np.ndarray:
        """``P(o_j <= x)`` exactly, by enumeration of the gap tuples (module docstring)."""
        j = self._check_level(j)
        points = np.atleast_1d(np.asarray(x, dtype=np.float64))
        edges = self._forward.edges
        out = np.zeros(points.shape)
        for t, log_p in self.gap_tuple_log_probabilities().items():
            if log_p == -math.inf:
                continue
            g = t[j]
            first = next(i for i in range(self.m) if t[i] == g)
            k, r = t.count(g), j - first + 1
            left, right = edges[g], edges[g + 1]
            u = np.clip((points - left) / (right - left), 0.0, 1.0)
            out += math.exp(log_p) * special.betainc(r, k - r + 1, u)
        return np.clip(out, 0.0, 1.0)


@register
class JointExp(MultiQuantileMechanism):
    """The joint exponential mechanism for m quantiles (module docstring); ε-DP.

    Options: ``alphas`` or ``m`` (at most :data:`mechanisms.multi.joint_exp_sampler.MAX_LEVELS`
    levels), ``neighbours`` (``"add_remove"``, default, or ``"replace_one"``).
    """

    name = "joint_exp"
    display_name = "JointExp"

    def source(self) -> str:
        delta_u = jes.utility_sensitivity(np.array(self.alphas), self.neighbouring.value)
        proof = (
            "the paper's swap sensitivity"
            if self.neighbouring.value == "replace_one"
            else "2(1 - min_j (alpha_j - alpha_{j-1})), derived in "
            "mechanisms.multi.joint_exp_sampler"
        )
        return (
            'JointExp of Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles" '
            '(ICML 2021): the exponential mechanism (McSherry & Talwar, "Mechanism Design via '
            f'Differential Privacy", FOCS 2007) with utility sensitivity {delta_u:g} ({proof})'
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        return JointExpRelease(
            sorted_x, lower, upper, self.alphas, self.epsilon, self.neighbouring.value
        )
