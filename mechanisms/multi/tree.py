"""Quantiles read from a noisy hierarchical histogram (a quantile tree).

The shape of the quantile tree of Google's differential-privacy library
(``BoundedQuantiles``; as reimplemented in google-research ``dp_multiq/tree.py`` for
Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021), itself the
range tree for rank queries of Chan, Shi & Song, "Private and Continual Release of
Statistics" (ICALP 2010, section 7.2).

Counts.  ``[a, b]`` is cut into ``B^h`` equal leaves (branching factor ``B``, height ``h``;
options ``branching`` and ``height``); a point ``x`` falls in leaf
``min(floor((x - a) / (b - a) · B^h), B^h - 1)``.  Level ``ℓ = 1..h`` holds the ``B^ℓ`` counts of
the nodes at depth ℓ (each the sum of its ``B`` children); the root's count (``n``) is not
released.  Every node count gets independent noise:

* ``tree_quantiles``: Laplace of scale ``Δ₁ / ε``, ``Δ₁ = h`` (add/remove: one count per
  level moves by 1) or ``2h`` (replace-one: two counts per level, when the old and new points
  fall in different nodes); the Laplace mechanism (Dwork, McSherry, Nissim & Smith,
  "Calibrating Noise to Sensitivity in Private Data Analysis", TCC 2006): **ε-DP**;
* ``tree_quantiles_gaussian``: Gaussian of the σ of the analytic Gaussian mechanism (Balle &
  Wang, "Improving the Gaussian Mechanism for Differential Privacy", ICML 2018) for the L2
  sensitivity ``Δ₂ = √h`` (add/remove) or ``√(2h)`` (replace-one): **(ε, δ)-DP**.  (Google's
  code calibrates to ``Δ₁``, which is larger: more noise than needed.)

The guarantee is that of the whole noisy tree (the levels compose: the sensitivities above
are of all h levels together); the quantiles are post-processing.

Read-out rule (:func:`read_out`).  Clamp every noisy count at 0 (``ĉ = max(0, c + noise)``).
For level α: start at the root with ``q = α``; at a node whose children have clamped counts
``ĉ_1..ĉ_B`` with prefix sums ``C_k`` (``C_0 = 0``) and total ``T = C_B``: if ``T = 0`` stop;
otherwise go to the first child ``k`` with ``C_k >= q T`` (so ``ĉ_k > 0``) with
``q ← (q T - C_{k-1}) / ĉ_k`` (clipped to ``[0, 1]``).  At a leaf, or where it stopped, output
``left + q · width`` of the node.  Google's rule, without its ``1e-6`` tolerance and with
clamped counts (so ``q`` stays in ``[0, 1]``); the output is non-decreasing in α, so rows are
sorted without sorting.

Sampling.  The read-out only looks at the children of the nodes it visits, so a draw noises
just those (at most ``m B`` counts per level, shared by the levels that visit the same node):
the same law as noising the whole tree, since the node noises are independent.  Release:
``O(n + B^h)`` (bin the data, sum up the levels; the data need no sort, but the base class
sorts them, ``O(n log n)``); a draw ``O(m h B)``.  ``marginal_cdf`` has no exact form here
(``NotImplementedError``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.registration import register
from mechanisms.core.validation import check_integer, check_rng, check_size
from mechanisms.multi.base import Levels, MultiQuantileMechanism
from mechanisms.multi.release import QuantilesRelease
from mechanisms.noise.gaussian import analytic_gaussian_sigma

MAX_LEAVES = 1 << 24
"""Most leaves ``B^h`` (the counts are dense arrays)."""


def count_sensitivity(height: int, neighbouring: Neighbouring, norm: int) -> float:
    """``Δ₁`` (``norm = 1``: h or 2h) or ``Δ₂`` (``norm = 2``: √h or √(2h)) of the h levels."""
    per_level = 2 if neighbouring is Neighbouring.REPLACE_ONE else 1
    return float(per_level * height) if norm == 1 else math.sqrt(per_level * height)


def level_counts(
    sorted_x: np.ndarray, lower: float, upper: float, branching: int, height: int
) -> list[np.ndarray]:
    """The exact counts of levels ``1..h`` (a list, level ℓ of size ``B^ℓ``), from the leaves."""
    leaves = branching**height
    position = np.floor((sorted_x - lower) / (upper - lower) * leaves)
    index = np.minimum(position, leaves - 1).astype(np.int64)
    counts = [np.bincount(index, minlength=leaves).astype(np.float64)]
    for _ in range(height - 1):
        counts.append(counts[-1].reshape(-1, branching).sum(axis=1))
    return counts[::-1]


def clamp(counts: np.ndarray) -> np.ndarray:
    """``max(0, count)``: the read-out's clamped noisy counts (post-processing)."""
    return np.maximum(counts, 0.0)


