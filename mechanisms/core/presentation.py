"""How figures and tables draw a mechanism: declared by its class, read by the reports.

A built-in class sets ``figure = FigureStyle(...)`` (its colour, marker and place in
the drawing order, and the facts about it that change how it is drawn), and
``figure_variants`` for option values that make a separately named variant
(``laplace_ln`` with ``target="approx_dp"`` is "LaplaceLN, (ε, δ)-matched").  The
names come from the class's ``display_name`` (a variant's from its own ``name``).
A class without a ``figure`` (a plug-in, say) is drawn in a colour and marker chosen
from its label (:mod:`experiments.reports.style`).  The Duff paper, section 6, names
the baselines SmoothSens_ε, SmoothSens_ε,δ and LaplaceLN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class FigureStyle:
    """The look of a class (or of one variant of it) in every figure and table."""

    colour: str
    marker: str
    order: int
    """Place in the drawing order of the built-ins (legends, tables)."""
    tuned: bool = False
    """Has a private ("public") and a non-private ("oracle") tuning of its parameters,
    drawn dashed and plain."""
    smooth: bool = False
    """Noise scaled to a smooth sensitivity: its replace-one variant is named after
    Nissim, Raskhodnikova & Smith's (NRS07) replace-one smooth sensitivity."""
    fixed_neighbouring: bool = False
    """Defined for one neighbouring relation only: never drawn as a replace-one variant."""
    key: str = ""
    """A variant's key in the reports (a class's own style: "", its registry name)."""
    name: str = ""
    """A variant's display name (a class's own style: "", its ``display_name``)."""
    options: Mapping[str, object] = field(default_factory=dict)
    """Option values that make the variant (all recorded in run.json)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
