"""Unit files record the code that computed them; a resumed run recomputes other code's
units (issue 26, finding 1).

Before, ``duff-regress --results-dir D`` with ``D`` filled before a mechanism's noise
scale was doubled reported PASSED: every unit counted as finished and nothing was
recomputed.  Here the code change is an edit of a plug-in's source file (the test cannot
edit the package's own files): the doubled scale is seen, by ``duff-run`` and by the gate.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import tiny_overrides

from experiments import regress
from experiments.harness import code_identity
from experiments.harness.plan import build_plan
from experiments.harness.results import (
    RUN_FILE,
    ResultsDirError,
    StaleUnitError,
    load_unit,
    read_summary,
)
from experiments.run import run

PLUGIN = '''
"""A Laplace median mechanism whose noise scale is SCALE · (b − a)/ε (written by a test)."""
import numpy as np
from harness_mechanisms import ClippedNoiseRelease
from mechanisms import Guarantee, Mechanism, Neighbouring, Release, register

SCALE = {scale}


@register
class Scaled(Mechanism):
    name = "{name}"

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="Laplace")

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        scale = SCALE * (upper - lower) / self.epsilon
        return ClippedNoiseRelease(sorted_x, lower, upper, scale, "laplace", False)
'''


class Plugin:
    """A plug-in module written to ``directory`` (on the path), whose scale can be edited."""

    def __init__(self, directory: Path) -> None:
        self.module = f"scaled_{secrets.token_hex(4)}"
        self.path = directory / f"{self.module}.py"
        self.write("1.0")

    def write(self, scale: str) -> None:
        name = f"harness_{self.module}"
        self.path.write_text(PLUGIN.format(scale=scale, name=name), encoding="utf-8")

    @property
    def entry(self) -> dict:
        return {"label": "scaled", "_target_": f"{self.module}.Scaled"}


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    directory = tmp_path / "plugins"
    directory.mkdir()
    monkeypatch.syspath_prepend(str(directory))  # the workers inherit the path
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    made = Plugin(directory)
    yield made
    sys.modules.pop(made.module, None)


def unit_codes(results: Path) -> set[str]:
    codes = set()
    for path in (results / "units").rglob("*.npz"):
        with np.load(path) as stored:
            codes.add(str(stored["code"]))
    return codes


def test_a_resumed_run_recomputes_the_units_of_other_code(compose_config, plugin, tmp_path):
    cfg = compose_config(tiny_overrides(n_jobs=2), [plugin.entry])
    results = run(cfg, results_dir=tmp_path / "out")
    before = read_summary(results)
    (old_code,) = unit_codes(results)
    run(cfg, results_dir=results)  # the same code: nothing to do
    manifest = json.loads((results / RUN_FILE).read_text())
    assert manifest["invocations"][-1]["units_computed"] == 0
    assert manifest["code"]["stale_units"] == 0

    plugin.write("2.00")  # the noise scale doubled
    run(cfg, results_dir=results)
    manifest = json.loads((results / RUN_FILE).read_text())
    # Before: 0 units computed, the old numbers kept beside the new code.
    assert manifest["invocations"][-1]["units_computed"] == 4  # 2 datasets × 2 replicates
    assert manifest["code"]["stale_units"] == 4
    (new_code,) = unit_codes(results)
    assert new_code != old_code
    after = read_summary(results)
    # Unclipped Laplace noise with the same draws: every error exactly doubles.
    np.testing.assert_allclose(after["mean_abs_error"], 2 * before["mean_abs_error"], rtol=1e-12)


def test_a_unit_file_of_an_older_harness_is_recomputed(compose_config, plugin, tmp_path):
    cfg = compose_config(tiny_overrides(), [plugin.entry])
    results = run(cfg, results_dir=tmp_path / "out")
    unit = sorted((results / "units").rglob("*.npz"))[0]
    with np.load(unit) as stored:
        arrays = {key: stored[key] for key in stored.files if key != "code"}
    np.savez(unit, **arrays)  # as the harness wrote it before it recorded its code
    run(cfg, results_dir=results)
    manifest = json.loads((results / RUN_FILE).read_text())
    assert manifest["invocations"][-1]["units_computed"] == 1
    assert len(unit_codes(results)) == 1


def test_a_unit_of_other_code_is_refused_by_name(compose_config, plugin, tmp_path) -> None:
    cfg = compose_config(tiny_overrides(), [plugin.entry])
    results = run(cfg, results_dir=tmp_path / "out")
    unit = sorted((results / "units").rglob("*.npz"))[0]
    digest = build_plan(cfg).config_hash
    load_unit(unit, rows=2, trials=None, digest=digest)  # without a code: not checked
    with pytest.raises(StaleUnitError, match=r"computed by other code .*rerun the same command"):
        load_unit(unit, rows=2, trials=None, digest=digest, code="0123456789abcdef")
    assert issubclass(StaleUnitError, ResultsDirError)


def test_the_identity_covers_the_code_a_unit_runs_and_no_other(compose_config, plugin) -> None:
    plan = build_plan(compose_config(tiny_overrides(), [plugin.entry, "duff", "laplace_ln_public"]))
    by_label = {u.mechanism.label: code_identity.unit_identity(u) for u in plan.units()}
    assert len(set(by_label.values())) == 3
    duff = next(u for u in plan.units() if u.mechanism.label == "duff")
    modules = code_identity._closure(
        [*code_identity.HARNESS_ROOTS, "mechanisms.median.duff", "mechanisms.statistics"]
    )
    assert "mechanisms.median.duff" in modules and "experiments.harness.metrics" in modules
    assert "mechanisms.median.smooth_cauchy" in modules  # named in Duff's error bounds' code
    for other in ("mechanisms.median.laplace_ln", "mechanisms.mode.count_em", "mechanisms.peers"):
        assert other not in modules  # other mechanisms' files
    assert code_identity.isolation_group(duff) == ()
    # a mechanism named in the entry's options (an interval's estimator) counts too
    from experiments.data.datasets import SyntheticDataset
    from mechanisms.intervals.subsample_aggregate import SubsampleAggregate
    from mechanisms.statistics import MedianInterval

    classes = (SubsampleAggregate, "median_interval", MedianInterval, SyntheticDataset)
    assert code_identity._group(*classes, ("laplace_ln",)) != code_identity._group(*classes, ())
    plugin.write("3.0")
    code_identity.forget()
    again = {u.mechanism.label: code_identity.unit_identity(u) for u in plan.units()}
    assert again["duff"] == by_label["duff"]
    assert again["laplace_ln_public"] == by_label["laplace_ln_public"]
    assert again["scaled"] != by_label["scaled"]


def test_duff_regress_never_compares_a_results_dir_of_older_code(plugin, tmp_path, capsys):
    conf = tmp_path / "conf"
    (conf / "mechanism").mkdir(parents=True)
    (conf / "mechanism" / "scaled.yaml").write_text(f"_target_: {plugin.module}.Scaled\n")
    sweep = [
        "mechanisms=[scaled]",
        "statistics=[median]",
        "datasets=[normal]",
        "n=41",
        "replicates=20",
        "trials=20",
        "epsilons=[1.0]",
    ]
    baseline, kept = tmp_path / "baseline.csv", tmp_path / "kept"
    common = ["--baseline", str(baseline), "--config-dir", str(conf), "--n-jobs", "1"]
    assert regress.main(["--update", *common, "--results-dir", str(kept), *sweep]) == 0
    assert regress.main([*common, "--results-dir", str(kept), *sweep]) == 0
    assert "regression gate PASSED: all 1 cells" in capsys.readouterr().out

    plugin.write("2.00")  # a bad change: twice the noise
    # Before: PASSED, "1/1 cells identical" (the old unit files counted as finished).
    assert regress.main([*common, "--results-dir", str(kept), *sweep]) == 1
    out = capsys.readouterr().out
    assert "regression gate FAILED: 1 of 1 cells (1 worse" in out


def test_the_identity_is_the_same_for_a_copy_installed_elsewhere(tmp_path) -> None:
    """An installed wheel holds the same source files in site-packages (no git there): the
    identity depends on the files' contents and their paths inside the packages only."""
    roots = ("mechanisms.median.duff", "mechanisms.statistics", "experiments.data.datasets")
    code_identity.forget()
    here = code_identity._identity(roots, ())
    root = Path(code_identity.__file__).resolve().parents[2]
    site = tmp_path / "site-packages"
    shutil.copytree(root / "mechanisms", site / "mechanisms")
    for package in ("base", "data", "harness"):
        shutil.copytree(root / "experiments" / package, site / "experiments" / package)
    (site / "experiments" / "__init__.py").write_text("")
    script = (
        "from experiments.harness import code_identity as c; "
        f"print(c.__file__); print(c._identity({roots!r}, ()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    where, identity = done.stdout.split()
    assert where.startswith(str(site))
    assert identity == here


def test_a_plugin_package_counts_the_modules_the_plugin_imports(tmp_path, monkeypatch) -> None:
    package = f"plugpkg_{secrets.token_hex(4)}"
    root = tmp_path / package
    (root / "sub").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "mech.py").write_text("from ..helper import SCALE\nfrom . import shared\n")
    (root / "sub" / "shared.py").write_text("X = 1\n")
    (root / "helper.py").write_text("SCALE = 1.0\n")
    (root / "unrelated.py").write_text("Y = 1\n")
    code_identity.forget()
    files, _ = code_identity._plugin_source(f"{package}.sub.mech")
    names = {name for name, _ in files}
    expected = {"", ".sub", ".sub.mech", ".sub.shared", ".helper"}
    assert names == {package + suffix for suffix in expected}  # not .unrelated

    def identity() -> str:
        code_identity.forget()
        return code_identity._identity((), (f"{package}.sub.mech",))

    before = identity()
    (root / "unrelated.py").write_text("Y = 2\n")
    assert identity() == before
    (root / "helper.py").write_text("SCALE = 2.0\n")
    assert identity() != before
