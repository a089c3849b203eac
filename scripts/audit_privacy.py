"""Audit median mechanisms for privacy on neighbouring datasets, from their exact cdfs.

Usage::

    python scripts/audit_privacy.py [--mechanism SPEC ...] [--target CLASS_SPEC ...]
                                    [--epsilons 0.01,0.1,1,5] [--delta 1e-6] [--pairs 200]
                                    [--max-size 3000] [--cells 2000] [--seed 0]
                                    [--resolution 1e-15] [--large 10000000]
                                    [--output audit.json --output audit.md]

``SPEC`` is a registered mechanism name with optional options,
``name:key=value,key=value`` (``quantile_em:alpha=0.3,neighbours=replace_one``);
``--mechanism`` is repeatable and takes several (``--mechanisms`` is the same
option).  ``CLASS_SPEC`` is a class ``package.module.Class`` with the same
optional options (``binned_rr.BinnedRR:bins=8`` with ``examples/plugin`` on
``PYTHONPATH``); it is imported and registered as ``_target_`` classes are
(:func:`experiments.plan.load_target`).  Default: every mechanism of
``mechanisms.available()`` (the built-ins, the peers whose library is installed
and entry-point plug-ins) with its default options.  Only the generic interface
is used (``mechanisms.make``, which passes only the options given, δ only to a
mechanism with ``requires_delta``, ``Mechanism.guarantee``, ``release``,
``Release.cdf``), so any mechanism with an exact ``cdf`` can be audited; one
whose ``cdf`` raises ``NotImplementedError`` is reported as ``no cdf: skipped``.

For each mechanism and ε: adversarial and random pairs of neighbouring datasets
on ``[a, b] = [0, 10]`` under the mechanism's declared neighbouring relation
(``guarantee.neighbouring``: add/remove, including the empty dataset, or
replace-one), sizes up to ``--max-size``, plus with ``--large N`` one pair of
size ``N``.  The empty dataset, which ``Mechanism.release`` rejects as input (it
is reached through ``bounding="drop"``), is released through the ``_release``
hook that ``release`` ends in.  For each pair both releases are cut into the
same partition of the real line: ``(-inf, a)``, the atom ``{a}``, ``--cells``
equal cells of ``(a, b)`` refined at every data point of both datasets (for
pairs of at most ``REFINE_LIMIT`` points), the atom at ``b`` (precisely the cell
``(prev(b), b]``, ``prev`` = the next float down) and ``(b, inf)``; cell
probabilities are differences of the cdf.

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
the audit goes on.  ``--output PATH`` (repeatable) also writes the results to
``PATH``: ``.json`` (parameters, package versions, git state, one record per
mechanism and ε, and the maximum per mechanism) or ``.md`` (the same as tables).
Exit status: 0 if nothing was violated or failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from experiments.plan import load_target
from experiments.provenance import git_state, package_versions
from experiments.results import write_text_atomic
from mechanisms import registry
from mechanisms.base import Guarantee, Mechanism, Neighbouring, Release

PROJECT_ROOT = Path(__file__).resolve().parents[1]

LOWER, UPPER = 0.0, 10.0
TOLERANCE = 1e-6
"""Relative slack before a statistic above 1 counts as a violation (float noise)."""

REFINE_LIMIT = 100_000
"""Partitions are refined at the data points only for pairs with at most this many."""

Factory = Callable[[], Mechanism]
"""Builds the configured mechanism (errors it raises are reported, not fatal)."""


# ------------------------------------------------------------------ datasets


def dataset(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """A dataset of size ``n`` inside ``[LOWER, UPPER]`` from one of the families."""
    mid, width = (LOWER + UPPER) / 2, UPPER - LOWER
    x: np.ndarray
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


class NoCdfError(Exception):
    """A release's ``cdf`` raised ``NotImplementedError``: its mechanism cannot be audited."""


def cell_probabilities(release: Release, points: np.ndarray) -> np.ndarray:
    """``P(cell)`` for the cells ``(-inf, p_0], (p_0, p_1], ..., (p_last, inf)``."""
    try:
        cdf = np.asarray(release.cdf(points), float)
    except NotImplementedError as error:
        raise NoCdfError(str(error)) from error
    return np.diff(np.concatenate([[0.0], cdf, [1.0]]))


