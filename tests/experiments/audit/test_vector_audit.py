"""The audit of m quantiles at once (:mod:`experiments.audit.vector`, the black-box audit of
whole rows): each path passes the correct mechanism and flags a planted bug
(:mod:`vector_plugins`), through ``duff-audit`` and its exit status."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from experiments.audit import cli
from experiments.audit.exact import factory_for, release_of
from experiments.audit.pairs import LOWER, UPPER, Pair
from experiments.audit.vector import audit_exact, common_edges, refined_log_probabilities
from mechanisms import make
from mechanisms.multi.joint_exp import JointExpRelease
from mechanisms.multi.joint_exp_sampler import utility_sensitivity


def run(*argv: str) -> list:
    """The results of one ``duff-audit`` run (without writing anything)."""
    return cli.run(cli.parser("duff-audit").parse_args(list(argv)), "duff-audit").results


def density_times_volumes(data: np.ndarray, edges: np.ndarray, alphas: list[float]) -> dict:
    """The JointExp law on the cells between ``edges``, from its definition: the density
    ``exp(ε u / (2Δ))`` (ε = 1, add/remove Δ) at the cells' midpoints times the volume
    ``Π_r l_r^c / c!`` of the sorted tuples in the product of cells, normalised."""
    qs = [0.0, *alphas, 1.0]
    c = 1.0 / (2 * utility_sensitivity(alphas, "add_remove"))
    n = data.size
    mass = {}
    for cells in itertools.combinations_with_replacement(range(edges.size - 1), len(alphas)):
        middles = [(edges[r] + edges[r + 1]) / 2 for r in cells]
        below = [0, *(int(np.sum(data <= v)) for v in middles), n]
        u = -sum(abs(below[k + 1] - below[k] - (qs[k + 1] - qs[k]) * n) for k in range(len(qs) - 1))
        volume = math.prod(
            (edges[r + 1] - edges[r]) ** cells.count(r) / math.factorial(cells.count(r))
            for r in set(cells)
        )
        mass[cells] = math.exp(c * u) * volume
    total = math.fsum(mass.values())
    return {cells: math.log(value / total) for cells, value in mass.items()}


def test_the_refined_law_is_the_density_times_the_volumes() -> None:
    """Gap-tuple law refined to the common cells of a pair (ties included) = the mechanism's
    density times the volumes L^k/k!, computed from the definition; total mass 1."""
    alphas = [0.25, 0.5, 0.75]
    pair = Pair(np.array([1.0, 4.0, 4.0, 9.0]), np.array([1.0, 2.5, 4.0, 4.0, 9.0]), "test")
    mechanism = make("joint_exp", epsilon=1.0, alphas=alphas)
    edges = common_edges(pair)
    assert edges.tolist() == [LOWER, 1.0, 2.5, 4.0, 9.0, UPPER]
    for data in (pair.first, pair.second):
        release = release_of(mechanism, data)
        assert isinstance(release, JointExpRelease)
        law = refined_log_probabilities(release.gap_tuple_log_probabilities(), data, edges)
        expected = density_times_volumes(data, edges, alphas)
        assert law.keys() == expected.keys()
        np.testing.assert_allclose([law[s] for s in law], [expected[s] for s in law], atol=1e-9)
        assert math.fsum(math.exp(v) for v in law.values()) == pytest.approx(1.0, abs=1e-12)


def test_a_cell_one_float_wide_lies_in_its_own_gap() -> None:
    """A point added just below tied points at b makes a cell one float wide, whose midpoint
    rounds onto b: each cell's gap is found from its left end, and the law still sums to 1."""
    below_b = np.nextafter(UPPER, -np.inf)
    pair = Pair(np.array([UPPER] * 3), np.array([below_b, *[UPPER] * 3]), "add below b")
    mechanism = make("joint_exp", epsilon=1.0, m=3)
    edges = common_edges(pair)
    for data in (pair.first, pair.second):
        release = release_of(mechanism, data)
        assert isinstance(release, JointExpRelease)
        law = refined_log_probabilities(release.gap_tuple_log_probabilities(), data, edges)
        assert math.fsum(math.exp(v) for v in law.values()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
def test_joint_exp_passes_and_half_its_sensitivity_is_flagged(plugins, neighbours: str) -> None:
    """The joint gap-cell audit: JointExp near-tight and within ε; with the utility's
    sensitivity halved (2ε while claiming ε), a violation and exit status 1."""
    common = ["--epsilons", "0.1,1", "--pairs", "200", "--black-box", "never"]
    correct = run("--mechanism", f"joint_exp:m=3,neighbours={neighbours}", *common)
    assert [r.statistic_name for r in correct] == ["joint loss/eps"] * 2
    assert all(r.status == "ok" and 0.9 < r.statistic <= 1 + 1e-6 for r in correct)
    assert all(r.pairs == 200 for r in correct)
    spec = f"vector_plugins.HalfSensitivityJointExp:m=3,neighbours={neighbours}"
    planted = run("--target", spec, *common)
    assert all(r.status == "VIOLATION" and r.statistic > 1.4 for r in planted)
    assert cli.main(["--target", spec, *common]) == 1


def test_the_joint_audit_is_what_duff_audit_runs_for_joint_exp() -> None:
    """``duff-audit --mechanism joint_exp:m=3`` works end to end and exits 0; at m = 2 too."""
    assert cli.main(["--mechanism", "joint_exp:m=3", "--epsilons", "1", "--pairs", "20"]) == 0
    (result,) = run("--mechanism", "joint_exp:m=2", "--epsilons", "1", "--pairs", "20")
    assert result.status == "ok" and 0 < result.cells <= math.comb(9 + 2, 2)  # 9 cut points


def test_marginals_pass_and_levels_without_composition_are_flagged(plugins) -> None:
    """The marginal audit: the per-level methods pass (pure and (ε, δ) claims); IndExp with
    every level at ε (3ε while claiming ε) is a violation."""
    common = ["--epsilons", "0.1,1", "--pairs", "40", "--black-box", "never"]
    specs = ["ind_exp", "ind_duff", "app_ind_exp", "smooth_laplace_per_level", "ind_exp:m=2"]
    results = run("--mechanism", *specs, *common)
    assert all(r.status == "ok" and r.statistic <= 1 + 1e-6 for r in results)
    names = {r.label: r.statistic_name for r in results}
    assert names["ind_exp"] == "marginal loss/eps"
    assert names["app_ind_exp"] == "marginal HS/delta"
    assert max(r.statistic for r in results if r.label == "ind_exp") > 0.3
    spec = "vector_plugins.FullEpsilonIndExp"
    assert all(r.status == "VIOLATION" for r in run("--target", spec, *common))
    assert cli.main(["--target", spec, *common]) == 1


def test_a_tree_with_half_the_noise_is_caught_by_the_black_box_audit(plugins) -> None:
    """No exact law: the black-box audit of whole rows (each coordinate and the sum); the
    Laplace tree passes and the tree with half the noise (2ε while claiming ε) exits 1.
    A small tree (B = 2, h = 2, m = 2), so the default budget resolves the difference."""
    options = "m=2,branching=2,height=2"
    common = ["--epsilons", "1", "--seconds", "30"]
    (correct,) = run("--mechanism", f"tree_quantiles:{options}", *common)
    assert correct.label.endswith("[black-box]") and correct.status == "ok"
    assert 0.3 < correct.statistic <= 1
    assert cli.main(["--target", f"vector_plugins.HalfNoiseTree:{options}", *common]) == 1


def test_the_gaussian_tree_is_audited_by_its_hockey_stick_divergence() -> None:
    (result,) = run(
        "--mechanism", "tree_quantiles_gaussian:m=2,branching=2,height=2",
        "--epsilons", "1", "--samples", "100000",
    )  # fmt: skip
    assert result.statistic_name == "HS_lower/delta" and result.status == "ok"


def test_a_vector_mechanism_that_cannot_be_built_is_reported() -> None:
    factory = factory_for("joint_exp", {"m": 0}, 1.0, 1e-6)
    options = {"pairs": 2, "max_size": 10, "cells": 10, "seed": 0, "resolution": 1e-15}
    result = audit_exact("joint_exp:m=0", factory, **options)
    assert result.failed and result.status.startswith("ERROR ValueError")
