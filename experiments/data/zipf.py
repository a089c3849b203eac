"""Zipf data for the mode: ``n`` i.i.d. draws from the Zipf law truncated to ``{1, ..., M}``.

``P(k) = k^(-s) / H(M, s)`` for ``k = 1..M`` with exponent ``s >= 0`` and
``H(M, s) = Σ_{j<=M} j^(-s)`` (Zipf's law, e.g. Newman, "Power laws, Pareto
distributions and Zipf's law", Contemporary Physics 2005).  The true mode of the
law is 1; the sample mode is 1 with high probability unless ``s`` is small and
``M`` large, where the top counts are close and a private mode is hard: the mode
experiment sweeps ``s`` and ``M`` (from 10 to 10⁶) to cover both.  The public
domain of the mode mechanisms is the support, bounds ``(1, M)``
(:mod:`mechanisms.core.domain`).

Draws are by inversion: ``k = 1 + #{j : F(j) <= U·F(M)}`` on the cumulative
weights, one ``searchsorted`` per replicate (numpy's own ``zipf`` has no
truncation and needs ``s > 1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from experiments.data.datasets import Dataset, DatasetError
from mechanisms.core.validation import check_integer, check_real
from mechanisms.statistics import Statistic

MAX_SUPPORT = 10**8
"""Largest ``M``: the cumulative weights are materialised (8 bytes each)."""


@dataclass(frozen=True)
class ZipfDataset(Dataset):
    """``n`` draws per replicate from Zipf(``exponent``) on ``{1, ..., support}``."""

    exponent: float = 1.0
    support: int = 100
    n: int = 1000

    def data(self, seed: int, replicate: int) -> np.ndarray:
        weights = np.arange(1, self.support + 1, dtype=np.float64) ** -self.exponent
        cumulative = np.cumsum(weights)
        uniforms = self.rng(seed, replicate).random(self.n) * cumulative[-1]
        ranks = np.searchsorted(cumulative, uniforms, side="right")
        return np.minimum(ranks, self.support - 1).astype(np.float64) + 1.0

    @classmethod
    def from_config(  # type: ignore[override]
        cls,
        *,
        name: str,
        n: int,
        replicates: int,
        exponent: float = 1.0,
        support: int = 100,
    ) -> list[Dataset]:
        try:
            s = check_real(exponent, "exponent", minimum=0.0, open_minimum=False)
            m = check_integer(support, "support", minimum=2)
        except ValueError as err:
            raise DatasetError(f"dataset {name!r}: {err}") from None
        if m > MAX_SUPPORT:
            raise DatasetError(f"dataset {name!r}: support must be at most {MAX_SUPPORT}")
        source = f"{__name__}.{cls.__qualname__}"
        return [cls(name, "", 1.0, float(m), replicates, source, s, m, n)]

    def population_value(self, statistic: Statistic, bounding: str = "clip") -> float | None:
        """θ of the truncated Zipf law, scipy's ``zipfian(exponent, support)`` (pmf
        ``k^(-s) / H(M, s)`` on ``{1, ..., M}``, the law :meth:`data` draws from; the bounds
        are its support, so clipping and dropping change nothing): its mode is 1."""
        law = stats.zipfian(self.exponent, self.support)
        return statistic.population_value(law, self.lower, self.upper)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kind": "zipf"}
