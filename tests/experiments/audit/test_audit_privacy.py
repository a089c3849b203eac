"""``duff-audit`` (:mod:`experiments.audit.cli`): any mechanism with a cdf, a planted
leak caught, the written record."""

from __future__ import annotations

import json
import shlex
import textwrap
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import PROJECT_ROOT

from experiments.audit import cli as audit_cli
from experiments.audit.exact import audit, factory_for
from mechanisms import registry
from mechanisms.core import registration
from mechanisms.core.interface import Release
from mechanisms.median.duff import Duff

SMALL = ["--pairs", "16", "--max-size", "200", "--cells", "200", "--seed", "3"]

# Duff run at 2ε while its guarantee (inherited) claims ε: a planted privacy bug.
LEAKY_MODULE = """
from mechanisms.median.duff import Duff


class LeakyDuff(Duff):
    name = "leaky_duff"

    def _release(self, sorted_x, lower, upper):
        return Duff(epsilon=2 * self.epsilon)._release(sorted_x, lower, upper)
"""


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Classes that ``--target`` registers are kept out of the real registry.

    The built-ins are loaded first: they register when their module is first
    imported, so loading them into the copy would lose them for later tests.
    """
    registry.available()
    monkeypatch.setattr(registration, "_REGISTRY", dict(registration._REGISTRY))


def test_a_planted_leak_is_a_violation_and_fails_the_run(
    own_registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "leaky_plugin.py").write_text(textwrap.dedent(LEAKY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    record = tmp_path / "audit.json"
    argv = ["--mechanism", "duff", "--target", "leaky_plugin.LeakyDuff", "--epsilons", "0.5,2"]
    assert audit_cli.main([*argv, *SMALL, "--output", str(record)]) == 1
    written = json.loads(record.read_text())
    command = shlex.join(["duff-audit", *argv, *SMALL, "--output", str(record)])
    assert written["parameters"]["command"].endswith(command)
    summary = written["summary"]
    assert summary["duff"]["status"] == "ok" and 0.9 < summary["duff"]["max"] <= 1.0
    leak = summary["leaky_plugin.LeakyDuff"]
    assert leak["status"] == "VIOLATION" and leak["statistic"] == "loss/eps"
    assert 1.9 < leak["max"] <= 2.0  # twice the claimed ε, as planted


def test_audits_a_plugin_without_bounding_and_the_peers(
    own_registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """binned_rr takes no ``bounding`` (the empty dataset is still audited); the peers
    are found by name; δ goes only to the (ε, δ) mechanism; both files are written."""
    pytest.importorskip("opendp")
    pytest.importorskip("diffprivlib")
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "examples" / "plugin"))
    outputs = [tmp_path / "out" / "audit.json", tmp_path / "out" / "audit.md"]
    argv = [
        "--target", "binned_rr.BinnedRR:bins=8",
        "--mechanism", "opendp_quantile:candidates=101", "diffprivlib_quantile",
        "--mechanism", "gaussian_global", "--epsilons", "1", "--delta", "1e-5",
        *SMALL, "--output", str(outputs[0]), "--output", str(outputs[1]),
    ]  # fmt: skip
    assert audit_cli.main(argv, command=("python", "scripts/audit_privacy.py")) == 0
    record = json.loads(outputs[0].read_text())
    assert record["parameters"]["pairs"] == 16 and record["parameters"]["seed"] == 3
    rows = {row["label"]: row for row in record["results"]}
    assert set(rows) == {
        "binned_rr.BinnedRR:bins=8",
        "opendp_quantile:candidates=101",
        "diffprivlib_quantile",
        "gaussian_global",
    }
    assert all(row["status"] == "ok" and row["pairs"] == 16 for row in rows.values())
    binned = rows["binned_rr.BinnedRR:bins=8"]
    assert binned["statistic"] == pytest.approx(1.0, abs=1e-9)  # RR is exactly e^ε-tight
    assert binned["worst"] == "[] vs [10.0]"  # the empty dataset: lower median a, bin 0
    assert 0.9 < rows["opendp_quantile:candidates=101"]["statistic"] <= 1.0
    assert rows["diffprivlib_quantile"]["neighbouring"] == "replace_one"
    gaussian = rows["gaussian_global"]
    assert gaussian["statistic_name"] == "HS/delta" and gaussian["delta"] == 1e-5
    assert 0.0 <= gaussian["statistic"] <= 1.0
    assert record["environment"]["packages"]["opendp"] == "0.16.0"
    markdown = outputs[1].read_text()
    assert "| binned_rr.BinnedRR:bins=8 | loss/eps | 1.000000 | ok |" in markdown
    assert "seed 3" in markdown and "16 neighbouring pairs per ε" in markdown
    assert "python scripts/audit_privacy.py --target binned_rr.BinnedRR:bins=8" in markdown


class SamplesOnlyRelease(Release):
    """A release that can sample but has no cdf."""

    def __init__(self, lower: float, upper: float) -> None:
        self.lower, self.upper, self.n, self.true_value = lower, upper, 0, lower

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(self.lower, self.upper, size)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        raise NotImplementedError("sampling only")


class SamplesOnly(Duff):
    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return SamplesOnlyRelease(lower, upper)


def test_no_cdf_is_skipped_and_errors_are_reported(own_registry: None) -> None:
    options = {"pairs": 4, "max_size": 50, "cells": 20, "seed": 0, "resolution": 1e-15}
    skipped = audit("samples_only", lambda: SamplesOnly(epsilon=1.0), **options)
    assert skipped.status == "no cdf: skipped" and not skipped.failed

    def broken() -> Duff:
        raise RuntimeError("not ready")

    failed = audit("broken", broken, **options)
    assert failed.status == "ERROR RuntimeError: not ready" and failed.failed
    unknown = audit("nope", factory_for("nope", {}, 1.0, 1e-6), **options)
    assert unknown.status.startswith("ERROR ValueError: name: unknown mechanism 'nope'")
    assert audit_cli.parse_spec("quantile_em:alpha=0.3,neighbours=replace_one") == (
        "quantile_em",
        {"alpha": 0.3, "neighbours": "replace_one"},
    )
    assert audit_cli.main(["--target", "json.JSONDecoder", "--pairs", "2", "--epsilons", "1"]) == 1
    with pytest.raises(SystemExit):
        audit_cli.main(["--output", "audit.txt"])


def test_a_release_declaring_its_cdf_error_sets_the_cells_resolution() -> None:
    """A quadrature cdf near 1 is exact to its error bound, not to the last bit: below it a
    cell probability is noise (unbounded_quantile's terminal cell, 1e-14 against 0, read as a
    loss of 2.27 ε before), so the exact audit uses the larger of the two."""
    from types import SimpleNamespace

    from experiments.audit.exact import cell_resolution, loss_lower_bound
    from mechanisms.unbounded.quantile import CDF_ERROR, GridRelease

    exact, quadrature = SimpleNamespace(), SimpleNamespace(cdf_error=1e-9)
    assert cell_resolution((exact, exact), 1e-15) == 1e-15
    assert cell_resolution((exact, quadrature), 1e-15) == 1e-9
    assert GridRelease.cdf_error == CDF_ERROR == 1e-9
    p, q = np.array([1 - 1.07e-14, 1.07e-14]), np.array([1.0, 0.0])
    assert loss_lower_bound(p, q, 1e-15) > 2.0  # the false alarm
    assert loss_lower_bound(p, q, cell_resolution((exact, quadrature), 1e-15)) < 1e-6
