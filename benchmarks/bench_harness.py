"""Where a sweep's time goes: the mechanisms against the harness around them.

Runs a slice of an experiment's work units in this process, one after the
other (``experiments.harness.unit.run_unit``, exactly what a worker runs: data, seeds,
configure, release, sample, checks, metrics, the unit file), with light timers
wrapped around the harness's steps, after one untimed unit per (mechanism,
statistic) pair (one-off costs: caches, lazy imports), and projects each (mechanism, statistic)
pair's times to the whole sweep (× its number of units / the slice's).  Parts:

* ``data``: the dataset's replicate (``Dataset.data``);
* ``seeds``: the noise generator of each cell (``experiments.base.seeding.noise_rng``);
* ``configure``: the mechanism at each ε (``MechanismEntry.configure``);
* ``mechanism``: ``release(data, bounds)`` + ``sample(trials)`` (the unit file's
  ``seconds`` column, here timed in CPU time, minus ``configure``);
* ``checks``: the sample, truth-claim and cdf checks of a point release, or an
  interval's checks (``_check_release`` / ``interval_problem``);
* ``metrics``: errors, rank errors, count gaps, coverage (``_point_fields`` /
  ``_interval_fields``);
* ``unit file``: writing it atomically (``save_unit``);
* ``other``: the rest of ``run_unit`` (the harness's own T(S), bookkeeping).

CPU time of this one process (:func:`time.process_time`), so the parallel
run's dispatch cost is not here: ``bench_sweep.py`` measures that.  ``--label``
names the run (``before`` / ``after``); ``report.py`` puts every file
``results/harness*.json`` side by side.

Usage::

    python benchmarks/bench_harness.py                         # figure1 and regression
    python benchmarks/bench_harness.py --experiment figure1 --replicates 10 --out /tmp/h.json
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from bench_output import host, write_report
from hydra import compose, initialize_config_dir

from experiments.harness import plan as plan_module
from experiments.harness import unit as unit_module
from experiments.harness.conf_files import CONF_DIR
from experiments.harness.plan import Plan, build_plan

HERE = Path(__file__).resolve().parent
PARTS = ("data", "seeds", "configure", "mechanism", "checks", "metrics", "unit file", "other")
WRAPPED = {
    "seeds": (unit_module, "noise_rng"),
    "checks": (unit_module, "_check_release"),
    "metrics": (unit_module, "_point_fields"),
    "unit file": (unit_module, "save_unit"),
}
"""Part -> (module, function name) replaced by a timed wrapper while units run."""
OPTIONAL = {
    "checks": (unit_module, "interval_problem"),
    "metrics": (unit_module, "_interval_fields"),
}
"""Interval counterparts, wrapped when the module has them."""


def experiment_plan(name: str) -> Plan:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return build_plan(compose("config", overrides=[f"experiment={name}"]))


class Timers:
    """Exclusive CPU seconds per part: a wrapped step called inside another (an interval's
    checks inside its metrics) counts for its own part only."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._inner: list[float] = []  # per open call: seconds spent in wrapped calls inside

    def wrap(self, part: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._inner.append(0.0)
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.process_time() - start
                inner = self._inner.pop()
                self.seconds[part] += elapsed - inner
                if self._inner:
                    self._inner[-1] += elapsed

        return timed


@contextmanager
def timed_harness(timers: Timers) -> Iterator[None]:
    """The harness's steps wrapped by ``timers`` (restored on exit)."""
    targets = [(part, module, name) for part, (module, name) in WRAPPED.items()]
    targets += [
        (part, module, name) for part, (module, name) in OPTIONAL.items() if hasattr(module, name)
    ]
    saved = [(module, name, getattr(module, name)) for _, module, name in targets]
    entry = plan_module.MechanismEntry
    configure = entry.configure
    clock = unit_module.time
    try:
        for part, module, name in targets:
            setattr(module, name, timers.wrap(part, getattr(module, name)))
        entry.configure = timers.wrap("configure", configure)  # type: ignore[method-assign]
        # The unit's `seconds` column in CPU time, like every other part here.
        unit_module.time = SimpleNamespace(perf_counter=time.process_time)  # type: ignore[assignment]
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)
        entry.configure = configure  # type: ignore[method-assign]
        unit_module.time = clock


def profile(name: str, replicates: int) -> dict[str, Any]:
    """Run the units of the first ``replicates`` replicates of experiment ``name`` here and
    return the projected CPU seconds per (mechanism, statistic) and part."""
    plan = experiment_plan(name)
    units = plan.units()
    selected = [u for u in units if u.replicate < replicates]
    totals: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for u in units:
        counts[(u.mechanism.label, u.statistic.id)][1] += 1
    with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
        warm = {(u.mechanism.label, u.statistic.id): u for u in reversed(selected)}
        for unit in warm.values():  # one-off costs (caches, lazy imports) are not per unit
            unit_module.run_unit(unit, plan.settings, Path(tmp) / "warm.npz", "", None)
        for i, unit in enumerate(selected):
            key = (unit.mechanism.label, unit.statistic.id)
            timers = Timers()
            start = time.process_time()
            unit.dataset.data(plan.settings.seed, unit.replicate)  # as run_unit draws it
            data_seconds = time.process_time() - start
            start = time.process_time()
            with timed_harness(timers):
                path = Path(tmp) / f"unit{i}.npz"
                unit_module.run_unit(unit, plan.settings, path, plan.config_hash, None)
            total = time.process_time() - start
            with np.load(path, allow_pickle=False) as stored:
                seconds = float(np.nansum(stored["rows"]["seconds"]))
            mechanism = seconds - timers.seconds["configure"]
            parts = dict(timers.seconds) | {"data": data_seconds, "mechanism": mechanism}
            parts["other"] = total - sum(parts.values())
            for part, seconds in parts.items():
                totals[key][part] += seconds
            counts[key][0] += 1
    rows: list[dict[str, Any]] = []
    for key, parts in totals.items():
        done, full = counts[key]
        scale = full / done
        rows.append(
            {
                "mechanism": key[0],
                "statistic": key[1],
                "units": full,
                "seconds": {p: parts.get(p, 0.0) * scale for p in PARTS},
            }
        )
    rows.sort(key=lambda r: -sum(r["seconds"].values()))
    cells = sum(len(plan.settings.epsilons) * c[1] for c in counts.values())
    return {"experiment": name, "replicates_run": replicates, "cells": cells, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experiment", nargs="+", default=["figure1", "regression"])
    parser.add_argument("--replicates", type=int, default=5, help="replicates run per dataset")
    parser.add_argument("--label", default="", help="a name for this run (e.g. before/after)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "harness.json")
    args = parser.parse_args()
    runs = []
    for name in args.experiment:
        run = profile(name, args.replicates)
        totals = {p: sum(r["seconds"][p] for r in run["rows"]) for p in PARTS}
        shares = "  ".join(f"{p}={s:.1f}s" for p, s in totals.items())
        print(f"{name}: projected single-core {sum(totals.values()):.1f} s  {shares}", flush=True)
        runs.append(run)
    report = {
        "benchmark": "harness",
        "label": args.label,
        "host": host(),
        "load_average": os.getloadavg(),
        "runs": runs,
    }
    write_report(args.out, report)


if __name__ == "__main__":
    main()
