"""Hand-made results directories for the tests of the readers of the harness's output.

:func:`write_results` writes a ``summary.csv`` and a ``run.json`` whose plan
(``numbers``) has exactly the summary's cells, so that
:func:`experiments.harness.results_reader.load` accepts the directory; a test then
breaks one file on purpose.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments.harness.plan import FORMAT
from experiments.harness.results import ESTIMATE_KEYS, SUMMARY_COLUMNS, config_hash
from experiments.harness.results_reader import SUMMARY_SPEC


def default_value(column: str) -> object:
    """A valid value of a ``summary.csv`` column: 1.0 for ``answer_rate``, else 0, 0.0, True
    or empty text."""
    if column == "answer_rate":
        return 1.0
    if column in SUMMARY_SPEC.floats:
        return 0.0
    if column in SUMMARY_SPEC.ints:
        return 0
    return True if column in SUMMARY_SPEC.bools else ""


def complete(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every summary column, in order (absent ones at :func:`default_value`,
    the statistic at ``median``)."""
    frame = frame.copy()
    if "statistic" not in frame.columns:
        frame["statistic"] = "median"
    for column in SUMMARY_COLUMNS:
        if column not in frame.columns:
            frame[column] = default_value(column)
    frame["subset"] = frame["subset"].fillna("").astype(str)
    return frame.loc[:, list(SUMMARY_COLUMNS)]


def plan_numbers(
    summary: pd.DataFrame,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    dataset_fields: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A run.json ``numbers`` whose plan is the product of the summary's datasets (with
    ``dataset_fields`` by id), replicates, statistics, mechanisms (``options`` by label)
    and ε."""
    options, fields = options or {}, dataset_fields or {}
    entries = []
    for (name, subset), rows in summary.groupby(["dataset", "subset"], sort=False):
        dataset_id = f"{name}/{subset}" if subset else name
        replicates = int(rows["replicate"].max()) + 1
        entries.append({"id": dataset_id, "replicates": replicates, **fields.get(dataset_id, {})})
    mechanisms = [
        {
            "label": label,
            "name": str(rows["registry_name"].iloc[0]),
            "options": dict(options.get(label, {})),
            "takes_delta": bool((rows["delta"] > 0).any()),
        }
        for label, rows in summary.groupby("mechanism", sort=False)
    ]
    statistics = [
        {"id": s, "kind": s.partition("(")[0]} for s in summary["statistic"].drop_duplicates()
    ]
    epsilons = sorted({float(e) for e in summary["epsilon"]})
    trials = int(summary["trials"].max())
    return {"format": FORMAT, "seed": 1, "trials": trials, "epsilons": epsilons, "delta": "1/n"} | {
        "datasets": entries,
        "statistics": statistics,
        "mechanisms": mechanisms,
    }


def write_results(
    directory: Path,
    summary: pd.DataFrame,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    dataset_fields: Mapping[str, Mapping[str, Any]] | None = None,
    estimates: np.ndarray | None = None,
    **manifest: Any,
) -> Path:
    """Write ``summary.csv``, a matching ``run.json`` (plus ``manifest`` keys) and, given
    the ``estimates`` matrix (a row per summary row), ``estimates.npz`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    summary = complete(summary)
    summary.to_csv(directory / "summary.csv", index=False)
    if estimates is not None:
        arrays = {key: summary[key].to_numpy() for key in ESTIMATE_KEYS}
        arrays = {k: v.astype(str) if v.dtype.kind in "OT" else v for k, v in arrays.items()}
        np.savez(directory / "estimates.npz", **arrays, estimates=estimates)
    numbers = plan_numbers(summary, options, dataset_fields)
    run = {"status": "complete", **manifest, "config_hash": config_hash(numbers)}
    (directory / "run.json").write_text(json.dumps({**run, "numbers": numbers}), encoding="utf-8")
    return directory
