"""High-probability error bounds as data, and their exact coverage on one release."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mechanisms.core.validation import check_open_unit


@dataclass(frozen=True)
class Bound:
    """A ``(1 − η)`` bound on one release: ``P(quantity <= value) >= 1 − η``.

    ``quantity`` is :data:`ABS_ERROR` (``|M(S) − T(S)|``, data units) or
    :data:`RANK_ERROR` (``|#{x_i <= M(S)} − αq·n|``, points).  ``abs_error`` is
    the bound in data units (equal to ``value`` for absolute-error bounds).
    ``name`` identifies the bound (:data:`BOUND_NAMES`), ``source`` cites it and
    ``details`` holds the intermediate quantities (C, γ, β, W, SS, ...).
    """

    mechanism: str
    name: str
    source: str
    eta: float
    quantity: str
    value: float
    abs_error: float
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))


DEFAULT_ETA = 0.05


ABS_ERROR = "abs_error"


RANK_ERROR = "rank_error"


def check_eta(eta: float) -> float:
    """Return ``eta`` as a float, or raise ``ValueError`` unless it lies in (0, 1)."""
    return check_open_unit(eta, "eta")
