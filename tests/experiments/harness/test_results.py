"""Results files: atomic writes, config hash, directory checks, unit files, metrics."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

from experiments.base import atomic_files
from experiments.base.atomic_files import BackgroundSync, write_json_atomic, write_text_atomic
from experiments.harness import provenance
from experiments.harness.metrics import error_metrics, estimates_problem
from experiments.harness.results import (
    SUMMARY_COLUMNS,
    ResultsDirError,
    StaleUnitError,
    StoredUnit,
    assemble,
    config_hash,
    load_unit,
    open_results_dir,
    read_summary,
    save_unit,
)


def unit_rows(epsilons: list[float], dataset: str = "normal") -> dict[str, np.ndarray]:
    k = len(epsilons)
    values = {
        "dataset": [dataset] * k,
        "subset": [""] * k,
        "replicate": [0] * k,
        "n": [5] * k,
        "lower": [0.0] * k,
        "upper": [1.0] * k,
        "mechanism": ["m"] * k,
        "registry_name": ["m"] * k,
        "statistic": ["median"] * k,
        "epsilon": epsilons,
        "delta": [0.0] * k,
        "trials": [3] * k,
        "true_value": [0.5] * k,
        "mean_abs_error": [0.1] * k,
        "sd_abs_error": [math.nan] * k,
        "rmse": [0.2] * k,
        "mean_error": [0.0] * k,
        "mean_rank_error": [1.5] * k,
        "answer_rate": [1.0] * k,
        "hit_rate": [math.nan] * k,
        "mean_count_gap": [math.nan] * k,
        "coverage": [math.nan] * k,
        "mean_width": [math.nan] * k,
        "nonprivate_width": [math.nan] * k,
        "total_rank_error": [math.nan] * k,
        "max_rank_error": [math.nan] * k,
        "population_value": [0.5] * k,
        "population_abs_error": [0.1] * k,
        "sample_abs_error": [0.0] * k,
        "seconds": [0.01] * k,
        "guarantee_epsilon": epsilons,
        "guarantee_delta": [0.0] * k,
        "rho": [math.nan] * k,
        "neighbouring": ["add_remove"] * k,
        "private": [True] * k,
        "guarantee_met": [True] * k,
        "status": ["ok"] * k,
    }
    return {key: np.asarray(value) for key, value in values.items()}


# ------------------------------------------------------------------ atomic files


def test_atomic_write_replaces_whole_files_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "file.txt"
    write_text_atomic(target, "one")
    write_text_atomic(target, "two")
    assert target.read_text() == "two"
    assert os.listdir(target.parent) == ["file.txt"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "run.json"
    write_json_atomic(target, {"a": 1})

    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(atomic_files.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        write_json_atomic(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 1}
    assert os.listdir(tmp_path) == ["run.json"]


def test_background_sync_writes_in_order_and_raises_the_first_error(tmp_path: Path) -> None:
    with BackgroundSync() as files:
        for i in range(20):
            files.write_bytes(tmp_path / f"{i:02d}", bytes([i]) * 1000)
    assert [p.read_bytes() for p in sorted(tmp_path.iterdir())] == [
        bytes([i]) * 1000 for i in range(20)
    ]
    (tmp_path / "taken").mkdir()  # os.replace onto a directory fails
    with pytest.raises(OSError), BackgroundSync() as files:
        files.write_bytes(tmp_path / "taken", b"x")
        files.write_bytes(tmp_path / "after", b"y")
    assert (tmp_path / "after").read_bytes() == b"y"  # later writes still complete
    assert not list(tmp_path.glob(".*.tmp"))


def test_config_hash_is_canonical() -> None:
    assert config_hash({"a": 1, "b": [0.1, "x"]}) == config_hash({"b": [0.1, "x"], "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 1.5})
    with pytest.raises(ValueError, match="not JSON compliant"):
        config_hash({"a": math.nan})


# ----------------------------------------------------------------- results dir


def test_open_results_dir(tmp_path: Path) -> None:
    numbers = {"seed": 1, "epsilons": [1.0]}
    digest = config_hash(numbers)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert open_results_dir(fresh, digest, numbers) is None
    (fresh / "run.log").write_text("hydra's log")  # Hydra writes this before the run starts
    assert open_results_dir(fresh, digest, numbers) is None
    write_json_atomic(fresh / "run.json", {"config_hash": digest, "numbers": numbers})
    assert open_results_dir(fresh, digest, numbers)["config_hash"] == digest
    other = {"seed": 2, "epsilons": [1.0]}
    with pytest.raises(ResultsDirError, match=r"differs in: seed\)"):
        open_results_dir(fresh, config_hash(other), other)
    (fresh / "run.json").write_text("{trunc")
    with pytest.raises(ResultsDirError, match=r"run\.json is unreadable"):
        open_results_dir(fresh, digest, numbers)
    (fresh / "run.json").write_text('{"numbers": [[1]]}')
    with pytest.raises(ResultsDirError, match=r"run\.json is unreadable .*config_hash"):
        open_results_dir(fresh, digest, numbers)


def test_unit_files_round_trip_and_assemble(tmp_path: Path) -> None:
    paths = [tmp_path / "units" / f"{i}.npz" for i in range(2)]
    kept = [np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3)]
    stored = {}
    for path, dataset, estimates in zip(paths, ["normal", "vertebral"], kept, strict=True):
        records = save_unit(path, unit_rows([0.5, 1.0], dataset), estimates, "abc", code="c")
        stored[path] = StoredUnit(records, estimates, "abc", "c")
    records, estimates = load_unit(paths[1], rows=2, trials=3, digest="abc")
    assert records.dtype.names == SUMMARY_COLUMNS
    np.testing.assert_array_equal(estimates, kept[1])
    summary = assemble(tmp_path, paths, rows_per_unit=2, trials=3, digest="abc")
    assert list(summary["dataset"]) == ["normal", "normal", "vertebral", "vertebral"]
    reread = read_summary(tmp_path)
    assert tuple(reread.columns) == SUMMARY_COLUMNS
    assert list(reread["subset"]) == [""] * 4 and reread["sd_abs_error"].isna().all()
    assert reread["private"].dtype == bool
    with np.load(tmp_path / "estimates.npz", allow_pickle=False) as arrays:
        np.testing.assert_array_equal(arrays["estimates"], np.concatenate(kept))
        assert list(arrays["dataset"]) == list(summary["dataset"])
    # what the workers returned is checked like the files and gives the same summary
    csv = (tmp_path / "summary.csv").read_bytes()
    assemble(tmp_path, paths, rows_per_unit=2, trials=3, digest="abc", stored=stored)
    assert (tmp_path / "summary.csv").read_bytes() == csv
    with pytest.raises(StaleUnitError):
        assemble(
            tmp_path,
            paths,
            rows_per_unit=2,
            trials=3,
            digest="abc",
            codes=["c", "d"],
            stored=stored,
        )
    with pytest.raises(ResultsDirError, match="does not match the plan"):
        load_unit(paths[0], rows=3, trials=None, digest="abc")
    with pytest.raises(ResultsDirError, match=r"0.npz belongs to another configuration"):
        load_unit(paths[0], rows=2, trials=None, digest="abd")
    content = paths[0].read_bytes()
    for broken in (b"garbage", content[: len(content) // 2], b""):
        paths[0].write_bytes(broken)
        with pytest.raises(ResultsDirError, match=r"0.npz is unreadable .*delete it and rerun"):
            load_unit(paths[0], rows=2, trials=None, digest="abc")


def test_git_state_outside_a_repository(tmp_path: Path) -> None:
    assert provenance.git_state(tmp_path) == {"commit": None, "dirty": None}


def test_package_versions_record_installed_peers_and_plugin_packages(monkeypatch) -> None:
    real_version = provenance.metadata.version
    installed = {name for name in provenance.PEER_PACKAGES if provenance._version(name)}
    versions = provenance.package_versions()
    assert set(versions) == {*provenance.PACKAGES, *installed}
    assert versions["numpy"] == np.__version__
    # a module a mechanism comes from adds the distribution that provides it, once
    with_plugins = provenance.package_versions(
        ["yaml.loader", "mechanisms.median.duff", "no_such_mod"]
    )
    assert with_plugins["PyYAML"] == real_version("PyYAML")
    assert set(with_plugins) == {*versions, "PyYAML"}

    def version(name: str) -> str:  # only the always-recorded packages are installed
        if name in provenance.PACKAGES:
            return real_version(name)
        raise provenance.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(provenance.metadata, "version", version)
    bare = provenance.package_versions(["yaml.loader"])
    assert set(bare) == set(provenance.PACKAGES)  # absent peers and plug-ins are not listed
    monkeypatch.setattr(provenance, "PACKAGES", ("numpy", "no-such-distribution"))
    assert provenance.package_versions() == {"numpy": np.__version__, "no-such-distribution": None}


# ----------------------------------------------------------------------- metrics


def test_error_metrics_by_hand() -> None:
    metrics = error_metrics(np.array([1.0, 2.0, 6.0]), 2.0)
    assert metrics["mean_abs_error"] == pytest.approx(5 / 3)
    assert metrics["sd_abs_error"] == pytest.approx(np.std([1.0, 0.0, 4.0], ddof=1))
    assert metrics["rmse"] == pytest.approx(math.sqrt(17 / 3))
    assert metrics["mean_error"] == pytest.approx(1.0)
    assert math.isnan(error_metrics(np.array([1.0]), 0.0)["sd_abs_error"])


def test_error_metrics_are_numpys_mean_and_std_bit_for_bit() -> None:
    """The metrics written out as sums equal numpy's mean / std(ddof=1) exactly, so results
    computed before and after agree bit for bit (Cauchy-tailed errors at many scales)."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        size = int(rng.integers(1, 300))
        estimates = rng.standard_cauchy(size) * 10.0 ** rng.integers(-8, 9)
        truth = float(rng.normal())
        metrics = error_metrics(estimates, truth)
        errors = estimates - truth
        absolute = np.abs(errors)
        assert metrics["mean_abs_error"] == float(absolute.mean())
        assert metrics["rmse"] == float(np.sqrt(np.mean(errors * errors)))
        assert metrics["mean_error"] == float(errors.mean())
        if size > 1:
            assert metrics["sd_abs_error"] == float(absolute.std(ddof=1))


@pytest.mark.parametrize(
    ("estimates", "clipped", "message"),
    [
        (np.array([0.1, 0.2, 0.3]), True, None),
        (np.array([0.0, 1.0, 0.5]), True, None),
        ([0.1, 0.2, 0.3], True, "sample returned list, not a numpy array"),
        (np.array([0.1, 0.2]), True, r"shape \(2,\), expected \(3,\)"),
        (np.ones((3, 1)) / 2, True, r"shape \(3, 1\)"),
        (np.array([0, 1, 1]), True, "dtype int64, expected a float dtype"),
        (np.array([0.1, np.nan, np.inf]), False, "2 of 3 estimates are NaN or infinite"),
        (np.array([0.1, 1.5, -0.1]), True, r"2 of 3 estimates are outside \[0, 1\]"),
        (np.array([0.1, 1.5, -0.1]), False, None),  # a release that does not clip
    ],
)
def test_estimates_problem(estimates, clipped, message) -> None:
    problem = estimates_problem(estimates, 3, 0.0, 1.0, clipped=clipped)
    if message is None:
        assert problem is None
    else:
        assert problem is not None and re.search(message, problem)
