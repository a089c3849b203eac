"""Plug-ins whose releases say one thing and do another (issue 26, finding 5).

``harness_claims`` is a Laplace median mechanism (``harness_laplace``) whose release
misbehaves as ``behaviour`` says:

* ``lying_refuser``: a quarter of its trials answer ⊥ (NaN) while its
  ``refusal_probability`` and cdf say it never refuses;
* ``honest_refuser``: refuses each trial with probability 1/4 and says so (its cdf's mass
  is ``3/4``), the control;
* ``refusal_above_one`` / ``refusal_nan``: a ``refusal_probability`` of 1.5 / NaN and a
  cdf it cannot compute (``NotImplementedError``), so the cdf check cannot catch it.

``harness_claims_mode`` estimates the mode with a release that promises no clipping
(``clip = False``) and outputs ``behaviour``: ``outside`` a value past the upper bound,
``fraction`` a non-integer inside the bounds, ``honest`` the truth.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from harness_mechanisms import ClippedNoiseRelease

from mechanisms import Guarantee, Mechanism, Neighbouring, Release, register
from mechanisms.core.domain import mode_value
from mechanisms.core.validation import check_rng, check_size

REFUSED = 0.25


class ClaimRelease(ClippedNoiseRelease):
    """A clipped Laplace release that refuses some trials as ``behaviour`` says."""

    def __init__(self, sorted_x: np.ndarray, lower: float, upper: float, behaviour: str) -> None:
        super().__init__(sorted_x, lower, upper, (upper - lower) / 2, "laplace", True)
        self.behaviour = behaviour
        claims = {"honest_refuser": REFUSED, "refusal_above_one": 1.5, "refusal_nan": math.nan}
        self.refusal_probability = claims.get(behaviour, 0.0)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        values = super().sample(size, rng)
        if self.behaviour == "lying_refuser":
            values[::4] = np.nan  # a quarter of the trials
        elif self.behaviour == "honest_refuser":
            values[rng.random(size) < REFUSED] = np.nan
        return values

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        if self.behaviour.startswith("refusal_"):
            raise NotImplementedError("no cdf")
        return (1.0 - self.refusal_probability) * super().cdf(x)


@register
class Claims(Mechanism):
    """A Laplace median mechanism whose release misbehaves (module docstring)."""

    name = "harness_claims"
    may_refuse: ClassVar[bool] = True

    def __init__(
        self, *, epsilon: float, delta: float | None = None, behaviour: str = "lying_refuser"
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta)
        self.behaviour = behaviour

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="Laplace mechanism")

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return ClaimRelease(sorted_x, lower, upper, self.behaviour)


class ModeClaimRelease(Release):
    """Outputs one value every time: the mode, or a value outside the finite domain."""

    clip = False  # "my outputs may leave [a, b]"

    def __init__(self, sorted_x: np.ndarray, lower: float, upper: float, behaviour: str) -> None:
        self.lower, self.upper, self.n = lower, upper, int(sorted_x.size)
        self.true_value = mode_value(sorted_x, lower)
        outputs = {"outside": upper + 1.0, "fraction": lower + 0.5, "honest": self.true_value}
        self.output = float(outputs[behaviour])

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        return np.full(size, self.output)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        return np.where(np.asarray(x, dtype=np.float64) >= self.output, 1.0, 0.0)


@register
class ModeClaims(Mechanism):
    """A mode "mechanism" whose output leaves the finite domain (module docstring)."""

    name = "harness_claims_mode"
    statistics: ClassVar[frozenset[str]] = frozenset({"mode"})

    def __init__(
        self, *, epsilon: float, delta: float | None = None, behaviour: str = "outside"
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta)
        self.behaviour = behaviour

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="none")

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return ModeClaimRelease(sorted_x, lower, upper, self.behaviour)
