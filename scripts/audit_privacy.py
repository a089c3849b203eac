"""Audit registered median mechanisms for privacy on neighbouring datasets, from their exact cdfs.

Usage::

    python scripts/audit_privacy.py [--mechanisms SPEC [SPEC ...]] [--epsilons 0.1,1,5]
                                    [--delta 1e-6] [--pairs 200] [--max-size 3000]
                                    [--cells 2000] [--seed 0] [--resolution 1e-15]
                                    [--large 10000000]

``SPEC`` is a registered mechanism name with optional options,
``name:key=value,key=value`` (``quantile_em:alpha=0.3,neighbours=replace_one``).
Default: every registered mechanism with its default options.  Only the generic
interface is used (``mechanisms.make``, ``Mechanism.guarantee``, ``release``,
``Release.cdf``), so any registered mechanism can be audited.

For each mechanism and ε: adversarial and random pairs of neighbouring datasets
on ``[a, b] = [0, 10]`` under the mechanism's own neighbouring relation
(add/remove, including the empty dataset, or replace-one), sizes up to
``--max-size``, plus with ``--large N`` one pair of size ``N``.  For each pair
both releases are cut into the same partition of the real line: ``(-inf, a)``,
the atom ``{a}``, ``--cells`` equal cells of ``(a, b)`` refined at every data
point of both datasets (for pairs of at most ``REFINE_LIMIT`` points), the atom
at ``b`` (precisely the cell ``(prev(b), b]``, ``prev`` = the next float down)
and ``(b, inf)``; cell probabilities are differences of the cdf.

Reported statistic, maximised over pairs, both directions and cells:

* pure ε-DP (``guarantee.delta == 0``): the privacy loss ``log(P_S(I) / P_S'(I))``
  divided by ε, using the lower bound ``log((P - r) / (Q + r))`` with ``r`` =
  ``--resolution``, an upper bound on the float error of a cell probability (cells
  with ``P <= r`` are skipped).  A value above 1 is a violation.
* approximate (ε, δ)-DP (``delta > 0``, ε the guarantee's epsilon): the
  hockey-stick divergence ``Σ_cells max(0, P_S(cell) - e^ε P_S'(cell))`` divided
  by δ, with ``P - r`` and ``Q + r`` again.  On a partition this is a *lower
  bound* of the true divergence (the best set need not be a union of cells).  A
  value above 1 is a violation.

A mechanism whose guarantee has ``data_dependent_tuning`` ("oracle" tuning) has
no guarantee to check: its numbers are shown and marked ``no guarantee``.  A
mechanism that cannot be imported, configured or run is reported with its error;
the audit goes on.  Exit status: 0 if nothing was violated or failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module

import numpy as np

from mechanisms import registry
from mechanisms.base import Mechanism, Neighbouring, Release

LOWER, UPPER = 0.0, 10.0
TOLERANCE = 1e-6
"""Relative slack before a statistic above 1 counts as a violation (float noise)."""

REFINE_LIMIT = 100_000
"""Partitions are refined at the data points only for pairs with at most this many."""

Factory = Callable[[str], Mechanism]
"""Builds the configured mechanism for a bounding method ("clip" or "drop")."""


# ------------------------------------------------------------------ datasets


def dataset(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """A dataset of size ``n`` inside ``[LOWER, UPPER]`` from one of the families."""
    mid, width = (LOWER + UPPER) / 2, UPPER - LOWER
    if family == "normal":
        x = rng.normal(mid, width / 7, n)
    elif family == "uniform":
        x = rng.uniform(LOWER, UPPER, n)
    elif family == "grid":  # ties, and points on both bounds
        x = rng.integers(0, 11, n) * (width / 10) + LOWER
    elif family == "ties":  # 80% tied at the middle (diffprivlib #107)
        x = np.where(rng.random(n) < 0.8, mid, rng.uniform(LOWER, UPPER, n))
    elif family == "bounds":
        x = np.where(rng.random(n) < 0.5, LOWER, UPPER)
    elif family == "bimodal":
        x = np.where(rng.random(n) < 0.5, LOWER + 0.2 * width, LOWER + 0.8 * width)
        x = x + rng.normal(0.0, width / 30, n)
    else:  # "spread": wider than the bounds, many points clipped onto them
        x = rng.normal(mid, 2 * width, n)
    return np.clip(x, LOWER, UPPER)


FAMILIES = ("normal", "uniform", "grid", "ties", "bounds", "bimodal", "spread")
ADD_REMOVE_OPS = (
    "add a",
    "add b",
    "add median",
    "add above median",
    "add below median",
    "add copy",
    "add random",
    "remove min",
    "remove max",
    "remove median",
    "remove random",
)
REPLACE_OPS = (
    "min -> b",
    "max -> a",
    "median -> a",
    "median -> b",
    "random -> random",
    "random -> copy",
)


def neighbour(x: np.ndarray, op: str, rng: np.random.Generator) -> np.ndarray:
    """Apply one edit (``op`` from ``ADD_REMOVE_OPS`` or ``REPLACE_OPS``) to sorted ``x``."""
    median_index = (x.size - 1) // 2
    median = x[median_index] if x.size else (LOWER + UPPER) / 2
    values = {
        "a": LOWER,
        "b": UPPER,
        "median": median,
        "above median": min(np.nextafter(median, np.inf), UPPER),
        "below median": max(np.nextafter(median, -np.inf), LOWER),
        "copy": x[rng.integers(x.size)] if x.size else LOWER,
        "random": rng.uniform(LOWER, UPPER),
    }
    if op.startswith("add "):
        return np.sort(np.append(x, values[op[4:]]))
    positions = {"min": 0, "max": x.size - 1, "median": median_index}
    if op.startswith("remove "):
        return np.delete(x, positions.get(op[7:], rng.integers(max(x.size, 1))))
    source, target = op.split(" -> ")
    y = x.copy()
    y[positions.get(source, rng.integers(x.size))] = values[target]
    return np.sort(y)


@dataclass(frozen=True)
class Pair:
    first: np.ndarray
    second: np.ndarray
    label: str


def neighbour_pairs(
    rng: np.random.Generator,
    neighbouring: Neighbouring,
    count: int,
    max_size: int,
    large: int = 0,
) -> Iterator[Pair]:
    """Fixed tiny adversarial pairs, random datasets with every edit in turn, and
    (if ``large``) one normal dataset of that size with a point added at ``b``
    (replaced by ``b`` under replace-one)."""
    a, b, mid = LOWER, UPPER, (LOWER + UPPER) / 2
    replace = neighbouring is Neighbouring.REPLACE_ONE
    if replace:
        tiny = [([a], [b]), ([a, b], [b, b]), ([mid], [a]), ([a, a, b], [a, b, b])]
    else:
        tiny = [
            ([], [a]), ([], [b]), ([], [mid]), ([a], [a, a]), ([a], [a, b]),
            ([b], [a, b]), ([mid], [mid, mid]), ([a, b], [a, a, b]),
        ]  # fmt: skip
    for first, second in tiny:
        yield Pair(np.array(first, float), np.array(second, float), f"{first} vs {second}")
    ops = REPLACE_OPS if replace else ADD_REMOVE_OPS
    for k in range(max(count - len(tiny), 0)):
        family = FAMILIES[k % len(FAMILIES)]
        op = ops[(k // len(FAMILIES)) % len(ops)]
        n = int(np.exp(rng.uniform(0.0, math.log(max_size))))
        if op.startswith("remove") or replace:
            n = max(n, 1)
        x = np.sort(dataset(rng, family, n))
        yield Pair(x, neighbour(x, op, rng), f"{family} n={n}: {op}")
    if large:
        x = np.sort(dataset(rng, "normal", large))
        op = "min -> b" if replace else "add b"
        yield Pair(x, neighbour(x, op, rng), f"normal n={large}: {op}")


# -------------------------------------------------------------- probabilities


def cdf_points(pair: Pair, cells: int) -> np.ndarray:
    """Cut points whose cdf differences give the partition described in the module doc."""
    below_b = np.nextafter(UPPER, -np.inf)
    inner = np.linspace(LOWER, UPPER, cells + 1)[1:-1]
    if pair.first.size + pair.second.size <= REFINE_LIMIT:
        inner = np.concatenate([inner, pair.first, pair.second])
    inner = np.unique(inner[(inner > LOWER) & (inner < below_b)])
    return np.concatenate([[np.nextafter(LOWER, -np.inf), LOWER], inner, [below_b, UPPER]])


def cell_probabilities(release: Release, points: np.ndarray) -> np.ndarray:
    """``P(cell)`` for the cells ``(-inf, p_0], (p_0, p_1], ..., (p_last, inf)``."""
    return np.diff(np.concatenate([[0.0], np.asarray(release.cdf(points), float), [1.0]]))


def loss_lower_bound(p: np.ndarray, q: np.ndarray, resolution: float) -> float:
    """``max over cells of log((P - r)/(Q + r))`` over cells with ``P > r`` (else -inf)."""
    usable = p > resolution
    if not usable.any():
        return -math.inf
    return float(np.max(np.log(p[usable] - resolution) - np.log(q[usable] + resolution)))


def hockey_stick_lower_bound(p: np.ndarray, q: np.ndarray, epsilon: float, resolution: float):
    """``Σ_cells max(0, (P - r) - e^ε (Q + r))``: a lower bound of the divergence."""
    return float(np.sum(np.maximum(0.0, (p - resolution) - math.exp(epsilon) * (q + resolution))))


# --------------------------------------------------------------------- audit


@dataclass
class AuditResult:
    label: str
    guarantee: str = ""
    epsilon: float = math.nan
    statistic_name: str = ""
    statistic: float = -math.inf
    worst: str = ""
    pairs: int = 0
    cells: int = 0
    seconds: float = 0.0
    status: str = "ok"


def audit(
    label: str,
    factory: Factory,
    *,
    pairs: int,
    max_size: int,
    cells: int,
    seed: int,
    resolution: float,
    large: int = 0,
) -> AuditResult:
    """Run the check for one configured mechanism; errors become the result's status."""
    result = AuditResult(label)
    start = time.perf_counter()
    try:
        mechanism = factory("clip")
        guarantee = mechanism.guarantee
        result.guarantee = str(guarantee)
        result.epsilon = guarantee.epsilon
        pure = guarantee.delta == 0
        result.statistic_name = "loss/eps" if pure else "HS/delta"
        dropping: Mechanism | None = None
        rng = np.random.default_rng(seed)
        for pair in neighbour_pairs(rng, guarantee.neighbouring, pairs, max_size, large):
            releases = []
            for data in (pair.first, pair.second):
                if data.size == 0:  # base rejects empty data: drop a sentinel instead
                    dropping = dropping or factory("drop")
                    releases.append(dropping.release([2 * UPPER - LOWER], (LOWER, UPPER)))
                else:
                    releases.append(mechanism.release(data, (LOWER, UPPER)))
            points = cdf_points(pair, cells)
            p, q = (cell_probabilities(r, points) for r in releases)
            if pure:
                loss = max(loss_lower_bound(p, q, resolution), loss_lower_bound(q, p, resolution))
                value = loss / guarantee.epsilon
            else:
                divergence = max(
                    hockey_stick_lower_bound(p, q, guarantee.epsilon, resolution),
                    hockey_stick_lower_bound(q, p, guarantee.epsilon, resolution),
                )
                value = divergence / guarantee.delta
            result.pairs += 1
            result.cells = max(result.cells, points.size + 1)
            if value > result.statistic:
                result.statistic, result.worst = value, pair.label
        if guarantee.data_dependent_tuning:
            result.status = "no guarantee (oracle tuning)"
        elif result.statistic > 1 + TOLERANCE:
            result.status = "VIOLATION"
    except Exception as error:  # report and carry on with the next mechanism
        result.status = f"ERROR {type(error).__name__}: {error}"
    result.seconds = time.perf_counter() - start
    return result


