"""Rounded synthetic data: atoms (tied points) in a controlled amount.

:class:`RoundedDataset` draws like :class:`~experiments.data.datasets.SyntheticDataset`
(``n`` i.i.d. draws of ``numpy.random.Generator.<distribution>(**params)``, N(0, 1) by
default) and rounds every draw to the grid of step ``h`` (the ``resolution``)::

    data = h * rint(x / h)          (rint: to the nearest integer, half to even)

Its replicate ``r`` is bit for bit that rounding of replicate ``r`` of the
``SyntheticDataset`` of the same id (name and subset), law and ``n``: both draw from
:func:`experiments.base.seeding.data_rng` keyed on (id, r), and the rounding is applied
after the draw.  Real data are rounded the same way (wages to the cent, weights to the
hundredth of a carat), which is why a median mechanism has to cope with ties.

Tie fraction.  The fraction of tied points of a dataset is the fraction of its points
whose value some other point of the dataset shares (:func:`tie_fraction`).  If the law
puts mass ``p_k`` on grid cell ``k`` (the interval of width ``h`` centred on ``k h``), a
point lies in cell ``k`` with probability ``p_k`` and is untied when the ``n − 1``
others all miss that cell, so the expected tie fraction is exactly::

    E[tie fraction] = 1 − Σ_k p_k (1 − p_k)^(n−1)        (RoundedDataset.expected_tie_fraction)

It grows with both ``h`` and ``n``: it tends to 0 as ``h → 0`` and to 1 as ``h`` grows past
the spread of the law.  When ``n h max f`` is small (``f`` the law's density), ``p_k ≈ h
f(k h)`` and ``1 − (1 − p_k)^(n−1) ≈ (n − 1) p_k``, so the fraction is close to
``(n − 1) h ∫ f²``; for N(0, σ²), ``∫ f² = 1 / (2 σ √π)``, so about
``0.282 (n − 1) h / σ`` (e.g. 2.8 % of 1000 points rounded to 10⁻⁴ σ; the
approximation overstates the exact value by a relative ``O(n h max f)``).  This is the
birthday problem with unequal cell probabilities (e.g. Feller, "An Introduction to
Probability Theory and Its Applications", vol. 1, ch. II).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from experiments.base.seeding import data_rng
from experiments.data.datasets import (
    Dataset,
    DatasetError,
    SyntheticDataset,
    check_replicate,
    scipy_law,
)
from mechanisms.core.validation import check_real

MAX_CELLS = 10**7
"""Most grid cells :meth:`RoundedDataset.expected_tie_fraction` sums over."""
TAIL = 1e-13
"""Law mass left out of that sum on each side (it changes the result by at most ``2 TAIL``)."""


def tie_fraction(values: np.ndarray) -> float:
    """The fraction of ``values`` equal to at least one other entry of ``values``
    (0 for fewer than two values)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 2:
        return 0.0
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return float(np.count_nonzero(counts[inverse] > 1) / x.size)


@dataclass(frozen=True)
class RoundedDataset(SyntheticDataset):
    """``n`` draws of ``Generator.<distribution>(**params)`` per replicate, each rounded to
    the nearest multiple of ``resolution`` (see the module's docstring)."""

    resolution: float = 1.0

    def data(self, seed: int, replicate: int) -> np.ndarray:
        h = self.resolution
        return h * np.rint(super().data(seed, replicate) / h)

    def population_median(self) -> float:
        """The law's median rounded to the grid, clipped to the bounds: rounding and clipping
        are monotone, and a monotone map takes a median of ``X`` to a median of its image."""
        h = self.resolution
        rounded = h * round(super().population_median() / h)  # round(): half to even, as rint
        return min(max(rounded, self.lower), self.upper)

    def expected_tie_fraction(self) -> float:
        """``1 − Σ_k p_k (1 − p_k)^(n−1)``, ``p_k`` the law's mass on the cell of grid point
        ``k h``, summed over the cells that hold all but :data:`TAIL` of the mass on each side.

        Raises :class:`DatasetError` if that takes more than :data:`MAX_CELLS` cells (a
        resolution tiny against a heavy-tailed law).
        """
        law, h = scipy_law(self.distribution, dict(self.params)), self.resolution
        first = math.floor(law.ppf(TAIL) / h)
        last = math.ceil(law.isf(TAIL) / h)
        if last - first + 1 > MAX_CELLS:
            raise DatasetError(
                f"dataset {self.id!r}: resolution {h!r} makes {last - first + 1} grid cells "
                f"for the expected tie fraction, more than {MAX_CELLS}"
            )
        edges = (np.arange(first, last + 2) - 0.5) * h
        p = np.diff(law.cdf(edges))
        return float(1.0 - np.sum(p * np.power(1.0 - p, self.n - 1)))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kind": "rounded", "resolution": self.resolution}

    @classmethod
    def from_config(
        cls,
        *,
        name: str,
        n: int,
        replicates: int,
        resolution: float = 1.0,
        **options: Any,
    ) -> list[Dataset]:
        """The datasets of :meth:`SyntheticDataset.from_config` (same options: ``bounds``,
        ``distribution``, ``params``, ``sizes``), each rounded to ``resolution`` (> 0)."""
        try:
            h = check_real(resolution, "resolution", minimum=0.0)
        except ValueError as err:
            raise DatasetError(f"dataset {name!r}: {err}") from None
        drawn = super().from_config(name=name, n=n, replicates=replicates, **options)
        rounding = f", rounded to multiples of {h!r}"
        return [
            dataclasses.replace(cast(RoundedDataset, d), resolution=h, source=d.source + rounding)
            for d in drawn
        ]


@dataclass(frozen=True)
class RoundingGrid(RoundedDataset):
    """The same draws rounded to each of several resolutions (subset ``"h=0.01"``): the
    generator is keyed on the dataset's name and the replicate, not on the subset, so the
    error of a mechanism against the tie fraction is a paired comparison (as
    :class:`experiments.data.bounds_grid.BoundsGrid` does for the bounds)."""

    def rng(self, seed: int, replicate: int) -> np.random.Generator:
        check_replicate(replicate, self.replicates)
        return data_rng(seed, self.name, replicate)

    @classmethod
    def from_config(
        cls,
        *,
        name: str,
        n: int,
        replicates: int,
        resolutions: object = None,
        **options: Any,
    ) -> list[Dataset]:
        """One dataset per resolution of ``resolutions`` (a non-empty list of numbers > 0),
        the other options those of :meth:`RoundedDataset.from_config` (no ``sizes``)."""
        if not isinstance(resolutions, list | tuple) or not resolutions or "sizes" in options:
            raise DatasetError(
                f"dataset {name!r}: a rounding grid takes resolutions (a non-empty list) and "
                f"no sizes, got resolutions={resolutions!r}"
            )
        found: list[Dataset] = []
        for resolution in resolutions:
            (one,) = RoundedDataset.from_config(
                name=name, n=n, replicates=replicates, resolution=resolution, **options
            )
            assert isinstance(one, RoundedDataset)
            fields = {f.name: getattr(one, f.name) for f in dataclasses.fields(one)}
            fields["subset"] = f"h={one.resolution:g}"
            found.append(cls(**fields))
        if len({d.subset for d in found}) != len(found):
            raise DatasetError(f"dataset {name!r}: resolutions repeat: {resolutions!r}")
        return found
