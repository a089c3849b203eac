"""Cost of the two gap samplers of ``PiecewiseUniformRelease``: inverse cdf and racing.

``sampler="inverse_cdf"`` draws a gap by a binary search in the cumulative sum
(``O(log window)`` per draw); ``sampler="racing"`` runs the Duff paper's
Algorithm 1 (``O(levels)`` exponentials, logs and comparisons per draw, see
:mod:`mechanisms.sampling.racing`).  Two tables, both from one run:

1. **Per draw, against the number of levels N and of draws.**  Duff's log-score
   on ``n = N - 1`` evenly spaced points in [0, 1] with ε = 1000/N, so that all
   N gaps carry weight (the score falls by ~500 across them) and each is its
   own level.  ``sample(draws)`` on a release built once: ns per draw for each
   sampler and their ratio; the one-off cost of building each release is
   printed too.
2. **Per release, at the sweeps' sizes.**  Duff on n N(0, 1) points (n = 1e2 ..
   1e7, bounds [-10, 10], ε = 0.1, 1, 2), draws = 1, 100, 1000: building the
   release on the sorted data plus ``sample(draws)``, as a sweep pays per
   (dataset, ε) after the sort, in ns per draw, and the ratio racing /
   inverse cdf.

Times are CPU times (:func:`time.process_time`); each entry is the median over
repetitions of a loop long enough (``--min-time``) to dwarf the clock's
resolution.  Ratios above 1 mean racing is slower.

Usage::

    python benchmarks/bench_racing.py                  # ~3 min
    python benchmarks/bench_racing.py --out /tmp/racing.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
from bench_output import host, write_report

from mechanisms.median.duff_utility import gap_utility
from mechanisms.sampling.piecewise import SAMPLERS, PiecewiseUniformRelease, score_epsilon

LEVELS = (10, 10**3, 10**5)
DRAWS = (1, 100, 10**4)
SIZES = (10**2, 10**3, 10**5, 10**7)
EPSILONS = (0.1, 1.0, 2.0)
SWEEP_DRAWS = (1, 100, 1000)
BOUNDS = (-10.0, 10.0)


def seconds_per_call(call: Callable[[], object], min_time: float, repeats: int = 5) -> float:
    """Median over ``repeats`` of the CPU time per call of a loop lasting ``min_time``."""
    start = time.process_time()
    call()
    once = max(time.process_time() - start, 1e-7)
    number = max(1, round(min_time / once))
    times = []
    for _ in range(repeats if once < 1.0 else 1):
        start = time.process_time()
        for _ in range(number):
            call()
        times.append((time.process_time() - start) / number)
    return statistics.median(times)


def duff_release(
    sorted_x: np.ndarray, epsilon: float, bounds: tuple[float, float], sampler: str
) -> PiecewiseUniformRelease:
    """Duff's release (as :class:`mechanisms.median.duff.Duff` builds it) with the given sampler."""
    n = sorted_x.size
    half_epsilon = 0.5 * score_epsilon(epsilon, n)

    def log_score(gaps: np.ndarray) -> np.ndarray:
        u = gap_utility(n, gaps)
        u *= half_epsilon
        return u

    return PiecewiseUniformRelease(sorted_x, *bounds, log_score, n // 2, sampler=sampler)


def race_levels(release: PiecewiseUniformRelease) -> int:
    """Number of levels the racing sampler races (entries per draw)."""
    racer = release._racer
    return 0 if racer is None else racer.log_weights.size


def by_levels(min_time: float) -> list[dict[str, object]]:
    rows = []
    for levels in LEVELS:
        x = np.arange(1, levels) / levels
        epsilon = 1000.0 / levels
        build = {
            s: seconds_per_call(partial(duff_release, x, epsilon, (0.0, 1.0), s), min_time)
            for s in SAMPLERS
        }
        releases = {s: duff_release(x, epsilon, (0.0, 1.0), s) for s in SAMPLERS}
        assert race_levels(releases["racing"]) == levels
        for draws in DRAWS:
            rng = np.random.default_rng(0)
            per_draw = {
                s: seconds_per_call(partial(r.sample, draws, rng), min_time) / draws * 1e9
                for s, r in releases.items()
            }
            row = {"levels": levels, "draws": draws, "ns_per_draw": per_draw}
            row["build_us"] = {s: t * 1e6 for s, t in build.items()}
            row["ratio"] = per_draw["racing"] / per_draw["inverse_cdf"]
            rows.append(row)
            print(
                f"N={levels:>7} draws={draws:>6}  inverse_cdf={per_draw['inverse_cdf']:12.1f} ns"
                f"  racing={per_draw['racing']:14.1f} ns  racing/inverse={row['ratio']:10.1f}"
                f"  (build: {build['inverse_cdf'] * 1e6:.0f} us, {build['racing'] * 1e6:.0f} us)",
                flush=True,
            )
    return rows


def build_and_sample(
    x: np.ndarray, epsilon: float, sampler: str, draws: int, rng: np.random.Generator
) -> np.ndarray:
    return duff_release(x, epsilon, BOUNDS, sampler).sample(draws, rng)


def at_sweep_sizes(min_time: float, seed: int) -> list[dict[str, object]]:
    rows = []
    for n in SIZES:
        x = np.sort(np.clip(np.random.default_rng(seed).normal(size=n), *BOUNDS))
        for epsilon in EPSILONS:
            levels = race_levels(duff_release(x, epsilon, BOUNDS, "racing"))
            for draws in SWEEP_DRAWS:
                rng = np.random.default_rng(0)
                per_draw = {
                    s: seconds_per_call(
                        partial(build_and_sample, x, epsilon, s, draws, rng), min_time
                    )
                    / draws
                    * 1e9
                    for s in SAMPLERS
                }
                ratio = per_draw["racing"] / per_draw["inverse_cdf"]
                rows.append(
                    {"n": n, "epsilon": epsilon, "draws": draws, "levels": levels}
                    | {"ns_per_draw": per_draw, "ratio": ratio}
                )
                print(
                    f"n={n:>9} eps={epsilon:<4} levels={levels:>6} draws={draws:>5}"
                    f"  inverse_cdf={per_draw['inverse_cdf']:12.1f} ns"
                    f"  racing={per_draw['racing']:12.1f} ns  racing/inverse={ratio:8.1f}",
                    flush=True,
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds per timing loop")
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()
    print("per draw, against the number of levels N and of draws (release built once)")
    levels = by_levels(args.min_time)
    print("per release (build on sorted data + sample), Duff at the sweeps' sizes")
    sweep = at_sweep_sizes(args.min_time, args.seed)
    if args.out is not None:
        report = {
            "benchmark": "racing",
            "numpy": np.__version__,
            "host": host(),
            "load_average": os.getloadavg(),
            "by_levels": levels,
            "at_sweep_sizes": sweep,
        }
        write_report(args.out, report)


if __name__ == "__main__":
    main()
