"""OpenDP's m quantiles at once: a composition of its quantile measurements, one per level.

What the library offers (OpenDP 0.16, feature ``"contrib"``): no measurement for several
quantiles at once outside its Polars front end, whose ``quantile`` expressions are each a
``make_private_quantile`` composed with the others.  The adapter builds that composition
directly: ``opendp.combinators.make_composition`` of the m measurements
``make_private_quantile(candidates, α_j, scale_j)`` on the same data (the library's
documentation: "Construct the DP composition [measurement0, measurement1, ...] ... basic:
the composition is the linear sum of the privacy usage of each query"), invoked once per
output row; each level is :mod:`mechanisms.peers.opendp_quantile`'s measurement (permute-and-
flip over ``candidates`` equally spaced points of ``[a, b]``, McKenna & Sheldon,
"Permute-and-Flip: A New Mechanism for Differentially Private Selection", NeurIPS 2020).

ε split: every level at ``ε/(m·d_in)`` for one added or removed record (its scale from
:func:`mechanisms.peers.opendp_quantile.certified_scale`), where ``d_in`` is the symmetric
distance of a neighbour: 1 for add/remove, 2 for replace-one (a replacement deletes one
record and inserts another).  The library's composed privacy map at ``d_in`` is checked at
every release to be at most ε (basic composition: the sum of the m levels' maps, each
``d_in·ε/(m·d_in)``).  So the rows are ε-DP for the chosen ``neighbours``.

Output law: the levels draw independently (each from OpenDP's own secure generator), so
coordinate j of the sorted row has the order-statistic cdf of the m exact per-level laws
(:class:`mechanisms.peers.opendp_quantile.OpenDPRelease`).  The generator cannot be seeded:
the ``rng`` given to ``sample`` is checked but unused, and the rows are not reproducible bit
for bit.
"""

from __future__ import annotations

import numpy as np

from mechanisms.core.registration import register
from mechanisms.core.validation import check_integer
from mechanisms.multi.base import Levels
from mechanisms.multi.release import QuantilesRelease
from mechanisms.peers import require
from mechanisms.peers.opendp_quantile import (
    MAX_CANDIDATES,
    OpenDPRelease,
    certified_scale,
)
from mechanisms.peers.quantiles import PeerQuantiles, PeerQuantilesRelease

SELECTION = "permute_and_flip"
"""OpenDP's pure-DP selection (output measure ``max_divergence``), the one composed here."""


@register
class OpenDPQuantiles(PeerQuantiles):
    """OpenDP's quantile measurements composed over the levels; ε-DP (module docstring).

    Options: ``alphas`` or ``m``, ``neighbours`` (``"add_remove"``, OpenDP's symmetric
    distance 1, or ``"replace_one"``, distance 2) and ``candidates`` (equally spaced grid
    points on ``[a, b]``, >= 2).
    """

    name = "opendp_quantiles"
    display_name = "OpenDP per level"
    library = "opendp"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alphas: Levels = None,
        m: int | None = None,
        neighbours: str = "add_remove",
        candidates: int = 100_001,
    ) -> None:
        super().__init__(
            epsilon=epsilon, delta=delta, bounding=bounding, alphas=alphas, m=m,
            neighbours=neighbours,
        )  # fmt: skip
        self.candidates = check_integer(candidates, "candidates", minimum=2, maximum=MAX_CANDIDATES)
        require("opendp", self.name)
        self.per_level = self.level_epsilon(self.d_in)
        for alpha in self.alphas:
            certified_scale(alpha, self.per_level, SELECTION)  # ValueError out of range

    def source(self) -> str:
        return (
            f"OpenDP make_composition of {self.m} make_private_quantile measurements "
            f"(permute-and-flip, max_divergence), each at epsilon = {self.per_level:.6g} per "
            f"record, symmetric_distance d_in = {self.d_in}: basic composition (the library's "
            "privacy map, checked at every release)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        grid = np.linspace(lower, upper, self.candidates)
        if not (np.diff(grid) > 0).all():
            raise ValueError(
                f"candidates: {self.candidates} grid points on [{lower!r}, {upper!r}] repeat"
            )
        levels = [
            OpenDPRelease(
                sorted_x,
                lower,
                upper,
                alpha=alpha,
                epsilon=self.per_level,
                candidates=grid,
                selection=SELECTION,
            )
            for alpha in self.alphas
        ]
        dp = require("opendp.prelude", self.name)
        composition = dp.c.make_composition([level.measurement for level in levels])
        certified = float(composition.map(self.d_in))
        if certified > self.epsilon * (1 + 1e-9):
            raise RuntimeError(
                f"OpenDP certifies epsilon {certified!r} for d_in = {self.d_in}, above the "
                f"stated {self.epsilon!r}"
            )
        data = sorted_x.tolist()

        def rows(size: int, rng: np.random.Generator) -> np.ndarray:
            return np.array([composition(data) for _ in range(size)], dtype=np.float64)

        return PeerQuantilesRelease(sorted_x, lower, upper, self.alphas, rows, levels)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, candidates={self.candidates})"
