"""The regression gate's verdict on each cell, and the report it prints.

A *cell* is one (dataset, subset, statistic, mechanism label, ε) of the
``regression`` sweep (:mod:`experiments.regress`); its error ``m̄`` and the
baseline's come from :mod:`experiments.gate.baseline`.

**The paired test.**  Candidate and baseline draw every replicate's data and noise from
the same seeds (:mod:`experiments.base.seeding`), so their per-replicate errors ``f_r``
and ``e_r`` pair up, and a change of the code moves the pairs together: a noise scale
×1.05 multiplies almost every ``e_r`` by 1.05.  A cell whose baseline has its ``e_r``
(the companion file of :mod:`experiments.gate.baseline`) and whose candidate replicates
all have an error is compared pair by pair: with ``d = ln(f̄ / ē)`` and, by the delta
method, ``d − E d ≈ (1/R) Σ_r u_r``, ``u_r = f_r/f̄ − e_r/ē``, its standard error is
``SE_p = sd(u)/√R`` (the pairs are independent across replicates, whatever the
dependence within a pair), and the cell fails when

    |d| > max(min_paired_effect, z_{1 − α/(2C)} · SE_p),

``min_paired_effect`` = ln 1.02 (:data:`experiments.gate.baseline.MIN_PAIRED_EFFECT`).
Its false alarms, family-wise over the ``C`` cells:

* clean code on the baseline's CPU reproduces every ``f_r = e_r`` bit for bit: ``d = 0``,
  no cell can fail (probability 0);
* clean code on another CPU moves a few ``f_r`` in their last bits (relative changes below
  1e-13 in the regression sweep), far below ``min_paired_effect``: no cell can fail;
* a change that redraws the randomness without changing the error's distribution (a
  sampler rewritten) makes the pairs independent given the data: each cell is then a
  two-sided z-test at level ``α/C`` (the central limit theorem over the ``R`` pairs), so by
  Bonferroni the chance that any cell fails is at most ``α`` = 0.01, as for the unpaired
  test.

Where the replicates pair, ``SE_p`` is tiny, so a 5% change of a cell's error (beyond the
2% floor) fails it; the unpaired test below could not see less than 10%.

**The unpaired test** (cells without per-replicate errors: a baseline without its
companion, a candidate cell with a failed or empty replicate).  The statistic is the
log-ratio ``d = ln(m̄_now / m̄_base)``.  By
the delta method (Casella & Berger, *Statistical Inference*, §5.5.4),
``SE(ln m̄) ≈ SE(m̄)/m̄ = s / (√R · m̄)``.  If a change redraws
the randomness without changing the distribution of the error (a sampler
rewritten, a new numpy stream), the two cell means are independent estimates of
the same quantity and ``d ≈ N(0, 2·SE²)``.  A cell fails when

    |d| > tolerance = max(min_effect, z_{1 − α/(2C)} · √2 · SE),

a two-sided z-test per cell at level ``α/C`` over the ``C`` cells of the sweep,
so by the Bonferroni inequality the chance that such a change fails *any* cell
is at most ``α`` (:data:`experiments.gate.baseline.ALPHA` = 0.01); ``min_effect``
(:data:`experiments.gate.baseline.MIN_EFFECT` =
ln 1.1) keeps cells with a tiny SE from failing on a practically irrelevant change.
Same data across the two runs only makes ``d`` less variable, so the rate is
conservative.  A cell whose error *drops* beyond its tolerance fails too: a
mechanism that suddenly got much more accurate may have stopped being private
(noise lost, ε miscalibrated).  A cell with failed rows (``status`` ≠ ok) fails.

**Confidence intervals.**  An interval method's cell compares its mean width
(:data:`experiments.gate.baseline.GATE_METRICS`) with the baseline as above, and its mean
coverage ``c̄`` with the nominal level ``1 − α`` (not with the baseline): it fails
(``UNDERCOVERS``) when ``c̄ < 1 − α − sqrt(ln(K/α_g) / (2R))``, Hoeffding's bound on
the mean of the ``R`` per-replicate coverages (values in [0, 1], independent across
replicates; the intervals of one replicate share its data) with Bonferroni over the
``K`` interval cells, so a method that covers as it claims fails no cell with
probability at least ``1 − α_g`` (:func:`coverage_margins`).  A method that loses
its privacy widening both narrows (``BETTER?``) and under-covers.

**Exact reproduction.**  Seeds are fixed (:mod:`experiments.base.seeding`), so a
clean run reproduces every ``m̄`` bit for bit; the report counts identical
cells (the same ``m̄`` and, where paired, the same ``e_r``), so any numeric change is
visible even when it is within tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from experiments.gate.baseline import (
    ALPHA,
    EXPERIMENT,
    MIN_PAIRED_EFFECT,
    REPLICATES,
    Candidate,
    GateInputError,
)
from experiments.harness.interval_metrics import hoeffding_margin

SHOWN_ROWS = 40

VERDICT_NOTES = {
    "WORSE": "error rose beyond the tolerance: an accuracy regression.",
    "BETTER?": (
        "error fell beyond the tolerance: the mechanism may have stopped being private "
        "(noise lost, epsilon miscalibrated). If the gain is real and intended, rewrite the "
        "baseline with --update and say why in the commit."
    ),
    "FAILED": "rows of this cell failed (summary.csv status column); the error is undefined.",
    "UNDERCOVERS": (
        "the intervals' coverage is below the nominal 1 - alpha by more than Hoeffding's "
        "margin: the method no longer covers the median as it claims."
    ),
}


@dataclass(frozen=True)
class Report:
    """The verdict of every baseline cell (index :data:`CELL`) and what was left out."""

    cells: pd.DataFrame
    ignored: int

    @property
    def passed(self) -> bool:
        return bool((self.cells["verdict"] == "ok").all())


def _cell_name(key: tuple) -> str:
    dataset, subset, statistic, label, epsilon = key
    return f"{dataset}{'/' + subset if subset else ''}/{statistic}/{label}/eps={epsilon:g}"


def compare(baseline: pd.DataFrame, candidate: Candidate, *, require_all: bool = True) -> Report:
    """Judge each baseline cell present in ``candidate`` (all of them if ``require_all``).

    Raises :class:`GateInputError` when a cell's config differs from the
    baseline's, or when baseline cells are missing and ``require_all``.
    """
    cells = candidate.cells
    shared = baseline.index.intersection(cells.index, sort=False)
    missing = baseline.index.difference(cells.index, sort=False)
    if require_all and len(missing):
        raise GateInputError(
            f"the candidate lacks {len(missing)} of the baseline's {len(baseline)} cells "
            f"(e.g. {_cell_name(missing[0])}); run it with experiment={EXPERIMENT}"
        )
    if not len(shared):
        raise GateInputError("the candidate has none of the baseline's cells")
    base, now = baseline.reindex(shared), cells.reindex(shared)
    other = shared[base["cell_hash"].to_numpy() != now["cell_hash"].to_numpy()]
    if len(other):
        raise GateInputError(
            f"{len(other)} cells of the candidate come from another config than the "
            f"baseline's (e.g. {_cell_name(other[0])}: seed, n, replicates, trials, delta "
            f"or the mechanism/dataset entry differ); candidate config "
            f"{candidate.config_hash[:12]}, baseline config "
            f"{baseline['config_hash'].iloc[0][:12]}. Use experiment={EXPERIMENT}, or "
            "rewrite the baseline with --update if the regression config changed on purpose"
        )
    before, after = base["error"].to_numpy(), now["error"].to_numpy()
    failed = now["failed"].to_numpy() > 0
    ratio = np.where(failed, math.nan, after / before)
    with np.errstate(divide="ignore"):  # an error of exactly 0 gives log-ratio −inf
        log_ratio = np.log(ratio)
    tolerance = base["tolerance"].to_numpy().copy()
    paired = paired_tests(base, now, len(baseline))
    is_paired = paired["paired"].to_numpy(dtype=bool) & ~failed
    log_ratio = np.where(is_paired, paired["log_ratio"].to_numpy(), log_ratio)
    tolerance = np.where(is_paired, paired["tolerance"].to_numpy(), tolerance)
    same_replicates = ~is_paired | paired["identical"].to_numpy(dtype=bool)
    coverage_floor = now["level"].to_numpy() - coverage_margins(now)
    undercovers = now["coverage"].to_numpy() < coverage_floor
    verdict = np.select(
        [failed, undercovers, log_ratio > tolerance, log_ratio < -tolerance],
        ["FAILED", "UNDERCOVERS", "WORSE", "BETTER?"],
        default="ok",
    )
    report = pd.DataFrame(
        {
            "baseline": before,
            "now": after,
            "ratio": ratio,
            "log_ratio": log_ratio,
            "tolerance": tolerance,
            "paired": is_paired,
            "identical": ~failed & (after == before) & same_replicates,
            "failed": now["failed"].to_numpy(),
            "replicates": now["replicates"].to_numpy(),
            "status_example": now["status_example"].to_numpy(),
            "coverage": now["coverage"].to_numpy(),
            "coverage_floor": coverage_floor,
            "verdict": verdict,
        },
        index=shared,
    )
    return Report(report, ignored=len(cells) - len(shared))


def paired_tests(base: pd.DataFrame, now: pd.DataFrame, cells: int) -> pd.DataFrame:
    """Per cell (rows of ``base`` and ``now`` aligned), the paired test of the module
    docstring: whether it applies (``paired``: both have per-replicate errors, as many),
    ``log_ratio`` ``ln(f̄/ē)``, its ``se`` ``sd(u)/√R``, the ``tolerance``
    ``max(MIN_PAIRED_EFFECT, z_{1−α/(2·cells)}·se)`` and whether the errors are
    ``identical`` replicate by replicate (NaN / False where not paired)."""
    z = stats.norm.ppf(1.0 - ALPHA / (2.0 * cells))
    empty = pd.Series([None] * len(base), index=base.index, dtype=object)
    pairs = zip(base.get(REPLICATES, empty), now.get(REPLICATES, empty), strict=True)
    rows = []
    for before, after in pairs:
        row: dict[str, object] = {
            "paired": False,
            "log_ratio": math.nan,
            "se": math.nan,
            "identical": False,
        }
        if (
            isinstance(before, np.ndarray)
            and isinstance(after, np.ndarray)
            and before.shape == after.shape
            and before.size >= 2
        ):
            row.update(_paired(before.astype(np.float64), after.astype(np.float64)))
        rows.append(row)
    table = pd.DataFrame(rows, index=base.index, columns=["paired", "log_ratio", "se", "identical"])
    table["tolerance"] = np.maximum(MIN_PAIRED_EFFECT, z * table["se"].to_numpy())
    return table


def _paired(before: np.ndarray, after: np.ndarray) -> dict[str, object]:
    """The paired statistics of one cell's per-replicate errors (``before`` the baseline's)."""
    identical = bool(np.array_equal(before, after))
    mean_before = math.fsum(before) / before.size
    mean_after = math.fsum(after) / after.size
    if identical:
        return {"paired": True, "log_ratio": 0.0, "se": 0.0, "identical": True}
    if mean_after == 0.0:  # no error left at all: as far below the baseline as can be
        return {"paired": True, "log_ratio": -math.inf, "se": 0.0, "identical": False}
    u = after / mean_after - before / mean_before
    se = float(np.std(u, ddof=1)) / math.sqrt(u.size)
    log_ratio = math.log(mean_after / mean_before)
    return {"paired": True, "log_ratio": log_ratio, "se": se, "identical": False}


def coverage_margins(cells: pd.DataFrame) -> np.ndarray:
    """Per cell, how far its mean coverage may fall below its nominal level before it fails:
    Hoeffding's margin over its replicates' coverages, Bonferroni over the interval cells
    at family-wise :data:`experiments.gate.baseline.ALPHA` (:func:`hoeffding_margin`); NaN for
    cells that are not intervals (their comparison is then False)."""
    intervals = cells["level"].notna().to_numpy()
    tests = max(1, int(np.count_nonzero(intervals)))
    margins = [
        hoeffding_margin(int(replicates), tests, ALPHA) if interval else math.nan
        for replicates, interval in zip(cells["replicates"], intervals, strict=True)
    ]
    return np.asarray(margins, dtype=np.float64)


def _moved_lines(moved: pd.DataFrame, cells: int) -> list[str]:
    """The aligned table of the cells that moved (worst first) and the verdicts' notes."""
    lines = [f"cells that moved ({len(moved)} of {cells}):"]
    table = [
        (
            "dataset",
            "statistic",
            "mechanism",
            "eps",
            "baseline",
            "now",
            "ratio",
            "allowed",
            "verdict",
        )
    ]
    for key, row in moved.head(SHOWN_ROWS).iterrows():
        dataset, subset, statistic, label, epsilon = key
        if row["verdict"] == "FAILED":
            now, ratio = f"{row['failed']}/{row['replicates']} rows failed", "-"
        elif row["verdict"] == "UNDERCOVERS":
            now = f"coverage {row['coverage']:.3f} < {row['coverage_floor']:.3f}"
            ratio = f"{row['ratio']:.3f}"
        else:
            now, ratio = f"{row['now']:.5g}", f"{row['ratio']:.3f}"
        tol = row["tolerance"]
        table.append(
            (
                f"{dataset}{'/' + subset if subset else ''}",
                statistic,
                label,
                f"{epsilon:g}",
                f"{row['baseline']:.5g}",
                now,
                ratio,
                f"{math.exp(-tol):.3f}..{math.exp(tol):.3f}",
                row["verdict"],
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines += [
        ("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True))).rstrip()
        for r in table
    ]
    if len(moved) > SHOWN_ROWS:
        lines.append(f"  ... and {len(moved) - SHOWN_ROWS} more moved cells")
    for verdict, note in VERDICT_NOTES.items():
        hits = moved[moved["verdict"] == verdict]
        if len(hits):
            example = hits["status_example"].iloc[0] if verdict == "FAILED" else ""
            lines.append(f"{verdict}: {note}" + (f" First status: {example!r}" if example else ""))
    return lines


def render(report: Report, *, seconds: float | None = None) -> str:
    """The table of cells that moved, notes on the failing verdicts, and a one-line summary."""
    cells = report.cells
    moved = cells[~cells["identical"] | (cells["verdict"] != "ok")].copy()
    severity = np.where(
        moved["verdict"] == "ok", 0.0, 1.0 + np.nan_to_num(moved["log_ratio"].abs(), nan=1e9)
    )
    moved = moved.assign(_severity=severity).sort_values(
        "_severity", ascending=False, kind="stable"
    )
    lines = _moved_lines(moved, len(cells)) if len(moved) else []
    counts = cells["verdict"].value_counts()
    identical = int(cells["identical"].sum())
    exact = f"{identical}/{len(cells)} cells identical to the baseline (exact reproduction)"
    paired = int(cells["paired"].sum())
    exact += f"; {paired} cells paired replicate by replicate"
    extra = (
        f"; {report.ignored} candidate cells not in the baseline ignored" if report.ignored else ""
    )
    timing = f" [sweep {seconds:.1f} s]" if seconds is not None else ""
    if report.passed:
        head = f"regression gate PASSED: all {len(cells)} cells within tolerance"
    else:
        bad = len(cells) - int(counts.get("ok", 0))
        head = (
            f"regression gate FAILED: {bad} of {len(cells)} cells "
            f"({int(counts.get('WORSE', 0))} worse, {int(counts.get('BETTER?', 0))} "
            f"suspiciously better, {int(counts.get('UNDERCOVERS', 0))} under-covering, "
            f"{int(counts.get('FAILED', 0))} with failed rows)"
        )
    lines.append(f"{head}; {exact}{extra}{timing}")
    return "\n".join(lines)
