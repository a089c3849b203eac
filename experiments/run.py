"""Hydra entry point of the benchmark: config → plan → joblib → results.

Run ``python -m experiments.run`` (or ``duff-run``) with Hydra overrides, e.g.::

    python -m experiments.run                        # figure1 at paper scale
    python -m experiments.run experiment=smoke       # seconds
    python -m experiments.run epsilons=[0.5,1] mechanisms=[duff,laplace_ln] n_jobs=2
    python -m experiments.run results_dir=results/figure1/2024-01-01_00-00-00   # resume
    python -m experiments.run --multirun seed=1,2,3  # one results dir per job

Config (``conf/``): ``experiment`` picks a sweep (figure1 by default, smoke,
…); ``datasets=[…]`` and ``mechanisms=[…]`` name entries of ``conf/dataset``
and ``conf/mechanism`` (see :mod:`experiments.plan`); ``n``, ``replicates``,
``trials``, ``epsilons``, ``delta``, ``seed``, ``keep_estimates``, ``n_jobs``,
``backend``, ``scheduler_address`` and ``results_dir`` are plain keys.
``results_dir`` defaults to ``results/<experiment>/<timestamp>`` (also Hydra's
run dir, holding run.log); under ``--multirun`` each job writes to
``<hydra.sweep.dir>/<job number>`` (default ``results/multirun/<timestamp>/<n>``)
unless ``results_dir`` is itself overridden; ``hydra/launcher=joblib`` runs the
jobs in parallel, ``hydra/launcher=slurm`` submits them to Slurm
(``conf/hydra/launcher/slurm.yaml``).  File formats: :mod:`experiments.results`.

Work units (dataset, replicate, mechanism label) run in one joblib pool, with
a progress bar (when stderr is a terminal) that advances as units finish.
``backend=loky`` (default) is a local process pool of ``n_jobs`` workers;
``backend=dask`` sends the units to the Dask cluster at ``scheduler_address``
(``tcp://host:8786``; needs ``dask[distributed]``) through joblib's dask
backend, on all the cluster's worker threads.  Its workers must be able to
import this project (and any ``plugins``) and write to ``results_dir``, so
that must be on a file system they share.  Each unit
computes every ε — one ``release`` and one ``sample(trials, rng)`` per ε — and
writes its own unit file, so an interrupted sweep resumes where it stopped.
Numbers depend only on the config (see :mod:`experiments.seeding`), never on
n_jobs, the backend or scheduling.  A worker that dies (killed, out of memory)
stops the sweep with an error under loky, losing the units in flight (one per
worker; a Dask scheduler retries its unit on another worker instead); finished
units are kept, so rerunning resumes.

A mechanism that raises, or whose release returns a NaN / wrongly shaped /
out-of-bounds sample or has a broken ``cdf`` (checked on a few points of
[a, b], see :func:`experiments.metrics.cdf_problem`), is recorded in the
``status`` column of its rows; the rest of the sweep completes.
"""

from __future__ import annotations

import logging
import math
import os
import platform
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

import mechanisms
from experiments.datasets import DatasetError
from experiments.metrics import METRICS, cdf_problem, error_metrics, estimates_problem
from experiments.plan import CONF_DIR, ConfigError, Settings, Unit, build_plan
from experiments.results import (
    ESTIMATES_FILE,
    RUN_FILE,
    SUMMARY_COLUMNS,
    SUMMARY_FILE,
    ResultsDirError,
    assemble,
    git_state,
    open_results_dir,
    package_versions,
    save_unit,
    unit_path,
    write_json_atomic,
)
from experiments.seeding import noise_rng

log = logging.getLogger(__name__)
PROJECT_ROOT = CONF_DIR.parent
MAX_STATUS = 300
BACKENDS = ("loky", "dask")


# ------------------------------------------------------------------- one unit


def _cell(
    unit: Unit, data: np.ndarray, epsilon: float, delta: float | None, settings: Settings
) -> tuple[dict[str, Any], np.ndarray | None]:
    """Release and sample one (unit, ε) cell; never raises for a mechanism's failure."""
    entry, lower, upper = unit.mechanism, unit.dataset.lower, unit.dataset.upper
    rng = noise_rng(settings.seed, unit.dataset.id, unit.replicate, entry.label, epsilon)
    fields: dict[str, Any] = dict.fromkeys(
        ("true_value", *METRICS, "guarantee_epsilon", "guarantee_delta", "rho"), math.nan
    )
    fields.update(neighbouring="", private=False)
    estimates = None
    start = time.perf_counter()
    try:
        mechanism = mechanisms.make(entry.name, epsilon=epsilon, delta=delta, **entry.options)
        guarantee = mechanism.guarantee
        fields.update(
            guarantee_epsilon=float(guarantee.epsilon),
            guarantee_delta=float(guarantee.delta),
            rho=math.nan if guarantee.rho is None else float(guarantee.rho),
            neighbouring=mechanisms.Neighbouring(guarantee.neighbouring).value,
            private=not guarantee.data_dependent_tuning,
        )
        release = mechanism.release(data, (lower, upper))
        sample = release.sample(settings.trials, rng)
        seconds = time.perf_counter() - start
        problem = estimates_problem(sample, settings.trials, lower, upper, release.true_value)
        if problem is None:  # after the timing, and drawing no random numbers
            cdf = cdf_problem(release, lower, upper)
            problem = None if cdf is None else f"{entry.name}: {cdf}"
        if problem is None:
            fields["true_value"] = float(release.true_value)
            fields.update(error_metrics(sample, fields["true_value"]))
            estimates = sample
    except Exception as err:  # a failing mechanism is a result, not a crash (issue 6)
        seconds = time.perf_counter() - start
        problem = f"{type(err).__name__}: {err}"
    status = "ok" if problem is None else " ".join(problem.split())[:MAX_STATUS]
    return {**fields, "seconds": seconds, "status": status}, estimates


