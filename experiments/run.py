"""Hydra entry point of the benchmark: config → plan → supervised workers → results.

Run ``python -m experiments.run`` (or ``duff-run``) with Hydra overrides, e.g.::

    python -m experiments.run                        # figure1 at paper scale
    python -m experiments.run experiment=smoke       # seconds
    python -m experiments.run epsilons=[0.5,1] mechanisms=[duff,laplace_ln_public] n_jobs=2
    python -m experiments.run results_dir=results/figure1/2024-01-01_00-00-00   # resume
    python -m experiments.run --multirun seed=1,2,3  # one results dir per job

Config (``conf/``): ``experiment`` picks a sweep (figure1 by default, smoke,
…); ``datasets=[…]`` and ``mechanisms=[…]`` name entries of ``conf/dataset``
and ``conf/mechanism`` (see :mod:`experiments.harness.plan`); the other keys are plain
values (:data:`experiments.harness.plan.CONFIG_KEYS`); any other top-level key is
refused, so a mistyped ``+epsilon=[5]`` never runs a sweep without it.
``results_dir`` defaults to ``results/<experiment>/<timestamp>-<pid>`` (also
Hydra's run dir, holding run.log), a name two runs cannot share; under
``--multirun`` each job writes to ``<hydra.sweep.dir>/<job number>`` unless
``results_dir`` is itself overridden; ``hydra/launcher=joblib`` runs the jobs
in parallel, ``hydra/launcher=slurm`` submits them to Slurm
(``conf/hydra/launcher/slurm.yaml``).  File formats: :mod:`experiments.harness.results`.

A run takes the results directory's lock, then checks its ``run.json`` (one
config per directory), then runs the work units (dataset, replicate, mechanism
label) that have no unit file yet, whose unit file has failed rows
(``retry_failed``, default true), or whose unit file was computed by other code
than the current one (:mod:`experiments.harness.code_identity`: a run resumed after
the code changed recomputes the old units, never mixes them with new ones).
``backend=loky`` (default) runs them in ``n_jobs`` worker processes (capped at the
cores available; built-in mechanisms and each plug-in's in processes of their own,
:mod:`experiments.harness.execute`); ``backend=dask`` on the Dask cluster at
``scheduler_address`` (its workers must import this project and any ``plugins``
and share ``results_dir``'s file system).  :mod:`experiments.harness.supervisor` makes
every unit end with a unit file whatever its mechanism does (exception, exit, crash,
hang past ``timeout`` seconds).  Numbers depend only on the config
(:mod:`experiments.base.seeding`) and the code, never on n_jobs, the backend or
scheduling.

Exit status of ``duff-run``: 0 every row ok; 3 the sweep completed but some rows
failed (the last line says how many); 1 a config, data or results-directory
error (one line); 130 interrupted (Ctrl-C: one line, the finished units kept,
the same command resumes).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments.base.atomic_files import write_json_atomic
from experiments.data.datasets import DatasetError
from experiments.harness import code_identity
from experiments.harness.conf_files import CONF_DIR
from experiments.harness.config import (
    ConfigError,
    check_backend,
    check_retry_failed,
    check_timeout,
    unknown_override,
    worker_count,
)
from experiments.harness.execute import execute_units
from experiments.harness.plan import Plan, build_plan
from experiments.harness.provenance import git_state, package_versions
from experiments.harness.results import (
    ESTIMATES_FILE,
    LOCK_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    ResultsDirError,
    StaleUnitError,
    StoredUnit,
    assemble,
    config_hash,
    file_sha256,
    load_unit,
    lock_results_dir,
    open_results_dir,
    remove_temporaries,
    unit_path,
)

log = logging.getLogger(__name__)
PACKAGE_DIR = Path(__file__).resolve().parent
EXIT_FAILED_ROWS = 3
EXIT_INTERRUPTED = 130
LOG_FILE = "run.log"
"""Hydra's log of a command-line run in its run dir (``<job name>.log``, the job being ``run``)."""


class SweepInterrupted(Exception):
    """Ctrl-C during a sweep; the message says how much was saved and how to resume."""


