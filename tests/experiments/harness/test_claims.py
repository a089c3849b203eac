"""A release's claims are checked against what it does (issue 26, finding 5).

Before, a refusing mechanism whose samples were 25% ⊥ while its ``refusal_probability``
and cdf said 0 was recorded ok (answer rate 0.75); a ``refusal_probability`` outside
[0, 1] passed whenever the cdf could not be computed; a mode "estimate" outside the
finite domain, or not an integer, was scored as a miss.  Each now fails its row.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import tiny_overrides

from experiments.harness.metrics import CLAIM_ALPHA, domain_problem, refusal_problem
from experiments.harness.plan import build_plan
from experiments.harness.unit import compute_unit

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def plugins_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def statuses(compose_config, entry: dict, **keys) -> list[str]:
    """The statuses of every row of a small sweep of ``entry`` (computed in this process)."""
    overrides = tiny_overrides(trials=40, **keys)
    plan = build_plan(compose_config(overrides, [entry]))
    found = []
    for unit in plan.units():
        columns, _ = compute_unit(unit, plan.settings)
        found += [str(s) for s in columns["status"]]
    return found


def claims(behaviour: str, name: str = "Claims") -> dict:
    return {
        "label": behaviour,
        "_target_": f"claim_plugins.{name}",
        "options": {"behaviour": behaviour},
    }


def test_a_quarter_of_refusals_where_none_are_claimed_fails(compose_config) -> None:
    found = statuses(compose_config, claims("lying_refuser"))
    assert len(found) == 8
    for status in found:
        assert status.startswith("10 of 40 trials answered ⊥ (NaN) where refusal_probability = 0")
        assert "exact two-sided binomial test" in status


def test_an_honest_refuser_is_ok(compose_config) -> None:
    assert set(statuses(compose_config, claims("honest_refuser"))) == {"ok"}


@pytest.mark.parametrize(
    ("behaviour", "shown"), [("refusal_above_one", "1.5"), ("refusal_nan", "nan")]
)
def test_a_refusal_probability_outside_0_1_fails_whatever_the_cdf(
    compose_config, behaviour, shown
) -> None:
    found = statuses(compose_config, claims(behaviour))
    assert set(found) == {f"refusal_probability {shown} is not a number in [0, 1]"}


@pytest.mark.parametrize(("behaviour", "example"), [("outside", "11.0"), ("fraction", "-9.5")])
def test_a_mode_outside_its_finite_domain_fails(compose_config, behaviour, example) -> None:
    entry = claims(behaviour, "ModeClaims")
    found = statuses(compose_config, entry, datasets="[normal]", statistics="[mode]")
    assert set(found) == {
        f"40 of 40 estimates of the mode are not integers of [-10, 10] (e.g. {example})"
    }


def test_an_honest_mode_is_ok(compose_config) -> None:
    entry = claims("honest", "ModeClaims")
    found = statuses(compose_config, entry, datasets="[normal]", statistics="[mode]")
    assert set(found) == {"ok"}


def test_the_per_cell_level_is_the_family_wise_rate_over_the_cells(compose_config) -> None:
    plan = build_plan(compose_config(tiny_overrides(), [claims("honest_refuser")]))
    assert plan.settings.cells == 2 * 2 * 2  # datasets × replicates × ε
    assert CLAIM_ALPHA == 1e-9


class Claim:
    def __init__(self, refusal_probability: object) -> None:
        self.refusal_probability = refusal_probability


def test_refusal_check_is_an_exact_two_sided_binomial_test() -> None:
    sample = np.ones(400)
    sample[:100] = np.nan  # 100 of 400 refused
    assert refusal_problem(Claim(0.25), sample, 1e-9) is None
    assert refusal_problem(Claim(0.5), sample, 1e-9) is not None  # too few refusals
    assert refusal_problem(Claim(0.1), sample, 1e-9) is not None  # too many
    assert refusal_problem(Claim(0.0), sample, 1e-12) is not None  # any ⊥ contradicts 0
    assert refusal_problem(Claim(1.0), sample, 1e-12) is not None  # any answer contradicts 1
    assert refusal_problem(Claim(0.0), np.ones(5), 1e-12) is None
    for bad in (-0.1, 1.0000001, math.nan, math.inf, "half", None):
        assert "is not a number in [0, 1]" in refusal_problem(Claim(bad), np.ones(5), 1e-9)


def test_honest_refusals_pass_at_any_reasonable_level() -> None:
    rng = np.random.default_rng(3)
    for p in (0.01, 0.3, 0.9):
        for _ in range(200):
            sample = np.where(rng.random(50) < p, np.nan, 1.0)
            assert refusal_problem(Claim(p), sample, 1e-9 / 1000) is None


def test_domain_problem() -> None:
    assert domain_problem(np.array([0.0, 3.0, np.nan, -2.0]), -2.0, 3.0) is None
    assert "1 of 3" in domain_problem(np.array([0.0, 3.5, 1.0]), -2.0, 3.0)
    assert "2 of 2" in domain_problem(np.array([-3.0, 4.0]), -2.0, 3.0)
