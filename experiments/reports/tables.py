"""Markdown tables and the number formats every report of :mod:`experiments.reports` uses.

A table is a header, an alignment row and one line per row, cells separated by
``" | "``; a cell is text the caller has formatted (and escaped: ``|`` inside a
cell must be written ``\\|``).  Missing values are shown as an em dash.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

MISSING = "—"


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] | None = None
) -> str:
    """``header`` and ``rows`` as a Markdown table; ``align`` gives each column's separator
    cell (``"---"`` left, ``"---:"`` right; default: all ``"---"``)."""
    separators = list(align) if align is not None else ["---"] * len(header)
    lines = ["| " + " | ".join(cells) + " |" for cells in (header, *rows)]
    return "\n".join([lines[0], "|" + "|".join(separators) + "|", *lines[1:]])


def value_text(value: object) -> str:
    """A value as a table shows it: NaN/None an em dash, floats to 6 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


def three_digits(value: float, suffix: str = "") -> str:
    """Three significant digits (``187``, ``0.0259``), ``suffix`` appended; NaN a dash."""
    return MISSING if math.isnan(value) else f"{value:.3g}{suffix}"


def three_digits_kept(value: float) -> str:
    """Three significant digits, trailing zeros kept (``1.00``, ``0.622``, ``123``)."""
    return MISSING if math.isnan(value) else f"{value:#.3g}".rstrip(".")


def digits(value: float, count: int = 3) -> str:
    """``count`` significant digits; NaN a dash, infinity ``∞``."""
    if isinstance(value, float) and math.isnan(value):
        return MISSING
    if math.isinf(value):
        return "∞"
    return f"{value:.{count}g}"


def probability(value: float) -> str:
    """Four decimals; never rounds up to a certainty that is not exact."""
    if math.isnan(value):
        return MISSING
    if value == 1.0 or value == 0.0:
        return f"{value:g}"
    return "> 0.9999" if value > 0.9999 else ("< 0.0001" if value < 0.0001 else f"{value:.4f}")
