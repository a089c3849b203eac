"""Per-release cost of every mechanism, as a ratio to ``np.sort`` of the same data.

For each ``n`` the data are ``n`` unsorted draws of N(0, 1) on the public bounds
``[-10, 10]`` (Figure 1's normal dataset), ε = 1 and δ = 1/n.  One *release* is
``mechanism.release(data, bounds)`` (check, clip, sort or select, build the output
distribution, tune) plus ``release.sample(trials, rng)``: one table with
``trials = 1`` (one estimate; the peers' unit of work) and one with ``trials = 100``
(what a sweep pays per (dataset, mechanism, ε)).  Its cost is divided by the time of
``np.sort(data)`` measured in the same loop (interleaved, so both see the same
machine load); the ratio is the median over repetitions, each repetition timing
the sort and every mechanism once (and ``np.partition`` around the median once,
the floor of a release by selection).  Times are CPU times of this process
(:func:`time.process_time`; everything here is single-threaded), which other
load on the machine disturbs much less than wall time.  ``*_public`` mechanisms cache their tuning
per ``(ε, δ, n)`` (:func:`functools.lru_cache`), as in a sweep: a warm-up call
fills the cache, and its one-off cost is reported separately as ``first_call``.

The peers (OpenDP's and diffprivlib's quantiles, :mod:`mechanisms.peers`) are
timed the same way when their extra is installed, at ``trials = 1`` only (their
``sample(k)`` runs the library's mechanism ``k`` times), but only while one release is
predicted to take under ``--peer-limit`` seconds (30 s by default, from the
previous size's time scaled by ``n``); above it their cells are ``null``.  They
do not count toward the ``--budget`` of repetitions (at least 3 each).

Usage::

    python benchmarks/bench_release.py                   # n = 1e3 .. 1e7 (~6 min)
    python benchmarks/bench_release.py --sizes 1000 100000 --trials 1 --out /tmp/release.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_output import host, write_report

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
PEERS: dict[str, tuple[str, dict[str, object]]] = {
    "opendp_quantile": ("opendp_quantile", {}),
    "diffprivlib_quantile": ("diffprivlib_quantile", {}),
}
"""The peer libraries' medians, when installed (``pip install -e '.[peers]'``)."""
PEER_REPETITIONS = 3


def installed_peers() -> dict[str, tuple[str, dict[str, object]]]:
    """The entries of :data:`PEERS` whose library is installed."""
    available = set(mechanisms.available())
    return {label: entry for label, entry in PEERS.items() if entry[0] in available}


def make(label: str, n: int) -> mechanisms.Mechanism:
    name, options = {**MECHANISMS, **PEERS}[label]
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


def measure_peers(
    labels: list[str], data: np.ndarray, trials: int, rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    """(median release seconds, median sort seconds) of each peer, interleaved as below."""
    out = {}
    for label in labels:
        peer = make(label, data.size)
        sorts, times = [], []
        for _ in range(PEER_REPETITIONS):
            sorts.append(one_sort(data))
            times.append(one_release(peer, data, trials, rng))
        out[label] = (statistics.median(times), statistics.median(sorts))
    return out


def measure(n: int, trials: int, budget: float, seed: int, peers: list[str]) -> dict[str, Any]:
    """Ratios to np.sort at size ``n``; repetitions until ``budget`` seconds (3 to 50);
    then each peer of ``peers`` (3 repetitions, the sort timed beside it)."""
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
    peer_times = measure_peers(peers, data, trials, rng)
    return {
        "n": n,
        "repetitions": repetitions,
        "sort_seconds": sort_seconds,
        "partition_ratio": statistics.median(partitions) / sort_seconds,
        "seconds": {label: statistics.median(t) for label, t in times.items()},
        "ratio": {label: statistics.median(t) / sort_seconds for label, t in times.items()},
        "first_call_seconds": first_call,
        "peer_seconds": {
            label: peer_times[label][0] if label in peer_times else None
            for label in installed_peers()
        },
        "peer_ratio": {
            label: peer_times[label][0] / peer_times[label][1] if label in peer_times else None
            for label in installed_peers()
        },
    }


def peers_within(limit: float, n: int, previous: dict[str, Any] | None) -> list[str]:
    """The installed peers predicted (linearly in ``n`` from the previous size) to release in
    under ``limit`` seconds; all of them at the first size."""
    labels = list(installed_peers())
    if limit <= 0:
        return []
    if previous is None:
        return labels
    seconds, scale = previous["peer_seconds"], n / previous["n"]
    return [
        label for label in labels if seconds[label] is not None and seconds[label] * scale < limit
    ]


def code_version() -> str:
    """The commit of the ``mechanisms`` package timed (``PYTHONPATH`` may point at another
    checkout), with ``+`` when its tree has uncommitted changes."""
    where = str(Path(mechanisms.__file__).resolve().parent)

    def git(*arguments: str) -> str:
        command = ["git", "-C", where, *arguments]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()

    try:
        head, dirty = git("rev-parse", "--short", "HEAD"), git("status", "--porcelain", "-uno")
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    return f"commit {head}{' +' if dirty else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument(
        "--trials",
        type=int,
        nargs="+",
        default=[1, 100],
        help="sample sizes per release, one table each (peers: only 1)",
    )
    parser.add_argument("--budget", type=float, default=4.0, help="seconds per n (at least 3 reps)")
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument(
        "--peer-limit",
        type=float,
        default=30.0,
        help="largest predicted seconds per peer release (0: no peers)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "release.json")
    args = parser.parse_args()
    tables = []
    for trials in args.trials:
        rows: list[dict[str, Any]] = []
        for n in args.sizes:
            peers = peers_within(args.peer_limit, n, rows[-1] if rows else None)
            row = measure(n, trials, args.budget, args.seed, peers if trials == 1 else [])
            rows.append(row)
            ratios = " ".join(f"{k}={v:.2f}" for k, v in row["ratio"].items())
            ratios += "".join(
                f" {k}={v:.1f}" for k, v in row["peer_ratio"].items() if v is not None
            )
            print(
                f"trials={trials} n={n:>9} sort={row['sort_seconds'] * 1e3:9.3f} ms  {ratios}",
                flush=True,
            )
        tables.append({"trials": trials, "rows": rows})
    report = {
        "benchmark": "release",
        "epsilon": EPSILON,
        "bounds": list(BOUNDS),
        "numpy": np.__version__,
        "code": code_version(),
        "host": host(),
        "load_average": os.getloadavg(),
        "tables": tables,
    }
    write_report(args.out, report)


if __name__ == "__main__":
    main()
