"""Power of the regression gate (:mod:`experiments.gate.verdicts`): which planted noise-scale
changes it catches, paired (the baseline's per-replicate errors) and unpaired (the test it
had before issue 26).

For each mechanism of ``tests/experiments/gate/planted_mechanisms.py`` (``smooth_cauchy``,
``laplace_mean``, ``duff``) and each factor f of ``--factors``, the regression sweep is run
for that mechanism's entry only, with its class replaced by the planted one (noise scale
× f), and compared with the committed baseline; f = 1 runs the unchanged class (the clean
code: its false alarms).  Reported per (mechanism, f): the cells, how many fail paired and
how many the unpaired test fails, and the median measured error ratio.

Usage::

    PYTHONPATH=.:tests/experiments/gate .venv/bin/python benchmarks/bench_gate_power.py \
        --out benchmarks/results/gate_power.json        # about 4 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import mechanisms
from experiments import regress
from experiments.gate import verdicts
from experiments.gate.baseline import REPLICATES
from experiments.run import run

DEFAULT_FACTORS = (0.9, 0.95, 1.0, 1.05, 1.1)


def entry_label(entry: Any) -> str:
    if isinstance(entry, str):
        return entry
    return str(entry.get("label", entry.get("extends", entry.get("name"))))


def candidate(name: str, cls: type | None, directory: Path) -> regress.Candidate:
    """The regression sweep restricted to the entries of mechanism ``name``, with its class
    replaced by ``cls`` (None: unchanged)."""
    cfg = regress.regression_config([])
    cfg.mechanisms = [e for e in cfg.mechanisms if entry_label(e).startswith(name)]
    original = mechanisms.get
    if cls is not None:
        mechanisms.get = lambda wanted: cls if wanted == name else original(wanted)
    try:
        return regress.read_candidate(run(cfg, results_dir=directory, n_jobs=2))
    finally:
        mechanisms.get = original


def measure(name: str, factor: float, baseline: Any) -> dict[str, Any]:
    from planted_mechanisms import PLANTED, _make

    cls = None if factor == 1.0 else PLANTED.get((name, factor)) or _make(name, factor)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        found = candidate(name, cls, Path(directory) / "run")
    paired = verdicts.compare(baseline, found, require_all=False).cells
    unpaired = verdicts.compare(
        baseline.assign(**{REPLICATES: None}), found, require_all=False
    ).cells
    return {
        "mechanism": name,
        "factor": factor,
        "cells": len(paired),
        "paired_cells": int(paired["paired"].sum()),
        "failed_paired": int((paired["verdict"] != "ok").sum()),
        "failed_unpaired": int((unpaired["verdict"] != "ok").sum()),
        "identical": int(paired["identical"].sum()),
        "median_ratio": float(np.nanmedian(paired["ratio"])),
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factors", type=float, nargs="+", default=DEFAULT_FACTORS)
    parser.add_argument(
        "--mechanisms", nargs="+", default=["smooth_cauchy", "laplace_mean", "duff"]
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    baseline = regress.read_baseline(regress.BASELINE)
    rows = []
    for name in args.mechanisms:
        for factor in args.factors:
            row = measure(name, factor, baseline)
            rows.append(row)
            print(
                f"{name:14s} ×{factor:<5g} cells {row['cells']:3d}  failed paired "
                f"{row['failed_paired']:3d}  unpaired {row['failed_unpaired']:3d}  "
                f"identical {row['identical']:3d}  ratio {row['median_ratio']:.4f}",
                flush=True,
            )
    if args.out:
        record = {
            "host": platform.node(),
            "load_average": os.getloadavg()[0],
            "rows": rows,
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
