"""The cells of an interval run: coverage and width per (method, dataset, n, ε)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from experiments.reports import style


@dataclass(frozen=True)
class Cells:
    """The cells of a run of interval methods."""

    drawn: pd.DataFrame
    """Every cell (a non-private method at each ε of the sweep), in the run's order."""
    tested: pd.DataFrame
    """The table's cells (a non-private method once, at ε = ∞), with ``p_value`` and
    ``below``."""
    failed: int
    """Rows left out (``status`` not ``"ok"``)."""
    independent: bool
    """One interval per dataset (``trials = 1``): the below-nominal test applies."""
    palette: style.Palette
