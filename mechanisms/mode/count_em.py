"""The exponential mechanism for the mode with the count utility ``u(y, S) = n_y``.

McSherry & Talwar, "Mechanism design via differential privacy": with a utility of
sensitivity ``Δu``, ``P(y) ∝ exp(ε·u(y, S)/(2Δu))`` is ε-DP.  The count ``n_y`` has
sensitivity 1 under add/remove neighbours, so the general form is
``P(y) ∝ exp(ε·n_y/2)``: the same distribution as Duff for the mode
(:mod:`mechanisms.mode.duff`, ``u = n_y - n_max``; the constant cancels).

Monotone utility (``monotone=True``, the default): ``P(y) ∝ exp(ε·n_y)`` is also
ε-DP, a factor 2 better (Dwork & Roth, "The Algorithmic Foundations of Differential
Privacy", section 3.4, use ``ε/Δu`` for monotone utilities and ``ε/(2Δu)``
otherwise).  Proof, for add/remove neighbours ``S' = S ∪ {z}``: ``n'_y = n_y + [y = z]``,
so with ``Z_S = Σ_y exp(ε·n_y)``,

    Z_{S'} = Z_S + (e^ε - 1)·exp(ε·n_z)  ∈  [Z_S, e^ε·Z_S]

(the added term is at most ``(e^ε - 1)·Z_S``).  Hence

    P_{S'}(y)/P_S(y) = exp(ε·[y = z])·Z_S/Z_{S'}  ∈  [e^{-ε}, e^{ε}]:

for ``y = z`` the ratio is ``e^ε·Z_S/Z_{S'} ∈ [1, e^ε]``, otherwise
``Z_S/Z_{S'} ∈ [e^{-ε}, 1]``.  Both directions of the neighbouring are covered (the
bound is symmetric), so the mechanism is ε-DP.  With ``exp(2ε·n_y)`` the ratio for
``y = z`` reaches ``e^{2ε}·Z_S/Z_{S'}``, close to ``e^{2ε}`` when ``z`` carries a
small share of ``Z``: not ε-DP (the planted bug of the privacy tests).

Replace-one neighbours move two counts in opposite directions, so the count is not
monotone there; this class states add/remove neighbours only.

Sampling and exact probabilities: :func:`mechanisms.mode.release.exponential_mechanism`.
"""

from __future__ import annotations

import numpy as np

from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.core.validation import check_choice, check_flag
from mechanisms.mode.release import SAMPLERS, ModeMechanism, ModeRelease, exponential_mechanism
from mechanisms.sampling.piecewise import score_epsilon


@register
class CountEM(ModeMechanism):
    """The exponential mechanism with utility ``n_y``; ε-DP for add/remove neighbours.

    Options: ``monotone`` (default True: ``P ∝ exp(ε·n_y)``, the monotone-utility
    analysis; False: ``exp(ε·n_y/2)``, the general one, identical to Duff for the
    mode) and ``sampler`` (``"inverse_cdf"`` or the Duff paper's ``"racing"``).
    """

    name = "count_em"
    display_name = "EM (counts)"
    figure = FigureStyle("#17becf", "D", 6)
    figure_variants = (
        FigureStyle(
            "#6a3d9a",
            "d",
            7,
            key="count_em_halved",
            name="EM (counts), ε/2 as Duff",
            options={"monotone": False},
        ),
    )

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        monotone: bool = True,
        sampler: str = "inverse_cdf",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.monotone = check_flag(monotone, "monotone")
        self.sampler = check_choice(sampler, SAMPLERS, "sampler")

    def source(self) -> str:
        analysis = (
            "monotone utility: exp(ε·n_y) (proof in mechanisms.mode.count_em)"
            if self.monotone
            else "exp(ε·n_y/2), sensitivity 1"
        )
        return f"exponential mechanism (McSherry & Talwar) with u = n_y; {analysis}"

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ModeRelease:
        factor = 1.0 if self.monotone else 0.5
        scale = factor * score_epsilon(self.epsilon, sorted_x.size)
        return exponential_mechanism(sorted_x, lower, upper, scale, self.sampler)

    def __repr__(self) -> str:
        return f"CountEM(epsilon={self.epsilon:g}, monotone={self.monotone})"
