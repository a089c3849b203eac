"""Privacy guarantees as data: the neighbouring relation and the (ε, δ) / zCDP guarantee."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mechanisms.core.validation import check_choice


class Neighbouring(enum.StrEnum):
    """Which datasets count as neighbours in the privacy definition."""

    ADD_REMOVE = "add_remove"
    """S' is S with one element added or removed (Duff paper, Definition 1)."""
    REPLACE_ONE = "replace_one"
    """S' is S with one element replaced by another (same size)."""


@dataclass(frozen=True)
class Guarantee:
    """A mechanism's privacy guarantee, as data.

    ``epsilon`` and ``delta`` are the (ε, δ)-DP guarantee the mechanism
    satisfies (``delta == 0`` for pure DP).  For mechanisms analysed in
    zero-concentrated DP, ``rho`` is the ρ-zCDP guarantee and (ε, δ) is what it
    was converted to.  ``data_dependent_tuning`` is True when parameters were
    chosen by optimising over the private data (the Duff paper's "oracle"
    choice), in which case the stated guarantee does **not** cover the release.
    """

    epsilon: float
    delta: float
    neighbouring: Neighbouring
    rho: float | None = None
    data_dependent_tuning: bool = False
    source: str = ""

    @property
    def kind(self) -> str:
        """``"pure"``, ``"approximate"`` or ``"zcdp"``."""
        if self.rho is not None:
            return "zcdp"
        return "pure" if self.delta == 0 else "approximate"

    def __str__(self) -> str:
        if self.rho is not None:
            core = f"{self.rho:.6g}-zCDP => ({self.epsilon:.6g}, {self.delta:.3g})-DP"
        elif self.delta == 0:
            core = f"{self.epsilon:.6g}-DP"
        else:
            core = f"({self.epsilon:.6g}, {self.delta:.3g})-DP"
        text = f"{core}, {self.neighbouring.value} neighbours"
        if self.data_dependent_tuning:
            text += ", NOT private: parameters tuned on the private data"
        return text


NEIGHBOURS = tuple(member.value for member in Neighbouring)


def check_neighbours(value: str) -> Neighbouring:
    """The ``neighbours`` option, ``"add_remove"`` or ``"replace_one"``, as a Neighbouring."""
    return Neighbouring(check_choice(value, NEIGHBOURS, "neighbours"))
