"""Google's DP quantile tree (C++ ``QuantileTree``, through python-dp's ``pydp``) as a mechanism.

What the library computes (python-dp 1.1, ``pydp.algorithms.quantile_tree.QuantileTree``:
a pybind11 binding of ``cc/algorithms/quantile-tree.h`` of google/differential-privacy,
the algorithm its ``cc/docs/algorithms/quantiles.md`` recommends over the deprecated
order statistics ``Percentile``/``Median``, which ``pydp.algorithms.laplacian`` still
exposes; write-up: ``common_docs/Differentially_Private_Quantile_Trees.pdf``).
``QuantileTree(lower, upper, tree_height, branching_factor)`` holds the counts of a
``B``-ary tree of height ``h`` over ``B^h`` equal leaves of ``[a, b]`` (``add_entry``
clamps a point to ``[a, b]`` and counts it in leaf ``floor((x - a)/(b - a)·(B^h - 1))``
and in every ancestor but the root).  ``compute_quantiles(ε, δ,
max_partitions_contributed, max_contributions_per_partition, [alpha], "laplace")``
makes a fresh ``Privatized`` tree (``MakePrivate``: Laplace noise of L0 sensitivity
``max_partitions_contributed·h`` and L∞ sensitivity
``max_contributions_per_partition``, i.e. scale ``h/ε`` here, added lazily to the
counts the search reads and kept as integers) and descends from the root: at each
node it drops the children whose noisy count is below ``0.005`` of their total,
walks to the child holding the ``alpha`` fraction (tolerance ``1e-6``) with the
rescaled fraction, and returns the linear interpolation of the leaf (or of the node
where all children look empty) at that fraction.  ``alpha`` is first clamped to
``[0.005, 0.995]`` (``ClampQuantile``: "mitigates the inaccuracy ... close to 0 or
1"), so ``alpha = 0.001`` estimates the 0.005-quantile.  Options ``height`` and
``branching`` default to the C++ library's ``kDefaultTreeHeight = 4`` and
``kDefaultBranchingFactor = 16`` (65 536 leaves; python-dp has no defaults).

Privacy.  Google's library bounds contributions instead of naming a neighbouring
relation (``cc/docs/algorithms/algorithm.md``: ``max_partitions`` and
``max_contributions`` per privacy unit, which "the caller must guarantee"; the
Laplace mechanism is then ε-DP for adding or removing one privacy unit with at most
that many records).  The adapter passes ``max_partitions_contributed = 1`` and
``max_contributions_per_partition = 1`` (one record per person, one partition) and
``δ = 0`` (the Laplace builder ignores δ; Gaussian noise, which needs δ in (0, 1), is
not exposed): adding or removing one record moves one count per level, L1
sensitivity ``h``, so each release is ε-DP for add/remove neighbours (replace-one:
2ε).  The library's "secure" Laplace noise is sampled on a granularity grid (Google's
"Secure Noise Generation" note) with its ε-DP claim.

Output distribution: a post-processing of noisy counts with thresholds, no closed
form, so :meth:`GoogleDPRelease.cdf` raises ``NotImplementedError`` (the black-box
audit covers it).  Sampling: each draw is one ``compute_quantiles`` call, a fresh
noisy tree: independent draws.  The noise comes from the C++ library's secure
generator, which cannot be seeded: the ``rng`` given to :meth:`GoogleDPRelease.sample`
is checked but unused.  A call copies the count tree (at most ``B + B² + ... + B^h``
nodes: 69 904 by default, about 1.1 MB), so a draw costs 0.2 ms at n = 10³ and 3-9 ms
from n = 10⁵ on; the release adds the points one ``add_entry`` call each (~0.65 µs per
point: 0.6 s at n = 10⁶, 7 s at 10⁷).

Refused parameters (public, so ``ValueError`` before any data are read): ε below
``2**-50`` (the library's ``Epsilon must be at least 2^-50``), ``height < 1``,
``branching < 2``, and trees of more than ``2**31 - 1`` nodes (its node indices are C
``int``: ``16^8`` leaves hang the library).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Release
from mechanisms.core.quantiles import check_alpha, quantile_value
from mechanisms.core.registration import register
from mechanisms.core.validation import check_integer, check_rng, check_size
from mechanisms.peers import PeerMechanism, require

MIN_EPSILON = 2.0**-50
"""The smallest ε the library's Laplace mechanism accepts."""
MAX_NODES = 2**31 - 1
"""Most nodes ``(B^(h+1) - 1)/(B - 1)`` of a tree (C ``int`` indices)."""
QUANTILE_CLAMP = (0.005, 0.995)
"""The library's ``ClampQuantile``: requested quantiles are moved into this range."""


