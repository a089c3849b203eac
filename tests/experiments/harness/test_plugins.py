"""Mechanisms defined outside the package: `_target_`, `plugins`, workers, broken plug-ins."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import LAPLACE, PROJECT_ROOT, tiny_overrides
from joblib.externals.loky import get_reusable_executor
from omegaconf import OmegaConf
from scipy import stats

import mechanisms
from experiments.harness.plan import ConfigError, build_plan, mechanism_entry
from experiments.harness.results import RUN_FILE, read_summary
from experiments.reports import cli
from experiments.run import run

EXAMPLE_DIR = PROJECT_ROOT / "examples" / "plugin"

# A user's module: a ε-DP mechanism that does NOT register itself (found by `_target_`).
USER_MODULE = '''
import numpy as np
from mechanisms import Guarantee, Mechanism, Neighbouring, Release
from mechanisms.core.data import lower_median
from mechanisms.core.validation import check_rng, check_size


class UniformRelease(Release):
    """Output uniform on [a, b] (ignores the data): 0-DP, hence ε-DP for every ε."""

    def __init__(self, sorted_x, lower, upper):
        self.lower, self.upper, self.n = lower, upper, sorted_x.size
        self.true_value = lower_median(sorted_x, lower)

    def sample(self, size, rng):
        size, rng = check_size(size), check_rng(rng)
        return self.lower + (self.upper - self.lower) * rng.random(size)

    def cdf(self, x):
        return np.clip((np.asarray(x, float) - self.lower) / (self.upper - self.lower), 0, 1)


class Uniform(Mechanism):
    name = "user_uniform"
    display_name = "Uniform on [a, b] (ignores the data)"

    @property
    def guarantee(self):
        return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="data-independent")

    def _release(self, sorted_x, lower, upper):
        return UniformRelease(sorted_x, lower, upper)
'''

# Self-registering broken mechanisms (imported through `plugins: [module]`).
BROKEN_MODULE = """
import numpy as np
from mechanisms import Guarantee, Mechanism, Neighbouring, Release, register
from mechanisms.core.data import lower_median


class BrokenRelease(Release):
    def __init__(self, sorted_x, lower, upper, fault):
        self.lower, self.upper, self.n = lower, upper, sorted_x.size
        self.true_value = lower_median(sorted_x, lower)
        self.fault = fault

    def sample(self, size, rng):
        good = self.lower + (self.upper - self.lower) * rng.random(size)
        if self.fault == "shape":
            return good[: size - 1]
        if self.fault == "nan":
            return np.where(np.arange(size) % 2 == 0, np.nan, good)
        if self.fault == "outside":  # claims to clip to [a, b], does not
            return good + (self.upper - self.lower)
        return good

    def cdf(self, x):
        if self.fault == "cdf":
            raise ZeroDivisionError("cdf is broken")
        return np.clip((np.asarray(x, float) - self.lower) / (self.upper - self.lower), 0, 1)


def broken(fault):
    class Broken(Mechanism):
        name = f"broken_{fault}"

        @property
        def guarantee(self):
            return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="test")

        def _release(self, sorted_x, lower, upper):
            if fault == "raises":
                raise RuntimeError("release exploded")
            return BrokenRelease(sorted_x, lower, upper, fault)

    Broken.__qualname__ = Broken.__name__ = f"Broken_{fault}"
    return register(Broken)


for _fault in ("shape", "nan", "outside", "raises", "cdf"):
    globals()[f"Broken_{_fault}"] = broken(_fault)
