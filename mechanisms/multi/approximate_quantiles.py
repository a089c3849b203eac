"""ApproximateQuantiles: the recursive algorithm of Kaplan, Schnapp & Stemmer.

Source: Kaplan, Schnapp & Stemmer, "Differentially Private Approximate Quantiles"
(ICML 2022), algorithm ApproximateQuantiles.  For levels ``α_1 < ... < α_m`` on the domain
``[a, b]`` with data ``X``:

1. take the middle level ``p = α_i``, ``i = ceil(m/2)``, and draw ``v`` from the
   single-quantile exponential mechanism for the ``p``-quantile of ``X`` on ``[a, b]`` (the
   registry's ``quantile_em``, add/remove sensitivity ``max(p, 1 - p)``, at the per-depth ε');
2. recurse on the levels below, rescaled to ``α_j / p`` (``j < i``), with the data
   ``{x ∈ X : x < v}`` on ``[a, v]``, and on the levels above, rescaled to
   ``(α_j - p) / (1 - p)`` (``j > i``), with the data ``{x ∈ X : x > v}`` on ``[v, b]``;
3. output ``v`` as the estimate of ``α_i`` and the recursive outputs for the others.

The outputs are non-decreasing by construction (each subtree's outputs lie in its domain).
The split structure and every rescaled level depend only on the public levels, so the whole
recursion tree of configured single-quantile mechanisms is built once, at construction.  A
subtree whose domain has zero width (``v`` drawn exactly at an end) outputs that end.

Privacy (the paper's analysis, stated precisely).  The recursion tree has depth
``D = ceil(log2(m + 1))`` (a balanced split of m levels); every call at depth ``d`` runs at
``ε' = ε / D`` (add/remove neighbours) or ``ε' = ε / (2D)`` (replace-one neighbours).
Add/remove: given the outputs of depths ``< d``, the calls at depth ``d`` see disjoint subsets
of ``X`` (the points strictly between consecutive released values), so an added or removed
point changes at most one of them by one point; each call is ε'-DP under add/remove (its own
n may change), their coins are independent, so depth ``d`` is ε'-DP (parallel composition),
and the D depths compose adaptively to ``D ε' = ε``: **ε-DP for add/remove neighbours**.
Replace-one: a replaced point may leave one call's subset and join another's, i.e. two
add/remove steps, so the same mechanism is ``2 D ε'``-DP; with ``ε' = ε / (2D)``: **ε-DP for
replace-one neighbours** (group privacy of the add/remove guarantee; derived here).

Exact law: a mixture over the recursion's intermediate outputs, not computed
(``marginal_cdf`` raises ``NotImplementedError``).

Complexity: the release sorts once (``O(n log n)``).  A draw walks the m calls, each a
single-quantile release on a contiguous slice of the sorted data found by binary search
(``O(window + log n)``), so ``O(m (window + log n))`` per draw, with a Python-level loop over
the m calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.registration import configure, get, register
from mechanisms.core.validation import check_rng, check_size
from mechanisms.multi.base import MultiQuantileMechanism
from mechanisms.multi.release import QuantilesRelease


def recursion_depth(m: int) -> int:
    """``ceil(log2(m + 1))``: the depth of the balanced recursion tree over m levels."""
    return max(1, (m).bit_length())  # = ceil(log2(m + 1)) for every m >= 1


def depth_epsilon(epsilon: float, m: int, neighbouring: Neighbouring) -> float:
    """ε' per call: ``ε / D`` (add/remove) or ``ε / (2D)`` (replace-one), D the depth."""
    share = 2 if neighbouring is Neighbouring.REPLACE_ONE else 1
    return epsilon / (share * recursion_depth(m))


def rescale_below(levels: tuple[float, ...], p: float) -> tuple[float, ...]:
    """``α / p``: the levels below ``p`` as levels of the data below the split."""
    return tuple(a / p for a in levels)


def rescale_above(levels: tuple[float, ...], p: float) -> tuple[float, ...]:
    """``(α - p) / (1 - p)``: the levels above ``p`` as levels of the data above the split."""
    return tuple((a - p) / (1.0 - p) for a in levels)


