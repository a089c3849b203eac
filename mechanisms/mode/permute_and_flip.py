"""Permute-and-flip for the mode: the counts as quality scores.

McKenna & Sheldon, "Permute-and-Flip: A new mechanism for differentially private
selection" (NeurIPS 2020): visit the candidates in a uniformly random order and
return candidate ``r`` with probability ``p_r = exp(ε·(q_r - q*)/(2Δ))``
(``q* = max q``; the best candidate has ``p = 1``, so one pass ends it).  ε-DP, and
its expected error is never worse than the exponential mechanism's (their
comparison with the exponential mechanism).  Here ``q_y = n_y`` over ``Y``, ``Δ = 1``.

Equivalence used to sample and to compute the probabilities.  Ding, Kifer,
Saghaian N. E., Steinke, Wang, Xiao & Zhang, "The Permute-and-Flip Mechanism is
Identical to Report-Noisy-Max with Exponential Noise" (2021): permute-and-flip with
``p_r = exp(ε(q_r - q*)/(2Δ))`` has the distribution of
``argmax_r q_r + E_r`` with ``E_r`` i.i.d. exponential of scale ``2Δ/ε``.  (Check:
with ``W_r`` i.i.d. uniform arrival times giving the random order, ``r`` is returned
with probability ``p_r ∫_0^1 Π_{j≠r}(1 - p_j w) dw``; with ``w = e^{-(t - q*)ε/(2Δ)}``
this is ``∫ f(t - q_r) Π_{j≠r} F(t - q_j) dt`` for the exponential law: the
report-noisy-max probability.)  So a draw is the noisy max of
:mod:`mechanisms.mode.report_noisy_max` with exponential noise (per level the largest of its
``m`` noises, in closed form, then a uniform value of the winning level: ``O(L)``
per draw, never ``O(|Y|)``), and the probabilities are its integrals, checked in the
tests against the literal procedure enumerated over all orders of small domains.

Monotone option (``monotone=True``, the default): ``p_r = exp(ε(q_r - q*)/Δ)``,
i.e. exponential noise of scale ``Δ/ε``.  McKenna & Sheldon's reference
implementation offers this ("monotonic") variant; its proof for counts under
add/remove neighbours, as Dwork & Roth's proof of report noisy max (Claim 3.9) with
exponential noise: let ``S' = S ∪ {z}``, so ``n'_z = n_z + 1`` and no other count
moves.  Fix the noise of every candidate but ``r``; ``r`` wins on ``S`` iff
``E_r > T_S = max_{j≠r}(n_j + E_j) - n_r``.  If ``r = z``, ``T_{S'} = T_S - 1``, and
if ``r != z``, ``T_S <= T_{S'} <= T_S + 1``.  For ``E`` exponential of scale ``b``,
``P(E > T - 1) <= e^{1/b} P(E > T)`` for every ``T``, so in both cases
``e^{-1/b} <= P_{S'}(r | E_{-r}) / P_S(r | E_{-r}) <= e^{1/b}``; averaging over
``E_{-r}`` and ``b = 1/ε`` gives ε-DP, for both orders of the pair.  (``monotone=False``
is the general mechanism, scale ``2/ε``.)
"""

from __future__ import annotations

import numpy as np

from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.core.validation import check_flag
from mechanisms.mode.release import ModeMechanism, ModeRelease
from mechanisms.mode.report_noisy_max import noisy_max_release
from mechanisms.noise.noisy_max import Noise, noise_scale


@register
class PermuteAndFlip(ModeMechanism):
    """Permute-and-flip over ``Y`` with quality ``n_y``; ε-DP for add/remove neighbours.

    Option ``monotone`` (default True: ``p = exp(ε(n_y - n_max))``; False:
    ``exp(ε(n_y - n_max)/2)``, the general form).  Sampled as report noisy max with
    exponential noise (module docstring).
    """

    name = "permute_and_flip"
    display_name = "Permute-and-flip"
    figure = FigureStyle("#ff7f0e", "s", 8)

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        monotone: bool = True,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.monotone = check_flag(monotone, "monotone")

    def source(self) -> str:
        variant = "monotone quality, p = exp(ε(q - q*))" if self.monotone else "ε/(2Δ)"
        return (
            "permute-and-flip (McKenna & Sheldon) with q = n_y, "
            f"{variant}; sampled as report noisy max with exponential noise "
            "(Ding et al. 2021)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ModeRelease:
        factor = 1.0 if self.monotone else 2.0
        noise = Noise("exponential", noise_scale(self.epsilon, sorted_x.size, factor))
        return noisy_max_release(sorted_x, lower, upper, noise)

    def __repr__(self) -> str:
        return f"PermuteAndFlip(epsilon={self.epsilon:g}, monotone={self.monotone})"