def compute_unit(unit: Unit, settings: Settings) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Rows (one per ε, columns of ``summary.csv``) and, if kept, the estimates of a unit."""
    import_module(unit.mechanism.module)  # registers plug-in mechanisms in this worker
    data = unit.dataset.data(settings.seed, unit.replicate)
    data.setflags(write=False)
    n = int(data.size)
    delta = settings.delta_for(n) if unit.mechanism.takes_delta else None
    identity = {
        "dataset": unit.dataset.name,
        "subset": unit.dataset.subset,
        "replicate": unit.replicate,
        "n": n,
        "lower": unit.dataset.lower,
        "upper": unit.dataset.upper,
        "mechanism": unit.mechanism.label,
        "registry_name": unit.mechanism.name,
        "delta": 0.0 if delta is None else delta,
        "trials": settings.trials,
    }
    rows: dict[str, list[Any]] = {column: [] for column in SUMMARY_COLUMNS}
    kept = None
    if settings.keep_estimates:
        kept = np.full((len(settings.epsilons), settings.trials), np.nan)
    for i, epsilon in enumerate(settings.epsilons):
        fields, estimates = _cell(unit, data, epsilon, delta, settings)
        for column, value in {**identity, "epsilon": epsilon, **fields}.items():
            rows[column].append(value)
        if kept is not None and estimates is not None:
            kept[i] = estimates
    return {column: np.asarray(values) for column, values in rows.items()}, kept


def run_unit(unit: Unit, settings: Settings, path: Path) -> int:
    """Compute a unit and store it atomically at ``path``; return its number of failed rows."""
    columns, estimates = compute_unit(unit, settings)
    save_unit(path, columns, estimates)
    return int(np.count_nonzero(columns["status"] != "ok"))


# ------------------------------------------------------------------ the sweep


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _check_backend(config: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(backend, scheduler_address)`` from the config (keys of the same names)."""
    backend, address = config.get("backend") or "loky", config.get("scheduler_address")
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "dask" and not (isinstance(address, str) and address):
        raise ConfigError(
            f"backend=dask needs scheduler_address (e.g. tcp://host:8786), got {address!r}"
        )
    return backend, address


@contextmanager
def _backend(backend: str, address: str | None) -> Iterator[None]:
    """Make joblib run on ``backend``: loky (its default) or the Dask cluster at ``address``."""
    if backend == "loky":
        yield
        return
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError("backend=dask needs `pip install 'dask[distributed]'`") from None
    try:
        client = Client(address)
    except OSError as err:
        raise ConfigError(f"scheduler_address: cannot connect to {address}: {err}") from None
    with client, parallel_config(backend="dask"):
        yield