"""


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path and PYTHONPATH (for worker processes) holding user modules.

    Worker processes get sys.path when they start, so the loky pool that earlier
    tests of this process left running (started before the directory existed) is
    shut down first, as if the sweep ran in a fresh process like ``duff-run``.
    """
    directory = tmp_path / "user_code"
    directory.mkdir()
    (directory / "user_plugin_uniform.py").write_text(textwrap.dedent(USER_MODULE))
    (directory / "user_plugin_broken.py").write_text(textwrap.dedent(BROKEN_MODULE))
    monkeypatch.syspath_prepend(str(directory))
    paths = [str(directory), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    get_reusable_executor().shutdown(wait=True)
    return directory


def test_target_plugin_runs_in_a_parallel_sweep(plugin_dir, compose_config, tmp_path) -> None:
    """A class named by `_target_` (not self-registering) runs in loky workers like a built-in."""
    target = {"label": "mine", "_target_": "user_plugin_uniform.Uniform"}
    cfg = compose_config(tiny_overrides(n_jobs=2), [target, LAPLACE])
    results = run(cfg, results_dir=tmp_path / "out", n_jobs=2)
    summary = read_summary(results)
    rows = summary[summary["mechanism"] == "mine"]
    assert len(rows) == 2 * 2 * 2  # datasets × replicates × ε
    assert (rows["status"] == "ok").all()
    assert (rows["registry_name"] == "user_uniform").all()
    assert np.isfinite(rows["mean_abs_error"]).all() and (rows["seconds"] > 0).all()
    # uniform on [0, 1] misses a median near 1/2 by about 1/4; on [-10, 10] by about 5
    beta = rows[rows["dataset"] == "beta"]
    assert 0.1 < beta["mean_abs_error"].mean() < 0.45
    manifest = json.loads((results / RUN_FILE).read_text())
    (entry,) = [m for m in manifest["mechanisms"] if m["label"] == "mine"]
    assert entry["target"] == "user_plugin_uniform.Uniform"
    assert entry["module"] == "user_plugin_uniform"
    assert mechanisms.get("user_uniform").__module__ == "user_plugin_uniform"


def test_broken_plugins_are_reported_and_the_sweep_completes(
    plugin_dir, compose_config, tmp_path
) -> None:
    labels = ["shape", "nan", "outside", "raises"]
    entries = [{"label": f"b_{fault}", "name": f"broken_{fault}"} for fault in labels]
    cfg = compose_config(
        tiny_overrides(n_jobs=2, plugins="[user_plugin_broken]"), [*entries, LAPLACE]
    )
    results = run(cfg, results_dir=tmp_path / "out", n_jobs=2)
    summary = read_summary(results)
    status = summary.groupby("mechanism")["status"].unique().to_dict()
    assert list(status["lap"]) == ["ok"]
    expected = {
        "b_shape": "sample returned shape (6,), expected (7,)",
        "b_nan": "4 of 7 estimates are NaN or infinite",
        "b_outside": "estimates are outside [",
        "b_raises": "RuntimeError: release exploded",
    }
    for label, message in expected.items():
        assert all(message in text for text in status[label]), (label, status[label])
        assert summary.loc[summary["mechanism"] == label, "mean_abs_error"].isna().all()
    manifest = json.loads((results / RUN_FILE).read_text())
    failed = {f["mechanism"]: f["rows"] for f in manifest["failures"]}
    assert failed == dict.fromkeys(expected, 8)
    assert manifest["failed_rows"] == 4 * 8 and manifest["rows"] == 5 * 8


def test_a_failing_cdf_is_reported(plugin_dir, compose_config, tmp_path) -> None:
    cfg = compose_config(
        tiny_overrides(plugins="[user_plugin_broken]"),
        [{"label": "c", "name": "broken_cdf"}, LAPLACE],
    )
    results = run(cfg, results_dir=tmp_path / "out")
    summary = read_summary(results)
    status = summary.groupby("mechanism")["status"].unique().to_dict()
    assert list(status["lap"]) == ["ok"]
    assert list(status["c"]) == ["broken_cdf: cdf raised ZeroDivisionError: cdf is broken"]
    assert summary.loc[summary["mechanism"] == "c", "mean_abs_error"].isna().all()
    manifest = json.loads((results / RUN_FILE).read_text())
    assert {f["mechanism"]: f["rows"] for f in manifest["failures"]} == {"c": 8}


# ------------------------------------------------------------------ `_target_` checks


def test_target_and_name_must_agree(plugin_dir) -> None:
    entry = mechanism_entry({"label": "u", "_target_": "user_plugin_uniform.Uniform"})
    assert (entry.name, entry.target, entry.module) == (
        "user_uniform",
        "user_plugin_uniform.Uniform",
        "user_plugin_uniform",
    )
    assert entry.describe()["target"] == "user_plugin_uniform.Uniform"
    same = mechanism_entry(
        {"label": "u", "name": "user_uniform", "_target_": "user_plugin_uniform.Uniform"}
    )
    assert same.name == "user_uniform"
    with pytest.raises(ConfigError, match="name 'duff' differs from the name 'user_uniform'"):
        mechanism_entry({"label": "u", "name": "duff", "_target_": "user_plugin_uniform.Uniform"})


def test_entries_without_target_keep_their_hash_fields() -> None:
    assert "target" not in mechanism_entry({"label": "d", "name": "duff"}).describe()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("NoDots", "must be 'package.module.ClassName'"),
        ("no_such_module_anywhere.Thing", "cannot import 'no_such_module_anywhere'"),
        ("user_plugin_uniform.Missing", "'user_plugin_uniform' has no 'Missing'"),
        ("user_plugin_uniform.UniformRelease", "is not a subclass of Mechanism"),
        ("numpy.ndarray", "is not a subclass of Mechanism"),
        ("mechanisms.Mechanism", "does not implement _release"),
    ],
)
def test_bad_targets_are_config_errors(plugin_dir, target: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        mechanism_entry({"label": "x", "_target_": target})


def test_a_target_whose_name_is_taken_is_a_config_error(plugin_dir) -> None:
    (plugin_dir / "user_plugin_clash.py").write_text(
        "from mechanisms.median.duff import Duff\n\nclass Impostor(Duff):\n    name = 'duff'\n"
    )
    with pytest.raises(ConfigError, match="'duff' is already registered by Duff"):
        mechanism_entry({"label": "x", "_target_": "user_plugin_clash.Impostor"})


# ------------------------------------------------------------------ the README example


def test_the_example_plugin_runs_from_its_yaml(monkeypatch, compose_config, tmp_path) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_DIR))
    entry = OmegaConf.to_container(OmegaConf.load(EXAMPLE_DIR / "conf/mechanism/binned_rr.yaml"))
    cfg = compose_config(tiny_overrides(), [entry])
    assert build_plan(cfg).mechanisms[0].name == "binned_rr"
    summary = read_summary(run(cfg, results_dir=tmp_path / "out"))
    assert (summary["status"] == "ok").all() and len(summary) == 8