def quantile_tree(
    sorted_x: np.ndarray, lower: float, upper: float, height: int, branching: int
) -> Any:
    """python-dp's ``QuantileTree`` of ``[lower, upper]`` holding the data (one ``add_entry``
    call per point)."""
    trees = require("pydp.algorithms.quantile_tree", GoogleDPQuantile.name)
    tree = trees.QuantileTree(lower, upper, height, branching)
    deque(map(tree.add_entry, sorted_x.tolist()), maxlen=0)
    return tree


def check_tree(epsilon: float, height: object, branching: object) -> tuple[int, int]:
    """``(height, branching)`` checked as the library needs them, with the ε it will be
    called with (module docstring, "Refused parameters"); ``ValueError`` naming each."""
    if epsilon < MIN_EPSILON:
        raise ValueError(f"epsilon: the library needs epsilon >= 2**-50, got {epsilon!r}")
    h = check_integer(height, "height", minimum=1)
    b = check_integer(branching, "branching", minimum=2)
    if (b ** (h + 1) - 1) // (b - 1) > MAX_NODES:
        raise ValueError(
            f"height, branching: at most {MAX_NODES} nodes (the library's int indices), "
            f"got {b}^{h} leaves"
        )
    return h, b


class GoogleDPRelease(Release):
    """Google's quantile tree on one dataset: library draws, no closed-form cdf."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        *,
        alpha: float,
        epsilon: float,
        height: int,
        branching: int,
    ) -> None:
        self.lower, self.upper, self.n = float(lower), float(upper), int(sorted_x.size)
        self.alpha, self.epsilon = alpha, epsilon
        self.true_value = quantile_value(sorted_x, alpha, lower)
        self._tree = quantile_tree(sorted_x, self.lower, self.upper, height, branching)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` calls of ``compute_quantiles``, each a fresh noisy tree (the library's own
        generator; ``rng`` is checked, unused)."""
        size = check_size(size)
        check_rng(rng)
        compute, quantiles = self._tree.compute_quantiles, [self.alpha]
        out = np.empty(size)
        for j in range(size):
            out[j] = compute(self.epsilon, 0.0, 1, 1, quantiles, "laplace")[0]
        return out

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """Not available: noisy counts post-processed with thresholds have no closed form."""
        raise NotImplementedError(
            "google_dp_quantile: the quantile tree's output law has no closed form"
        )


@register
class GoogleDPQuantile(PeerMechanism):
    """Google's DP quantile tree (python-dp); ε-DP, add/remove neighbours.

    Options: ``alpha`` (the quantile; 0.5 = median; the library clamps it to
    ``[0.005, 0.995]``), ``height`` (``h >= 1``, default 4) and ``branching``
    (``B >= 2``, default 16), Google's defaults, with at most ``2**31 - 1`` nodes.
    """

    name = "google_dp_quantile"
    statistics = frozenset({"median", "quantile"})
    library = "pydp"
    neighbouring = Neighbouring.ADD_REMOVE

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alpha: float = 0.5,
        height: int = 4,
        branching: int = 16,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        require(self.library, self.name)
        self.height, self.branching = check_tree(self.epsilon, height, branching)
        self.alpha = check_alpha(alpha)

    def source(self) -> str:
        return (
            f"Google differential-privacy QuantileTree (python-dp compute_quantiles): Laplace "
            f"noise on the counts of a {self.branching}-ary tree of height {self.height}, "
            "L0 sensitivity height x max_partitions_contributed = 1, Linf sensitivity "
            "max_contributions_per_partition = 1 (quantile-tree.h MakePrivate)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return GoogleDPRelease(
            sorted_x,
            lower,
            upper,
            alpha=self.alpha,
            epsilon=self.epsilon,
            height=self.height,
            branching=self.branching,
        )

    def __repr__(self) -> str:
        return (
            f"GoogleDPQuantile(epsilon={self.epsilon:g}, alpha={self.alpha:g}, "
            f"height={self.height}, branching={self.branching})"
        )
