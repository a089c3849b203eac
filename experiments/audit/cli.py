"""``duff-audit``: audit mechanisms for privacy on neighbouring datasets, from their exact
cdfs (:mod:`experiments.audit.exact`; for m quantiles at once the exact joint law or each
level's marginal, :mod:`experiments.audit.vector`) or, where a release has none, from
samples (:mod:`experiments.audit.sampled`).

Usage::

    duff-audit [--mechanism SPEC ...] [--target CLASS_SPEC ...]
               [--epsilons 0.01,0.1,1,5] [--delta 1e-6] [--pairs 200]
               [--max-size 3000] [--cells 2000] [--seed 0]
               [--resolution 1e-15] [--large 10000000]
               [--black-box auto|always|never] [--samples 1000000]
               [--black-box-pairs 8] [--seconds 60] [--alpha 1e-9]
               [--output audit.json --output audit.md]

``SPEC`` is a registered mechanism name with optional options,
``name:key=value,key=value`` (``quantile_em:alpha=0.3,neighbours=replace_one``);
``--mechanism`` is repeatable and takes several (``--mechanisms`` is the same
option).  ``CLASS_SPEC`` is a class ``package.module.Class`` with the same
optional options (``binned_rr.BinnedRR:bins=8`` with ``examples/plugin`` on
``PYTHONPATH``); it is imported and registered as ``_target_`` classes are
(:func:`experiments.harness.plan.load_target`).  Default: every mechanism of
``mechanisms.available()`` (the built-ins, the peers whose library is installed
and entry-point plug-ins) with its default options, δ only to a mechanism with
``requires_delta``.  ``--output PATH`` (repeatable) also writes the results to
``PATH``, ``.json`` or ``.md`` (:mod:`experiments.audit.report`).
``--black-box``: ``auto`` (default) audits from samples every mechanism whose release
has no exact cdf, ``always`` also every other (a second row, whose bound must stay
below the exact one), ``never`` skips them; ``--samples`` outputs per side of each
pair (fewer for a sampler too slow for ``--seconds`` per mechanism and ε), ``--alpha``
the family-wise level of every black-box bound of the run.
Exit status: 0 if nothing was violated or failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from experiments.audit.black_box import DEFAULT_SAMPLES
from experiments.audit.exact import NO_CDF, Audit, AuditResult, error_status, factory_for
from experiments.audit.pairs import LOWER, UPPER
from experiments.audit.report import format_table, write_outputs
from experiments.audit.sampled import BLACK_BOX_PAIRS, SECONDS, audit_by_samples
from experiments.audit.vector import audit_exact
from experiments.harness.plan import load_target
from mechanisms import registry

COMMAND = ("duff-audit",)
"""How the record names the command (the script passes its own)."""


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


def _specs(args: argparse.Namespace, run_audit: Audit) -> list[tuple[str, bool]]:
    """(spec, is a ``--target``) of every mechanism to audit; all available ones by default."""
    specs = [(spec, False) for spec in args.mechanisms or ()]
    specs += [(spec, True) for spec in args.target or ()]
    if not specs:
        try:
            specs = [(name, False) for name in registry.available()]
        except Exception as error:
            run_audit.results.append(
                AuditResult("registry.available()", status=error_status(error))
            )
    return specs


def run(args: argparse.Namespace, command: str) -> Audit:
    """Audit every requested mechanism at every ε (``command``: the command line, recorded)."""
    start = time.perf_counter()
    parameters = {key: value for key, value in vars(args).items() if key != "output"}
    run_audit = Audit({"command": command, **parameters, "bounds": [LOWER, UPPER]})
    specs = _specs(args, run_audit)
    # Bonferroni: at most one black-box audit per mechanism and ε shares the run's level
    alpha = args.alpha / max(1, len(specs) * len(args.epsilons))
    for spec, target in specs:
        try:
            name, options = resolve(spec, target=target)
        except ValueError as error:
            run_audit.results.append(AuditResult(spec, status=error_status(error)))
            continue
        for epsilon in args.epsilons:
            factory = factory_for(name, options, epsilon, args.delta)
            result = audit_exact(
                spec,
                factory,
                pairs=args.pairs,
                max_size=args.max_size,
                cells=args.cells,
                seed=args.seed,
                resolution=args.resolution,
                large=args.large,
            )
            results = [result]
            if args.black_box == "always" or (args.black_box == "auto" and result.status == NO_CDF):
                sampled = audit_by_samples(
                    spec,
                    factory,
                    pairs=args.black_box_pairs,
                    max_size=args.max_size,
                    samples=args.samples,
                    seconds=args.seconds,
                    seed=args.seed,
                    alpha=alpha,
                )
                results = [sampled] if result.status == NO_CDF else [result, sampled]
            for done in results:
                run_audit.results.append(done)
                print(
                    f"{done.label} eps={epsilon:g}: {done.guarantee or done.status}",
                    file=sys.stderr,
                )
    run_audit.seconds = time.perf_counter() - start
    return run_audit


def output_path(text: str) -> Path:
    """An ``--output`` path, which must end in ``.json`` or ``.md``."""
    path = Path(text)
    if path.suffix not in (".json", ".md"):
        raise argparse.ArgumentTypeError(f"{text!r} must end in .json or .md")
    return path


def epsilon_list(text: str) -> list[float]:
    """``"0.1,1"`` -> ``[0.1, 1.0]``."""
    return [float(e) for e in text.split(",") if e.strip()]


def parser(prog: str) -> argparse.ArgumentParser:
    """The command line's options."""
    parse = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Audit mechanisms for privacy on neighbouring datasets: the exact audit compares "
            "the release distributions cell by cell from their cdfs; the black-box audit "
            "bounds epsilon from samples where there is no exact cdf.  Exit status 0: no "
            "violation; 1: a violation; 2: usage."
        ),
    )
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
    parse.add_argument(
        "--epsilons",
        type=epsilon_list,
        default="0.01,0.1,1,5",
        metavar="E1,E2,...",
        help="the claimed ε of each audit, comma-separated (default: 0.01,0.1,1,5)",
    )
    parse.add_argument("--delta", type=float, default=1e-6, help="for (ε, δ) mechanisms")
    parse.add_argument("--pairs", type=int, default=200, help="neighbouring pairs per ε")
    parse.add_argument(
        "--max-size", type=int, default=3000, help="largest dataset of the adversarial pairs"
    )
    parse.add_argument("--cells", type=int, default=2000, help="equal cells of (a, b)")
    parse.add_argument(
        "--seed", type=int, default=0, help="seed of the pairs' generator (and of the samples)"
    )
    parse.add_argument("--resolution", type=float, default=1e-15, help="cell float error")
    parse.add_argument(
        "--large", type=int, default=0, help="also one pair of this size (e.g. 10000000)"
    )
    parse.add_argument(
        "--black-box",
        choices=("auto", "always", "never"),
        default="auto",
        help="audit from samples where a release has no exact cdf (auto), always, or never",
    )
    parse.add_argument(
        "--samples", type=int, default=DEFAULT_SAMPLES, help="black-box outputs per side of a pair"
    )
    parse.add_argument(
        "--seconds",
        type=float,
        default=SECONDS,
        help="black-box time budget per mechanism and ε (a slow sampler gets fewer samples)",
    )
    parse.add_argument(
        "--black-box-pairs", type=int, default=BLACK_BOX_PAIRS, help="black-box pairs per ε"
    )
    parse.add_argument(
        "--alpha", type=float, default=1e-9, help="family-wise level of the black-box bounds"
    )
    parse.add_argument(
        "--output", type=output_path, action="append", default=[], help=".json or .md; repeatable"
    )
    return parse


def main(argv: Sequence[str] | None = None, command: Sequence[str] = COMMAND) -> int:
    """Console entry point (``duff-audit``); ``command`` is how the record names it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser(command[-1]).parse_args(argv)
    path = os.environ.get("PYTHONPATH")  # where --target classes may come from
    prefix = [f"PYTHONPATH={path}"] if path else []
    run_audit = run(args, shlex.join([*prefix, *command, *argv]))
    print(f"[a, b] = [{LOWER:g}, {UPPER:g}]; seed {args.seed}; resolution {args.resolution:g}")
    print("loss/eps: max log(P_S(I)/P_S'(I)) / eps over cells I (violation if > 1)")
    print("HS/delta: max sum_I max(0, P_S(I) - e^eps P_S'(I)) / delta (lower bound; > 1 fails)")
    print(
        f"[black-box] rows: lower confidence bounds from {args.samples} samples per side, "
        f"all bounds of the run at family-wise level {args.alpha:g} (eps_lower/eps, "
        "HS_lower/delta; > 1 fails)"
    )
    print()
    print(format_table(run_audit.results))
    write_outputs(run_audit, args.output)
    return 1 if any(r.failed for r in run_audit.results) else 0


if __name__ == "__main__":
    sys.exit(main())
