"""Sweep throughput of the ``figure1`` experiment at n_jobs = 1 and 2, and its wall time.

Runs ``experiments.run.run`` on the composed ``figure1`` config (paper scale:
3 distributions × 100 datasets × 7 mechanisms = 2100 work units, 9 ε each,
100 trials) into fresh temporary results directories, once per ``n_jobs``
(loky backend) and, with ``--dask``, once on a local Dask cluster of 2 worker
processes × 1 thread.  Reported per run: wall time (plan, units, summary),
throughput in work units per second, and the parallel efficiency
``T(1) / (k·T(k))`` of each run against n_jobs = 1.  On a machine that other
work also loads, wall times mislead, so the CPU time of the whole process tree
(this process and its workers, from ``psutil``) is reported too: its ratio
``C(1) / C(k)`` is the efficiency the parallel run would reach on an idle
machine with perfect load balance (what parallelism itself costs: pickling,
dispatch, result transfer).  The wall time of the
n_jobs = 2 run is the "full figure1 in under 5 seconds" figure.  With ``--gate``,
the regression gate (``duff-regress --n-jobs 2``, a fresh process: interpreter
start-up, plan, sweep, comparison) is timed too.  Every run
starts with a warm loky pool (a one-unit sweep first), so worker start-up
(~1 s) is not counted against the parallel runs.

Usage::

    python benchmarks/bench_sweep.py                       # ~2-3 min on 2 cores
    python benchmarks/bench_sweep.py --replicates 20 --dask --out /tmp/sweep.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from bench_output import host, write_report
from hydra import compose, initialize_config_dir

from experiments.harness.conf_files import CONF_DIR
from experiments.harness.plan import build_plan
from experiments.harness.results import read_summary
from experiments.run import run

HERE = Path(__file__).resolve().parent


def figure1(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=["experiment=figure1", *overrides])


def tree_cpu_seconds() -> float:
    """User + system CPU time of this process and every descendant, live or ended: each live
    process's own time plus that of its ended children, which it reaped (a worker pool shut
    down between two readings moves its time from the live sum to its parent's
    ``children_*`` fields, so the difference of two readings never goes negative)."""
    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def timed_run(cfg, n_jobs: int, scratch: Path, label: str) -> dict[str, object]:
    out = scratch / label
    cpu, start = tree_cpu_seconds(), time.perf_counter()
    run(cfg, results_dir=out, n_jobs=n_jobs)
    wall = time.perf_counter() - start
    cpu = tree_cpu_seconds() - cpu
    summary = read_summary(out)
    units = len(build_plan(cfg).units())
    return {
        "label": label,
        "n_jobs": n_jobs,
        "units": units,
        "wall_seconds": wall,
        "units_per_second": units / wall,
        "cpu_seconds": cpu,
        "unit_cpu_seconds": float(summary["seconds"].sum()),  # release + sample, all cells
        "failed_rows": int((summary["status"] != "ok").sum()),
        "load_average_after": os.getloadavg(),
    }


def timed_gate(n_jobs: int) -> dict[str, object]:
    """Wall time of the regression gate from a fresh interpreter, as CI runs it."""
    command = [sys.executable, "-m", "experiments.regress", "--n-jobs", str(n_jobs)]
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"the regression gate failed:\n{completed.stdout}{completed.stderr}")
    return {"n_jobs": n_jobs, "wall_seconds": wall, "load_average_after": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=100, help="100 = paper scale")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dask", action="store_true", help="also run on a local Dask cluster")
    parser.add_argument("--gate", action="store_true", help="also time the regression gate")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "sweep.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    cfg = figure1([f"replicates={args.replicates}"])
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        scratch = Path(tmp)
        warm = figure1(["replicates=1", "datasets=[normal]", "mechanisms=[duff]"])
        run(warm, results_dir=scratch / "warm", n_jobs=max(args.jobs))
        for jobs in args.jobs:
            runs.append(timed_run(cfg, jobs, scratch, f"loky n_jobs={jobs}"))
            print(json.dumps(runs[-1]), flush=True)
        if args.dask:
            from distributed import LocalCluster

            with LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster:
                cfg.backend, cfg.scheduler_address = "dask", cluster.scheduler_address
                runs.append(timed_run(cfg, 2, scratch, "dask 2 workers"))
                print(json.dumps(runs[-1]), flush=True)
    serial = next((r for r in runs if r["n_jobs"] == 1 and r["label"].startswith("loky")), None)
    for r in runs:
        if serial is not None:
            r["efficiency"] = serial["wall_seconds"] / (r["n_jobs"] * r["wall_seconds"])
            r["cpu_efficiency"] = serial["cpu_seconds"] / r["cpu_seconds"]
    report = {
        "benchmark": "sweep",
        "experiment": "figure1",
        "replicates": args.replicates,
        "host": host(),
        "load_average_before": load_before,
        "runs": runs,
    }
    if args.gate:
        report["gate"] = timed_gate(max(args.jobs))
        print(json.dumps(report["gate"]), flush=True)
    write_report(args.out, report)


if __name__ == "__main__":
    main()
