"""The package installs (not editable) and runs from any directory, with no build warnings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from filelock import FileLock
from harness_mechanisms import PROJECT_ROOT

from experiments.gate.baseline import read_baseline


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``pip install --no-deps --target`` of the project (its dependencies come from this
    environment), and what pip printed."""
    target = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
    # One build at a time: under pytest-xdist each worker installs, and setuptools
    # builds in the source tree's build/ directory.
    with FileLock(tmp_path_factory.getbasetemp().parent / "pip-install.lock"):
        done = subprocess.run(
            [*pip, "--no-cache-dir", "--target", str(target), str(PROJECT_ROOT)],
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
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
    code = "from experiments.gate.baseline import BASELINE; print(BASELINE)"
    where = run_installed(target, tmp_path, "-c", code)
    assert where.stdout.strip() == str(target / "experiments" / "baselines" / "regression.csv")
    (tmp_path / "empty").mkdir()
    done = run_installed(target, tmp_path, "-m", "experiments.regress", "--candidate", "empty")
    assert done.returncode == 2 and "empty" in done.stderr, done.stderr


# ------------------------------------------------------------------ a newcomer's plug-ins

NEWCOMER_FILES = {
    "newcomer_data.py": '''
        """A dataset of my own: Student's t with ``df`` degrees of freedom (heavy tails)."""
        from dataclasses import dataclass

        from experiments.data.datasets import Dataset


        @dataclass(frozen=True)
        class HeavyTails(Dataset):
            n: int = 100
            df: float = 3.0

            def data(self, seed, replicate):
                return self.rng(seed, replicate).standard_t(self.df, self.n)
        ''',
    "newcomer_mechanism.py": '''
        """A mechanism of my own: the midpoint of [a, b] with probability 1/2, else uniform
        on [a, b]; it ignores the data, so it is ε-DP for every ε."""
        import numpy as np

        from mechanisms import Guarantee, Mechanism, Neighbouring, Release
        from mechanisms.core.data import lower_median
        from mechanisms.core.validation import check_rng, check_size


        class HalfMidpointRelease(Release):
            def __init__(self, sorted_x, lower, upper):
                self.lower, self.upper, self.n = lower, upper, sorted_x.size
                self.true_value = lower_median(sorted_x, lower)

            def sample(self, size, rng):
                size, rng = check_size(size), check_rng(rng)
                uniform = self.lower + (self.upper - self.lower) * rng.random(size)
                return np.where(rng.random(size) < 0.5, (self.lower + self.upper) / 2, uniform)

            def cdf(self, x):
                x = np.asarray(x, dtype=float)
                uniform = np.clip((x - self.lower) / (self.upper - self.lower), 0.0, 1.0)
                return 0.5 * uniform + 0.5 * (x >= (self.lower + self.upper) / 2)


        class HalfMidpoint(Mechanism):
            name = "half_midpoint"
            display_name = "Half midpoint (ignores the data)"

            @property
            def guarantee(self):
                return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="no data")

            def _release(self, sorted_x, lower, upper):
                return HalfMidpointRelease(sorted_x, lower, upper)
        ''',
    "conf/dataset/heavy_tails.yaml": """
        # Student's t, 3 degrees of freedom (newcomer_data.py)
        _target_: newcomer_data.HeavyTails
        options: {df: 3.0, bounds: [-10.0, 10.0]}
        """,
    "conf/mechanism/half_midpoint.yaml": """
        label: half_midpoint
        _target_: newcomer_mechanism.HalfMidpoint
        """,
}
SWEEP = ["datasets=[heavy_tails,normal]", "mechanisms=[duff,half_midpoint]", "replicates=4"]
SWEEP += ["trials=20", "epsilons=[0.5,2.0]", "n=101", "statistics=[median]"]


def test_a_newcomers_dataset_and_mechanism_run_plot_and_gate(installed, tmp_path) -> None:
    """One class + one YAML each, outside the package, as the README says; then, from
    that directory and with the installed (not editable) package: a sweep (duff-run
    --config-dir), its figure (duff-plot figure1), and a gate of its own (duff-regress
    --config-dir --update, then a check that passes)."""
    target, _ = installed
    for name, text in NEWCOMER_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(tmp_path)])}

    def command(script: str, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(target / "bin" / script), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, (script, done.stdout[-2000:], done.stderr[-3000:])
        return done

    command("duff-run", "--config-dir", "conf", "experiment=smoke", *SWEEP, "results_dir=run")
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["numbers"]["datasets"][0]["class"] == "newcomer_data.HeavyTails"

    command("duff-plot", "figure1", "run")
    assert (tmp_path / "run" / "figure1.png").stat().st_size > 0
    ratios = (tmp_path / "run" / "figure1_ratios.md").read_text(encoding="utf-8")
    assert "**heavy_tails**" in ratios and "Half midpoint (ignores the data)" in ratios

    gate = ["--config-dir", "conf", "--baseline", "mine.csv", "--n-jobs", "1", *SWEEP]
    command("duff-regress", "--update", *gate)
    cells = read_baseline(tmp_path / "mine.csv").index
    mechanisms = cells.get_level_values("mechanism")
    assert set(zip(cells.get_level_values("dataset"), mechanisms, strict=True)) == {
        (dataset, mechanism)
        for dataset in ("heavy_tails", "normal")
        for mechanism in ("duff", "half_midpoint")
    }
    assert len(cells) == 2 * 2 * 2  # datasets × mechanisms × ε
    done = command("duff-regress", *gate)
    assert "8/8 cells identical to the baseline" in done.stdout
