"""The peers' multi-quantile entry points: their common base class and release.

Each library answers m quantiles at once through its own entry point (one call per output
row): OpenDP's composition of per-level quantile measurements
(:mod:`mechanisms.peers.opendp_quantiles`), diffprivlib's ``tools.quantile`` with an array of
quantiles (:mod:`~mechanisms.peers.diffprivlib_quantiles`), Tumult Core's ``Composition`` of
per-level ``NoisyQuantile`` (:mod:`~mechanisms.peers.tumult_quantiles`) and Google's quantile
tree, one noisy tree for every level (:mod:`~mechanisms.peers.google_dp_quantiles`).

A :class:`PeerQuantiles` is a :class:`mechanisms.multi.base.MultiQuantileMechanism` (levels
``alphas`` or ``m``, ``neighbours``, ε; the statistic ``"quantiles"``) and a
:class:`mechanisms.peers.PeerMechanism` (listed by ``mechanisms.available()`` only when its
``library`` is installed; ``get``/``make`` otherwise raise an ``ImportError`` naming the
extra).  Its release (:class:`PeerQuantilesRelease`) sorts each row the library returns
(post-processing: the guarantee is the vector's), so rows are non-decreasing as the harness
requires of every m-quantiles method.  Where the library draws the levels independently from
laws known exactly (the three per-level compositions), ``marginal_cdf`` is the order-statistic
cdf of those laws (:func:`mechanisms.multi.release.order_statistic_cdf`); elsewhere (the
tree) it raises ``NotImplementedError`` and the black-box audit covers the release.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Release
from mechanisms.core.sorted_data import SortedData
from mechanisms.core.validation import check_rng, check_size
from mechanisms.multi.base import MultiQuantileMechanism
from mechanisms.multi.release import QuantilesRelease, order_statistic_cdf
from mechanisms.peers import PeerMechanism

Rows = Callable[[int, np.random.Generator], np.ndarray]
"""``rows(size, rng)``: ``size`` rows of m values from the library (unsorted), shape
``(size, m)``."""


class PeerQuantilesRelease(QuantilesRelease):
    """A library's m quantiles on one dataset: its rows, sorted; exact marginals from the
    per-level releases ``levels`` when the library draws the levels independently."""

    library_failures: int = 0
    """Rows the library could not draw, drawn from the exact per-level laws instead
    (diffprivlib's, :mod:`mechanisms.peers.diffprivlib_quantiles`)."""

    def __init__(
        self,
        sorted_x: SortedData,
        lower: float,
        upper: float,
        alphas: tuple[float, ...],
        rows: Rows,
        levels: Sequence[Release] = (),
    ) -> None:
        self._set_common(sorted_x, lower, upper, alphas)
        self._rows, self._levels = rows, tuple(levels)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` library calls, each row sorted (post-processing)."""
        size, rng = check_size(size), check_rng(rng)
        out = np.array(self._rows(size, rng), dtype=np.float64).reshape(size, self.m)
        out.sort(axis=1)
        return out

    def marginal_cdf(self, j: int, x: np.ndarray | float) -> np.ndarray:
        """``P(o_j <= x)``: at least ``j + 1`` of the independent levels are ``<= x``, each
        with its exact cdf; ``NotImplementedError`` when the levels are not independent."""
        j = self._check_level(j)
        if not self._levels:
            return super().marginal_cdf(j, x)
        points = np.atleast_1d(np.asarray(x, dtype=np.float64))
        cdfs = np.array([np.asarray(level.cdf(points), dtype=np.float64) for level in self._levels])
        return order_statistic_cdf(cdfs, j)


class PeerQuantiles(MultiQuantileMechanism, PeerMechanism):
    """Base of the peers' multi-quantile entry points (module docstring)."""

    def level_epsilon(self, d_in: int) -> float:
        """Each level's ε for one added/removed record, when m levels at this ε make the
        vector ε-DP for ``d_in`` such changes (``d_in = 2``: a replacement): ``ε/(m d_in)``,
        basic composition (Dwork & Roth, "The Algorithmic Foundations of Differential
        Privacy", Theorem 3.16) and group privacy (their Theorem 2.2)."""
        return self.epsilon / (self.m * d_in)

    @property
    def d_in(self) -> int:
        """Records a neighbour changes: 1 (add/remove) or 2 (replace-one: one removal and
        one addition, the libraries' symmetric distance 2)."""
        return 2 if self.neighbouring is Neighbouring.REPLACE_ONE else 1
