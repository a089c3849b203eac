"""The same data under many public bounds: loose, tight, too narrow and off-centre.

:class:`BoundsGrid` is a synthetic dataset (``n`` i.i.d. draws of
``numpy.random.Generator.<distribution>(**params)`` per replicate, as
:class:`~experiments.data.datasets.SyntheticDataset`) given to the mechanisms under one
pair of bounds per subset::

    [c − R, c + R]   for every half-width R of ``half_widths`` and centre c of ``centres``

(subset ``"R=1e+02,c=0"``).  Every subset of a replicate holds the *same* draws: the
generator is keyed on the dataset's name and the replicate
(:func:`experiments.base.seeding.data_rng`), not on the subset, so the error of a
mechanism against log R is a paired comparison, and what changes along a line is the
bounds alone.

Bounds that cut the data (R below the data's spread, or an off-centre interval that misses
part of them: for N(0, 1), ``[5 − R, 5 + R]`` with R ≤ 5 leaves the median out) clip them:
the harness's T(S) is the statistic of the clipped data, and the report measures the
clipping bias (the statistic of the clipped data minus that of the raw data) from the same
draws.

Why a sweep axis.  How a mechanism degrades with b − a decides which one to deploy when
the bounds are a guess: the exponential mechanisms pay about log(b − a) in rank (the base
measure of the interval), global-sensitivity noise pays b − a, smooth sensitivity sits
between (its β-smoothing reaches the bounds only at distance ~ log(b − a)/β).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments.base.seeding import data_rng
from experiments.data.datasets import Dataset, DatasetError, SyntheticDataset, check_replicate
from mechanisms.core.validation import check_real


def subset_name(half_width: float, centre: float) -> str:
    """``"R=1e+02,c=0"``: the subset of half-width ``R`` and centre ``c``."""
    return f"R={half_width:.0e},c={centre:g}"


@dataclass(frozen=True)
class BoundsGrid(SyntheticDataset):
    """Draws of one law under the bounds ``[c − R, c + R]`` (the module's docstring);
    ``half_width`` is R, ``centre`` is c."""

    half_width: float = 10.0
    centre: float = 0.0

    def rng(self, seed: int, replicate: int) -> np.random.Generator:
        """The generator of replicate ``replicate``, keyed on the name only: every subset
        (pair of bounds) sees the same draws."""
        check_replicate(replicate, self.replicates)
        return data_rng(seed, self.name, replicate)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "half_width": self.half_width, "centre": self.centre}

    @classmethod
    def from_config(  # type: ignore[override]
        cls,
        *,
        name: str,
        n: int,
        replicates: int,
        bounds: object = None,
        distribution: str = "normal",
        params: Mapping[str, float] | None = None,
        half_widths: object = None,
        centres: object = (0.0,),
    ) -> list[Dataset]:
        """One dataset per (R, c) of ``half_widths`` × ``centres`` (``bounds`` is refused:
        the grid gives them)."""
        if bounds is not None:
            raise DatasetError(
                f"dataset {name!r}: a bounds grid takes half_widths and centres, not bounds"
            )
        widths = _positive_list(name, "half_widths", half_widths)
        offsets = _real_list(name, "centres", centres)
        (base,) = SyntheticDataset.from_config(
            name=name,
            n=n,
            replicates=replicates,
            bounds=(-1.0, 1.0),
            distribution=distribution,
            params=params,
        )
        assert isinstance(base, SyntheticDataset)
        datasets: list[Dataset] = []
        for width in widths:
            for centre in offsets:
                lower, upper = centre - width, centre + width
                if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
                    raise DatasetError(f"dataset {name!r}: bounds [{lower}, {upper}] overflow")
                datasets.append(
                    cls(
                        name,
                        subset_name(width, centre),
                        lower,
                        upper,
                        replicates,
                        base.source,
                        base.distribution,
                        base.params,
                        n,
                        width,
                        centre,
                    )
                )
        return datasets


def _real_list(name: str, key: str, values: object) -> list[float]:
    if not isinstance(values, Sequence) or isinstance(values, str) or not values:
        raise DatasetError(f"dataset {name!r}: {key} must be a non-empty list, got {values!r}")
    try:
        found = [check_real(value, key) for value in values]
    except ValueError as err:
        raise DatasetError(f"dataset {name!r}: {err}") from None
    if len(set(found)) != len(found):
        raise DatasetError(f"dataset {name!r}: {key} repeats a value: {values!r}")
    return found


def _positive_list(name: str, key: str, values: object) -> list[float]:
    found = _real_list(name, key, values)
    if not all(value > 0 for value in found):
        raise DatasetError(f"dataset {name!r}: {key} must be > 0, got {values!r}")
    return found
