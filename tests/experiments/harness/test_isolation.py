"""A plug-in cannot reach the built-in mechanisms' units (issue 26, finding 4).

Units of different mechanisms used to share worker processes: a plug-in that patched
``Duff`` in its worker (``duff_patch_plugin``) made Duff's rows read error 0 with status
ok.  The built-in units now run in worker processes no plug-in was imported into
(:mod:`experiments.harness.execute`), so Duff's rows are those of a sweep without the
plug-in, bit for bit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from harness_mechanisms import tiny_overrides

from experiments.harness import code_identity
from experiments.harness.plan import build_plan
from experiments.harness.results import read_summary
from experiments.run import run
from mechanisms.median.duff import Duff

HERE = Path(__file__).resolve().parent
PATCHER = {"label": "patcher", "_target_": "duff_patch_plugin.DuffPatcher"}
DUFF = {"label": "duff", "name": "duff"}
NUMBERS = ["mean_abs_error", "rmse", "mean_error", "mean_rank_error", "answer_rate", "status"]


@pytest.fixture
def patcher(monkeypatch: pytest.MonkeyPatch):
    """This directory on the path (workers inherit it), and Duff restored afterwards (the
    plug-in also patches the test process when the plan imports it)."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setattr(Duff, "release", Duff.release)
    yield
    module = sys.modules.pop("duff_patch_plugin", None)
    if module is not None:
        module.restore()


def duff_rows(results: Path) -> pd.DataFrame:
    summary = read_summary(results)
    rows = summary[summary["mechanism"] == "duff"].set_index(["dataset", "replicate", "epsilon"])
    return rows[NUMBERS]


def test_a_plugin_that_patches_duff_leaves_duffs_rows_untouched(
    compose_config, tmp_path, patcher
) -> None:
    overrides = tiny_overrides(replicates=3, n_jobs=1)  # one worker: every unit shares it
    clean = duff_rows(run(compose_config(overrides, [DUFF]), results_dir=tmp_path / "clean"))
    assert (clean["status"] == "ok").all() and (clean["mean_abs_error"] > 0).all()

    cfg = compose_config(overrides, [DUFF, PATCHER])
    plan = build_plan(cfg)  # imports the plug-in: the test process's Duff is patched too
    assert Duff.release.__module__ == "duff_patch_plugin"
    groups = {code_identity.isolation_group(unit) for unit in plan.units()}
    assert groups == {(), ("duff_patch_plugin",)}  # built-ins apart from the plug-in
    results = run(cfg, results_dir=tmp_path / "hostile")
    summary = read_summary(results)
    assert (summary.loc[summary["mechanism"] == "patcher", "status"] == "ok").all()
    # Before: Duff's rows read error 0 with status ok (the plug-in's patch in the shared
    # worker).  Now they are the clean sweep's, bit for bit.
    pd.testing.assert_frame_equal(duff_rows(results), clean)


def test_every_sweep_of_builtins_is_one_group(compose_config) -> None:
    plan = build_plan(compose_config(tiny_overrides(), [DUFF, "quantile_em", "smooth_cauchy"]))
    assert {code_identity.isolation_group(unit) for unit in plan.units()} == {()}
