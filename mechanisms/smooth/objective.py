"""The objective ``φ(β) = log SS_β + ψ(β)`` of the tuning searches: its penalty and minimum."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Penalty:
    """The data-independent part ``ψ`` of the objective, increasing in β.

    ``ψ`` must be concave on ``(0, inflection]`` and convex above;
    ``inverse_slope(k)`` is the point of the convex part where ``ψ' = k``, or
    any point left of where ``ψ' > k`` holds throughout (e.g. 0).
    """

    value: Callable[[np.ndarray], np.ndarray]
    inverse_slope: Callable[[np.ndarray], np.ndarray]
    inflection: float = 0.0


@dataclass(frozen=True)
class Minimum:
    """The minimiser ``beta`` of ``φ = log SS_β + ψ(β)`` and the value ``log_ss + penalty``."""

    beta: float
    log_ss: float
    penalty: float

    @property
    def objective(self) -> float:
        return self.log_ss + self.penalty
