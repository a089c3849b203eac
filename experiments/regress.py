"""The CI regression gate on accuracy: run the ``regression`` sweep, compare with a baseline.

Run ``python -m experiments.regress`` (or ``duff-regress``)::

    python -m experiments.regress                       # run the sweep, compare, exit 0/1/2
    python -m experiments.regress --candidate DIR       # compare an existing run instead
    python -m experiments.regress --update              # rewrite the baseline on purpose
    python -m experiments.regress --baseline mine.csv 'mechanisms=[duff,my_mechanism]'
    python -m experiments.regress --config-dir my/conf --baseline mine.csv 'mechanisms=[duff,mine]'

Hydra overrides after the options change the sweep (its mechanisms, datasets,
plug-ins, ...): with a ``--baseline`` of their own, users gate their mechanisms
the same way (``--update`` once, then the check in their CI).

The sweep is ``conf/experiment/regression.yaml`` (every mechanism of the study ×
normal/uniform/beta × ε ∈ {0.1, 0.5, 2}, fixed seed).  A *cell* is one
(dataset, subset, statistic, mechanism label, ε); its error is the mean over the
``R`` replicates of the per-replicate error ``e_r`` of its statistic
(``mean_abs_error``; ``mean_count_gap`` for the mode: :mod:`experiments.metrics`,
:data:`experiments.baseline.GATE_METRICS`),

    m̄ = (1/R) Σ_r e_r        (summed exactly, :func:`math.fsum`).

The baseline (``results/baselines/regression.csv``, one row per cell) stores
``m̄`` (column ``error``), the replicate-to-replicate SD ``s`` of ``e_r``, ``R``, the
standard error of ``log m̄`` and the cell's tolerance, plus the hash of the
sweep's config and of the cell's own config.

**The test.**  The statistic is the log-ratio ``d = ln(m̄_now / m̄_base)``.  By
the delta method (Casella & Berger, *Statistical Inference*, §5.5.4),
``SE(ln m̄) ≈ SE(m̄)/m̄ = s / (√R · m̄)``.  If a change redraws
the randomness without changing the distribution of the error (a sampler
rewritten, a new numpy stream), the two cell means are independent estimates of
the same quantity and ``d ≈ N(0, 2·SE²)``.  A cell fails when

    |d| > tolerance = max(min_effect, z_{1 − α/(2C)} · √2 · SE),

a two-sided z-test per cell at level ``α/C`` over the ``C`` cells of the sweep,
so by the Bonferroni inequality the chance that such a change fails *any* cell
is at most ``α`` (:data:`experiments.baseline.ALPHA` = 0.01); ``min_effect``
(:data:`experiments.baseline.MIN_EFFECT` =
ln 1.1) keeps cells with a tiny SE from failing on a practically irrelevant change.
Same data across the two runs only makes ``d`` less variable, so the rate is
conservative.  A cell whose error *drops* beyond its tolerance fails too: a
mechanism that suddenly got much more accurate may have stopped being private
(noise lost, ε miscalibrated).  A cell with failed rows (``status`` ≠ ok) fails.

**Confidence intervals.**  An interval method's cell compares its mean width
(:data:`experiments.baseline.GATE_METRICS`) with the baseline as above, and its mean
coverage ``c̄`` with the nominal level ``1 − α`` (not with the baseline): it fails
(``UNDERCOVERS``) when ``c̄ < 1 − α − sqrt(ln(K/α_g) / (2R))``, Hoeffding's bound on
the mean of the ``R`` per-replicate coverages (values in [0, 1], independent across
replicates; the intervals of one replicate share its data) with Bonferroni over the
``K`` interval cells, so a method that covers as it claims fails no cell with
probability at least ``1 − α_g`` (:func:`coverage_margins`).  A method that loses
its privacy widening both narrows (``BETTER?``) and under-covers.

**Exact reproduction.**  Seeds are fixed (:mod:`experiments.seeding`), so a
clean run reproduces every ``m̄`` bit for bit; the report counts identical
cells, so any numeric change is visible even when it is within tolerance.

**Configs.**  A candidate's ``run.json`` (next to its ``summary.csv``) gives its
config; each cell's config hash covers what determines that cell's numbers
(format, seed, trials, δ rule, the dataset and mechanism entries, ε), so a
candidate is refused unless every baseline cell is present with the same cell
config (a superset sweep is accepted, its extra cells ignored).

**Inputs.**  A candidate is read by :func:`experiments.results_reader.load`: a
``summary.csv`` cut short, corrupt, or not one row per cell of its ``run.json``
plan is an input error, never a failed cell.  A baseline is refused when a number
is not one :func:`experiments.baseline.make_baseline` can write (a non-finite, negative or zero
error or tolerance, fewer than 2 replicates, or an ``se_log`` / tolerance that does
not follow from its row by the formulas above): a tolerance of ``inf`` would
switch its cell's test off.  Either message names the file, line and column.

Exit status: 0 all cells hold, 1 a cell failed, 2 usage or input error (one line
on stderr).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments import results_reader
from experiments.baseline import (
    ALPHA,
    BASELINE,
    Candidate,
    GateInputError,
    make_baseline,
    read_baseline,
    read_candidate,
    write_baseline,
)
from experiments.datasets import DatasetError
from experiments.interval_metrics import hoeffding_margin
from experiments.plan import CONF_DIR, ConfDirs, ConfigError, build_plan
from experiments.results import (
    ResultsDirError,
)

EXPERIMENT = "regression"
SHOWN_ROWS = 40
SCRATCH = Path("/dev/shm")

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


# ----------------------------------------------------------------- the sweep


def regression_config(overrides: Sequence[str] = ()) -> Any:
    """The composed Hydra config of ``experiment=regression`` (plus ``overrides``)."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=[f"experiment={EXPERIMENT}", *overrides])


