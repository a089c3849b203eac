"""The package installs (not editable) and runs from any directory, with no build warnings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``pip install --no-deps --target`` of the project (its dependencies come from this
    environment), and what pip printed."""
    target = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip, "--no-cache-dir", "--target", str(target), str(PROJECT_ROOT)],
        capture_output=True,
        text=True,
        check=True,
    )
    return target, done.stdout + done.stderr


def run_installed(target: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(target)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_install_prints_no_warning_about_the_project(installed) -> None:
    _, output = installed
    project_lines = [line for line in output.splitlines() if "WARNING: Location" not in line]
    assert not [line for line in project_lines if "arning" in line], output


def test_an_installed_duff_run_finds_its_configs_from_any_directory(installed, tmp_path) -> None:
    target, _ = installed
    where = run_installed(target, tmp_path, "-c", "import experiments; print(experiments.__file__)")
    assert where.stdout.strip() == str(target / "experiments" / "__init__.py")
    assert (target / "experiments" / "conf" / "mechanism" / "duff.yaml").is_file()
    assert (target / "duff_bench-0.1.0.dist-info" / "licenses" / "LICENSE").is_file()
    done = run_installed(
        target, tmp_path, "-m", "experiments.run", "experiment=smoke", "n_jobs=1", "results_dir=out"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "out" / "summary.csv").is_file()


def test_an_installed_duff_regress_finds_its_baseline(installed, tmp_path) -> None:
    """The gate's baseline ships with the package: ``duff-regress`` checks a candidate from
    any directory (here a deliberately incomplete one, refused with exit status 2)."""
    target, _ = installed
    assert (target / "experiments" / "baselines" / "regression.csv").is_file()
    code = "from experiments.baseline import BASELINE; print(BASELINE)"
    where = run_installed(target, tmp_path, "-c", code)
    assert where.stdout.strip() == str(target / "experiments" / "baselines" / "regression.csv")
    (tmp_path / "empty").mkdir()
    done = run_installed(target, tmp_path, "-m", "experiments.regress", "--candidate", "empty")
    assert done.returncode == 2 and "empty" in done.stderr, done.stderr
