"""Per-release cost of every mechanism, as a ratio to ``np.sort`` of the same data.

For each ``n`` the data are ``n`` unsorted draws of N(0, 1) on the public bounds
``[-10, 10]`` (Figure 1's normal dataset), ε = 1 and δ = 1/n.  One *release* is
what a sweep pays per (dataset, mechanism, ε): ``mechanism.release(data, bounds)``
(check, clip, sort, build the output distribution, tune) plus
``release.sample(trials, rng)``.  Its cost is divided by the time of
``np.sort(data)`` measured in the same loop (interleaved, so both see the same
machine load); the ratio is the median over repetitions, each repetition timing
the sort and every mechanism once (and ``np.partition`` around the median once,
the floor of a release by selection).  Times are CPU times of this process
(:func:`time.process_time`; everything here is single-threaded), which other
load on the machine disturbs much less than wall time.  ``*_public`` mechanisms cache their tuning
per ``(ε, δ, n)`` (:func:`functools.lru_cache`), as in a sweep: a warm-up call
fills the cache, and its one-off cost is reported separately as ``first_call``.

Usage::

    python benchmarks/bench_release.py                   # n = 1e3 .. 1e7 (~2 min)
    python benchmarks/bench_release.py --sizes 1000 100000 --out /tmp/release.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import mechanisms

HERE = Path(__file__).resolve().parent
SIZES = (10**3, 10**4, 10**5, 10**6, 10**7)
BOUNDS = (-10.0, 10.0)
EPSILON = 1.0
MECHANISMS: dict[str, tuple[str, dict[str, object]]] = {
    "duff": ("duff", {}),
    "quantile_em": ("quantile_em", {}),
    "smooth_cauchy": ("smooth_cauchy", {}),
    "smooth_laplace": ("smooth_laplace", {"tuning": "oracle"}),
    "smooth_laplace_public": ("smooth_laplace", {"tuning": "public"}),
    "laplace_ln": ("laplace_ln", {"tuning": "oracle"}),
    "laplace_ln_public": ("laplace_ln", {"tuning": "public"}),
    "laplace_global": ("laplace_global", {}),
    "gaussian_global": ("gaussian_global", {}),
    "duff_q0.1": ("duff", {"alpha": 0.1}),
    "duff_replace_one_q0.1": ("duff", {"alpha": 0.1, "neighbours": "replace_one"}),
    "quantile_em_q0.1": ("quantile_em", {"alpha": 0.1}),
    "smooth_cauchy_q0.1": ("smooth_cauchy", {"alpha": 0.1}),
    "smooth_laplace_public_q0.1": ("smooth_laplace", {"tuning": "public", "alpha": 0.1}),
    "laplace_ln_public_q0.1": ("laplace_ln", {"tuning": "public", "alpha": 0.1}),
    "smooth_laplace_q0.1": ("smooth_laplace", {"tuning": "oracle", "alpha": 0.1}),
}
"""Benchmark label -> (registry name, options), as in conf/mechanism/."""


def make(label: str, n: int) -> mechanisms.Mechanism:
    name, options = MECHANISMS[label]
    delta = 1.0 / n if mechanisms.get(name).requires_delta else None
    return mechanisms.make(name, epsilon=EPSILON, delta=delta, **options)


def one_release(mechanism: mechanisms.Mechanism, data: np.ndarray, trials: int, rng) -> float:
    start = time.process_time()
    mechanism.release(data, BOUNDS).sample(trials, rng)
    return time.process_time() - start


def one_sort(data: np.ndarray) -> float:
    start = time.process_time()
    np.sort(data)
    return time.process_time() - start


def one_partition(data: np.ndarray) -> float:
    """``np.partition`` around the median: the floor of a selection-based release."""
    start = time.process_time()
    np.partition(data, data.size // 2)
    return time.process_time() - start


def measure(n: int, trials: int, budget: float, seed: int) -> dict[str, object]:
    """Ratios to np.sort at size ``n``; repetitions until ``budget`` seconds (3 to 50)."""
    rng = np.random.default_rng(seed)
    data = rng.normal(size=n)
    data.setflags(write=False)
    made = {label: make(label, n) for label in MECHANISMS}
    first_call = {label: one_release(m, data, trials, rng) for label, m in made.items()}
    one_sort(data)
    sorts: list[float] = []
    partitions: list[float] = []
    times: dict[str, list[float]] = {label: [] for label in made}
    start, repetitions = time.perf_counter(), 0
    while repetitions < 3 or (time.perf_counter() - start < budget and repetitions < 50):
        for label, mechanism in made.items():
            sorts.append(one_sort(data))
            times[label].append(one_release(mechanism, data, trials, rng))
        partitions.append(one_partition(data))
        repetitions += 1
    sort_seconds = statistics.median(sorts)
    return {
        "n": n,
        "repetitions": repetitions,
        "sort_seconds": sort_seconds,
        "partition_ratio": statistics.median(partitions) / sort_seconds,
        "seconds": {label: statistics.median(t) for label, t in times.items()},
        "ratio": {label: statistics.median(t) / sort_seconds for label, t in times.items()},
        "first_call_seconds": first_call,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--trials", type=int, default=100, help="sample size per release")
    parser.add_argument("--budget", type=float, default=4.0, help="seconds per n (at least 3 reps)")
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "release.json")
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        row = measure(n, args.trials, args.budget, args.seed)
        rows.append(row)
        ratios = " ".join(f"{k}={v:.2f}" for k, v in row["ratio"].items())
        print(f"n={n:>9} sort={row['sort_seconds'] * 1e3:9.3f} ms  {ratios}", flush=True)
    report = {
        "benchmark": "release",
        "epsilon": EPSILON,
        "trials": args.trials,
        "bounds": list(BOUNDS),
        "numpy": np.__version__,
        "host": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
        "load_average": os.getloadavg(),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
