"""The stability-based histogram for the mode of a huge or unknown domain; (ε, δ)-DP.

The stability-based histogram (Bun, Nissim & Stemmer, "Simultaneous private learning
of multiple concepts"; Vadhan, "The complexity of differential privacy", section 3,
stated there for neighbours that replace one record) adds noise only to the counts of
the values *present* in the data and releases those whose noisy count clears a
threshold; values absent from the data are never output, so the output does not
depend on the domain (beyond the bounding of the data to ``[a, b]`` and their rounding
by :mod:`mechanisms.core.domain`).  For the mode we output the value of the largest
released noisy count, or ⊥ (NaN) when none is released.

Variant implemented, derived here for add/remove neighbours: noise ``Lap(1/ε)`` on
each present count ``n_y`` and threshold

    τ = 1 + ln(1/(2δ))/ε        (τ = 1 when δ >= 1/2).

Proof.  Let ``S' = S ∪ {z}``.  (i) If ``z`` is present in ``S``, both datasets have
the same present values and their count vectors differ by 1 in one coordinate (ℓ₁
sensitivity 1), so the vector of noisy counts is ε-DP by the Laplace mechanism, and
thresholding and the argmax are post-processing.  (ii) If ``z`` is new, ``S'`` has
one more present value, with count 1, and every other noisy count has the same law
as on ``S``.  Unless the new noisy count ``1 + Lap(1/ε)`` reaches ``τ``, the output
is the same function of the shared noisy counts as on ``S``; it does with probability

    δ' = P(Lap(1/ε) >= τ - 1) = ½·exp(-ε(τ - 1)) = δ        (τ > 1; else 1/2 <= δ),

independently of the rest.  So ``P_{S'}(O) <= P_S(O) + δ'`` and
``P_{S'}(O) >= (1 - δ')·P_S(O)``, i.e. ``P_S(O) <= P_{S'}(O) + δ'``: (0, δ)-close.
Together: (ε, δ)-DP for add/remove neighbours.  (Vadhan's replace-one version moves
two counts, hence its noise ``Lap(2/ε)``.)  Output events are values and ⊥; the tests
check ``Σ_o (P_S(o) - e^ε P_{S'}(o))_+ <= δ`` over all of them, both ways.

Exact distribution: the noisy max over the present values only
(:func:`mechanisms.mode.report_noisy_max.noisy_max_release` with ``unseen=False``), whose
integrals start at ``τ``; ``P(⊥) = Π_y F(τ - n_y)`` (``F`` the Laplace cdf) in closed
form.  ε above ``2**40/(n + 1)`` is lowered to it
(:data:`mechanisms.noise.noisy_max.LOG_RANGE`); ``τ`` is then computed at that ε, so
``δ'`` is still ``δ``: (ε, δ)-DP holds.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.mode.release import ModeMechanism, ModeRelease
from mechanisms.mode.report_noisy_max import noisy_max_release
from mechanisms.noise.noisy_max import Noise, noise_scale


def release_threshold(scale: float, delta: float) -> float:
    """``τ = 1 + b·max(0, ln(1/(2δ)))`` for noise ``Lap(b)``: a new value's count (1) is
    released with probability exactly ``min(δ, 1/2)`` (module docstring)."""
    return 1.0 + scale * max(0.0, -math.log(2.0 * delta))


@register
class StabilityHistogram(ModeMechanism):
    """The largest released noisy count of the stability-based histogram, or ⊥ (NaN);
    (ε, δ)-DP for add/remove neighbours (module docstring)."""

    name = "stability_histogram"
    display_name = "Stability histogram"
    figure = FigureStyle("#d62728", "v", 10)
    requires_delta: ClassVar[bool] = True
    may_refuse: ClassVar[bool] = True

    guarantee_source = (
        "stability-based histogram (Bun, Nissim & Stemmer; Vadhan), Lap(1/ε) on "
        "present counts, threshold 1 + ln(1/(2δ))/ε (add/remove derivation in "
        "mechanisms.mode.stability_histogram)"
    )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ModeRelease:
        scale = noise_scale(self.epsilon, sorted_x.size)
        threshold = release_threshold(scale, self.required_delta)
        noise = Noise("laplace", scale)
        return noisy_max_release(sorted_x, lower, upper, noise, threshold=threshold, unseen=False)
