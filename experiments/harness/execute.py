"""Run a sweep's work units on a pool of workers under the supervisor.

:func:`unit_pool` opens the pool (loky processes, or a Dask cluster) and says how many
units to keep in flight; :func:`execute_units` runs the units to be computed under
:class:`experiments.harness.supervisor.Supervisor`, so that every unit ends with a unit file
(a unit whose worker failed gets a unit file of failed rows, written here).

**Isolation.**  Units of different mechanisms would share worker processes, and a plug-in
runs arbitrary code in its worker: one that patches a built-in class (``Duff._release``)
would change the numbers of every later unit of that class in the same process.  So
under ``backend=loky`` the units are run group by group
(:func:`experiments.harness.code_identity.isolation_group`): the built-in mechanisms in
worker processes that never import a plug-in, and the units of each set of plug-in
modules in worker processes of their own (a pool per group, kept between sweeps:
:class:`experiments.harness.supervisor.LokyPool`).  A
sweep of built-in mechanisms only is one group, at no cost.  A Dask cluster's workers
are shared by every unit: there, a plug-in is trusted not to patch other code.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from experiments.harness.code_identity import group_identity, isolation_group, unit_identity
from experiments.harness.config import ConfigError
from experiments.harness.plan import Plan, Unit
from experiments.harness.results import StoredUnit, save_unit
from experiments.harness.supervisor import DaskPool, LokyPool, Pool, Supervisor, Task
from experiments.harness.unit import UnitResult, failed_unit, run_units
from mechanisms.statistics import MEDIAN

log = logging.getLogger(__name__)

MAX_UNITS_PER_TASK = 16
"""The most units one task carries (a crash or a hang reruns at most this many)."""
TASKS_PER_WORKER = 32
"""Fewer units per task while the units would give a worker fewer tasks than this (so that
the workers finish together)."""


def units_per_task(units: int, workers: int, backend: str) -> int:
    """How many consecutive units a task carries (module docstring, "Tasks")."""
    if backend != "loky":
        return 1
    return max(1, min(MAX_UNITS_PER_TASK, math.ceil(units / (workers * TASKS_PER_WORKER))))


def unit_progress(task: Task) -> tuple[int, float]:
    """How many leading units of ``task`` have their unit file, and the time the last was
    written (the :data:`experiments.harness.supervisor.Progress` of unit tasks)."""
    finished, last = 0, 0.0
    for _, path in task.items:
        try:
            last = path.stat().st_mtime
        except FileNotFoundError:
            break
        finished += 1
    return finished, last if finished else 0.0


@contextmanager
def unit_pool(
    backend: str, address: str | None, workers: int, modules: Sequence[str], code: str = ""
) -> Iterator[tuple[Pool, int]]:
    """The pool to run units on, and how many units to keep in flight (``modules``: what a
    loky worker imports when it starts; ``code``: the identity of that code, whose change
    starts fresh workers)."""
    if backend == "loky":
        yield LokyPool(workers, modules, code), workers
        return
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError("backend=dask needs `pip install 'dask[distributed]'`") from None
    try:
        client = Client(address)
    except OSError as err:
        raise ConfigError(f"scheduler_address: cannot connect to {address}: {err}") from None
    with client:
        threads = max(1, sum(client.nthreads().values()))
        yield DaskPool(client), threads


def execute_units(
    todo: Sequence[tuple[Unit, Path]],
    plan: Plan,
    digest: str,
    *,
    backend: str,
    address: str | None,
    workers: int,
    timeout: float | None,
    desc: str,
) -> tuple[int, dict[Path, StoredUnit]]:
    """Run the units of ``todo`` under a :class:`Supervisor`, each isolation group in its own
    worker processes (module docstring); each unit ends with a unit file.  Returns the
    number of tasks kept in flight, and what the workers stored for the units they
    finished (by unit file)."""
    settings = plan.settings
    bar = tqdm(total=len(todo), desc=desc, unit="unit", disable=None, file=sys.stderr)
    stored: dict[Path, StoredUnit] = {}

    def done(items: tuple[tuple[Unit, Path], ...], results: Sequence[UnitResult] | None) -> None:
        if results is not None:
            for (_, path), result in zip(items, results, strict=True):
                stored[path] = StoredUnit(result.records, result.estimates, digest, result.code)
        bar.update(len(items))

    def failed(item: tuple[Unit, Path], cause: str) -> None:
        unit, path = item
        log.warning("%s: %s", unit_name(unit), cause)
        estimates = None
        if settings.keep_estimates:
            estimates = np.full((len(settings.epsilons), settings.trials), np.nan)
        rows = failed_unit(unit, settings, cause)
        save_unit(path, rows, estimates, digest, code=unit_identity(unit))
        bar.update()

    for _, path in todo:  # a unit file present during the run is one this run wrote
        path.unlink(missing_ok=True)
    size = units_per_task(len(todo), workers, backend)
    groups: dict[tuple[str, ...], list[tuple[Unit, Path]]] = {}
    for unit, path in todo:
        groups.setdefault(isolation_group(unit), []).append((unit, path))
    in_flight = workers
    with bar:
        for group, items in sorted(groups.items()):
            tasks = [
                Task(tuple(items[i : i + size]), run_units, (settings, digest, timeout))
                for i in range(0, len(items), size)
            ]
            modules = sorted({unit.mechanism.module for unit, _ in items} | set(group))
            with unit_pool(backend, address, workers, modules, group_identity(group)) as (
                pool,
                in_flight,
            ):
                supervisor = Supervisor(pool, in_flight, timeout, done, failed, unit_progress)
                supervisor.run(tasks)
    return in_flight, stored


def unit_name(unit: Unit) -> str:
    """How a log line names a unit: ``duff (quantile(0.1)) on normal #3``."""
    statistic = "" if unit.statistic == MEDIAN else f" ({unit.statistic.id})"
    return f"{unit.mechanism.label}{statistic} on {unit.dataset.id} #{unit.replicate}"
