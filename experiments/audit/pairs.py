"""Neighbouring datasets for the privacy audit (:mod:`experiments.audit.exact`), and the
partition of the output space on which their release probabilities are compared.

Every dataset lies in ``[a, b] = [LOWER, UPPER] = [0, 10]``.  :func:`neighbour_pairs`
yields fixed tiny adversarial pairs (the empty dataset among them under
add/remove), then random datasets of every family (:data:`FAMILIES`) and size
up to ``max_size`` with every edit of the neighbouring relation in turn
(:data:`ADD_REMOVE_OPS` or :data:`REPLACE_OPS`), and optionally one large pair.
:func:`cdf_points` gives the cut points of the partition: ``(-inf, a)``, the
atom ``{a}``, ``cells`` equal cells of ``(a, b)`` refined at every data point
of both datasets (for pairs of at most :data:`REFINE_LIMIT` points), the atom
at ``b`` (precisely the cell ``(prev(b), b]``, ``prev`` = the next float down)
and ``(b, inf)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mechanisms.core.guarantee import Neighbouring

LOWER, UPPER = 0.0, 10.0
REFINE_LIMIT = 100_000
"""Partitions are refined at the data points only for pairs with at most this many."""

FAMILIES = ("normal", "uniform", "grid", "ties", "bounds", "bimodal", "spread")
ADD_REMOVE_OPS = (
    "add a",
    "add b",
    "add median",
    "add above median",
    "add below median",
    "add copy",
    "add random",
    "remove min",
    "remove max",
    "remove median",
    "remove random",
)
REPLACE_OPS = (
    "min -> b",
    "max -> a",
    "median -> a",
    "median -> b",
    "random -> random",
    "random -> copy",
)


def dataset(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """A dataset of size ``n`` inside ``[LOWER, UPPER]`` from one of the :data:`FAMILIES`."""
    mid, width = (LOWER + UPPER) / 2, UPPER - LOWER
    x: np.ndarray
    if family == "normal":
        x = rng.normal(mid, width / 7, n)
    elif family == "uniform":
        x = rng.uniform(LOWER, UPPER, n)
    elif family == "grid":  # ties, and points on both bounds
        x = rng.integers(0, 11, n) * (width / 10) + LOWER
    elif family == "ties":  # 80% tied at the middle (diffprivlib #107)
        x = np.where(rng.random(n) < 0.8, mid, rng.uniform(LOWER, UPPER, n))
    elif family == "bounds":
        x = np.where(rng.random(n) < 0.5, LOWER, UPPER)
    elif family == "bimodal":
        x = np.where(rng.random(n) < 0.5, LOWER + 0.2 * width, LOWER + 0.8 * width)
        x = x + rng.normal(0.0, width / 30, n)
    else:  # "spread": wider than the bounds, many points clipped onto them
        x = rng.normal(mid, 2 * width, n)
    return np.clip(x, LOWER, UPPER)


def neighbour(x: np.ndarray, op: str, rng: np.random.Generator) -> np.ndarray:
    """Apply one edit (``op`` from ``ADD_REMOVE_OPS`` or ``REPLACE_OPS``) to sorted ``x``."""
    median_index = (x.size - 1) // 2
    median = x[median_index] if x.size else (LOWER + UPPER) / 2
    values = {
        "a": LOWER,
        "b": UPPER,
        "median": median,
        "above median": min(np.nextafter(median, np.inf), UPPER),
        "below median": max(np.nextafter(median, -np.inf), LOWER),
        "copy": x[rng.integers(x.size)] if x.size else LOWER,
        "random": rng.uniform(LOWER, UPPER),
    }
    if op.startswith("add "):
        return np.sort(np.append(x, values[op[4:]]))
    positions = {"min": 0, "max": x.size - 1, "median": median_index}
    if op.startswith("remove "):
        return np.delete(x, positions.get(op[7:], rng.integers(max(x.size, 1))))
    source, target = op.split(" -> ")
    y = x.copy()
    y[positions.get(source, rng.integers(x.size))] = values[target]
    return np.sort(y)


@dataclass(frozen=True)
class Pair:
    """Two neighbouring datasets (sorted) and how they were made."""

    first: np.ndarray
    second: np.ndarray
    label: str


def neighbour_pairs(
    rng: np.random.Generator,
    neighbouring: Neighbouring,
    count: int,
    max_size: int,
    large: int = 0,
) -> Iterator[Pair]:
    """Fixed tiny adversarial pairs, random datasets with every edit in turn, and
    (if ``large``) one normal dataset of that size with a point added at ``b``
    (replaced by ``b`` under replace-one)."""
    a, b, mid = LOWER, UPPER, (LOWER + UPPER) / 2
    replace = neighbouring is Neighbouring.REPLACE_ONE
    if replace:
        tiny = [([a], [b]), ([a, b], [b, b]), ([mid], [a]), ([a, a, b], [a, b, b])]
    else:
        tiny = [
            ([], [a]), ([], [b]), ([], [mid]), ([a], [a, a]), ([a], [a, b]),
            ([b], [a, b]), ([mid], [mid, mid]), ([a, b], [a, a, b]),
        ]  # fmt: skip
    for first, second in tiny:
        yield Pair(np.array(first, float), np.array(second, float), f"{first} vs {second}")
    ops = REPLACE_OPS if replace else ADD_REMOVE_OPS
    for k in range(max(count - len(tiny), 0)):
        family = FAMILIES[k % len(FAMILIES)]
        op = ops[(k // len(FAMILIES)) % len(ops)]
        n = int(np.exp(rng.uniform(0.0, math.log(max_size))))
        if op.startswith("remove") or replace:
            n = max(n, 1)
        x = np.sort(dataset(rng, family, n))
        yield Pair(x, neighbour(x, op, rng), f"{family} n={n}: {op}")
    if large:
        x = np.sort(dataset(rng, "normal", large))
        op = "min -> b" if replace else "add b"
        yield Pair(x, neighbour(x, op, rng), f"normal n={large}: {op}")


def cdf_points(pair: Pair, cells: int) -> np.ndarray:
    """Cut points whose cdf differences give the partition described in the module doc."""
    below_b = np.nextafter(UPPER, -np.inf)
    inner = np.linspace(LOWER, UPPER, cells + 1)[1:-1]
    if pair.first.size + pair.second.size <= REFINE_LIMIT:
        inner = np.concatenate([inner, pair.first, pair.second])
    inner = np.unique(inner[(inner > LOWER) & (inner < below_b)])
    return np.concatenate([[np.nextafter(LOWER, -np.inf), LOWER], inner, [below_b, UPPER]])
