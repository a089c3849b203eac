"""Typed CSV tables the project writes (``summary.csv``, the gate's baseline), read exactly.

:func:`parse_table` reads a table whole or refuses it with one :class:`ResultsError`
naming the file, line and column: a file cut in the middle of a line, a wrong
header, a field that is not of its column's type.  Floats are parsed by
:class:`float` from their text, so every number is the one that was written, bit
for bit.  :func:`check_rows` applies per-row checks (:func:`at_least`, …).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

BOOLEANS = {"True": True, "False": False}


class ResultsError(ValueError):
    """A results directory the harness did not write whole; the message names the file."""


@dataclass(frozen=True)
class TableSpec:
    """A CSV table the project writes: its columns, in order, and which are numbers."""

    what: str
    """How errors name the expected table, e.g. ``"this harness's summary.csv"``."""
    columns: tuple[str, ...]
    floats: tuple[str, ...] = ()
    """Parsed by :class:`float` (``""``, as pandas writes NaN, is NaN)."""
    ints: tuple[str, ...] = ()
    bools: tuple[str, ...] = ()
    """``True`` or ``False``; every other column stays text."""


Check = tuple[str, str, Callable[[pd.DataFrame], pd.Series]]
"""(column, what is wrong with a value, which rows are right); NaN compares False."""


def read_records(path: Path) -> tuple[list[list[str]], list[int]]:
    """The records of a CSV file (header first) and the line on which each ends.

    Refuses a file that does not end with a newline: the project writes whole
    files, so a missing final newline means the file was cut.
    """
    if not path.is_file():
        raise ResultsError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ResultsError(f"{path}: cannot read it as UTF-8 text ({err})") from None
    if not text:
        raise ResultsError(f"{path}: the file is empty")
    if not text.endswith("\n"):
        raise ResultsError(f"{path}: truncated (its last line is incomplete)")
    reader = csv.reader(io.StringIO(text, newline=""))
    records, lines = [], []
    try:
        for record in reader:
            records.append(record)
            lines.append(reader.line_num)
    except csv.Error as err:
        raise ResultsError(f"{path}: not valid CSV at line {reader.line_num} ({err})") from None
    return records, lines


def parse_table(path: Path, spec: TableSpec) -> pd.DataFrame:
    """The table at ``path``, typed by ``spec``; column ``line`` gives each row's line."""
    records, lines = read_records(path)
    header = tuple(records[0])
    if header != spec.columns:
        missing = [c for c in spec.columns if c not in header]
        extra = [c or "(unnamed)" for c in header if c not in spec.columns]
        order = "" if missing or extra else "; order differs"
        raise ResultsError(
            f"{path} does not have the columns of {spec.what} (missing: "
            f"{', '.join(missing) or '-'}; unexpected: {', '.join(extra) or '-'}{order})"
        )
    for record, line in zip(records[1:], lines[1:], strict=True):
        if len(record) != len(header):
            raise ResultsError(
                f"{path}: line {line} has {len(record)} of {len(header)} fields "
                "(truncated or corrupt)"
            )
    columns = list(zip(*records[1:], strict=True)) or [()] * len(header)
    frame = pd.DataFrame({"line": np.asarray(lines[1:], dtype=np.int64)})
    for name, values in zip(header, columns, strict=True):
        frame[name] = _typed(spec, name, values, path, lines[1:])
    return frame


def _typed(
    spec: TableSpec, name: str, values: Sequence[str], path: Path, lines: Sequence[int]
) -> np.ndarray:
    """Column ``name`` parsed to its type in ``spec``."""
    if name in spec.floats:
        return _parse(values, _float, np.float64, "a number", (name, path, lines))
    if name in spec.ints:
        return _parse(values, int, np.int64, "an integer", (name, path, lines))
    if name in spec.bools:
        return _parse(values, BOOLEANS.__getitem__, np.bool_, "True or False", (name, path, lines))
    return np.asarray(values, dtype=object)


def _float(text: str) -> float:
    return math.nan if text == "" else float(text)


def _parse(
    values: Sequence[str],
    parse: Callable[[str], Any],
    dtype: type,
    kind: str,
    where: tuple[str, Path, Sequence[int]],
) -> np.ndarray:
    """``values`` parsed one by one; the first that fails is named by line and column."""
    out: np.ndarray = np.empty(len(values), dtype=dtype)
    for i, text in enumerate(values):
        try:
            out[i] = parse(text)
        except (KeyError, TypeError, ValueError):
            name, path, lines = where
            raise ResultsError(
                f"{path}: line {lines[i]}, column {name}: {text!r} is not {kind}"
            ) from None
    return out


def finite(frame: pd.DataFrame, column: str) -> pd.Series:
    """Which values of a float ``column`` are finite."""
    return pd.Series(np.isfinite(frame[column].to_numpy()), index=frame.index)


def at_least(column: str, bound: float = 0.0, *, strict: bool = False) -> Check:
    """The check that a float ``column`` is finite and ``>= bound`` (``> bound`` if ``strict``)."""

    def right(frame: pd.DataFrame) -> pd.Series:
        values = frame[column]
        return finite(frame, column) & ((values > bound) if strict else (values >= bound))

    return (column, f"not a finite number {'>' if strict else '>='} {bound:g}", right)


def check_rows(frame: pd.DataFrame, checks: Sequence[Check], path: Path) -> None:
    """Raise :class:`ResultsError` naming the line and column of the first failed check."""
    for column, problem, good in checks:
        right = good(frame)
        if not right.all():
            line = int(frame.loc[~right, "line"].iloc[0])
            value = frame.loc[~right, column].iloc[0]
            shown = repr(value.item() if isinstance(value, np.generic) else value)
            raise ResultsError(f"{path}: line {line}, column {column}: {shown} is {problem}")
