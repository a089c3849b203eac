"""The built-in mechanism families: what the figures and tables call each mechanism.

A :class:`Family` is one registry name narrowed by some option values (``laplace_ln``
with ``target: approx_dp`` is "LaplaceLN, (ε, δ)-matched"), with the name, colour and
marker every figure gives it.  Each class declares its own (``display_name``,
``figure``, ``figure_variants``: :mod:`mechanisms.core.presentation`);
:data:`FAMILIES` collects those of the built-in classes in drawing order, and
:mod:`experiments.reports.style` picks a mechanism's family from ``run.json`` and
derives its look.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mechanisms import registry


@dataclass(frozen=True)
class Family:
    """Mechanisms drawn alike: one registry name, narrowed by some option values."""

    key: str
    registry_name: str
    name: str
    colour: str
    marker: str
    options: Mapping[str, object] = field(default_factory=dict)
    """Option values that define the family (all must be recorded in run.json)."""
    tuned: bool = False
    """Has a private ("public") and a non-private ("oracle") tuning of its parameters."""
    smooth: bool = False
    """Noise scaled to a smooth sensitivity (replace-one neighbours: NRS07's)."""
    fixed_neighbouring: bool = False
    """Defined for one neighbouring relation only (the confidence intervals of
    :mod:`mechanisms.intervals`): never drawn or named as a replace-one variant."""


def builtin_families() -> tuple[Family, ...]:
    """The families the built-in classes declare (``figure`` and ``figure_variants``,
    :mod:`mechanisms.core.presentation`), in their drawing order."""
    declared: list[tuple[int, Family]] = []
    for cls in registry.registered().values():
        if cls.__module__ not in registry.builtin_modules():
            continue
        styles = ((cls.figure,) if cls.figure else ()) + cls.figure_variants
        for look in styles:
            family = Family(
                key=look.key or cls.name,
                registry_name=cls.name,
                name=look.name or cls.display_name or cls.name,
                colour=look.colour,
                marker=look.marker,
                options=dict(look.options),
                tuned=look.tuned,
                smooth=look.smooth,
                fixed_neighbouring=look.fixed_neighbouring,
            )
            declared.append((look.order, family))
    return tuple(family for _, family in sorted(declared, key=lambda entry: entry[0]))


FAMILIES: tuple[Family, ...] = builtin_families()
"""The built-in families, in drawing order."""


def family(key: str) -> Family:
    """The built-in family with :attr:`Family.key` ``key``."""
    for candidate in FAMILIES:
        if candidate.key == key:
            return candidate
    raise ValueError(f"family: no built-in family {key!r}")
