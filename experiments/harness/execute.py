"""Run a sweep's work units on a pool of workers under the supervisor.

:func:`unit_pool` opens the pool (loky processes, or a Dask cluster) and says how many
units to keep in flight; :func:`execute_units` runs the units to be computed under
:class:`experiments.harness.supervisor.Supervisor`, so that every unit ends with a unit file
(a unit whose worker failed gets a unit file of failed rows, written here).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from experiments.harness.config import ConfigError
from experiments.harness.plan import Plan, Unit
from experiments.harness.results import save_unit
from experiments.harness.supervisor import DaskPool, LokyPool, Pool, Supervisor, Task
from experiments.harness.unit import failed_unit, run_unit
from mechanisms.statistics import MEDIAN

log = logging.getLogger(__name__)


@contextmanager
def unit_pool(
    backend: str, address: str | None, workers: int, modules: Sequence[str]
) -> Iterator[tuple[Pool, int]]:
    """The pool to run units on, and how many units to keep in flight."""
    if backend == "loky":
        yield LokyPool(workers, modules), workers
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
    pool: Pool,
    in_flight: int,
    timeout: float | None,
    desc: str,
) -> None:
    """Run the units of ``todo`` under a :class:`Supervisor`; each ends with a unit file."""
    settings = plan.settings
    bar = tqdm(total=len(todo), desc=desc, unit="unit", disable=None, file=sys.stderr)

    def failed(task: Task, cause: str) -> None:
        unit, path = task.key
        log.warning("%s: %s", unit_name(unit), cause)
        estimates = None
        if settings.keep_estimates:
            estimates = np.full((len(settings.epsilons), settings.trials), np.nan)
        save_unit(path, failed_unit(unit, settings, cause), estimates, digest)
        bar.update()

    tasks = [
        Task((unit, path), run_unit, (unit, settings, path, digest, timeout)) for unit, path in todo
    ]
    with bar:
        supervisor = Supervisor(pool, in_flight, timeout, lambda task: bar.update(), failed)
        supervisor.run(tasks)


def unit_name(unit: Unit) -> str:
    """How a log line names a unit: ``duff (quantile(0.1)) on normal #3``."""
    statistic = "" if unit.statistic == MEDIAN else f" ({unit.statistic.id})"
    return f"{unit.mechanism.label}{statistic} on {unit.dataset.id} #{unit.replicate}"