# ------------------------------------------------------------------ the sweep


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _is_done(path: Path, plan: Plan, digest: str, retry_failed: bool, code: str) -> bool | None:
    """Whether the unit stored at ``path`` is finished (a unit file of this config computed
    by the code ``code``, and, with ``retry_failed``, no failed row); None for a unit file
    of other code (to recompute).  A foreign or corrupt file is an error."""
    if not path.exists():
        return False
    settings = plan.settings
    trials = settings.trials if settings.keep_estimates else None
    try:
        rows, _ = load_unit(
            path, rows=len(settings.epsilons), trials=trials, digest=digest, code=code
        )
    except StaleUnitError:
        return None
    return not retry_failed or bool((rows["status"] == "ok").all())


def _manifest(
    plan: Plan, config: Mapping[str, Any], out: Path, previous: dict | None, **extra: Any
) -> dict[str, Any]:
    numbers = plan.numbers()
    history = (previous or {}).get("invocations", [])
    invocation = extra.pop("invocation")
    return {
        "format": numbers["format"],
        "experiment": config.get("name"),
        "status": "running",
        "config_hash": plan.config_hash,
        "seed": plan.settings.seed,
        "results_dir": str(out),
        "created": history[0]["started"] if history else invocation["started"],
        "numbers": numbers,
        "config": {k: v for k, v in config.items() if k != "hydra"},
        "mechanisms": [
            {**m.describe(), "module": m.module, "display_name": m.cls.display_name}
            for m in plan.mechanisms
        ],
        "datasets": [{"id": d.id, "source": d.source} for d in plan.datasets],
        "versions": {
            "python": platform.python_version(),
            **package_versions(m.module for m in plan.mechanisms),
        },
        "git": invocation["git"],
        "code": invocation["code"],
        "host": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
        "invocations": [*history, invocation],
        "checksums": {},  # of summary.csv and estimates.npz, once the run wrote them
        **extra,
    }


def run(
    cfg: Mapping[str, Any] | DictConfig,
    *,
    results_dir: str | os.PathLike[str] | None = None,
    n_jobs: int | None = None,
    overrides: Sequence[str] = (),
    conf_dir: Path | Sequence[Path] = CONF_DIR,
) -> Path:
    """Run (or resume) the sweep described by ``cfg``; return the results directory.

    ``results_dir`` and ``n_jobs`` default to the config's keys of that name;
    neither changes any number.  ``conf_dir`` is where named datasets and
    mechanisms are looked up (several directories: in order).  Raises
    :class:`SweepInterrupted` on Ctrl-C (finished units kept), and ``ConfigError``
    / ``DatasetError`` / ``ResultsDirError`` (one-line messages) for what cannot
    be run.
    """
    plain = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
    config: dict[str, Any] = dict(plain)  # type: ignore[arg-type]
    out = Path(results_dir if results_dir is not None else config["results_dir"]).resolve()
    workers = worker_count(config.get("n_jobs", 1) if n_jobs is None else n_jobs)
    backend, address = check_backend(config)
    timeout, retry_failed = check_timeout(config), check_retry_failed(config)
    plan = build_plan(config, conf_dir)
    created, locked_before = not out.exists(), (out / LOCK_FILE).exists()
    with lock_results_dir(out):
        try:
            return _run_locked(
                plan, config, out, workers, backend, address, timeout, retry_failed, overrides
            )
        except ResultsDirError:  # refused: leave the directory as it was found
            if not locked_before:
                (out / LOCK_FILE).unlink(missing_ok=True)
            if created:
                _remove_if_empty(out)
            raise


def _remove_if_empty(directory: Path) -> None:
    """Remove ``directory`` if nothing is in it (a refused run's only trace)."""
    with contextlib.suppress(OSError):
        directory.rmdir()


