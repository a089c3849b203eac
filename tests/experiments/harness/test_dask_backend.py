"""Backends of the sweep: Dask gives loky's numbers; a dead worker loses only unfinished units.

Also runs a tiny ``--multirun`` through the hydra-joblib-launcher and (on
submitit's local executor) the hydra-submitit-launcher plugins, and checks that
``hydra/launcher=slurm`` composes, when they are installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from harness_mechanisms import GAUSSIAN, LAPLACE, HarnessLaplace, plugin_env, tiny_overrides

from experiments.harness.plan import ConfigError, build_plan
from experiments.harness.results import RUN_FILE, read_summary
from experiments.run import run
from mechanisms import Release, register
from mechanisms.core.data import lower_median

KEYS = ["dataset", "subset", "replicate", "mechanism", "epsilon"]
DUFF = {"label": "duff", "name": "duff"}


def numbers(results: Path) -> pd.DataFrame:
    """summary.csv without the timing column, indexed by the row identity."""
    return read_summary(results).drop(columns="seconds").set_index(KEYS).sort_index()


@register
class WorkerKiller(HarnessLaplace):
    """``harness_laplace`` whose worker process exits on the dataset with median ``kill_median``,
    but only while the file ``marker`` exists (so a rerun without it completes)."""

    name = "harness_worker_killer"

    def __init__(self, *, epsilon: float, kill_median: float, marker: str, **options) -> None:
        super().__init__(epsilon=epsilon, **options)
        self.kill_median, self.marker = kill_median, marker

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        if lower_median(sorted_x, lower) == self.kill_median and os.path.exists(self.marker):
            os._exit(3)  # the worker dies without cleaning up, like a segfault or OOM kill
        return super()._release(sorted_x, lower, upper)


class CountingBar:
    """Stands in for tqdm: records the total and every update."""

    def __init__(self, total: int, **_: object) -> None:
        self.total, self.updates = total, 0
        BARS.append(self)

    def update(self, count: int = 1) -> None:
        self.updates += count

    def __enter__(self) -> CountingBar:
        return self

    def __exit__(self, *_: object) -> None:
        return None


BARS: list[CountingBar] = []


def test_dask_local_cluster_gives_the_loky_numbers(compose_config, tmp_path, monkeypatch) -> None:
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr("experiments.harness.execute.tqdm", CountingBar)
    BARS.clear()
    cfg = compose_config(tiny_overrides(), [LAPLACE, GAUSSIAN, DUFF])
    loky = run(cfg, results_dir=tmp_path / "loky", n_jobs=2)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        cfg.backend, cfg.scheduler_address = "dask", cluster.scheduler_address
        dask = run(cfg, results_dir=tmp_path / "dask")
    pd.testing.assert_frame_equal(numbers(dask), numbers(loky))
    # the progress bar advanced once per unit on both backends (2 × 2 × 3 units)
    assert [(bar.total, bar.updates) for bar in BARS] == [(12, 12), (12, 12)]
    assert (read_summary(dask)["status"] == "ok").all()
    manifest = json.loads((dask / RUN_FILE).read_text())
    assert manifest["invocations"][-1]["backend"] == "dask"
    assert manifest["invocations"][-1]["n_jobs_effective"] == 2  # the cluster's threads
    # backend and scheduler_address are not part of what determines the numbers
    assert manifest["config_hash"] == json.loads((loky / RUN_FILE).read_text())["config_hash"]


def test_backend_keys_are_checked_before_anything_is_written(compose_config, tmp_path) -> None:
    cfg = compose_config(tiny_overrides(backend="dask"), [LAPLACE])
    with pytest.raises(ConfigError, match="backend=dask needs scheduler_address"):
        run(cfg, results_dir=tmp_path / "a")
    cfg = compose_config(tiny_overrides(backend="ray"), [LAPLACE])
    with pytest.raises(ConfigError, match="backend must be one of loky, dask, got 'ray'"):
        run(cfg, results_dir=tmp_path / "b")
    assert list(tmp_path.iterdir()) == []


def test_a_dead_worker_fails_only_its_own_unit(compose_config, tmp_path) -> None:
    """Under loky a worker killed mid-unit is replaced: the unit that killed it is recorded
    as failed with the exit code, every other unit completes, and a rerun (without the
    killer) computes only that unit again, giving a fresh run's numbers."""
    marker = tmp_path / "kill"
    marker.touch()
    overrides = tiny_overrides(datasets="[normal]", replicates=6, n_jobs=2)
    plan = build_plan(compose_config(overrides, [LAPLACE]))
    dataset = plan.datasets[0]
    medians = [lower_median(np.sort(dataset.data(plan.settings.seed, r)), 0.0) for r in range(6)]
    assert len(set(medians)) == 6  # so the killer dies on the last replicate only
    killer = {
        "label": "killer",
        "name": "harness_worker_killer",
        "options": {"kill_median": float(medians[-1]), "marker": str(marker)},
    }
    cfg = compose_config(overrides, [LAPLACE, killer])
    results = run(cfg, results_dir=tmp_path / "results")
    summary = read_summary(results)
    failed = summary.loc[summary["status"] != "ok"]
    assert list(failed["mechanism"]) == ["killer"] * 2 and (failed["replicate"] == 5).all()
    assert failed["status"].str.fullmatch(r"worker died \(exit code .*\)").all()
    assert not list(results.rglob("*.tmp"))
    marker.unlink()
    run(cfg, results_dir=results)
    manifest = json.loads((results / RUN_FILE).read_text())
    assert manifest["status"] == "complete" and manifest["failed_rows"] == 0
    assert manifest["invocations"][-1]["units_computed"] == 1
    pd.testing.assert_frame_equal(numbers(results), numbers(run(cfg, results_dir=tmp_path / "f")))