def run_sweep(
    results_dir: Path | None,
    n_jobs: int,
    overrides: Sequence[str] = (),
    conf_dir: ConfDirs = CONF_DIR,
) -> tuple[Path, float]:
    """Run (or resume) the regression sweep (with Hydra ``overrides``; names of datasets and
    mechanisms looked up in ``conf_dir``); return its results directory and wall time."""
    from experiments.run import run

    cfg = regression_config(overrides)
    start = time.perf_counter()
    out = run(cfg, results_dir=results_dir, n_jobs=n_jobs, conf_dir=conf_dir)
    return out, time.perf_counter() - start


def scratch_dir() -> str | None:
    """Parent for a throwaway results directory: ``/dev/shm`` when writable, else the default.

    The harness fsyncs each of the sweep's 4200 unit files; on a RAM-backed file
    system that costs nothing, on a busy disk it can take longer than the sweep itself.
    """
    return str(SCRATCH) if SCRATCH.is_dir() and os.access(SCRATCH, os.W_OK) else None


# ---------------------------------------------------------------- comparison


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
    tolerance = base["tolerance"].to_numpy()
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
            "identical": ~failed & (after == before),
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


def coverage_margins(cells: pd.DataFrame) -> np.ndarray:
    """Per cell, how far its mean coverage may fall below its nominal level before it fails:
    Hoeffding's margin over its replicates' coverages, Bonferroni over the interval cells
    at family-wise :data:`experiments.baseline.ALPHA` (:func:`hoeffding_margin`); NaN for
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


# ------------------------------------------------------------------------ CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duff-regress",
        description="Accuracy regression gate: run the regression sweep (or read --candidate) "
        "and compare each (dataset, statistic, mechanism, epsilon) cell with the baseline. "
        "Exit 0: all hold; 1: a cell failed; 2: usage or input error.",
    )
    parser.add_argument(
        "--candidate",
        type=Path,
        metavar="PATH",
        help="compare this results directory (or its summary.csv, with run.json beside it) "
        "instead of running the sweep",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="rewrite the baseline from the sweep (or --candidate) instead of comparing",
    )
    parser.add_argument(
        "--baseline", type=Path, default=BASELINE, help=f"baseline CSV (default: {BASELINE})"
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        metavar="DIR",
        help="run (or resume) the sweep here and keep it (default: a temporary directory)",
    )
    parser.add_argument("--n-jobs", type=int, default=-1, help="joblib workers (default: -1, all)")
    parser.add_argument(
        "--config-dir",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of your own dataset/ and mechanism/ YAML files, searched before the "
        "package's (as duff-run --config-dir); repeatable",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="Hydra overrides of the regression sweep, e.g. 'mechanisms=[duff,my_mechanism]' "
        "plugins=[my_module]: gate your own mechanisms against your own --baseline",
    )
    return parser


def _conf_dirs(args: argparse.Namespace) -> list[Path]:
    """Where dataset and mechanism names are looked up: ``--config-dir``, then the package's."""
    return [*args.config_dir, CONF_DIR]