def loss_lower_bound(p: np.ndarray, q: np.ndarray, resolution: float) -> float:
    """``max over cells of log((P - r)/(Q + r))`` over cells with ``P > r`` (else -inf)."""
    usable = p > resolution
    if not usable.any():
        return -math.inf
    return float(np.max(np.log(p[usable] - resolution) - np.log(q[usable] + resolution)))


def hockey_stick_lower_bound(
    p: np.ndarray, q: np.ndarray, epsilon: float, resolution: float
) -> float:
    """``Σ_cells max(0, (P - r) - e^ε (Q + r))``: a lower bound of the divergence."""
    return float(np.sum(np.maximum(0.0, (p - resolution) - math.exp(epsilon) * (q + resolution))))


# --------------------------------------------------------------------- audit


def _error(error: Exception) -> str:
    return f"ERROR {type(error).__name__}: {error}"


@dataclass
class AuditResult:
    """The audit of one configured mechanism at one ε (``statistic``: the maximum)."""

    label: str
    guarantee: str = ""
    epsilon: float = math.nan
    delta: float = 0.0
    neighbouring: str = ""
    statistic_name: str = ""
    statistic: float = -math.inf
    worst: str = ""
    pairs: int = 0
    cells: int = 0
    seconds: float = 0.0
    status: str = "ok"

    @property
    def failed(self) -> bool:
        """A violation or an error (what makes the exit status 1)."""
        return self.status == "VIOLATION" or self.status.startswith("ERROR")


def release_of(mechanism: Mechanism, data: np.ndarray) -> Release:
    """The release on sorted ``data`` inside ``[LOWER, UPPER]``, the empty dataset included."""
    if data.size == 0:  # ``release`` rejects empty input; ``_release`` is what it calls
        return mechanism._release(data, LOWER, UPPER)
    return mechanism.release(data, (LOWER, UPPER))


def pair_statistic(
    releases: tuple[Release, Release], points: np.ndarray, guarantee: Guarantee, resolution: float
) -> float:
    """loss/ε (pure DP) or HS/δ (δ > 0) of one pair, the larger of both directions."""
    p, q = (cell_probabilities(release, points) for release in releases)
    if guarantee.delta == 0:
        loss = max(loss_lower_bound(p, q, resolution), loss_lower_bound(q, p, resolution))
        return loss / guarantee.epsilon
    divergence = max(
        hockey_stick_lower_bound(p, q, guarantee.epsilon, resolution),
        hockey_stick_lower_bound(q, p, guarantee.epsilon, resolution),
    )
    return divergence / guarantee.delta


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
        mechanism = factory()
        guarantee = mechanism.guarantee
        result.guarantee, result.neighbouring = str(guarantee), guarantee.neighbouring.value
        result.epsilon, result.delta = guarantee.epsilon, guarantee.delta
        result.statistic_name = "loss/eps" if guarantee.delta == 0 else "HS/delta"
        rng = np.random.default_rng(seed)
        for pair in neighbour_pairs(rng, guarantee.neighbouring, pairs, max_size, large):
            releases = (release_of(mechanism, pair.first), release_of(mechanism, pair.second))
            points = cdf_points(pair, cells)
            value = pair_statistic(releases, points, guarantee, resolution)
            result.pairs += 1
            result.cells = max(result.cells, points.size + 1)
            if value > result.statistic:
                result.statistic, result.worst = value, pair.label
        if guarantee.data_dependent_tuning:
            result.status = "no guarantee (oracle tuning)"
        elif result.statistic > 1 + TOLERANCE:
            result.status = "VIOLATION"
    except NoCdfError:
        result.status = "no cdf: skipped"
    except Exception as error:  # report and carry on with the next mechanism
        result.status = _error(error)
    result.seconds = time.perf_counter() - start
    return result


# ----------------------------------------------------------------------- CLI


def parse_value(text: str) -> object:
    """``"3"`` -> 3, ``"0.5"`` -> 0.5, ``"true"``/``"false"``/``"none"``, else the text."""
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


def resolve(spec: str, *, target: bool) -> tuple[str, dict[str, object]]:
    """Registry name and options of a ``--mechanism`` or (imported) ``--target`` spec."""
    name, options = parse_spec(spec)
    return (load_target(name).name if target else name), options


def factory_for(name: str, options: dict[str, object], epsilon: float, delta: float) -> Factory:
    """Builds ``name`` with ``options`` at ``epsilon`` (and ``delta`` if it takes one)."""

    def build() -> Mechanism:
        cls = registry.get(name)
        return registry.make(
            name, epsilon=epsilon, delta=delta if cls.requires_delta else None, **options
        )

    return build


