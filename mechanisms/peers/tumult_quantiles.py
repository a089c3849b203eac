"""Tumult Core's m quantiles at once: a ``Composition`` of its ``NoisyQuantile``, one per level.

What the library offers (Tumult Core 0.20): no joint quantile measurement; its quantile is
``NoisyQuantile`` (:mod:`mechanisms.peers.tumult_quantile`), and
``tmlt.core.measurements.composition.Composition`` runs several measurements of the same
input domain, metric and output measure on the same data ("Describes a measurement
constructed by composing two or more Measurements"; its ``privacy_function(d_in)`` "Returns
the sum of the privacy_function's of the composed measurements").  The adapter composes the
m levels' ``NoisyQuantile`` with ``PureDP`` and calls the composition once per output row.

ε split: every level at ``ε/(m·d_in)`` (the exact binary value of that float), where
``d_in`` is the ``SymmetricDifference`` of a neighbour: 1 for add/remove, 2 for replace-one
(one record out, one in).  The composition's ``privacy_function(d_in)`` is checked at every
release to be at most ε, so the rows are ε-DP for the chosen ``neighbours`` (basic
composition, Dwork & Roth, Theorem 3.16).

Output law: the levels draw independently from Tumult's own generator, each from the exact
exponential-mechanism law of :func:`mechanisms.peers.tumult_quantile.tumult_em`; coordinate j
of the sorted row has their order-statistic cdf.  The generator cannot be seeded: the
``rng`` given to ``sample`` is checked but unused, and the rows are not reproducible bit for
bit.  Each level costs what one ``tumult_quantile`` draw costs (13-27 µs per data point), and
Tumult Core is installed by hand (:data:`mechanisms.peers.tumult_quantile.INSTALL`).
"""

from __future__ import annotations

from importlib import import_module
from typing import ClassVar

import numpy as np

from mechanisms.core.registration import register
from mechanisms.multi.release import QuantilesRelease
from mechanisms.peers.quantiles import PeerQuantiles, PeerQuantilesRelease
from mechanisms.peers.tumult_quantile import TumultQuantile, TumultRelease, tumult_modules

COMPOSITION = "tmlt.core.measurements.composition"
"""Where Tumult's ``Composition`` lives."""


@register
class TumultQuantiles(PeerQuantiles):
    """Tumult Core's ``NoisyQuantile`` composed over the levels; ε-DP (module docstring).

    Options: ``alphas`` or ``m`` and ``neighbours`` (``"add_remove"``, Tumult's
    ``SymmetricDifference`` 1, or ``"replace_one"``, 2).
    """

    name = "tumult_quantiles"
    display_name = "Tumult per level"
    library: ClassVar[str] = TumultQuantile.library
    installed = TumultQuantile.installed
    check_installed = TumultQuantile.check_installed

    def _prepare(self) -> None:
        tumult_modules()
        self.per_level = self.level_epsilon(self.d_in)

    def source(self) -> str:
        return (
            f"Tumult Core 0.20 Composition of {self.m} NoisyQuantile (PureDP), each at "
            f"epsilon = {self.per_level:.6g} per record, SymmetricDifference d_in = "
            f"{self.d_in}: privacy_function = the sum of the levels' (basic composition, "
            "checked at every release)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        levels = [
            TumultRelease(sorted_x, lower, upper, alpha=alpha, epsilon=self.per_level)
            for alpha in self.alphas
        ]
        composition = import_module(COMPOSITION).Composition(
            [level.measurement for level in levels]
        )
        certified = composition.privacy_function(self.d_in).to_float(round_up=True)
        if certified > self.epsilon * (1 + 1e-12):
            raise RuntimeError(
                f"Tumult certifies epsilon {certified!r} for d_in = {self.d_in}, above the "
                f"stated {self.epsilon!r}"
            )
        series = levels[0].series

        def rows(size: int, rng: np.random.Generator) -> np.ndarray:
            return np.array([composition(series) for _ in range(size)], dtype=np.float64)

        return PeerQuantilesRelease(sorted_x, lower, upper, self.alphas, rows, levels)
