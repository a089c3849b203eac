"""Every neighbouring pair of small datasets over a few values, for exhaustive privacy checks."""

from __future__ import annotations

import itertools
from collections.abc import Sequence


def small_neighbour_pairs(
    values: Sequence[float], neighbours: str, max_size: int
) -> list[tuple[list[float], list[float]]]:
    """``(x, x')`` for every sorted multiset ``x`` of at most ``max_size`` of ``values`` and
    each neighbour ``x'`` (sorted): ``x`` with one value added (``"add_remove"``; the pair
    read backwards is the removal), or with one entry replaced by a value (``"replace_one"``)."""
    pairs = []
    for n in range(max_size + 1):
        for xs in itertools.combinations_with_replacement(values, n):
            if neighbours == "add_remove":
                pairs += [(list(xs), sorted([*xs, v])) for v in values]
            else:
                for i, v in itertools.product(range(n), values):
                    pairs.append((list(xs), sorted([*xs[:i], v, *xs[i + 1 :]])))
    return pairs
