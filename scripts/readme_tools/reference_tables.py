"""Read the committed reference outputs the README quotes: Markdown tables, JSON and run.json.

A Markdown file is read as its tables (:func:`tables`), each keyed by its
header's cells and located by the heading and the line of text above it
(:func:`pick`); a cell's number is the first number in its text
(:func:`number`).  A ``run.json`` is read by the results reader's
:func:`experiments.harness.run_manifest.read_manifest` (which checks its config
hash), any other JSON file as plain JSON (:func:`value`).  Every problem is a
:class:`NumbersError` naming the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.harness import run_manifest
from experiments.harness.csv_tables import ResultsError
from experiments.harness.results import RUN_FILE

SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")
CELL_BREAK = re.compile(r"\s\|(?=\s)")  # a cell boundary; "|M − T|" and "\|" are not
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
Where = dict[str, str]


class NumbersError(Exception):
    """A reference file missing or malformed, or a README marker that cannot be filled."""


@dataclass
class Table:
    """A Markdown table of the file ``rel``: its rows, keyed by the header's cells."""

    rel: str
    section: str  # the last heading above the table
    caption: str  # the last line of text above it
    rows: list[dict[str, str]]

    def select(self, where: Where) -> list[dict[str, str]]:
        """The rows whose cells equal ``where`` (column name: cell text)."""
        return [r for r in self.rows if all(r.get(k) == v for k, v in where.items())]

    def get(self, where: Where, column: str) -> str:
        """The cell of ``column`` in the one row ``where``."""
        rows = self.select(where)
        if len(rows) != 1:
            raise NumbersError(f"{self.rel}: {len(rows)} rows with {where} in {self.caption!r}")
        return self.cells(rows, column)[0]

    def cells(self, rows: list[dict[str, str]], column: str) -> list[str]:
        """The cells of ``column`` in ``rows``."""
        if any(column not in r for r in rows):
            raise NumbersError(f"{self.rel}: no column {column!r} in {self.caption!r}")
        return [r[column] for r in rows]

    def header(self) -> list[str]:
        """The column names."""
        if not self.rows:
            raise NumbersError(f"{self.rel}: the table {self.caption!r} has no rows")
        return list(self.rows[0])

    def named(self, *prefixes: str) -> str:
        """The one column whose name starts with one of ``prefixes``."""
        found = [c for c in self.header() if c.startswith(prefixes)]
        if len(found) != 1:
            raise NumbersError(f"{self.rel}: {len(found)} columns {prefixes} in {self.caption!r}")
        return found[0]

    def numbers(self, column: str, where: Where | None = None) -> list[float]:
        """The numbers of ``column`` in the rows ``where`` (default: all rows)."""
        return [number(c, self.rel) for c in self.cells(self.select(where or {}), column)]


def read(root: Path, rel: str) -> str:
    """The text of the reference file ``rel`` under ``root``."""
    try:
        return (root / rel).read_text(encoding="utf-8")
    except OSError as error:
        raise NumbersError(f"{rel}: cannot read the reference file ({error.strerror})") from None


def _json(root: Path, rel: str) -> Any:
    """The JSON file ``rel``: a ``run.json`` checked by the results reader, any other as is."""
    if Path(rel).name == RUN_FILE:
        try:
            return run_manifest.read_manifest(root / rel)
        except ResultsError as error:
            raise NumbersError(f"{rel}: unreadable run.json ({error})") from None
    try:
        return json.loads(read(root, rel))
    except json.JSONDecodeError as error:
        raise NumbersError(f"{rel}: not valid JSON ({error})") from None


def value(root: Path, rel: str, *path: str) -> Any:
    """``path`` inside the JSON file ``rel``, or an error naming the file and the key."""
    data = _json(root, rel)
    for depth, key in enumerate(path):
        if not isinstance(data, dict) or key not in data:
            raise NumbersError(f"{rel}: no key {'.'.join(path[: depth + 1])!r}")
        data = data[key]
    return data


def split_row(line: str) -> list[str]:
    """The cells of ``| a | b |``; a cell with an open parenthesis takes in the next piece."""
    cells: list[str] = []
    for piece in CELL_BREAK.split(line.strip()[1:-1]):
        if cells and cells[-1].count("(") > cells[-1].count(")"):
            cells[-1] += " | " + piece.strip()
        else:
            cells.append(piece.strip())
    return cells


def tables(root: Path, rel: str) -> list[Table]:
    """Every table of a Markdown file, each with its section heading and caption line."""
    lines, found, section, caption, i = read(root, rel).splitlines(), [], "", "", 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("|") and i + 1 < len(lines) and SEPARATOR.match(lines[i + 1].strip()):
            header, rows, i = split_row(line), [], i + 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = split_row(lines[i])
                if len(cells) != len(header):
                    raise NumbersError(
                        f"{rel}: line {i + 1}: {len(cells)} cells, {len(header)} heads"
                    )
                rows.append(dict(zip(header, cells, strict=True)))
                i += 1
            found.append(Table(rel, section, caption, rows))
            continue
        section = line.lstrip("#").strip() if line.startswith("#") else section
        caption, i = line or caption, i + 1
    return found


def pick(root: Path, rel: str, section: str, caption: str = "") -> Table:
    """The first table of ``rel`` under a heading and caption starting with these."""
    for table in tables(root, rel):
        if table.section.startswith(section) and table.caption.startswith(caption):
            return table
    raise NumbersError(f"{rel}: no table under {section!r} captioned {caption!r}")


def number(text: str, rel: str) -> float:
    """The first number in a cell (``179×``, ``0.0259 ± 0.00371``, ``87%``)."""
    match = NUMBER.search(text)
    if match is None:
        raise NumbersError(f"{rel}: no number in the cell {text!r}")
    return float(match[0])
