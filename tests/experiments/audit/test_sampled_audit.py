"""``duff-audit`` audits from samples what has no exact cdf (:mod:`experiments.audit.sampled`)."""

from __future__ import annotations

import json

from experiments.audit import cli
from experiments.audit.exact import factory_for
from experiments.audit.sampled import audit_by_samples


def test_a_correct_mechanism_without_a_cdf_passes_the_default_audit(plugins, tmp_path) -> None:
    out = tmp_path / "audit.json"
    status = cli.main(["--target", "no_cdf_plugins.LaplaceNoCdf", "--output", str(out)])
    assert status == 0
    record = json.loads(out.read_text())
    rows = record["results"]
    assert {r["label"] for r in rows} == {"no_cdf_plugins.LaplaceNoCdf [black-box]"}
    assert all(r["status"] == "ok" and 0 <= r["statistic"] <= 1 for r in rows)
    assert max(r["statistic"] for r in rows) > 0.9  # near-tight at ε >= 1
    assert len(rows) == 4 and all(r["pairs"] == 8 for r in rows)  # every default ε, 8 pairs


def test_half_the_noise_without_a_cdf_is_a_violation_in_the_default_audit(plugins) -> None:
    """The planted 2ε bug, claimed ε: caught at the default budget (exit status 1)."""
    assert cli.main(["--target", "no_cdf_plugins.HalfNoiseNoCdf"]) == 1


def test_on_request_the_black_box_bound_stays_below_the_exact_audit(plugins) -> None:
    """``--black-box always`` on a mechanism with a cdf: a second row, whose lower confidence
    bound on ε is at most the loss the exact audit finds."""
    args = cli.parser("duff-audit").parse_args(
        ["--mechanism", "laplace_global", "--epsilons", "1", "--black-box", "always",
         "--pairs", "8", "--samples", "200000"]
    )  # fmt: skip
    exact, sampled = cli.run(args, "duff-audit").results
    assert sampled.label == "laplace_global [black-box]"
    assert exact.status == sampled.status == "ok"
    assert 0 < sampled.statistic <= exact.statistic <= 1 + 1e-6


def test_never_skips_the_black_box_audit(plugins) -> None:
    args = cli.parser("duff-audit").parse_args(
        ["--target", "no_cdf_plugins.HalfNoiseNoCdf", "--epsilons", "1", "--black-box", "never"]
    )
    (result,) = cli.run(args, "duff-audit").results
    assert result.status == "no cdf: skipped"


def test_a_failing_mechanism_is_reported_not_raised() -> None:
    def broken():
        raise RuntimeError("cannot configure")

    result = audit_by_samples("broken", broken, max_size=10, seed=0, alpha=1e-9)
    assert result.status == "ERROR RuntimeError: cannot configure" and result.failed


def test_oracle_tuning_has_no_guarantee_to_check() -> None:
    factory = factory_for("smooth_laplace", {"tuning": "oracle"}, 1.0, 1e-6)
    result = audit_by_samples(
        "smooth_laplace", factory, pairs=2, max_size=10, samples=2000, seed=0, alpha=1e-9
    )
    assert result.status == "no guarantee (oracle tuning)" and not result.failed