def _run_locked(
    plan: Plan,
    config: Mapping[str, Any],
    out: Path,
    workers: int,
    backend: str,
    address: str | None,
    timeout: float | None,
    retry_failed: bool,
    overrides: Sequence[str],
) -> Path:
    """The body of :func:`run`, with the results directory's lock held."""
    digest = plan.config_hash
    previous = open_results_dir(out, digest, plan.numbers())
    units = plan.units()
    paths = [
        unit_path(out, u.dataset.id, u.statistic.id, u.mechanism.label, u.replicate) for u in units
    ]
    code_identity.forget()  # read the files again: the code may have changed since a last run
    codes = [code_identity.unit_identity(u) for u in units]
    done = [_is_done(p, plan, digest, retry_failed, c) for p, c in zip(paths, codes, strict=True)]
    todo = [(u, p) for u, p, d in zip(units, paths, done, strict=True) if not d]
    stale = sum(d is None for d in done)
    if stale:
        log.warning(
            "%d of %d unit files in %s were computed by other code: recomputing them",
            stale,
            len(units),
            out,
        )
    clock = time.perf_counter()
    invocation = {"started": _now(), "n_jobs": workers, "backend": backend, "timeout": timeout}
    invocation["git"] = git_state(PACKAGE_DIR)  # the code that ran: null when installed
    invocation["code"] = {
        "identity": config_hash({"units": sorted(set(codes))})[:16],
        "core": code_identity.core_identity(),
        "stale_units": stale,
    }
    manifest = _manifest(
        plan,
        config,
        out,
        previous,
        invocation=invocation,
        overrides=list(overrides),
        units={"total": len(units), "done_before": len(units) - len(todo)},
    )
    write_json_atomic(out / RUN_FILE, manifest)
    if previous:
        log.info("resuming %s: %d of %d units to compute", out, len(todo), len(units))
    try:
        invocation["n_jobs_effective"], stored = execute_units(
            todo,
            plan,
            digest,
            backend=backend,
            address=address,
            workers=workers,
            timeout=timeout,
            desc=str(config.get("name") or "units"),
        )
    except KeyboardInterrupt:
        remove_temporaries(out)
        saved = sum(path.exists() for path in paths)
        raise SweepInterrupted(
            f"interrupted: {saved} of {len(units)} units saved in {out}; "
            "rerun the same command to resume"
        ) from None
    remove_temporaries(out)  # of workers killed mid-write while the pool recovered
    invocation["units_computed"] = len(todo)
    clock = time.perf_counter() - clock
    return _finish(plan, out, paths, codes, manifest, invocation, clock, digest, stored)


def _finish(
    plan: Plan,
    out: Path,
    paths: Sequence[Path],
    codes: Sequence[str],
    manifest: dict[str, Any],
    invocation: dict[str, Any],
    runtime: float,
    digest: str,
    stored: Mapping[Path, StoredUnit],
) -> Path:
    """Assemble summary.csv (and estimates.npz) from the unit files (``stored``: the content
    of those the workers just wrote), each checked to be of the code ``codes`` gives it;
    complete run.json, with the files' checksums."""
    settings = plan.settings
    trials = settings.trials if settings.keep_estimates else None
    summary = assemble(
        out,
        paths,
        rows_per_unit=len(settings.epsilons),
        trials=trials,
        digest=digest,
        codes=codes,
        stored=stored,
    )
    checksums = {SUMMARY_FILE: file_sha256(out / SUMMARY_FILE)}
    if trials is not None:
        checksums[ESTIMATES_FILE] = file_sha256(out / ESTIMATES_FILE)
    failed = summary.loc[summary["status"] != "ok"]
    failures = [
        {"mechanism": label, "rows": len(rows), "examples": list(rows["status"].unique()[:3])}
        for label, rows in failed.groupby("mechanism", sort=False)
    ]
    for failure in failures:
        label, count, example = failure["mechanism"], failure["rows"], failure["examples"][0]
        log.warning("%s: %d rows failed, e.g. %s", label, count, example)
    weaker = summary.loc[(summary["status"] == "ok") & ~summary["guarantee_met"].astype(bool)]
    for label, rows in weaker.groupby("mechanism", sort=False):
        log.info("%s: %d rows claim a guarantee weaker than requested", label, len(rows))
    invocation.update(finished=_now(), runtime_seconds=round(runtime, 3))
    manifest.update(
        status="complete",
        finished=invocation["finished"],
        runtime_seconds=round(sum(i.get("runtime_seconds", 0) for i in manifest["invocations"]), 3),
        rows=len(summary),
        failed_rows=len(failed),
        failures=failures,
        files={"summary": SUMMARY_FILE, "estimates": ESTIMATES_FILE if trials else None},
        checksums=checksums,
    )
    write_json_atomic(out / RUN_FILE, manifest)
    return out