class Descent:
    """The state of the read-out rule for an array of (tree, level) pairs (module docstring)."""

    def __init__(self, alphas: np.ndarray, shape: tuple[int, ...]) -> None:
        self.q = np.broadcast_to(np.asarray(alphas, dtype=np.float64), shape).copy()
        self.node = np.zeros(shape, dtype=np.int64)  # index of the current node in its level
        self.depth = np.zeros(shape, dtype=np.int64)  # the current node's level (root: 0)
        self.active = np.ones(shape, dtype=bool)

    def step(self, children: np.ndarray, branching: int) -> None:
        """Descend one level, given the (unclamped) noisy counts of the current nodes'
        children, shape ``(*shape, B)``."""
        c = clamp(children)
        cum = np.cumsum(c, axis=-1)
        total = cum[..., -1]
        go = self.active & (total > 0)
        target = self.q * total
        k = np.minimum(np.sum(cum < target[..., None], axis=-1), branching - 1)
        below = np.take_along_axis(cum, np.maximum(k - 1, 0)[..., None], axis=-1)[..., 0]
        before = np.where(k > 0, below, 0.0)
        chosen = np.take_along_axis(c, k[..., None], axis=-1)[..., 0]
        ratio = np.divide(target - before, chosen, out=np.zeros_like(target), where=go)
        self.q = np.where(go, np.clip(ratio, 0.0, 1.0), self.q)
        self.node = np.where(go, self.node * branching + k, self.node)
        self.depth = np.where(go, self.depth + 1, self.depth)
        self.active = go

    def values(self, lower: float, upper: float, branching: int) -> np.ndarray:
        """``left + q · width`` of the node each level ended at."""
        width = (upper - lower) / np.power(float(branching), self.depth)
        return np.minimum(lower + (self.node + self.q) * width, upper)


def read_out(
    noisy: list[np.ndarray], alphas: np.ndarray, lower: float, upper: float, branching: int
) -> np.ndarray:
    """The m quantiles of the read-out rule (module docstring) from one noisy tree
    (``noisy[ℓ - 1]``: the ``B^ℓ`` counts of level ℓ, unclamped)."""
    descent = Descent(np.asarray(alphas, dtype=np.float64), (len(alphas),))
    for counts in noisy:
        children = descent.node[:, None] * branching + np.arange(branching)
        descent.step(counts[children], branching)
    return descent.values(lower, upper, branching)


def visit_keys(tree: np.ndarray, node: np.ndarray, parents: int) -> np.ndarray:
    """``tree · parents + node``: one key per visited node of each tree, so the levels that
    visit the same node of the same tree read the same noisy counts."""
    return tree * parents + node


class TreeRelease(QuantilesRelease):
    """The noisy tree on one dataset: exact counts held, noise drawn per sample."""

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        alphas: tuple[float, ...],
        *,
        branching: int,
        height: int,
        noise: str,
        scale: float,
    ) -> None:
        self._set_common(sorted_x, lower, upper, alphas)
        self.branching, self.height, self.noise, self.noise_scale = branching, height, noise, scale
        self.counts = level_counts(sorted_x, self.lower, self.upper, branching, height)

    def draw_noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Independent noise for ``shape`` node counts (Laplace or Gaussian of the scale)."""
        if self.noise == "laplace":
            return rng.laplace(0.0, self.noise_scale, size=shape)
        return rng.normal(0.0, self.noise_scale, size=shape)

    def noisy_counts(self, rng: np.random.Generator) -> list[np.ndarray]:
        """One whole noisy tree (unclamped counts, levels ``1..h``): the released statistic."""
        return [c + self.draw_noise(rng, c.shape) for c in self.counts]

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """The read-out rule on ``size`` independent noisy trees, noising only the visited
        nodes' children (once per tree, shared by its levels; module docstring)."""
        size, rng = check_size(size), check_rng(rng)
        b, m = self.branching, self.m
        descent = Descent(np.array(self.alphas), (size, m))
        tree = np.repeat(np.arange(size, dtype=np.int64), m)
        for exact in self.counts:
            parents = exact.size // b  # nodes of the level above
            keys = visit_keys(tree, descent.node.ravel(), parents)
            unique, inverse = np.unique(keys, return_inverse=True)
            children = (unique % parents)[:, None] * b + np.arange(b)
            noisy = exact[children] + self.draw_noise(rng, children.shape)
            descent.step(noisy[inverse].reshape(size, m, b), b)
        return descent.values(self.lower, self.upper, b)