# ----------------------------------------------------------------------- CLI


def parse_value(text: str) -> object:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def parse_spec(spec: str) -> tuple[str, dict[str, object]]:
    """``"name:key=value,key=value"`` -> ``(name, {key: value})``."""
    name, _, rest = spec.partition(":")
    options = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"mechanism option {item!r} in {spec!r} is not key=value")
        options[key.strip()] = parse_value(value.strip())
    return name.strip(), options


def discover() -> tuple[list[str], list[tuple[str, str]]]:
    """Registered mechanism names, and (module, error) for built-in modules that fail."""
    names, failures = set(), []
    for module_name in registry.BUILTIN_MODULES:
        try:
            module = import_module(module_name)
        except Exception as error:
            failures.append((module_name, f"ERROR {type(error).__name__}: {error}"))
            continue
        found = [
            obj.name
            for obj in vars(module).values()
            if inspect.isclass(obj)
            and issubclass(obj, Mechanism)
            and obj.__module__ == module_name
            and not inspect.isabstract(obj)
        ]
        if not found:
            failures.append((module_name, "no mechanism registered (not written yet?)"))
        names.update(found)
    try:
        names.update(registry.available())  # plug-ins from entry points
    except Exception as error:
        failures.append(("registry.available()", f"ERROR {type(error).__name__}: {error}"))
    return sorted(names), failures


