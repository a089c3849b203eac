"""Small data, warm: microseconds per release + ``sample(100)`` at n = 1000, back to back.

``bench_release.py`` interleaves every mechanism with the sort, so each of its calls
starts with caches that the other mechanisms have just used (at n = 1000 that
doubles or triples a release's time).  A sweep's work unit releases the same
mechanism at every ε of one dataset in a row, so its calls are warm; this benchmark
times them that way: ``--calls`` releases of one mechanism in a row on the same
N(0, 1) data on [-10, 10] (ε = 1), after as many untimed ones, in blocks of 100
calls timed together (CPU time), the median block giving the time per call.  The
sort of the same data is timed the same way, in the same run, for the ratio.

Usage::

    python benchmarks/bench_small.py                       # ~10 s
    PYTHONPATH=old/checkout python benchmarks/bench_small.py --label before --out ...
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from bench_output import host, write_report
from bench_release import BOUNDS, MECHANISMS

import mechanisms

HERE = Path(__file__).resolve().parent
LABELS = ("duff", "quantile_em", "duff_q0.1", "smooth_cauchy")
"""The mechanisms timed: labels of ``bench_release.MECHANISMS``."""
BLOCK = 100


def per_call(run: Callable[[], object], calls: int) -> float:
    """Median CPU seconds per call of ``run`` over blocks of :data:`BLOCK` calls in a row."""
    for _ in range(calls):
        run()
    blocks = []
    for _ in range(max(calls // BLOCK, 5)):
        start = time.process_time()
        for _ in range(BLOCK):
            run()
        blocks.append((time.process_time() - start) / BLOCK)
    return statistics.median(blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "small_after.json")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    data = rng.normal(size=args.n)
    data.setflags(write=False)
    sort_seconds = per_call(lambda: np.sort(data), args.calls)
    seconds = {}
    for label in LABELS:
        name, options = MECHANISMS[label]
        mechanism = mechanisms.make(name, epsilon=1.0, **options)
        seconds[label] = per_call(
            lambda m=mechanism: m.release(data, BOUNDS).sample(args.trials, rng), args.calls
        )
        print(f"{label}: {seconds[label] * 1e6:.1f} us ({seconds[label] / sort_seconds:.2f}x sort)")
    report = {
        "benchmark": "small",
        "label": args.label,
        "n": args.n,
        "trials": args.trials,
        "host": host(),
        "sort_seconds": sort_seconds,
        "seconds": seconds,
    }
    write_report(args.out, report)


if __name__ == "__main__":
    main()
