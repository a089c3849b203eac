"""End-to-end tests of the sweep: seeding, parallelism, resume, refusal, δ wiring, failures."""

from __future__ import annotations

import json
import os
import platform
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from harness_mechanisms import GAUSSIAN, LAPLACE, LAPLACE_WIDE, start_cli, tiny_overrides

from experiments.data.vertebral import SHARED_DATA_DIR, VERTEBRAL_MEMBER
from experiments.harness.plan import build_plan
from experiments.harness.provenance import package_versions
from experiments.harness.results import (
    ESTIMATES_FILE,
    RUN_FILE,
    SUMMARY_COLUMNS,
    ResultsDirError,
    read_summary,
)
from experiments.run import main, run

SHARED_VERTEBRAL = SHARED_DATA_DIR / VERTEBRAL_MEMBER
KEYS = ["dataset", "subset", "replicate", "mechanism", "epsilon"]


def numbers(results: Path) -> pd.DataFrame:
    """summary.csv without the timing column, indexed by the row identity."""
    return read_summary(results).drop(columns="seconds").set_index(KEYS).sort_index()


def estimates(results: Path) -> dict[tuple, np.ndarray]:
    with np.load(results / ESTIMATES_FILE) as stored:
        keys = zip(*(stored[k] for k in KEYS), strict=True)
        return {tuple(k): row for k, row in zip(keys, stored["estimates"], strict=True)}


@pytest.fixture
def reference(compose_config, tmp_path_factory) -> tuple[object, Path]:
    """A tiny sweep (Laplace and Gaussian, 2 datasets × 2 replicates × 2 ε), run in-process."""
    cfg = compose_config(tiny_overrides(), [LAPLACE, GAUSSIAN])
    return cfg, run(cfg, results_dir=tmp_path_factory.mktemp("reference"))


def test_columns_estimates_and_run_json(reference) -> None:
    cfg, results = reference
    summary = read_summary(results)
    assert tuple(summary.columns) == SUMMARY_COLUMNS
    assert len(summary) == 2 * 2 * 2 * 2  # datasets × replicates × mechanisms × ε
    assert (summary["status"] == "ok").all()
    assert (summary["trials"] == 7).all() and (summary["n"] == 21).all()
    assert set(summary["subset"]) == {""}
    assert summary["private"].all()
    assert (summary["neighbouring"] == "add_remove").all()
    normal = summary["dataset"] == "normal"
    assert (summary.loc[normal, ["lower", "upper"]].to_numpy() == [-10.0, 10.0]).all()
    assert (summary.loc[~normal, ["lower", "upper"]].to_numpy() == [0.0, 1.0]).all()
    # estimates.npz is row-aligned with summary.csv and reproduces its metrics
    with np.load(results / ESTIMATES_FILE) as stored:
        assert stored["estimates"].shape == (len(summary), 7)
        assert list(stored["mechanism"]) == list(summary["mechanism"])
        errors = np.abs(stored["estimates"] - stored["true_value"][:, None])
    np.testing.assert_allclose(errors.mean(axis=1), summary["mean_abs_error"], rtol=1e-12)
    np.testing.assert_allclose(errors.std(axis=1, ddof=1), summary["sd_abs_error"], rtol=1e-12)
    manifest = json.loads((results / RUN_FILE).read_text())
    assert manifest["status"] == "complete"
    assert manifest["config_hash"] == build_plan(cfg).config_hash
    assert manifest["units"] == {"total": 8, "done_before": 0}
    assert manifest["rows"] == 16 and manifest["failed_rows"] == 0
    assert {"numpy", "scipy", "hydra-core", "joblib", "duff-bench"} <= set(manifest["versions"])
    assert manifest["versions"] == {"python": platform.python_version(), **package_versions()}
    assert set(manifest["git"]) == {"commit", "dirty"}
    assert manifest["config"]["epsilons"] == [0.5, 0.9]
    assert manifest["invocations"][0]["runtime_seconds"] >= 0


def test_delta_is_one_over_n_for_delta_mechanisms_only(reference) -> None:
    summary = read_summary(reference[1])
    gauss = summary["mechanism"] == "gauss"
    assert np.allclose(summary.loc[gauss, "delta"], 1 / 21)
    assert np.allclose(summary.loc[gauss, "guarantee_delta"], 1 / 21)
    assert (summary.loc[~gauss, ["delta", "guarantee_delta"]].to_numpy() == 0).all()
    assert np.allclose(summary["guarantee_epsilon"], summary["epsilon"])