def factory_for(name: str, options: dict[str, object], epsilon: float, delta: float) -> Factory:
    def build(bounding: str) -> Mechanism:
        cls = registry.get(name)
        return registry.make(
            name,
            epsilon=epsilon,
            delta=delta if cls.requires_delta else None,
            **{"bounding": bounding, **options},
        )

    return build


def format_table(results: list[AuditResult]) -> str:
    header = (
        "mechanism",
        "eps",
        "pairs",
        "cells",
        "statistic",
        "max",
        "worst pair",
        "secs",
        "status",
    )
    rows = [header]
    for r in results:
        rows.append(
            (
                r.label,
                f"{r.epsilon:g}" if math.isfinite(r.epsilon) else "-",
                str(r.pairs),
                str(r.cells),
                r.statistic_name,
                f"{r.statistic:.6f}" if math.isfinite(r.statistic) else "-",
                r.worst,
                f"{r.seconds:.1f}",
                r.status,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = []
    for k, row in enumerate(rows):
        cells = [value.ljust(width) for value, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]))
        if k == 0:
            lines.append("  ".join(["-" * w for w in widths] + ["-" * 6]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mechanisms", nargs="+", metavar="SPEC", help="default: all registered")
    parser.add_argument("--epsilons", default="0.01,0.1,1,5", help="comma-separated")
    parser.add_argument("--delta", type=float, default=1e-6, help="for (ε, δ) mechanisms")
    parser.add_argument("--pairs", type=int, default=200, help="neighbouring pairs per ε")
    parser.add_argument("--max-size", type=int, default=3000)
    parser.add_argument("--cells", type=int, default=2000, help="equal cells of (a, b)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resolution", type=float, default=1e-15, help="cell float error")
    parser.add_argument(
        "--large", type=int, default=0, help="also one pair of this size (e.g. 10000000)"
    )
    args = parser.parse_args(argv)
    epsilons = [float(e) for e in args.epsilons.split(",") if e.strip()]

    failures: list[tuple[str, str]] = []
    specs = args.mechanisms
    if not specs:
        specs, failures = discover()
    results = [AuditResult(label=module, status=error) for module, error in failures]
    for spec in specs:
        try:
            name, options = parse_spec(spec)
        except ValueError as error:
            results.append(AuditResult(label=spec, status=f"ERROR {error}"))
            continue
        for epsilon in epsilons:
            result = audit(
                spec,
                factory_for(name, options, epsilon, args.delta),
                pairs=args.pairs,
                max_size=args.max_size,
                cells=args.cells,
                seed=args.seed,
                resolution=args.resolution,
                large=args.large,
            )
            results.append(result)
            print(f"{spec} eps={epsilon:g}: {result.guarantee}", file=sys.stderr)

    print(f"[a, b] = [{LOWER:g}, {UPPER:g}]; seed {args.seed}; resolution {args.resolution:g}")
    print("loss/eps: max log(P_S(I)/P_S'(I)) / eps over cells I (violation if > 1)")
    print("HS/delta: max sum_I max(0, P_S(I) - e^eps P_S'(I)) / delta (lower bound; > 1 fails)")
    print()
    print(format_table(results))
    bad = [r for r in results if r.status == "VIOLATION" or r.status.startswith("ERROR")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
