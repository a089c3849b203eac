"""The paper tuning study (:mod:`experiments.reports.tuning_study`, run by
``scripts/paper_tuning_study.py``): its parameter variants and a tiny end-to-end run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.reports import tuning_study as study
from mechanisms.core.guarantee import Neighbouring
from mechanisms.median.smooth_laplace import optimal_parameters
from mechanisms.smooth.sensitivity import MedianSmoothSensitivity


@pytest.fixture(scope="module")
def data() -> tuple[list[np.ndarray], tuple[float, float]]:
    return study.figure1_normal(3)


def test_uses_figure1_normal_data(data) -> None:
    datasets, bounds = data
    assert bounds == (-10.0, 10.0)
    assert all(x.size == study.N and np.all(np.diff(x) >= 0) for x in datasets)
    assert not np.array_equal(datasets[0], datasets[1])


@pytest.mark.parametrize("neighbours", ["replace_one", "add_remove"])
@pytest.mark.parametrize("epsilon", study.EPSILONS)
def test_a_grid_never_beats_the_exact_minimiser(data, neighbours, epsilon) -> None:
    for x in data[0]:
        ss = MedianSmoothSensitivity(x, *data[1], Neighbouring(neighbours))
        best = optimal_parameters(ss, epsilon, study.DELTA)
        exact = math.exp(float(ss.log(best.beta))) / best.alpha
        grid, _ = study.grid_smooth_laplace(ss, epsilon)
        assert grid >= exact * (1 - 1e-9)


def test_fixed_t_laplace_ln_spends_exactly_the_cdp_budget(data) -> None:
    ss = MedianSmoothSensitivity(data[0][0], *data[1], Neighbouring.ADD_REMOVE)
    cdp = study.rho_is_epsilon(0.1)
    scale, _ = study.fixed_t_laplace_ln(ss, cdp)
    sigma = float(study.optimal_sigma(study.FIXED_T, cdp))
    s = math.exp(float(ss.log(study.FIXED_T))) / scale
    # Bun & Steinke 2019, §3.1: ε = t/σ + e^{3σ²/2}·s
    assert study.FIXED_T / sigma + math.exp(1.5 * sigma**2) * s == pytest.approx(cdp, rel=1e-12)


def test_tiny_run_writes_the_table(tmp_path) -> None:
    out = tmp_path / "study.md"
    assert study.main(["--replicates", "2", "--draws", "300", "--out", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 2 + 12  # header, the paper's two rows, 6 variants × 2 sensitivities
    ratios = [float(cell.strip().rstrip("×")) for row in rows[3:] for cell in row.split("|")[4:6]]
    assert all(math.isfinite(r) and r > 0 for r in ratios)
