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
modules in worker processes of their own (the pool is replaced between groups).  A
sweep of built-in mechanisms only is one group, at no cost.  A Dask cluster's workers
are shared by every unit: there, a plug-in is trusted not to patch other code.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from experiments.harness.code_identity import group_identity, isolation_group, unit_identity
from experiments.harness.config import ConfigError
from experiments.harness.plan import Plan, Unit
from experiments.harness.results import save_unit
from experiments.harness.supervisor import DaskPool, LokyPool, Pool, Supervisor, Task
from experiments.harness.unit import failed_unit, run_unit
from mechanisms.statistics import MEDIAN

log = logging.getLogger(__name__)


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
) -> int:
    """Run the units of ``todo`` under a :class:`Supervisor`, each isolation group in its own
    worker processes (module docstring); each unit ends with a unit file.  Returns the
    number of units kept in flight."""
    settings = plan.settings
    bar = tqdm(total=len(todo), desc=desc, unit="unit", disable=None, file=sys.stderr)

    def failed(task: Task, cause: str) -> None:
        unit, path = task.key
        log.warning("%s: %s", unit_name(unit), cause)
        estimates = None
        if settings.keep_estimates:
            estimates = np.full((len(settings.epsilons), settings.trials), np.nan)
        rows = failed_unit(unit, settings, cause)
        save_unit(path, rows, estimates, digest, code=unit_identity(unit))
        bar.update()

    groups: dict[tuple[str, ...], list[Task]] = {}
    for unit, path in todo:
        task = Task((unit, path), run_unit, (unit, settings, path, digest, timeout))
        groups.setdefault(isolation_group(unit), []).append(task)
    in_flight = workers
    with bar:
        for group, tasks in sorted(groups.items()):
            modules = sorted({task.key[0].mechanism.module for task in tasks} | set(group))
            with unit_pool(backend, address, workers, modules, group_identity(group)) as (
                pool,
                in_flight,
            ):
                supervisor = Supervisor(pool, in_flight, timeout, lambda _: bar.update(), failed)
                supervisor.run(tasks)
    return in_flight


def unit_name(unit: Unit) -> str:
    """How a log line names a unit: ``duff (quantile(0.1)) on normal #3``."""
    statistic = "" if unit.statistic == MEDIAN else f" ({unit.statistic.id})"
    return f"{unit.mechanism.label}{statistic} on {unit.dataset.id} #{unit.replicate}"
