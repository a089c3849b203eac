"""The peer libraries' medians beside ours: accuracy at n = 1000 and time against n.

Every installed peer of :mod:`mechanisms.peers` (OpenDP, diffprivlib, Tumult Core, Google's
DP library through python-dp) and, for reference, ``duff`` and ``quantile_em``, on N(0, 1)
data bounded to [−10, 10], ε = 1:

* **accuracy**: the mean absolute error |T(S) − M(S)| and the mean rank error over
  ``--datasets`` datasets of n = 1000 × ``--draws`` draws each (one release per dataset; a
  peer whose library draws from its own generator is drawn as it is, unseeded);
* **time**: one ``release(data, bounds)`` + ``sample(1)`` at n = 10³ … 10⁷, as a ratio to
  ``np.sort`` of the same data timed in the same run (median over ``--repeats``), until a
  call takes longer than ``--limit`` seconds (then the larger n are skipped, marked "—").

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_peers.py --out benchmarks/results/peers.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_output import host, write_report

import mechanisms
from mechanisms.core.quantiles import quantile_value

REFERENCE = ("duff", "quantile_em")
PEERS = ("opendp_quantile", "diffprivlib_quantile", "tumult_quantile", "google_dp_quantile")
BOUNDS = (-10.0, 10.0)
EPSILON = 1.0
SIZES = (10**3, 10**4, 10**5, 10**6, 10**7)


def accuracy(name: str, datasets: int, draws: int, seed: int) -> dict[str, float]:
    """Mean absolute and rank errors of ``name`` at n = 1000 (module docstring)."""
    rng = np.random.default_rng(seed)
    mechanism = mechanisms.make(name, epsilon=EPSILON)
    absolute, ranks = [], []
    for _ in range(datasets):
        x = np.sort(np.clip(rng.normal(size=1000), *BOUNDS))
        truth = quantile_value(x, 0.5, BOUNDS[0])
        estimates = mechanism.release(x, BOUNDS).sample(draws, rng)
        absolute.append(float(np.mean(np.abs(estimates - truth))))
        below = np.searchsorted(x, np.minimum(estimates, truth), side="right")
        above = np.searchsorted(x, np.maximum(estimates, truth), side="left")
        ranks.append(float(np.mean(np.maximum(above - below, 0))))
    return {"mean_abs_error": float(np.mean(absolute)), "mean_rank_error": float(np.mean(ranks))}


def timing(name: str, sizes: tuple[int, ...], repeats: int, limit: float, seed: int) -> list:
    """Per n: seconds of release + sample(1), seconds of np.sort, their ratio (None past
    the limit)."""
    rng = np.random.default_rng(seed)
    mechanism = mechanisms.make(name, epsilon=EPSILON)
    rows: list[dict[str, Any]] = []
    too_slow = False
    for n in sizes:
        if too_slow:
            rows.append({"n": n, "seconds": None, "sort_seconds": None, "ratio": None})
            continue
        x = rng.normal(size=n)
        calls, sorts = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            np.sort(x)
            sorts.append(time.perf_counter() - start)
            start = time.perf_counter()
            mechanism.release(x, BOUNDS).sample(1, rng)
            calls.append(time.perf_counter() - start)
            if calls[-1] > limit:
                too_slow = True
                break
        call, sort = statistics.median(calls), statistics.median(sorts)
        rows.append({"n": n, "seconds": call, "sort_seconds": sort, "ratio": call / sort})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=20)
    parser.add_argument("--draws", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=float, default=30.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    available = set(mechanisms.available())
    names = [name for name in (*REFERENCE, *PEERS) if name in available]
    rows = []
    started = time.perf_counter()
    for name in names:
        row = {
            "mechanism": name,
            **accuracy(name, args.datasets, args.draws, 1),
            "timing": timing(name, SIZES, args.repeats, args.limit, 2),
        }
        rows.append(row)
        times = ", ".join(
            "—" if t["ratio"] is None else f"{t['ratio']:.3g}×" for t in row["timing"]
        )
        print(
            f"{name:22s} abs {row['mean_abs_error']:.4g} rank {row['mean_rank_error']:.3g} "
            f"time/sort {times}",
            flush=True,
        )
    if args.out:
        write_report(
            args.out,
            {
                "host": host(),
                "parameters": {
                    "epsilon": EPSILON,
                    "bounds": list(BOUNDS),
                    "datasets": args.datasets,
                    "draws": args.draws,
                    "repeats": args.repeats,
                    "limit_seconds": args.limit,
                },
                "wall_seconds": time.perf_counter() - started,
                "rows": rows,
            },
        )


if __name__ == "__main__":
    main()