def test_every_mechanism_sees_the_same_data(reference) -> None:
    cfg, results = reference
    summary = read_summary(results)
    plan = build_plan(cfg)
    for dataset in plan.datasets:
        for replicate in range(dataset.replicates):
            data = np.sort(dataset.data(plan.settings.seed, replicate))
            rows = summary[
                (summary["dataset"] == dataset.name) & (summary["replicate"] == replicate)
            ]
            assert len(rows) == 4
            assert (rows["true_value"] == data[(data.size - 1) // 2]).all()


def test_same_numbers_for_any_n_jobs(reference, compose_config, tmp_path) -> None:
    cfg, results = reference
    parallel = run(cfg, results_dir=tmp_path / "parallel", n_jobs=2)
    pd.testing.assert_frame_equal(numbers(results), numbers(parallel))
    one, two = estimates(results), estimates(parallel)
    assert one.keys() == two.keys()
    for key in one:
        np.testing.assert_array_equal(one[key], two[key])


def test_adding_a_mechanism_or_epsilon_changes_no_number(reference, compose_config, tmp_path):
    _, results = reference
    bigger = compose_config(
        tiny_overrides(epsilons="[0.25,0.5,0.9]"), [LAPLACE_WIDE, LAPLACE, GAUSSIAN]
    )
    wider = numbers(run(bigger, results_dir=tmp_path / "wider"))
    before = numbers(results)
    pd.testing.assert_frame_equal(wider.loc[before.index], before)
    one, two = estimates(results), estimates(tmp_path / "wider")
    for key in one:
        np.testing.assert_array_equal(one[key], two[key])


def test_resume_recomputes_only_missing_units(reference, tmp_path) -> None:
    cfg, results = reference
    before = numbers(results)
    units = sorted((results / "units").rglob("*.npz"))
    for path in units[::3]:
        path.unlink()
    (results / "summary.csv").unlink()
    run(cfg, results_dir=results)
    pd.testing.assert_frame_equal(numbers(results), before)
    manifest = json.loads((results / RUN_FILE).read_text())
    assert manifest["units"] == {"total": 8, "done_before": 8 - len(units[::3])}
    assert [i["units_computed"] for i in manifest["invocations"]] == [8, len(units[::3])]
    # A complete directory reruns nothing and rewrites the same numbers.
    run(cfg, results_dir=results)
    assert json.loads((results / RUN_FILE).read_text())["invocations"][-1]["units_computed"] == 0
    pd.testing.assert_frame_equal(numbers(results), before)


def test_refuses_a_results_dir_of_another_config(reference, compose_config, tmp_path) -> None:
    _, results = reference
    snapshot = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    other = compose_config(tiny_overrides(epsilons="[0.5]"), [LAPLACE, GAUSSIAN])
    with pytest.raises(ResultsDirError, match=r"different configuration \(differs in: epsilons\)"):
        run(other, results_dir=results)
    reseeded = compose_config(tiny_overrides(seed=7), [LAPLACE, GAUSSIAN])
    with pytest.raises(ResultsDirError, match="differs in: seed"):
        run(reseeded, results_dir=results)
    assert {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == snapshot
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ResultsDirError, match=r"not empty and has no run\.json"):
        run(other, results_dir=foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]  # no lock left behind


def test_failing_cells_are_recorded_and_the_sweep_completes(compose_config, tmp_path) -> None:
    cfg = compose_config(
        tiny_overrides(epsilons="[0.05,0.9,1.5]"), [LAPLACE_WIDE, GAUSSIAN, LAPLACE]
    )
    summary = read_summary(run(cfg, results_dir=tmp_path))
    status = summary.set_index(["mechanism", "epsilon"])["status"]
    # Gaussian's classical bound needs ε < 1: its release raises at ε = 1.5.
    assert (
        status.loc[("gauss", 1.5)]
        == "ValueError: epsilon must be < 1 for the classical Gaussian bound"
    ).all()
    assert (status.loc[("gauss", 0.9)] == "ok").all()
    # Unclipped Laplace noise of scale (b − a)/0.05 leaves [a, b], as the release says it may.
    unclipped = summary.loc[summary["mechanism"] == "lap_unclipped"]
    assert (unclipped["status"] == "ok").all()
    assert ((unclipped["mean_error"] != 0) & unclipped["mean_abs_error"].notna()).all()
    assert (status.loc["lap"] == "ok").all()
    failed = summary["status"] != "ok"
    assert summary.loc[failed, "mean_abs_error"].isna().all()
    assert summary.loc[~failed, "mean_abs_error"].notna().all()
    manifest = json.loads((tmp_path / RUN_FILE).read_text())
    assert manifest["failed_rows"] == int(failed.sum())
    assert {f["mechanism"] for f in manifest["failures"]} == {"gauss"}


MECHANISMS_ARG = (
    "mechanisms=[{label:lap,name:harness_laplace},"
    "{label:gauss,name:harness_gaussian,takes_delta:true}]"
)


def test_cli_killed_midway_then_resumed(compose_config, tmp_path) -> None:
    """A sweep killed (SIGKILL) after its first unit resumes to the same numbers."""
    overrides = tiny_overrides(n=20001, replicates=12, trials=20000)
    results = tmp_path / "killed"
    process = start_cli(*overrides, MECHANISMS_ARG, f"results_dir={results}", cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not any((results / "units").rglob("*.npz")) and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    done = len(list((results / "units").rglob("*.npz")))
    assert 0 < done < 48 and not (results / "summary.csv").exists()
    cfg = compose_config(overrides, [LAPLACE, GAUSSIAN])
    run(cfg, results_dir=results)
    assert json.loads((results / RUN_FILE).read_text())["units"]["done_before"] == done
    fresh = run(cfg, results_dir=tmp_path / "fresh")
    pd.testing.assert_frame_equal(numbers(results), numbers(fresh))


def test_cli_multirun_gives_each_job_its_own_results_dir(tmp_path, monkeypatch) -> None:
    sweep = tmp_path / "sweep"
    argv = ["duff-run", "--multirun", *tiny_overrides(), MECHANISMS_ARG, "seed=1,2"]
    argv += [f"hydra.sweep.dir={sweep}", "hydra/job_logging=none", "hydra/hydra_logging=none"]
    monkeypatch.setattr(sys, "argv", argv)
    main()
    first, second = numbers(sweep / "0"), numbers(sweep / "1")
    assert json.loads((sweep / "1" / RUN_FILE).read_text())["seed"] == 2
    assert not np.allclose(first["true_value"], second["true_value"])


def test_cli_typo_exits_with_the_valid_names(tmp_path, monkeypatch) -> None:
    argv = ["duff-run", "experiment=smoke", "mechanisms=[duff,duf]", f"results_dir={tmp_path}"]
    argv += ["hydra/job_logging=none", "hydra/hydra_logging=none"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    message = str(exit_info.value.code)
    assert message.startswith("duff-run: error: mechanisms: unknown mechanism 'duf'; valid names: ")
    names = message.split("valid names: ")[1].split(" (the YAML files")[0].split(", ")
    assert names == sorted(names) and {"duff", "duff_replace_one", "gaussian_global"} <= set(names)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not SHARED_VERTEBRAL.is_file(), reason="shared Vertebral data not present")
def test_vertebral_sweep_uses_each_class_size_for_delta(compose_config, tmp_path, monkeypatch):
    monkeypatch.setenv("VERTEBRAL_DATA", str(SHARED_VERTEBRAL))
    overrides = tiny_overrides(datasets="[vertebral]", epsilons="[0.5]", trials=1000)
    cfg = compose_config(overrides, [LAPLACE, GAUSSIAN])
    summary = read_summary(run(cfg, results_dir=tmp_path))
    assert len(summary) == 12 * 2 and (summary["replicate"] == 0).all()
    assert summary["subset"].str.fullmatch(r"[a-z_]+/(AB|NO)").all()
    sizes = summary["subset"].str.endswith("/AB").map({True: 210, False: 100})
    assert (summary["n"] == sizes).all()
    gauss = summary["mechanism"] == "gauss"
    np.testing.assert_allclose(summary.loc[gauss, "delta"], 1 / sizes[gauss])
    with np.load(tmp_path / ESTIMATES_FILE) as stored:
        assert stored["estimates"].shape == (24, 1000)
        assert set(stored["subset"]) == set(summary["subset"])