def _obtain(args: argparse.Namespace) -> tuple[Candidate, float | None]:
    """The candidate: ``--candidate``, or a fresh (or resumed) run of the sweep."""
    if args.candidate is not None:
        return read_candidate(args.candidate), None
    if args.results_dir is not None:
        out, seconds = run_sweep(args.results_dir, args.n_jobs, args.overrides, _conf_dirs(args))
        return read_candidate(out), seconds
    with tempfile.TemporaryDirectory(prefix="duff-regress-", dir=scratch_dir()) as tmp:
        out, seconds = run_sweep(Path(tmp), args.n_jobs, args.overrides, _conf_dirs(args))
        return read_candidate(out), seconds


def _update(args: argparse.Namespace) -> int:
    current = build_plan(regression_config(args.overrides), _conf_dirs(args)).config_hash
    candidate, seconds = _obtain(args)
    if candidate.config_hash != current:
        raise GateInputError(
            f"--update needs a run of the current {EXPERIMENT} config ({current[:12]}); "
            f"the candidate's config is {candidate.config_hash[:12]}"
        )
    baseline = make_baseline(candidate)
    try:
        comparison = render(compare(read_baseline(args.baseline), candidate), seconds=seconds)
        print(f"compared with the previous baseline:\n{comparison}")
    except GateInputError as err:
        print(f"(no comparison with the previous baseline: {err})")
    write_baseline(args.baseline, baseline)
    tol = baseline["tolerance"]
    print(
        f"wrote {args.baseline}: {len(baseline)} cells, config {current[:12]}, tolerance "
        f"(log-ratio) min {tol.min():.3f} / median {tol.median():.3f} / max {tol.max():.3f}"
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    baseline = read_baseline(args.baseline)
    if args.candidate is None:
        plan = build_plan(regression_config(args.overrides), _conf_dirs(args))
        if plan.config_hash != baseline["config_hash"].iloc[0]:
            given = f" with overrides {' '.join(args.overrides)}" if args.overrides else ""
            raise GateInputError(
                f"the sweep conf/experiment/{EXPERIMENT}.yaml{given} (or an entry it names) "
                f"is not the baseline's (config {plan.config_hash[:12]} vs baseline "
                f"{baseline['config_hash'].iloc[0][:12]}); if on purpose, rewrite the baseline "
                "with --update"
            )
    candidate, seconds = _obtain(args)
    report = compare(baseline, candidate)
    print(render(report, seconds=seconds))
    return 0 if report.passed else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``duff-regress``); returns the exit status (see the docstring)."""
    args = _parser().parse_args(argv)
    if args.candidate is not None and args.results_dir is not None:
        _parser().error("--candidate and --results-dir exclude each other")
    if args.candidate is not None and args.overrides:
        _parser().error("overrides describe the sweep to run; --candidate has already run")
    try:
        return _update(args) if args.update else _check(args)
    except (
        GateInputError,
        ConfigError,
        DatasetError,
        ResultsDirError,
        results_reader.ResultsError,
    ) as err:
        print(f"duff-regress: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
