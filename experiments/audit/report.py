"""The privacy audit's record: an aligned table for the terminal, JSON and Markdown files.

``.json``: the parameters, package versions, git state, one record per
mechanism and ε, and the maximum per mechanism (infinities and NaN as null);
``.md``: the same as tables (the reference ``results/reference/audit/audit.md``
is one).
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
from pathlib import Path
from typing import Any

from experiments.audit.exact import Audit, AuditResult
from experiments.audit.pairs import LOWER, UPPER
from experiments.base.atomic_files import write_text_atomic
from experiments.harness.provenance import git_state, package_versions
from experiments.reports.tables import markdown_table

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The checkout whose git state is recorded (none when the package is installed)."""


def _number(value: float, digits: str = ".6f") -> str:
    return format(value, digits) if math.isfinite(value) else "-"


def _finite(value: object) -> object:
    """JSON has no infinities or NaN: they become null."""
    return value if not isinstance(value, float) or math.isfinite(value) else None


def table_rows(results: list[AuditResult]) -> list[tuple[str, ...]]:
    """Header and one row per result, as text."""
    header = ("mechanism", "eps", "pairs", "cells", "statistic", "max", "worst pair", "secs")
    rows: list[tuple[str, ...]] = [(*header, "status")]
    for r in results:
        eps = _number(r.epsilon, "g")
        row = (r.label, eps, str(r.pairs), str(r.cells), r.statistic_name, _number(r.statistic))
        rows.append((*row, r.worst, f"{r.seconds:.1f}", r.status))
    return rows


def format_table(results: list[AuditResult]) -> str:
    """The results as an aligned plain-text table."""
    rows = table_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for k, row in enumerate(rows):
        cells = [value.ljust(width) for value, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]))
        if k == 0:
            lines.append("  ".join(["-" * w for w in widths] + ["-" * 6]))
    return "\n".join(lines)


def escaped_table(rows: list[tuple[str, ...]]) -> str:
    """Rows (the first the header) as a Markdown table, ``|`` escaped."""
    escape = [tuple(cell.replace("|", "\\|") for cell in row) for row in rows]
    return markdown_table(escape[0], escape[1:])


def environment() -> dict[str, Any]:
    """Python, package versions (peers when installed) and the git state."""
    return {
        "python": platform.python_version(),
        "packages": package_versions(),
        "git": git_state(PROJECT_ROOT),
    }


def to_json(run_audit: Audit, env: dict[str, Any]) -> dict[str, Any]:
    """The machine-readable record: parameters, environment, per-mechanism maxima, rows."""
    return {
        "parameters": run_audit.parameters,
        "environment": env,
        "seconds": round(run_audit.seconds, 1),
        "summary": {
            label: {key: _finite(value) for key, value in entry.items()}
            for label, entry in run_audit.summary().items()
        },
        "results": [
            {key: _finite(value) for key, value in dataclasses.asdict(r).items()}
            for r in run_audit.results
        ],
    }


def to_markdown(run_audit: Audit, env: dict[str, Any]) -> str:
    """The same record as Markdown: parameters, the per-mechanism maxima and every row."""
    p = run_audit.parameters
    versions = ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v is not None)
    summary: list[tuple[str, ...]] = [("mechanism", "statistic", "max over ε", "status")]
    summary += [
        (label, e["statistic"], _number(e["max"]), e["status"])
        for label, e in run_audit.summary().items()
    ]
    return "\n".join(
        [
            "### Privacy audit: exact cell probabilities on neighbouring datasets",
            "",
            f"`{p['command']}`",
            "",
            f"On [a, b] = [{LOWER:g}, {UPPER:g}]: "
            f"ε ∈ {{{', '.join(f'{e:g}' for e in p['epsilons'])}}}, δ = {p['delta']:g} "
            f"(mechanisms that take δ), {p['pairs']} neighbouring pairs per ε (sizes up to "
            f"{p['max_size']}), {p['cells']} equal cells refined at the data, seed {p['seed']}, "
            f"resolution {p['resolution']:g}; {run_audit.seconds:.0f} s.",
            "",
            "loss/eps: max over cells I of log(P_S(I)/P_S'(I)) / ε (violation if > 1); "
            "HS/delta: max Σ_I max(0, P_S(I) − e^ε P_S'(I)) / δ (a lower bound; > 1 fails).",
            "",
            "Rows marked [black-box] are audited from samples (experiments.audit.sampled): "
            "eps_lower/eps and HS_lower/delta are lower confidence bounds, all bounds of the "
            f"run at family-wise level {p.get('alpha', 1e-9):g}, up to "
            f"{p.get('samples', 0)} samples per side of a pair (> 1 fails).",
            "",
            escaped_table(summary),
            "",
            escaped_table(table_rows(run_audit.results)),
            "",
            f"Versions: python {env['python']}, {versions}.  Git commit "
            f"{env['git']['commit']} (uncommitted changes: {env['git']['dirty']}).",
            "",
        ]
    )


def write_outputs(run_audit: Audit, paths: list[Path]) -> None:
    """Write the audit to each path, as JSON or Markdown by its suffix."""
    env = environment() if paths else {}
    for path in paths:
        if path.suffix == ".json":
            write_text_atomic(path, json.dumps(to_json(run_audit, env), indent=2) + "\n")
        else:
            write_text_atomic(path, to_markdown(run_audit, env))
