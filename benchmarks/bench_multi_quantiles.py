"""Timing of the m-quantiles mechanisms (issue 27): ``release(data) + sample(1)`` against n and m.

Run::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_multi_quantiles.py [--quick] [--budget 60] \
        [--out benchmarks/results/multi_quantiles.md]

For every method, n in 1e3..1e6 (normal data, bounds (-5, 5), ε = 1, δ = 1e-6 where needed,
add/remove neighbours) and m in (1, 5, 10, 30, 100) it reports the best of a few repetitions
of ``mechanism.release(x, bounds).sample(1, rng)`` (construction, which configures the per-level
mechanisms and finds app_ind_exp's ε₀, is not timed), in CPU seconds (``time.process_time``:
steadier than wall time on a shared machine).  A cell whose time, extrapolated from the
method's smaller n with the measured exponent (at least 1), would exceed ``--budget`` seconds
is skipped ("-"), as is JointExp where its O(m n) forward arrays would exceed 1.5 GB.  Growth
exponents are least-squares slopes of log time on log n (n >= 1e4) and on log m (m >= 5).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from mechanisms import registry

METHODS = [
    "joint_exp",
    "ind_exp",
    "ind_duff",
    "app_ind_exp",
    "smooth_laplace_per_level",
    "approximate_quantiles",
    "tree_quantiles",
    "tree_quantiles_gaussian",
]
SIZES = [1_000, 10_000, 100_000, 1_000_000]
LEVELS = [1, 5, 10, 30, 100]
BOUNDS = (-5.0, 5.0)
CLAIMED = {
    "joint_exp": "O(m n log n + m² n): sort, then the dynamic program over m levels",
    "ind_exp": "O(m n) (one selection per level; the data are sorted once)",
    "ind_duff": "O(m n)",
    "app_ind_exp": "O(m n)",
    "smooth_laplace_per_level": "O(m n)",
    "approximate_quantiles": "O(n log m) per draw (recursion of depth log m)",
    "tree_quantiles": "O(n + m·height·branching) (one pass builds the tree)",
    "tree_quantiles_gaussian": "O(n + m·height·branching)",
}
"""The cost each method's implementation claims (module docstrings of mechanisms.multi)."""


def configured(name: str, m: int):
    cls = registry.get(name)
    return registry.make(name, epsilon=1.0, delta=1e-6 if cls.requires_delta else None, m=m)


def seconds(name: str, m: int, x: np.ndarray, repeats: int) -> float:
    mechanism = configured(name, m)
    rng = np.random.default_rng(0)
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        mechanism.release(x, BOUNDS).sample(1, rng)
        best = min(best, time.process_time() - start)
        if best > 1.0:
            break
    return best


def slope(xs: list[float], ys: list[float]) -> float | None:
    pts = [(math.log(a), math.log(b)) for a, b in zip(xs, ys, strict=True) if b == b]
    if len(pts) < 2:
        return None
    u, v = np.array(pts).T
    return float(np.polyfit(u, v, 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 1e5, m up to 30")
    parser.add_argument("--budget", type=float, default=60.0, help="skip cells predicted slower")
    parser.add_argument("--out", help="also write the tables (Markdown) to this file")
    args = parser.parse_args()
    lines: list[str] = []

    def emit(line: str = "") -> None:
        print(line)
        lines.append(line)

    sizes = SIZES[:3] if args.quick else SIZES
    levels = LEVELS[:4] if args.quick else LEVELS
    data = {n: np.random.default_rng(n).normal(0.0, 1.0, n) for n in sizes}
    table: dict[tuple[str, int], list[float]] = {}
    for name in METHODS:
        for m in levels:
            row: list[float] = []
            for i, n in enumerate(sizes):
                if name == "joint_exp" and 3 * 8 * m * (n + 1) > 1.5e9:
                    row.append(math.nan)
                    continue
                if i and row[-1] == row[-1]:
                    growth = max(1.0, slope(sizes[:i], row) or 1.0) if i > 1 else 1.0
                    predicted = row[-1] * (n / sizes[i - 1]) ** growth
                    if predicted > args.budget:
                        row.append(math.nan)
                        continue
                elif i:
                    row.append(math.nan)
                    continue
                row.append(seconds(name, m, data[n], repeats=3))
                print(f"{name:26s} m={m:<4d} n={n:<8d} {row[-1]:.4g} s", flush=True)
            table[(name, m)] = row
    emit("# Release time of the m-quantile methods against n and m")
    emit()
    emit(
        "CPU seconds of one `release(x, bounds).sample(1)` (best of 3; N(0, 1) data, bounds "
        "(-5, 5), ε = 1), written by `benchmarks/bench_multi_quantiles.py`; '-': skipped "
        f"(predicted over {args.budget:g} s, or JointExp's arrays over 1.5 GB)."
    )
    emit()
    emit("| method | m | " + " | ".join(f"n={n:.0e}" for n in sizes) + " | exponent in n |")
    emit("|---|---|" + "---|" * (len(sizes) + 1))
    for (name, m), row in table.items():
        cells = " | ".join("-" if t != t else f"{t:.3g}" for t in row)
        big = [(n, t) for n, t in zip(sizes, row, strict=True) if n >= 10_000]
        s = slope([n for n, _ in big], [t for _, t in big])
        emit(f"| {name} | {m} | {cells} | {'-' if s is None else f'{s:.2f}'} |")
    emit()
    header = " | ".join(f"exponent in m at n={n:.0e}" for n in sizes)
    emit(f"| method | claimed cost | {header} |")
    emit("|---|---|" + "---|" * len(sizes))
    for name in METHODS:
        exps = []
        for i in range(len(sizes)):
            ms = [m for m in levels if m >= 5]
            s = slope([float(m) for m in ms], [table[(name, m)][i] for m in ms])
            exps.append("-" if s is None else f"{s:.2f}")
        emit(f"| {name} | {CLAIMED[name]} | " + " | ".join(exps) + " |")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