def test_joblib_launcher_runs_a_multirun(tmp_path) -> None:
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    sweep = tmp_path / "sweep"
    mechanisms = "mechanisms=[{label:lap,name:harness_laplace}]"
    command = [sys.executable, "-m", "experiments.run", "--multirun", "hydra/launcher=joblib"]
    command += [*tiny_overrides(), mechanisms, "plugins=[harness_mechanisms]", "seed=1,2"]
    command += [f"hydra.sweep.dir={sweep}", "hydra.launcher.n_jobs=2"]
    done = subprocess.run(command, cwd=tmp_path, env=plugin_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    seeds = [json.loads((sweep / job / RUN_FILE).read_text())["seed"] for job in ("0", "1")]
    assert seeds == [1, 2]
    assert not numbers(sweep / "0")["true_value"].equals(numbers(sweep / "1")["true_value"])


def test_slurm_launcher_config_composes() -> None:
    """``hydra/launcher=slurm`` resolves to submitit's Slurm launcher with our resources."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from hydra import compose, initialize_config_dir

    from experiments.harness.conf_files import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=["hydra/launcher=slurm", "hydra.launcher.partition=cpu"],
            return_hydra_config=True,
        )
    launcher = cfg.hydra.launcher
    assert (
        launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    )
    assert (launcher.cpus_per_task, launcher.partition, launcher.nodes) == (8, "cpu", 1)


def test_submitit_launcher_runs_a_multirun(tmp_path) -> None:
    """The submitit path that ``hydra/launcher=slurm`` uses, on submitit's local executor."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    sweep = tmp_path / "sweep"
    mechanisms = "mechanisms=[{label:lap,name:harness_laplace}]"
    command = [sys.executable, "-m", "experiments.run", "--multirun"]
    command += ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"]
    command += [*tiny_overrides(), mechanisms, "plugins=[harness_mechanisms]", "seed=1,2"]
    command += [f"hydra.sweep.dir={sweep}"]
    done = subprocess.run(command, cwd=tmp_path, env=plugin_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    seeds = [json.loads((sweep / job / RUN_FILE).read_text())["seed"] for job in ("0", "1")]
    assert seeds == [1, 2]
    assert numbers(sweep / "0")["status"].eq("ok").all()
