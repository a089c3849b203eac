"""A dataset and a mechanism defined outside the package, each one class + one YAML."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import PROJECT_ROOT

from experiments.data.datasets import DatasetError, build_datasets
from experiments.harness.results import RUN_FILE, read_summary

EXAMPLE_DIR = PROJECT_ROOT / "examples" / "plugin"


def test_the_example_dataset_draws_what_it_says(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_DIR))
    entry = {
        "name": "contaminated",
        "_target_": "contaminated.Contaminated",
        "options": {"fraction": 0.25, "shift": 5.0, "bounds": [-10, 10]},
    }
    (dataset,) = build_datasets(entry, n=40000, replicates=2)
    x = dataset.data(seed=1, replicate=0)
    assert dataset.size == 40000 and dataset.bounds == (-10.0, 10.0)
    assert abs(np.mean(x > 4) - 0.25) < 0.01  # the contaminating cluster
    np.testing.assert_array_equal(x, dataset.data(seed=1, replicate=0))
    assert not np.array_equal(x, dataset.data(seed=1, replicate=1))
    assert dataset.describe() == {
        "class": "contaminated.Contaminated",
        "replicates": 2,
        "bounds": [-10.0, 10.0],
        "n": 40000,
        "fraction": 0.25,
        "shift": 5.0,
    }
    with pytest.raises(DatasetError, match=r"bad options .*'fractoin'"):
        build_datasets({**entry, "options": {"fractoin": 0.1, "bounds": [0, 1]}}, n=5, replicates=1)


def test_plugins_run_from_their_own_config_directory(tmp_path: Path) -> None:
    """``--config-dir`` adds the user's YAML files; names resolve there first."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE_DIR), str(PROJECT_ROOT)])}
    command = [sys.executable, "-m", "experiments.run", "--config-dir", str(EXAMPLE_DIR / "conf")]
    command += ["experiment=smoke", "n_jobs=1", "datasets=[contaminated,normal]"]
    command += ["mechanisms=[duff,binned_rr]", f"results_dir={tmp_path / 'out'}"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = read_summary(tmp_path / "out")
    assert set(summary["dataset"]) == {"contaminated", "normal"}
    assert set(summary["mechanism"]) == {"duff", "binned_rr"}
    assert (summary["status"] == "ok").all()
    manifest = json.loads((tmp_path / "out" / RUN_FILE).read_text())
    assert manifest["numbers"]["datasets"][0]["class"] == "contaminated.Contaminated"