@register
class TreeQuantiles(MultiQuantileMechanism):
    """Quantiles from a noisy quantile tree (module docstring).  Options: ``alphas`` or ``m``,
    ``neighbours``, ``branching`` (``B >= 2``, default 16) and ``height`` (``h >= 1``,
    default 4; Google's defaults), with ``B^h <= 2^24``."""

    name = "tree_quantiles"
    display_name = "Tree (Laplace)"
    noise: ClassVar[str] = "laplace"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alphas: Levels = None,
        m: int | None = None,
        neighbours: str = "add_remove",
        branching: int = 16,
        height: int = 4,
    ) -> None:
        super().__init__(
            epsilon=epsilon,
            delta=delta,
            bounding=bounding,
            alphas=alphas,
            m=m,
            neighbours=neighbours,
        )
        self.branching = check_integer(branching, "branching", minimum=2)
        self.height = check_integer(height, "height", minimum=1)
        if self.branching**self.height > MAX_LEAVES:
            raise ValueError(
                f"branching, height: at most {MAX_LEAVES} leaves, got "
                f"{self.branching}^{self.height}"
            )
        self.noise_scale = self.scale()

    def scale(self) -> float:
        """Laplace scale ``Δ₁ / ε``."""
        return count_sensitivity(self.height, self.neighbouring, 1) / self.epsilon

    def source(self) -> str:
        sensitivity = count_sensitivity(self.height, self.neighbouring, 1)
        return (
            f'Laplace mechanism (Dwork, McSherry, Nissim & Smith, "Calibrating Noise to '
            f'Sensitivity in Private Data Analysis", TCC 2006) on the {self.height} levels of a '
            f"{self.branching}-ary quantile tree (Google differential-privacy library's "
            f'BoundedQuantiles; Chan, Shi & Song, "Private and Continual Release of '
            f'Statistics"), L1 sensitivity {sensitivity:g}, scale {self.noise_scale:.6g}; '
            "quantiles read out by post-processing"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        return TreeRelease(
            sorted_x,
            lower,
            upper,
            self.alphas,
            branching=self.branching,
            height=self.height,
            noise=self.noise,
            scale=self.noise_scale,
        )


@register
class TreeQuantilesGaussian(TreeQuantiles):
    """:class:`TreeQuantiles` with Gaussian noise of the analytic Gaussian σ: (ε, δ)-DP."""

    name = "tree_quantiles_gaussian"
    display_name = "Tree (Gaussian)"
    noise = "gaussian"
    requires_delta = True

    def scale(self) -> float:
        """The analytic Gaussian σ for ``Δ₂`` (Balle & Wang 2018)."""
        sensitivity = count_sensitivity(self.height, self.neighbouring, 2)
        return analytic_gaussian_sigma(self.epsilon, self.required_delta, sensitivity)

    def source(self) -> str:
        sensitivity = count_sensitivity(self.height, self.neighbouring, 2)
        return (
            f'analytic Gaussian mechanism (Balle & Wang, "Improving the Gaussian Mechanism for '
            f'Differential Privacy", ICML 2018) on the {self.height} levels of a '
            f"{self.branching}-ary quantile tree (Google differential-privacy library's "
            f"BoundedQuantiles), L2 sensitivity {sensitivity:.6g}, sigma {self.noise_scale:.6g}; "
            "quantiles read out by post-processing"
        )
