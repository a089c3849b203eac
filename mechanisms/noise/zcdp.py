"""Noise calibrated in zero-concentrated DP, and the conversion of zCDP to (ε, δ)-DP."""

from __future__ import annotations

import math
import sys
from typing import Any, ClassVar

from mechanisms.core.guarantee import Guarantee
from mechanisms.core.validation import check_choice
from mechanisms.noise.additive import NoiseMechanism, log_ratio

MAX_CDP_EPSILON = math.sqrt(sys.float_info.max)
"""About 1.34e154: above it ``ε_c²`` (hence ``ρ = ε_c²/2``) overflows float64."""


TARGETS = ("zcdp", "approx_dp")


def zcdp_to_dp(rho: float, delta: float) -> float:
    """ε' with ρ-zCDP ⇒ (ε', δ)-DP: ``ρ + 2√(ρ log(1/δ))`` (Bun & Steinke 2016, Prop. 1.3).

    ``inf`` if ε' overflows float64; ``√ρ·√log(1/δ)`` where only the product overflows.
    """
    log_inv_delta = log_ratio(1.0, delta)
    product = rho * log_inv_delta
    root = math.sqrt(product) if product < math.inf else math.sqrt(rho) * math.sqrt(log_inv_delta)
    return rho + 2.0 * root


def cdp_epsilon_for(epsilon: float, delta: float) -> float:
    """The CDP parameter ε_c whose ``ε_c²/2``-zCDP converts to exactly (ε, δ)-DP.

    ``ε_c = 2ε/(√(2L) + √(2L + 2ε))`` (``L = log(1/δ)``), written as
    ``√2·ε/(√L + √(L + ε))`` where ``2ε`` overflows.
    """
    log_inv_delta = log_ratio(1.0, delta)
    if epsilon < sys.float_info.max / 4:
        two_l = 2.0 * log_inv_delta
        return 2.0 * epsilon / (math.sqrt(two_l) + math.sqrt(two_l + 2.0 * epsilon))
    return (
        math.sqrt(2.0) * epsilon / (math.sqrt(log_inv_delta) + math.sqrt(log_inv_delta + epsilon))
    )


def log_cdp_epsilon_for(epsilon: float, delta: float) -> float:
    """``log ε_c`` of :func:`cdp_epsilon_for`, accurate also where ε_c is subnormal."""
    two_l = 2.0 * log_ratio(1.0, delta)
    return math.log(2.0 * epsilon) - math.log(math.sqrt(two_l) + math.sqrt(two_l + 2.0 * epsilon))


class ZCDPNoiseMechanism(NoiseMechanism):
    """LaplaceLN noise calibrated in zero-concentrated DP, shared by the median's
    :class:`LaplaceLogNormal` and the trimmed mean's
    :class:`mechanisms.mean.trimmed_mean.TrimmedMeanLaplaceLN`.

    Option ``target``: ``"zcdp"`` (the CDP parameter ``ε_c`` is ``epsilon`` itself,
    ρ = ε_c²/2) or ``"approx_dp"`` (the ``ε_c`` whose zCDP guarantee converts to exactly
    (ε, δ)-DP, :func:`cdp_epsilon_for`); ``ValueError`` when ρ overflows float64.  The
    guarantee is ρ-zCDP reported as (ε', δ)-DP (:func:`zcdp_to_dp`), flagged as not
    covering the release when the parameters are tuned on the private data.
    """

    requires_delta = True
    tuning: str
    zcdp_source: ClassVar[str]
    """The guarantee's ``source``: the noise and the zCDP-to-DP conversion, with references."""

    def __init__(
        self, *, epsilon: float, delta: float | None = None, target: str = "zcdp", **options: Any
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, **options)
        self.target = check_choice(target, TARGETS, "target")
        cdp_epsilon = self.epsilon
        if self.target == "approx_dp":
            cdp_epsilon = cdp_epsilon_for(self.epsilon, self.required_delta)
        if not cdp_epsilon <= MAX_CDP_EPSILON:
            raise ValueError(
                f"epsilon: {self.name}'s zCDP parameter rho = eps_c²/2 overflows float64 for a "
                f"CDP epsilon eps_c above {MAX_CDP_EPSILON:.4g} (target={self.target!r}), "
                f"got epsilon={self.epsilon!r}"
            )
        self.cdp_epsilon = cdp_epsilon

    @property
    def guarantee(self) -> Guarantee:
        rho = 0.5 * self.cdp_epsilon**2
        return Guarantee(
            epsilon=zcdp_to_dp(rho, self.required_delta),
            delta=self.required_delta,
            neighbouring=self.neighbouring,
            rho=rho,
            data_dependent_tuning=self.tuned_on_data,
            source=self.zcdp_source,
        )