def outcome(results_dir: Path) -> tuple[str, int]:
    """The last line to print after a sweep, and the exit status (0, or 3 if rows failed)."""
    manifest = _read_manifest(results_dir)
    rows, failed = manifest["rows"], manifest["failed_rows"]
    if failed:
        return (
            f"done with failures: {failed} of {rows} rows failed (see the status column of "
            f"{results_dir / SUMMARY_FILE}); exit status {EXIT_FAILED_ROWS}",
            EXIT_FAILED_ROWS,
        )
    return f"done: {rows} rows in {results_dir}", 0


def _read_manifest(results_dir: Path) -> dict[str, Any]:
    return json.loads((results_dir / RUN_FILE).read_text(encoding="utf-8"))


# ------------------------------------------------------------------ command line


def _overridden(key: str, overrides: Sequence[str]) -> bool:
    return any(o.split("=", 1)[0].lstrip("+~") == key for o in overrides)


def _conf_dirs() -> list[Path]:
    """The file config directories Hydra searches (``--config-dir``, ``hydra.searchpath``),
    the user's first, then the package's."""
    from hydra.core.hydra_config import HydraConfig

    sources = HydraConfig.get().runtime.config_sources
    dirs = [Path(s.path) for s in sources if s.schema == "file" and Path(s.path).is_dir()]
    return [d for d in dirs if d.resolve() != CONF_DIR.resolve()] + [CONF_DIR]


def _remove_hydra_traces(results_dir: Path, *, default: bool) -> None:
    """After a refused run: remove the empty ``run.log`` Hydra opened in ``results_dir`` and,
    for the default ``results/<name>/<run id>`` (made by Hydra for this run), that directory
    and ``results/<name>`` and ``results`` if they are left empty; a ``results_dir`` the user
    named is left in place (never a file with content is removed)."""
    log_file = results_dir / LOG_FILE
    if log_file.is_file() and log_file.stat().st_size == 0:
        log_file.unlink()
    if default:  # the run dir Hydra made, results/<name>, then results/
        _remove_if_empty(results_dir)
        _remove_if_empty(results_dir.parent)
        _remove_if_empty(results_dir.parent.parent)


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
        out = run(cfg, results_dir=results_dir, overrides=overrides, conf_dir=_conf_dirs())
    except (ConfigError, DatasetError, ResultsDirError) as err:
        _remove_hydra_traces(
            Path(results_dir).resolve(), default=not _overridden("results_dir", overrides)
        )
        sys.exit(f"duff-run: error: {err}")
    except (SweepInterrupted, KeyboardInterrupt) as err:
        print(f"duff-run: {err or 'interrupted'}", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    line, status = outcome(out)
    print(f"duff-run: {line}", file=sys.stderr)
    if status and hydra_cfg.mode != RunMode.MULTIRUN:
        sys.exit(status)


def main() -> None:
    """Console entry point (``duff-run``); see the module docstring."""
    # Hydra is imported here, not at the top: workers import this package and start
    # faster without it.  The config path is absolute because a relative one
    # resolves as a Python package under a console script.
    import hydra

    unknown = unknown_override(sys.argv[1:])
    if unknown:
        sys.exit(f"duff-run: error: {unknown}")
    try:
        hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")(_task)()
    except KeyboardInterrupt:
        print("duff-run: interrupted before the sweep started", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    # Run the importable copy of this module, so that workers receive functions by
    # reference rather than a pickled __main__.
    from experiments.run import main as entry_point

    entry_point()