@dataclass
class Audit:
    """Parameters and results of one run of the script."""

    parameters: dict[str, Any]
    results: list[AuditResult] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per mechanism: the largest statistic over ε, and the worst status."""
        summary: dict[str, dict[str, Any]] = {}
        for r in self.results:
            entry = summary.setdefault(
                r.label, {"statistic": r.statistic_name, "max": -math.inf, "status": "ok"}
            )
            entry["statistic"] = entry["statistic"] or r.statistic_name
            entry["max"] = max(entry["max"], r.statistic)
            if r.status != "ok" and (entry["status"] == "ok" or r.failed):
                entry["status"] = r.status
        return summary


def run(args: argparse.Namespace, command: str) -> Audit:
    """Audit every requested mechanism at every ε (``command``: the command line, recorded)."""
    start = time.perf_counter()
    parameters = {key: value for key, value in vars(args).items() if key != "output"}
    run_audit = Audit({"command": command, **parameters, "bounds": [LOWER, UPPER]})
    specs = [(spec, False) for spec in args.mechanisms or ()]
    specs += [(spec, True) for spec in args.target or ()]
    if not specs:
        try:
            specs = [(name, False) for name in registry.available()]
        except Exception as error:
            run_audit.results.append(AuditResult("registry.available()", status=_error(error)))
    for spec, target in specs:
        try:
            name, options = resolve(spec, target=target)
        except ValueError as error:
            run_audit.results.append(AuditResult(spec, status=_error(error)))
            continue
        for epsilon in args.epsilons:
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
            run_audit.results.append(result)
            print(f"{spec} eps={epsilon:g}: {result.guarantee or result.status}", file=sys.stderr)
    run_audit.seconds = time.perf_counter() - start
    return run_audit


# -------------------------------------------------------------------- output


def _number(value: float, digits: str = ".6f") -> str:
    return format(value, digits) if math.isfinite(value) else "-"


def _finite(value: object) -> object:
    """JSON has no infinities or NaN: they become null."""
    return value if not isinstance(value, float) or math.isfinite(value) else None


def table_rows(results: list[AuditResult]) -> list[tuple[str, ...]]:
    """Header and one row per result, as text."""
    header = ("mechanism", "eps", "pairs", "cells", "statistic", "max", "worst pair", "secs")
    rows: list[tuple[str, ...]] = [(*header, "status")]
    for r in results:
        eps = _number(r.epsilon, "g")
        row = (r.label, eps, str(r.pairs), str(r.cells), r.statistic_name, _number(r.statistic))
        rows.append((*row, r.worst, f"{r.seconds:.1f}", r.status))
    return rows


def format_table(results: list[AuditResult]) -> str:
    """The results as an aligned plain-text table."""
    rows = table_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for k, row in enumerate(rows):
        cells = [value.ljust(width) for value, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]))
        if k == 0:
            lines.append("  ".join(["-" * w for w in widths] + ["-" * 6]))
    return "\n".join(lines)


def markdown_table(rows: list[tuple[str, ...]]) -> str:
    """Rows (the first the header) as a Markdown table, ``|`` escaped."""
    escape = [tuple(cell.replace("|", "\\|") for cell in row) for row in rows]
    lines = ["| " + " | ".join(escape[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in escape[1:]]
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    """Python, package versions (peers when installed) and the git state."""
    return {
        "python": platform.python_version(),
        "packages": package_versions(),
        "git": git_state(PROJECT_ROOT),
    }


def to_json(run_audit: Audit, env: dict[str, Any]) -> dict[str, Any]:
    """The machine-readable record: parameters, environment, per-mechanism maxima, rows."""
    return {
        "parameters": run_audit.parameters,
        "environment": env,
        "seconds": round(run_audit.seconds, 1),
        "summary": {
            label: {key: _finite(value) for key, value in entry.items()}
            for label, entry in run_audit.summary().items()
        },
        "results": [
            {key: _finite(value) for key, value in dataclasses.asdict(r).items()}
            for r in run_audit.results
        ],
    }


def to_markdown(run_audit: Audit, env: dict[str, Any]) -> str:
    """The same record as Markdown: parameters, the per-mechanism maxima and every row."""
    p = run_audit.parameters
    versions = ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v is not None)
    summary: list[tuple[str, ...]] = [("mechanism", "statistic", "max over ε", "status")]
    summary += [
        (label, e["statistic"], _number(e["max"]), e["status"])
        for label, e in run_audit.summary().items()
    ]
    return "\n".join(
        [
            "### Privacy audit: exact cell probabilities on neighbouring datasets",
            "",
            f"`{p['command']}`",
            "",
            f"On [a, b] = [{LOWER:g}, {UPPER:g}]: "
            f"ε ∈ {{{', '.join(f'{e:g}' for e in p['epsilons'])}}}, δ = {p['delta']:g} "
            f"(mechanisms that take δ), {p['pairs']} neighbouring pairs per ε (sizes up to "
            f"{p['max_size']}), {p['cells']} equal cells refined at the data, seed {p['seed']}, "
            f"resolution {p['resolution']:g}; {run_audit.seconds:.0f} s.",
            "",
            "loss/eps: max over cells I of log(P_S(I)/P_S'(I)) / ε (violation if > 1); "
            "HS/delta: max Σ_I max(0, P_S(I) − e^ε P_S'(I)) / δ (a lower bound; > 1 fails).",
            "",
            markdown_table(summary),
            "",
            markdown_table(table_rows(run_audit.results)),
            "",
            f"Versions: python {env['python']}, {versions}.  Git commit "
            f"{env['git']['commit']} (uncommitted changes: {env['git']['dirty']}).",
            "",
        ]
    )


def write_outputs(run_audit: Audit, paths: list[Path]) -> None:
    """Write the audit to each path, as JSON or Markdown by its suffix."""
    env = environment() if paths else {}
    for path in paths:
        if path.suffix == ".json":
            write_text_atomic(path, json.dumps(to_json(run_audit, env), indent=2) + "\n")
        else:
            write_text_atomic(path, to_markdown(run_audit, env))


def output_path(text: str) -> Path:
    """An ``--output`` path, which must end in ``.json`` or ``.md``."""
    path = Path(text)
    if path.suffix not in (".json", ".md"):
        raise argparse.ArgumentTypeError(f"{text!r} must end in .json or .md")
    return path


def epsilon_list(text: str) -> list[float]:
    """``"0.1,1"`` -> ``[0.1, 1.0]``."""
    return [float(e) for e in text.split(",") if e.strip()]


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parse.add_argument(
        "--mechanism",
        "--mechanisms",
        dest="mechanisms",
        action="extend",
        nargs="+",
        metavar="SPEC",
        help="registered name[:key=value,...]; repeatable (default: all available)",
    )
    parse.add_argument(
        "--target",
        action="append",
        metavar="CLASS_SPEC",
        help="package.module.Class[:key=value,...]; repeatable",
    )
    parse.add_argument("--epsilons", type=epsilon_list, default="0.01,0.1,1,5")
    parse.add_argument("--delta", type=float, default=1e-6, help="for (ε, δ) mechanisms")
    parse.add_argument("--pairs", type=int, default=200, help="neighbouring pairs per ε")
    parse.add_argument("--max-size", type=int, default=3000)
    parse.add_argument("--cells", type=int, default=2000, help="equal cells of (a, b)")
    parse.add_argument("--seed", type=int, default=0)
    parse.add_argument("--resolution", type=float, default=1e-15, help="cell float error")
    parse.add_argument(
        "--large", type=int, default=0, help="also one pair of this size (e.g. 10000000)"
    )
    parse.add_argument(
        "--output", type=output_path, action="append", default=[], help=".json or .md; repeatable"
    )
    return parse


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    path = os.environ.get("PYTHONPATH")  # where --target classes may come from
    prefix = [f"PYTHONPATH={path}"] if path else []
    run_audit = run(args, shlex.join([*prefix, "python", "scripts/audit_privacy.py", *argv]))
    print(f"[a, b] = [{LOWER:g}, {UPPER:g}]; seed {args.seed}; resolution {args.resolution:g}")
    print("loss/eps: max log(P_S(I)/P_S'(I)) / eps over cells I (violation if > 1)")
    print("HS/delta: max sum_I max(0, P_S(I) - e^eps P_S'(I)) / delta (lower bound; > 1 fails)")
    print()
    print(format_table(run_audit.results))
    write_outputs(run_audit, args.output)
    return 1 if any(r.failed for r in run_audit.results) else 0


if __name__ == "__main__":
    sys.exit(main())