def run(
    cfg: Mapping[str, Any] | DictConfig,
    *,
    results_dir: str | os.PathLike[str] | None = None,
    n_jobs: int | None = None,
    overrides: Sequence[str] = (),
    conf_dir: Path = CONF_DIR,
) -> Path:
    """Run (or resume) the sweep described by ``cfg``; return the results directory.

    ``results_dir`` and ``n_jobs`` default to the config's keys of that name;
    neither changes any number.
    """
    config = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
    config = dict(config)  # type: ignore[arg-type]
    out = Path(results_dir if results_dir is not None else config["results_dir"]).resolve()
    jobs = config.get("n_jobs", 1) if n_jobs is None else n_jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0:
        raise ConfigError(f"n_jobs must be a non-zero integer (joblib's meaning), got {jobs!r}")
    backend, address = _check_backend(config)
    plan = build_plan(config, conf_dir)
    numbers, digest = plan.numbers(), plan.config_hash
    previous = open_results_dir(out, digest, numbers)

    units = plan.units()
    paths = [unit_path(out, u.dataset.id, u.mechanism.label, u.replicate) for u in units]
    todo = [(u, p) for u, p in zip(units, paths, strict=True) if not p.exists()]
    clock = time.perf_counter()
    invocation = {
        "started": _now(),
        "n_jobs": jobs,
        "backend": backend,
        "git": git_state(PROJECT_ROOT),
    }
    history = (previous or {}).get("invocations", [])
    manifest: dict[str, Any] = {
        "format": numbers["format"],
        "experiment": config.get("name"),
        "status": "running",
        "config_hash": digest,
        "seed": plan.settings.seed,
        "results_dir": str(out),
        "created": history[0]["started"] if history else invocation["started"],
        "numbers": numbers,
        "config": {k: v for k, v in config.items() if k != "hydra"},
        "overrides": list(overrides),
        "mechanisms": [{**m.describe(), "module": m.module} for m in plan.mechanisms],
        "datasets": [{"id": d.id, "source": d.source} for d in plan.datasets],
        "versions": {
            "python": platform.python_version(),
            **package_versions(m.module for m in plan.mechanisms),
        },
        "git": invocation["git"],
        "host": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
        "units": {"total": len(units), "done_before": len(units) - len(todo)},
        "invocations": [*history, invocation],
    }
    write_json_atomic(out / RUN_FILE, manifest)
    if previous:
        log.info(
            "resuming %s: %d of %d units already done", out, len(units) - len(todo), len(units)
        )
        if todo and history[-1].get("git") != invocation["git"]:
            log.warning("resuming with another git state than the last run: %s", invocation["git"])

    tasks = (delayed(run_unit)(unit, plan.settings, path) for unit, path in todo)
    desc = str(config.get("name") or "units")
    bar = tqdm(total=len(todo), desc=desc, unit="unit", disable=None, file=sys.stderr)
    workers = -1 if backend == "dask" else jobs  # a cluster's units go to all its threads
    with _backend(backend, address), bar:
        invocation["n_jobs_effective"] = effective_n_jobs(workers)
        # loky: one unit per task, so the bar advances per unit and a dead worker takes
        # only its own unit down (no measurable cost: units take ~10-100 ms).  Dask
        # retries a dead worker's tasks itself, and its per-task overhead (~20 ms of
        # CPU) needs joblib's batching.
        batch = 1 if backend == "loky" else "auto"
        parallel = Parallel(n_jobs=workers, batch_size=batch, return_as="generator_unordered")
        for _ in parallel(tasks):
            bar.update()

    trials = plan.settings.trials if plan.settings.keep_estimates else None
    summary = assemble(out, paths, rows_per_unit=len(plan.settings.epsilons), trials=trials)
    failed = summary.loc[summary["status"] != "ok"]
    failures = [
        {"mechanism": label, "rows": len(rows), "examples": list(rows["status"].unique()[:3])}
        for label, rows in failed.groupby("mechanism", sort=False)
    ]
    for failure in failures:
        label, count, example = failure["mechanism"], failure["rows"], failure["examples"][0]
        log.warning("%s: %d rows failed, e.g. %s", label, count, example)
    runtime = time.perf_counter() - clock
    invocation.update(finished=_now(), runtime_seconds=round(runtime, 3), units_computed=len(todo))
    manifest.update(
        status="complete",
        finished=invocation["finished"],
        runtime_seconds=round(sum(i.get("runtime_seconds", 0) for i in manifest["invocations"]), 3),
        rows=len(summary),
        failed_rows=len(failed),
        failures=failures,
        files={"summary": SUMMARY_FILE, "estimates": ESTIMATES_FILE if trials else None},
    )
    write_json_atomic(out / RUN_FILE, manifest)
    log.info("%d rows (%d failed) in %s [%.1f s]", len(summary), len(failed), out, runtime)
    return out


def _overridden(key: str, overrides: Sequence[str]) -> bool:
    return any(o.split("=", 1)[0].lstrip("+~") == key for o in overrides)


def _task(cfg: DictConfig) -> None:
    """The Hydra task: pick the results directory (per job under --multirun) and run."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    results_dir = cfg.results_dir
    if hydra_cfg.mode == RunMode.MULTIRUN and not _overridden("results_dir", overrides):
        results_dir = hydra_cfg.runtime.output_dir  # <sweep dir>/<job number>
    try:
        run(cfg, results_dir=results_dir, overrides=overrides)
    except (ConfigError, DatasetError, ResultsDirError) as err:
        sys.exit(f"duff-run: error: {err}")


def main() -> None:
    """Console entry point (``duff-run``); see the module docstring."""
    # Hydra is imported here, not at the top: joblib workers import this module
    # (for run_unit) and start faster without it.  The config path is absolute
    # because a relative one resolves as a Python package under a console script.
    import hydra

    hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")(_task)()


if __name__ == "__main__":
    # Run the importable copy of this module, so that joblib workers receive
    # `experiments.run.run_unit` by reference rather than a pickled __main__ function.
    from experiments.run import main as entry_point

    entry_point()
