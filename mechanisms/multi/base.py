"""The base class of the m-quantiles mechanisms: levels, neighbouring, statistic, guarantee.

Options common to every method (:class:`MultiQuantileMechanism`): ``alphas`` or ``m`` (the
levels, :func:`mechanisms.multi.release.check_levels`), ``neighbours`` (``"add_remove"`` or
``"replace_one"``: the relation the guarantee is stated for, and which fixes the
sensitivities), ε and, for the methods that need it, δ.  A class states its guarantee's source
by author and title in :meth:`MultiQuantileMechanism.source` (read by
:attr:`mechanisms.core.interface.Mechanism.guarantee`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from mechanisms.core.guarantee import NEIGHBOURS, check_neighbours
from mechanisms.core.interface import Mechanism
from mechanisms.core.validation import check_choice
from mechanisms.multi.release import QuantilesRelease, check_levels

Levels = Sequence[float] | np.ndarray | None


class MultiQuantileMechanism(Mechanism[QuantilesRelease]):
    """A mechanism releasing m quantiles at once (module docstring for the options)."""

    statistics: ClassVar[frozenset[str]] = frozenset({"quantiles"})
    neighbour_choices: ClassVar[tuple[str, ...]] = NEIGHBOURS
    """The neighbouring relations this class supports (both, for every method here)."""

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alphas: Levels = None,
        m: int | None = None,
        neighbours: str = "add_remove",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.alphas = check_levels(alphas, m)
        self.neighbouring = check_neighbours(
            check_choice(neighbours, self.neighbour_choices, "neighbours")
        )
        self._prepare()

    def _prepare(self) -> None:
        """What a method derives from its checked options (levels, ε, neighbouring) once,
        at construction: a subclass without options of its own overrides this rather than
        repeating ``__init__``'s signature (which is where its options are read from)."""

    @property
    def m(self) -> int:
        """The number of levels."""
        return len(self.alphas)

    def __repr__(self) -> str:
        delta = "" if self.delta is None else f", delta={self.delta:g}"
        levels = ", ".join(f"{a:g}" for a in self.alphas)
        return (
            f"{type(self).__name__}(epsilon={self.epsilon:g}{delta}, alphas=({levels}), "
            f"neighbours={self.neighbouring.value!r})"
        )