def test_the_example_plugin_is_what_it_claims(monkeypatch) -> None:
    """Samples follow the cdf; the bin probabilities of two datasets differ by at most e^ε."""
    monkeypatch.syspath_prepend(str(EXAMPLE_DIR))
    from binned_rr import BinnedRR

    epsilon, bins = 0.7, 5
    mechanism = BinnedRR(epsilon=epsilon, bins=bins)
    data = np.array([0.05, 0.1, 0.5, 0.52, 0.6])  # lower median 0.5: bin 2
    release = mechanism.release(data, (0.0, 1.0))
    sample = release.sample(4000, np.random.default_rng(7))
    assert ((sample >= 0) & (sample <= 1)).all()
    assert stats.kstest(sample, release.cdf).pvalue > 1e-3
    edges = np.linspace(0, 1, bins + 1)
    neighbour = mechanism.release(data[:-1], (0.0, 1.0))  # lower median 0.1: bin 0
    mass = np.diff(release.cdf(edges))
    mass_neighbour = np.diff(neighbour.cdf(edges))
    np.testing.assert_allclose(mass.sum(), 1.0, rtol=1e-12)
    ratio = np.max(np.abs(np.log(mass) - np.log(mass_neighbour)))
    assert ratio == pytest.approx(epsilon, rel=1e-12)
    assert release.cdf(-1.0) == 0.0 and release.cdf(1.0) == 1.0
    assert np.isnan(release.cdf([np.nan, 0.5])[0])  # NaN in, NaN out, no warning


def test_a_plugin_gets_figure_rows_and_regression_cells(plugin_dir, tmp_path, capsys) -> None:
    """A `_target_` plug-in in the gate's sweep (Hydra overrides, own baseline) and in Figure 1."""
    from experiments import regress

    sweep = [
        "mechanisms=[duff,{label:mine,_target_:user_plugin_uniform.Uniform}]",
        "statistics=[median]",  # the gate's sweep adds a quantile, which Uniform does not estimate
        "datasets=[normal,uniform,beta]",
        "replicates=20",
        "trials=10",
        "epsilons=[0.5,2.0]",
    ]
    baseline, results = tmp_path / "mine.csv", tmp_path / "run"
    options = ["--baseline", str(baseline), "--n-jobs", "1"]
    assert regress.main([*options, "--update", "--results-dir", str(results), *sweep]) == 0
    cells = regress.read_baseline(baseline)
    assert set(cells.index.get_level_values("mechanism")) == {"duff", "mine"}
    assert len(cells) == 3 * 2 * 2  # datasets × mechanisms × ε
    capsys.readouterr()
    assert regress.main([*options, *sweep]) == 0
    assert "12/12 cells identical to the baseline" in capsys.readouterr().out
    # another sweep is refused against this baseline, not compared cell by cell
    assert regress.main([*options, *sweep[:-1], "epsilons=[0.5]"]) == 2

    assert cli.main(["figure1", str(results)]) == 0
    ratios = (results / "figure1_ratios.md").read_text()
    assert (results / "figure1.png").stat().st_size > 0
    # the figure and its tables name the plug-in as its class asks, not by its config label
    assert "Uniform on [a, b] (ignores the data)" in ratios


def test_an_entry_point_plugin_is_registered(plugin_dir, monkeypatch) -> None:
    """A package declaring `duff_bench.mechanisms` entry points is found by the registry."""
    from importlib.metadata import EntryPoint

    from mechanisms import registry
    from mechanisms.core import registration

    point = EntryPoint(
        name="user_uniform", value="user_plugin_uniform:Uniform", group=registry.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(registry, "entry_points", lambda group: [point] if group else [])
    registry.available()  # the built-ins registered before the registry is copied
    monkeypatch.setattr(registration, "_REGISTRY", dict(registration._REGISTRY))
    registration._REGISTRY.pop("user_uniform", None)
    assert "user_uniform" in mechanisms.available()
    made = mechanisms.make("user_uniform", epsilon=1.0)
    assert made.release(np.array([0.2, 0.4]), (0.0, 1.0)).cdf(0.5) == pytest.approx(0.5)


def test_a_plugin_that_declares_no_guarantee_claims_none() -> None:
    """A guarantee is never assumed: a class with neither ``guarantee_source`` nor its own
    ``guarantee`` raises when asked for one, naming what to declare."""

    class Undeclared(mechanisms.Mechanism[mechanisms.Release]):
        name = "undeclared_guarantee"

        def _release(self, sorted_x, lower, upper):  # pragma: no cover - never released
            raise AssertionError

    with pytest.raises(NotImplementedError, match="guarantee_source"):
        _ = Undeclared(epsilon=1.0).guarantee
