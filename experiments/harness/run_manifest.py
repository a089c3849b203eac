"""``run.json`` of a results directory: read, checked against its hash, and the plan it records.

:func:`read_manifest` refuses a file whose ``numbers`` do not hash to its
``config_hash``; :func:`plan_mechanisms` and :func:`expected_cells` turn the plan it
records (datasets with their replicates, statistics, mechanism entries, ε) into the
mechanism entries by label and the cells ``summary.csv`` must hold, which
:mod:`experiments.harness.results_reader` then checks.  Problems are one
:class:`experiments.harness.csv_tables.ResultsError` naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.harness.csv_tables import ResultsError
from experiments.harness.results import config_hash

KEY = ("dataset", "subset", "replicate", "statistic", "mechanism", "epsilon")
"""Columns that identify a row of ``summary.csv``: one cell of the plan."""


@dataclass(frozen=True)
class MechanismInfo:
    """A mechanism entry of ``run.json``: what the label stands for."""

    label: str
    name: str
    """Registry name (:func:`mechanisms.make`)."""
    options: Mapping[str, Any]
    takes_delta: bool
    display_name: str = ""
    """The name the class asks figures and tables to show (``""``: none given)."""
    statistics: tuple[str, ...] = ()
    """The statistic kinds the entry runs on (empty: all of the sweep's)."""


def read_manifest(path: Path) -> dict[str, Any]:
    """``run.json`` as a dict whose ``numbers`` hash to its ``config_hash``."""
    if not path.is_file():
        raise ResultsError(f"{path}: no such file (is {path.parent} a results directory?)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResultsError(f"{path}: not readable as JSON ({err})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("numbers"), dict):
        raise ResultsError(f"{path}: expected a JSON object with a 'numbers' object")
    try:
        consistent = config_hash(manifest["numbers"]) == manifest.get("config_hash")
    except (TypeError, ValueError):
        consistent = False
    if not consistent:
        raise ResultsError(f"{path}: its config_hash does not match its numbers (edited?)")
    return manifest


def plan_mechanisms(
    numbers: Mapping[str, Any], path: Path, display_names: Mapping[str, str] | None = None
) -> dict[str, MechanismInfo]:
    """The mechanism entries of ``numbers`` by label (``path`` names run.json in errors),
    with the classes' display names by label (run.json's ``mechanisms`` list)."""
    display_names = display_names or {}
    entries: dict[str, MechanismInfo] = {}
    for entry in _list(numbers, "mechanisms", path):
        try:
            info = MechanismInfo(
                label=_text(entry["label"]),
                name=_text(entry["name"]),
                options=dict(entry.get("options") or {}),
                takes_delta=bool(entry.get("takes_delta", False)),
                display_name=str(display_names.get(entry["label"]) or ""),
                statistics=tuple(_text(kind) for kind in entry.get("statistics") or ()),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ResultsError(f"{path}: numbers.mechanisms entry {entry!r} ({err!r})") from None
        if info.label in entries:
            raise ResultsError(f"{path}: numbers.mechanisms repeats label {info.label!r}")
        entries[info.label] = info
    return entries


def expected_cells(
    numbers: Mapping[str, Any], mechanisms: Mapping[str, MechanismInfo], path: Path
) -> pd.DataFrame:
    """The rows the plan produces for ``mechanisms`` (columns :data:`KEY`), in the
    harness's order: each entry with the statistics it runs on."""
    try:
        epsilons = [float(e) for e in _list(numbers, "epsilons", path)]
        datasets = [
            (*_split_id(_text(d["id"])), int(d.get("replicates", 1)))
            for d in _list(numbers, "datasets", path)
        ]
        statistics = [
            (_text(s["id"]), _text(s.get("kind", ""))) for s in _list(numbers, "statistics", path)
        ]
    except (KeyError, TypeError, ValueError) as err:
        raise ResultsError(
            f"{path}: numbers.datasets / statistics / epsilons malformed ({err!r})"
        ) from None
    rows = [
        (dataset, subset, replicate, statistic, label, epsilon)
        for dataset, subset, replicates in datasets
        for replicate in range(replicates)
        for statistic, kind in statistics
        for label, info in mechanisms.items()
        if not info.statistics or kind in info.statistics
        for epsilon in epsilons
    ]
    return pd.DataFrame(rows, columns=list(KEY))


def statistic_kinds(numbers: Mapping[str, Any]) -> dict[str, str]:
    """The kind of each statistic id of the plan (``numbers.statistics``)."""
    return {str(s.get("id")): str(s.get("kind")) for s in numbers.get("statistics", [])}


def _list(numbers: Mapping[str, Any], key: str, path: Path) -> list[Any]:
    value = numbers.get(key)
    if not isinstance(value, list) or not value:
        raise ResultsError(f"{path}: numbers.{key} must be a non-empty list")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _split_id(dataset_id: str) -> tuple[str, str]:
    """``"vertebral/pelvic_incidence/AB"`` -> ``("vertebral", "pelvic_incidence/AB")``."""
    name, _, subset = dataset_id.partition("/")
    return name, subset
