"""Google's quantile tree answering m quantiles at once (python-dp ``compute_quantiles``).

What the library computes: :mod:`mechanisms.peers.google_dp_quantile` describes the tree, its
noise and its read-out rule.  ``QuantileTree.compute_quantiles(ε, δ, 1, 1, [α_1..α_m],
"laplace")`` makes one ``Privatized`` tree (``MakePrivate``) and reads every requested
quantile from it (python-dp's binding loops ``GetQuantile`` over the list on the same
privatized tree, whose noisy counts are drawn once per node and cached: ``GetNoisedCount``).
Google's ``quantile-tree.h``: "This algorithm can be used to calculate an arbitrarily large
number of quantiles with no loss in accuracy or additional expenditure of privacy budget"
(write-up: ``common_docs/Differentially_Private_Quantile_Trees.pdf``).  One call is one row.

ε split: none.  The whole noisy tree is the released statistic (Laplace noise of scale
``h/ε_lib`` on every count, L1 sensitivity ``h`` for one added or removed record: ε_lib-DP,
add/remove, the guarantee the library documents for ``max_partitions_contributed = 1`` and
``max_contributions_per_partition = 1``), and the m quantiles are post-processing of it.
``neighbours="replace_one"`` calls it with ``ε_lib = ε/2`` (a replacement is a removal and an
addition: group privacy, Dwork & Roth, Theorem 2.2), the noise scale ``2h/ε`` of L1
sensitivity 2h.

Output law: no closed form (``marginal_cdf`` raises ``NotImplementedError``; the black-box
audit covers it).  The library's generator cannot be seeded: the ``rng`` given to ``sample``
is checked but unused, and the rows are not reproducible bit for bit.  Each row is sorted
(post-processing; the read-out is non-decreasing in α up to its 1e-6 tolerance).
"""

from __future__ import annotations

import numpy as np

from mechanisms.core.registration import register
from mechanisms.multi.base import Levels
from mechanisms.multi.release import QuantilesRelease
from mechanisms.peers import require
from mechanisms.peers.google_dp_quantile import check_tree, quantile_tree
from mechanisms.peers.quantiles import PeerQuantiles, PeerQuantilesRelease


@register
class GoogleDPQuantiles(PeerQuantiles):
    """Google's quantile tree read at every level; ε-DP (module docstring).

    Options: ``alphas`` or ``m``, ``neighbours`` (``"add_remove"``, the library's, or
    ``"replace_one"`` at ε/2), ``height`` (default 4) and ``branching`` (default 16): Google's
    defaults, at most ``2**31 - 1`` nodes.
    """

    name = "google_dp_quantiles"
    display_name = "Google quantile tree"
    library = "pydp"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alphas: Levels = None,
        m: int | None = None,
        neighbours: str = "add_remove",
        height: int = 4,
        branching: int = 16,
    ) -> None:
        super().__init__(
            epsilon=epsilon, delta=delta, bounding=bounding, alphas=alphas, m=m,
            neighbours=neighbours,
        )  # fmt: skip
        require(self.library, self.name)
        self.library_epsilon = self.epsilon / self.d_in
        self.height, self.branching = check_tree(self.library_epsilon, height, branching)

    def source(self) -> str:
        return (
            f"Google differential-privacy QuantileTree (python-dp compute_quantiles, one "
            f"privatized tree for all {self.m} levels) at epsilon = {self.library_epsilon:.6g}: "
            f"Laplace noise on the counts of a {self.branching}-ary tree of height "
            f"{self.height}, L1 sensitivity height (add/remove one record; quantile-tree.h "
            f"MakePrivate), d_in = {self.d_in} record(s) by group privacy"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        tree = quantile_tree(sorted_x, lower, upper, self.height, self.branching)
        compute, epsilon, quantiles = (
            tree.compute_quantiles,
            self.library_epsilon,
            list(self.alphas),
        )

        def rows(size: int, rng: np.random.Generator) -> np.ndarray:
            return np.array(
                [compute(epsilon, 0.0, 1, 1, quantiles, "laplace") for _ in range(size)],
                dtype=np.float64,
            )

        return PeerQuantilesRelease(sorted_x, lower, upper, self.alphas, rows)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, height={self.height}, branching={self.branching})"
