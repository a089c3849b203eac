"""A sweep finishes and tells the truth whatever a plug-in does (exit, crash, hang, lie)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import LAPLACE, tiny_overrides

from experiments.harness import execute, supervisor
from experiments.harness.plan import build_plan
from experiments.harness.results import RUN_FILE, read_summary
from experiments.run import outcome, run
from mechanisms.core.data import lower_median

VICTIM = 1
"""The replicate on which the hostile plug-in misbehaves (of 3)."""


def hostile_sweep(compose_config, behaviour: str, marker: Path | None = None, **keys):
    """A 3-replicate sweep of ``harness_laplace`` and ``harness_hostile`` (misbehaving on
    replicate ``VICTIM``), and the victim's median."""
    overrides = tiny_overrides(datasets="[normal]", replicates=3, epsilons="[0.5]", n_jobs=2)
    overrides += [f"{key}={value}" for key, value in keys.items()]
    plan = build_plan(compose_config(overrides, [LAPLACE]))
    dataset = plan.datasets[0]
    median = lower_median(np.sort(dataset.data(plan.settings.seed, VICTIM)), dataset.lower)
    options = {"behaviour": behaviour, "victim_median": float(median)}
    if marker is not None:
        options["marker"] = str(marker)
    hostile = {"label": "hostile", "name": "harness_hostile", "options": options}
    return compose_config([*overrides, "plugins=[hostile_plugins]"], [LAPLACE, hostile])


def statuses(results: Path) -> dict[tuple[str, int], str]:
    summary = read_summary(results)
    return {(row.mechanism, row.replicate): row.status for row in summary.itertuples()}


@pytest.mark.parametrize(
    ("behaviour", "status"),
    [
        ("system_exit", "SystemExit: 4"),
        ("keyboard_interrupt", "KeyboardInterrupt$"),
        ("os_exit", r"worker died \(exit code EXIT\(4\)\)$"),
        ("segfault", r"worker died \(exit code SIGSEGV\(-11\)\)$"),
        ("sleep", "timed out: the unit took longer than timeout = 3 s"),
        ("blocked_sleep", "timed out: .* and its worker was killed"),
    ],
)
def test_a_plugin_that_exits_crashes_or_hangs_fails_only_its_unit(
    behaviour, status, compose_config, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(supervisor, "HARD_LIMIT_GRACE", 1.0)  # the hung worker's wait, shortened
    timeout = 3 if "sleep" in behaviour else 600  # short only where the plug-in hangs
    cfg = hostile_sweep(compose_config, behaviour, timeout=timeout)
    results = run(cfg, results_dir=tmp_path / "out")
    found = statuses(results)
    assert len(found) == 6
    assert re.match(status, found.pop(("hostile", VICTIM)))
    assert set(found.values()) == {"ok"}
    line, exit_status = outcome(results)
    assert exit_status == 3 and line.startswith("done with failures: 1 of 6 rows failed")
    assert not list(results.rglob("*.tmp"))


@pytest.mark.parametrize(
    ("behaviour", "status", "per_task"),
    [
        ("segfault", r"worker died \(exit code SIGSEGV\(-11\)\)$", 3),
        ("segfault", r"worker died \(exit code SIGSEGV\(-11\)\)$", 2),
        ("blocked_sleep", "timed out: .* and its worker was killed", 3),
    ],
)
def test_a_unit_that_kills_or_hangs_its_worker_mid_task_fails_alone(
    behaviour, status, per_task, compose_config, tmp_path, monkeypatch
) -> None:
    """Units sent to a worker together: the victim (replicate 1) runs after replicate 0 in
    the same task (``per_task`` 3: one task of 3 units; 2: a second task in flight beside
    it), and only the victim fails; the units before it are kept, the ones after rerun."""
    monkeypatch.setattr(execute, "TASKS_PER_WORKER", 1)
    monkeypatch.setattr(execute, "MAX_UNITS_PER_TASK", per_task)
    monkeypatch.setattr(supervisor, "HARD_LIMIT_GRACE", 1.0)
    assert execute.units_per_task(6, 2, "loky") == per_task
    timeout = 3 if "sleep" in behaviour else 600
    cfg = hostile_sweep(compose_config, behaviour, timeout=timeout)
    results = run(cfg, results_dir=tmp_path / "out")
    found = statuses(results)
    assert re.match(status, found.pop(("hostile", VICTIM)))
    assert set(found.values()) == {"ok"} and len(found) == 5
    assert outcome(results)[1] == 3
    assert not list(results.rglob("*.tmp"))


def test_failed_units_are_retried_once_the_plugin_is_fixed(compose_config, tmp_path) -> None:
    marker = tmp_path / "broken"
    marker.touch()
    cfg = hostile_sweep(compose_config, "system_exit", marker)
    results = run(cfg, results_dir=tmp_path / "out")
    assert outcome(results)[1] == 3
    marker.unlink()  # the user fixes the plug-in and reruns the same command
    run(cfg, results_dir=results)
    assert set(statuses(results).values()) == {"ok"}
    manifest = json.loads((results / RUN_FILE).read_text())
    assert [i["units_computed"] for i in manifest["invocations"]] == [6, 1]
    assert outcome(results) == (f"done: 6 rows in {results}", 0)


def test_failed_units_are_kept_with_retry_failed_false(compose_config, tmp_path) -> None:
    marker = tmp_path / "broken"
    marker.touch()
    cfg = hostile_sweep(compose_config, "system_exit", marker, retry_failed="false")
    results = run(cfg, results_dir=tmp_path / "out")
    marker.unlink()
    run(cfg, results_dir=results)
    assert statuses(results)[("hostile", VICTIM)] == "SystemExit: 4"


def test_the_harness_computes_the_truth_itself(compose_config, tmp_path) -> None:
    """A plug-in claiming its own output (b = 10) as the truth is a problem, not error 0."""
    results = run(hostile_sweep(compose_config, "wrong_truth"), results_dir=tmp_path / "out")
    found = statuses(results)
    assert re.fullmatch(
        r"true_value 10\.0 differs from the harness's T\(S\) = -?0\.\d+",
        found.pop(("hostile", VICTIM)),
    )
    assert set(found.values()) == {"ok"}
    summary = read_summary(results).set_index(["mechanism", "replicate"])
    np.testing.assert_array_equal(
        summary.loc["hostile"].loc[[0, 2], "true_value"],
        summary.loc["lap"].loc[[0, 2], "true_value"],
    )


@pytest.mark.parametrize(
    ("behaviour", "claimed", "met"),
    [("weaker_guarantee", 1.0, False), ("stronger_guarantee", 1e-9, True)],
)
def test_a_claimed_guarantee_is_recorded_beside_the_request(
    behaviour, claimed, met, compose_config, tmp_path
) -> None:
    results = run(hostile_sweep(compose_config, behaviour), results_dir=tmp_path / "out")
    summary = read_summary(results)
    hostile = summary[summary["mechanism"] == "hostile"]
    assert (hostile["status"] == "ok").all() and (hostile["epsilon"] == 0.5).all()
    assert (hostile["guarantee_epsilon"] == claimed).all()
    assert (hostile["guarantee_met"] == met).all()
    assert summary.loc[summary["mechanism"] == "lap", "guarantee_met"].all()
