"""The speed targets of issue 31, each measured side by side with an older checkout.

* the paper-scale ``figure1`` sweep (``duff-run experiment=figure1 n_jobs=2``, a fresh
  interpreter: start-up, plan, units, summary) at most 0.4× the time of the older code;
* the regression gate (``duff-regress --n-jobs 2``, a fresh interpreter, its own sweep
  and comparison) at most 0.5×;
* Duff's warm ``release`` + ``sample(100)`` at n = 10^3 in at most 25 µs
  (``bench_small.py``; the same script run on both trees).

The fourth target, ``make test`` in at most 5 minutes, is absolute: it is measured in a
fresh clone with the other set-up commands (``docs/measured/setup.json``).

The two trees run interleaved, ``--rounds`` times each (older, newer, older, …), each
command in its own process with ``PYTHONPATH`` and the working directory set to its tree
(so the older code reads its own ``conf/``), all on this interpreter; the median of the
rounds is reported.  Wall time, and the CPU time of the process tree (the command's own
and its reaped workers', from ``RUSAGE_CHILDREN``).  An older checkout::

    git worktree add /tmp/acf2367 acf2367
    python benchmarks/bench_targets.py --before /tmp/acf2367 --out benchmarks/results/targets.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_output import host, write_report

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
TARGETS = {"figure1": 0.4, "gate": 0.5}
"""The largest ratio newer / older each sweep may take."""
SMALL_TARGET_US = 25.0


def timed(command: list[str], tree: Path) -> dict[str, float]:
    """Run ``command`` in ``tree`` (its code first on the path); its wall and CPU seconds."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu}


def sweep_commands(scratch: Path) -> dict[str, list[str]]:
    return {
        "figure1": [
            sys.executable,
            "-m",
            "experiments.run",
            "experiment=figure1",
            f"results_dir={scratch / 'figure1'}",
            "n_jobs=2",
        ],
        "gate": [sys.executable, "-m", "experiments.regress", "--n-jobs", "2"],
    }


def small_us(tree: Path, scratch: Path) -> dict[str, float]:
    """Microseconds of warm release + sample(100) at n = 10^3 per mechanism (bench_small)."""
    out = scratch / "small.json"
    subprocess.run(
        [sys.executable, str(HERE / "bench_small.py"), "--out", str(out)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": f"{tree}:{HERE}"},
        check=True,
        capture_output=True,
    )
    report = json.loads(out.read_text())
    us = {name: seconds * 1e6 for name, seconds in report["seconds"].items()}
    return {**us, "np.sort": report["sort_seconds"] * 1e6}


def median_of(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the older checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "targets.json")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": TREE}
    runs: dict[str, dict[str, list[dict[str, float]]]] = {
        label: {"figure1": [], "gate": [], "small": []} for label in trees
    }
    for round_ in range(args.rounds):
        for label, tree in trees.items():
            with tempfile.TemporaryDirectory(prefix="bench-targets-") as tmp:
                scratch = Path(tmp)
                for name, command in sweep_commands(scratch).items():
                    runs[label][name].append(timed(command, tree))
                runs[label]["small"].append(small_us(tree, scratch))
            figure1 = runs[label]["figure1"][-1]["wall"]
            gate = runs[label]["gate"][-1]["wall"]
            print(f"round {round_ + 1} {label}: figure1 {figure1:.1f} s, gate {gate:.1f} s")
    medians = {label: {k: median_of(v) for k, v in parts.items()} for label, parts in runs.items()}
    report: dict[str, Any] = {
        "benchmark": "targets",
        "before": str(trees["before"]),
        "before_commit": subprocess.run(
            ["git", "-C", str(trees["before"]), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip(),
        "rounds": args.rounds,
        "host": host(),
        "load_average": os.getloadavg(),
        "runs": runs,
        "medians": medians,
        "targets": {**TARGETS, "small_us": SMALL_TARGET_US},
    }
    write_report(args.out, report)


if __name__ == "__main__":
    main()
