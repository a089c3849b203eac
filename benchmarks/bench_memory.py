"""Peak memory of a sweep at n = 10^7: does it stay at a few datasets' worth?

Runs ``python -m experiments.run`` (loky, n_jobs = 2) in a subprocess on the
normal distribution with n = 10^7 points per dataset (80 MB of float64), every
mechanism, ε = 1, 100 trials, for ``--replicates`` datasets each (several
sizes, so a growth with the sweep's size would show).  The process tree (the
CLI process and its loky workers) is sampled with ``psutil`` every 20 ms;
reported are the peak of the summed resident set size (RSS) over the tree, the
peak RSS of the parent and of the largest worker, all also in units of one
dataset (``8·n`` bytes).  RSS counts shared pages (numpy, the interpreter) in
every process, so the sum overstates the true footprint; the same sweep at
``--baseline-n`` (1000) points gives the footprint of the interpreters and
libraries, and the peak above it, in datasets, is what the data costs.  Sampling
can miss a peak shorter than 20 ms; the largest waited-for child's
``ru_maxrss`` (``resource.getrusage(RUSAGE_CHILDREN)``, exact but per process)
is given as a cross-check.

Usage::

    python benchmarks/bench_memory.py                      # replicates 2 and 6, ~1-2 min
    python benchmarks/bench_memory.py --n 1000000 --replicates 2 --out /tmp/memory.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from bench_output import host, write_report

HERE = Path(__file__).resolve().parent
PROJECT_ROOT = HERE.parent
MECHANISMS = (
    "duff,quantile_em,smooth_cauchy,smooth_laplace_oracle,smooth_laplace_public,laplace_ln_oracle,"
    "laplace_ln_public,laplace_global,gaussian_global"
)
MB = 2**20


def tree_rss(root: psutil.Process) -> tuple[int, int, int]:
    """(summed RSS, parent RSS, largest child RSS) of ``root`` and its descendants, bytes."""
    try:
        parent = root.memory_info().rss
        children = []
        for child in root.children(recursive=True):
            try:
                children.append(child.memory_info().rss)
            except psutil.NoSuchProcess:
                continue
    except psutil.NoSuchProcess:
        return 0, 0, 0
    return parent + sum(children), parent, max(children, default=0)


def measure(n: int, replicates: int, n_jobs: int, scratch: Path) -> dict[str, object]:
    overrides = [
        "experiment=figure1",
        f"n={n}",
        f"replicates={replicates}",
        "datasets=[normal]",
        "epsilons=[1.0]",
        "trials=100",
        f"mechanisms=[{MECHANISMS}]",
        f"n_jobs={n_jobs}",
        f"results_dir={scratch / f'r{replicates}'}",
        "hydra/job_logging=none",
        "hydra/hydra_logging=none",
    ]
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "experiments.run", *overrides],
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    root = psutil.Process(process.pid)
    peak_total = peak_parent = peak_child = 0
    while process.poll() is None:
        total, parent, child = tree_rss(root)
        peak_total = max(peak_total, total)
        peak_parent = max(peak_parent, parent)
        peak_child = max(peak_child, child)
        time.sleep(0.02)
    _, stderr = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"sweep failed ({process.returncode}):\n{stderr[-3000:]}")
    dataset = 8 * n
    return {
        "n": n,
        "replicates": replicates,
        "units": replicates * len(MECHANISMS.split(",")),
        "n_jobs": n_jobs,
        "wall_seconds": time.perf_counter() - start,
        "dataset_mb": dataset / MB,
        "peak_tree_rss_mb": peak_total / MB,
        "peak_parent_rss_mb": peak_parent / MB,
        "peak_worker_rss_mb": peak_child / MB,
        "peak_tree_rss_datasets": peak_total / dataset,
        "children_ru_maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--replicates", type=int, nargs="+", default=[2, 6])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--baseline-n", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "memory.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        baseline = measure(args.baseline_n, min(args.replicates), args.n_jobs, Path(tmp) / "base")
        print(json.dumps(baseline), flush=True)
        for replicates in args.replicates:
            row = measure(args.n, replicates, args.n_jobs, Path(tmp))
            above = row["peak_tree_rss_mb"] - baseline["peak_tree_rss_mb"]
            row["above_baseline_datasets"] = above / row["dataset_mb"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    report = {
        "benchmark": "memory",
        "method": "psutil RSS of the process tree every 20 ms; ru_maxrss of RUSAGE_CHILDREN",
        "host": host() | {"memory_gb": psutil.virtual_memory().total / 2**30},
        "baseline": baseline,
        "rows": rows,
    }
    write_report(args.out, report)


if __name__ == "__main__":
    main()
