"""Power of the black-box audit (:mod:`experiments.audit.black_box`) at its default budget.

Three mechanisms, each run with its privacy parameter inflated by a factor f while claiming
ε = 1 (f = 1 is the correct mechanism; f = 1.05, 1.1 probe below the asked-for 1.25), on
one pair of neighbouring datasets:

* ``laplace_median``: clipped median on [0, 1] + Laplace(1 / (f ε)); replace-one pair
  [0×6, 1×5] vs [0×5, 1×6] (medians 0 and 1), true loss f ε (tight);
* ``em_median``: exponential mechanism for the median on the grid {0, 0.2, ..., 1},
  P(r) ∝ exp(f ε u(r) / 2), u(r) = −|#{x <= r} − n/2|; replace-one pair
  [0, .2, .2, .2, 1, 1] vs [1, .2, .2, .2, 1, 1];
* ``report_noisy_max``: argmax of counts + Laplace(1 / (f ε)) noise, counts (0, 1, 1, 1)
  vs (1, 1, 1, 1) (add/remove neighbours).

The true loss of each pair, max_S |log P(S)/Q(S)| = max over outputs (finite outputs), is
exact (EM) or by quadrature (report noisy max).  For each (mechanism, f): the fraction of
``--runs`` audits that flag the claim, the median and largest ε lower bound, and seconds per
audit (wall time, mean; the samplers' share of it in "sampling").  "smallest f" is
the smallest inflation flagged in at least ``--power`` of the runs.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_black_box_audit.py      # ~1 min on 2 cores
    PYTHONPATH=. .venv/bin/python benchmarks/bench_black_box_audit.py \
        --out benchmarks/results/black_box_audit.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy
from scipy import integrate, stats

from experiments.audit.black_box import DEFAULT_SAMPLES, Sampler, audit_pair

FACTORS = (1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 4.0)
EM_GRID = np.linspace(0.0, 1.0, 6)
EM_PAIR = ([0.0, 0.2, 0.2, 0.2, 1.0, 1.0], [1.0, 0.2, 0.2, 0.2, 1.0, 1.0])
RNM_PAIR = ([0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0])
Pair = tuple[Sampler, Sampler, float]  # samplers on D and D', true privacy loss of the pair


def laplace_median(epsilon: float) -> Pair:
    scale = 1.0 / epsilon  # sensitivity of the median on [0, 1] is 1

    def around(center: float) -> Sampler:
        return lambda size, rng: center + rng.laplace(0.0, scale, size)

    return around(0.0), around(1.0), epsilon


def em_probabilities(data: list[float], epsilon: float) -> np.ndarray:
    counts = (np.asarray(data)[None, :] <= EM_GRID[:, None]).sum(axis=1)
    weights = np.exp(-epsilon * np.abs(counts - len(data) / 2) / 2)
    return weights / weights.sum()


def finite(values: np.ndarray, probabilities: np.ndarray) -> Sampler:
    return lambda size, rng: rng.choice(values, size=size, p=probabilities)


def em_median(epsilon: float) -> Pair:
    p, q = (em_probabilities(d, epsilon) for d in EM_PAIR)
    return finite(EM_GRID, p), finite(EM_GRID, q), float(np.max(np.abs(np.log(p / q))))


def rnm_probabilities(counts: list[float], scale: float) -> np.ndarray:
    """P(argmax = i) = ∫ f(z − c_i) Π_{j≠i} F(z − c_j) dz, by quadrature between the counts."""
    cuts = [-math.inf, *sorted(set(counts)), math.inf]
    out = []
    for i, ci in enumerate(counts):
        others = [c for j, c in enumerate(counts) if j != i]

        def density(z: float, ci: float = ci, others: list[float] = others) -> float:
            below = np.prod(stats.laplace.cdf(z, others, scale))
            return float(stats.laplace.pdf(z, ci, scale) * below)

        out.append(
            sum(integrate.quad(density, a, b, limit=200)[0] for a, b in itertools.pairwise(cuts))
        )
    return np.array(out)


def report_noisy_max(epsilon: float) -> Pair:
    def sampler(counts: list[float]) -> Sampler:
        c = np.asarray(counts)
        return lambda size, rng: np.argmax(c + rng.laplace(0, 1 / epsilon, (size, c.size)), axis=1)

    p, q = (rnm_probabilities(c, 1 / epsilon) for c in RNM_PAIR)
    return sampler(RNM_PAIR[0]), sampler(RNM_PAIR[1]), float(np.max(np.abs(np.log(p / q))))


MECHANISMS: dict[str, Callable[[float], Pair]] = {
    "laplace_median": laplace_median,
    "em_median": em_median,
    "report_noisy_max": report_noisy_max,
}


def measure(name: str, factor: float, args: argparse.Namespace) -> dict[str, Any]:
    """``args.runs`` audits of ``name`` run at ``factor`` · ε while claiming ε."""
    sample_p, sample_q, true_loss = MECHANISMS[name](factor * args.epsilon)
    flagged, lowers, seconds, sampling = [], [], [], [0.0]

    def timed(sampler: Sampler) -> Sampler:
        def sample(size: int, rng: np.random.Generator) -> np.ndarray:
            start = time.perf_counter()
            out = sampler(size, rng)
            sampling[0] += time.perf_counter() - start
            return out

        return sample

    sample_p, sample_q = timed(sample_p), timed(sample_q)
    for run in range(args.runs):
        start = time.perf_counter()
        rng = np.random.default_rng([args.seed, run])
        audit = audit_pair(sample_p, sample_q, epsilon=args.epsilon, samples=args.samples, rng=rng)
        seconds.append(time.perf_counter() - start)
        flagged.append(audit.violated)
        lowers.append(audit.epsilon_lower)
    return {
        "mechanism": name,
        "factor": factor,
        "true_epsilon": true_loss,
        "detected": sum(flagged) / args.runs,
        "median_epsilon_lower": statistics.median(lowers),
        "max_epsilon_lower": max(lowers),
        "seconds_per_audit": statistics.mean(seconds),
        "sampling_seconds_per_audit": sampling[0] / args.runs,
    }


def smallest_detected(rows: list[dict[str, Any]], name: str, power: float) -> float | None:
    """The smallest inflation f > 1 of ``name`` flagged in at least ``power`` of the runs."""
    hits = (r["factor"] for r in rows if r["mechanism"] == name and r["factor"] > 1)
    detected = {r["factor"] for r in rows if r["mechanism"] == name and r["detected"] >= power}
    return min((f for f in hits if f in detected), default=None)


def tables(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    head = (
        "| mechanism | f | true ε | detected | median ε_lower | max ε_lower | s/audit | sampling |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['mechanism']} | ×{r['factor']:g} | {r['true_epsilon']:.3f} | "
            f"{r['detected']:.0%} | {r['median_epsilon_lower']:.3f} | "
            f"{r['max_epsilon_lower']:.3f} | {r['seconds_per_audit']:.3f} | "
            f"{r['sampling_seconds_per_audit']:.3f} |"
        )
    power = f"detected in >= {args.power:.0%} of runs"
    lines += ["", f"| mechanism | smallest f with true ε > claimed | smallest f {power} |"]
    lines.append("|---|---|---|")
    for name in MECHANISMS:
        mine = [r for r in rows if r["mechanism"] == name]
        leaky = min((r["factor"] for r in mine if r["true_epsilon"] > args.epsilon), default=None)
        found = smallest_detected(rows, name, args.power)
        shown = ["none" if f is None else f"×{f:g}" for f in (leaky, found)]
        lines.append(f"| {name} | {shown[0]} | {shown[1]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="outputs per side")
    parser.add_argument("--epsilon", type=float, default=1.0, help="the claimed ε")
    parser.add_argument("--power", type=float, default=0.9, help="detection rate to count")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = [measure(name, f, args) for name in MECHANISMS for f in FACTORS]
    print(f"black-box audit, claimed ε = {args.epsilon:g}, {args.samples} outputs per side, "
          f"{args.runs} runs, family-wise level 1e-9\n")  # fmt: skip
    print(tables(rows, args))
    wall = time.perf_counter() - start
    print(f"\nwall time {wall:.1f} s")
    if args.out is not None:
        report = {
            "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "host": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
            "versions": {"numpy": np.__version__, "scipy": scipy.__version__},
            "smallest_detected": {n: smallest_detected(rows, n, args.power) for n in MECHANISMS},
            "rows": rows,
            "wall_seconds": wall,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