@dataclass(frozen=True)
class Node:
    """One call of the recursion: the output index it estimates, its rescaled level, its
    configured single-quantile mechanism and its children (indices into the node list)."""

    index: int
    level: float
    mechanism: Mechanism
    left: int | None
    right: int | None


def build_tree(alphas: tuple[float, ...], epsilon: float) -> list[Node]:
    """The recursion tree over the levels (module docstring), root first."""
    nodes: list[Node] = []
    single = get("quantile_em")

    def build(lo: int, hi: int, levels: tuple[float, ...]) -> int | None:
        if lo >= hi:
            return None
        mid = math.ceil(len(levels) / 2) - 1  # the ceil(m/2)-th level, 0-based
        p = levels[mid]
        position = len(nodes)
        nodes.append(Node(lo + mid, p, configure(single, epsilon=epsilon, alpha=p), None, None))
        left = build(lo, lo + mid, rescale_below(levels[:mid], p))
        right = build(lo + mid + 1, hi, rescale_above(levels[mid + 1 :], p))
        node = nodes[position]
        nodes[position] = Node(node.index, node.level, node.mechanism, left, right)
        return position

    build(0, len(alphas), alphas)
    return nodes


class ApproximateQuantilesRelease(QuantilesRelease):
    """The recursion on one dataset: each draw runs it once (module docstring)."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        alphas: tuple[float, ...],
        nodes: list[Node],
    ) -> None:
        self._set_common(sorted_x, lower, upper, alphas)
        self._x = sorted_x
        self._nodes = nodes

    def _draw(self, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(self.m)
        x = self._x
        # (node, domain lower, domain upper, data slice start, stop)
        stack = [(0, self.lower, self.upper, 0, x.size)]
        while stack:
            position, lo, hi, start, stop = stack.pop()
            node = self._nodes[position]
            if hi > lo:
                release = node.mechanism._release(x[start:stop], lo, hi)
                if not isinstance(release, Release):  # pragma: no cover - registry invariant
                    raise TypeError("quantile_em must release a point estimate")
                v = float(release.sample(1, rng)[0])
            else:  # zero-width domain: its only point (post-processing of released values)
                v = lo
            out[node.index] = v
            split_lo = start + int(np.searchsorted(x[start:stop], v, side="left"))
            split_hi = start + int(np.searchsorted(x[start:stop], v, side="right"))
            if node.right is not None:
                stack.append((node.right, v, hi, split_hi, stop))
            if node.left is not None:
                stack.append((node.left, lo, v, start, split_lo))
        return out

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        out = np.empty((size, self.m))
        for row in range(size):
            out[row] = self._draw(rng)
        return out


@register
class ApproximateQuantiles(MultiQuantileMechanism):
    """Kaplan, Schnapp & Stemmer's recursive ApproximateQuantiles (module docstring): ε-DP.

    Options: ``alphas`` or ``m``; ``neighbours`` (``"add_remove"``: ε / ceil(log2(m + 1)) per
    recursion depth; ``"replace_one"``: half that).
    """

    name = "approximate_quantiles"
    display_name = "ApproximateQuantiles"

    def _prepare(self) -> None:
        self.depth = recursion_depth(self.m)
        self.call_epsilon = depth_epsilon(self.epsilon, self.m, self.neighbouring)
        self.nodes = build_tree(self.alphas, self.call_epsilon)

    def source(self) -> str:
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            how = (
                "replace-one: a replaced point changes two calls' data per depth, so each "
                "call runs at epsilon / (2D) (group privacy of the add/remove guarantee)"
            )
        else:
            how = "add/remove: each call at epsilon / D"
        return (
            'ApproximateQuantiles of Kaplan, Schnapp & Stemmer, "Differentially Private '
            'Approximate Quantiles" (ICML 2022): parallel composition within each of the '
            f"D = {self.depth} recursion depths and adaptive sequential composition over them "
            f"({how}; epsilon' = {self.call_epsilon:.6g}); each call: "
            f"{self.nodes[0].mechanism.guarantee.source}"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        return ApproximateQuantilesRelease(sorted_x, lower, upper, self.alphas, self.nodes)
