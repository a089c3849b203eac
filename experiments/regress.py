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
(``mean_abs_error``; ``mean_count_gap`` for the mode: :mod:`experiments.harness.metrics`,
:data:`experiments.gate.baseline.GATE_METRICS`),

    m̄ = (1/R) Σ_r e_r        (summed exactly, :func:`math.fsum`).

The baseline (``results/baselines/regression.csv``, one row per cell) stores
``m̄`` (column ``error``), the replicate-to-replicate SD ``s`` of ``e_r``, ``R``, the
standard error of ``log m̄`` and the cell's tolerance, plus the hash of the
sweep's config and of the cell's own config; its companion
``results/baselines/regression_replicates.csv`` stores each cell's ``e_r`` themselves.

How a cell is judged (the paired test on the replicates, which share their seeds with
the baseline's; the unpaired log-ratio test where they cannot be paired; the coverage
check; exact reproduction): :mod:`experiments.gate.verdicts`.

**Code.**  ``--results-dir DIR`` resumes the sweep in ``DIR``: its unit files record the
code that computed them (:mod:`experiments.harness.code_identity`), and the units of
any other code are computed again before the comparison, so a directory filled before
the code changed is never compared as if it were the current code's.

**Configs.**  A candidate's ``run.json`` (next to its ``summary.csv``) gives its
config; each cell's config hash covers what determines that cell's numbers
(format, seed, trials, δ rule, the dataset and mechanism entries, ε), so a
candidate is refused unless every baseline cell is present with the same cell
config (a superset sweep is accepted, its extra cells ignored).

**Inputs.**  A candidate is read by :func:`experiments.harness.results_reader.load`: a
``summary.csv`` cut short, corrupt, or not one row per cell of its ``run.json``
plan is an input error, never a failed cell.  A baseline is refused when a number
is not one :func:`experiments.gate.baseline.make_baseline` can write (a non-finite, negative or zero
error or tolerance, fewer than 2 replicates, or an ``se_log`` / tolerance that does
not follow from its row by the formulas above): a tolerance of ``inf`` would
switch its cell's test off.  Either message names the file, line and column.

Exit status: 0 all cells hold, 1 a cell failed, 2 usage or input error (one line
on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.data.datasets import DatasetError
from experiments.gate.baseline import (
    BASELINE,
    EXPERIMENT,
    Candidate,
    GateInputError,
    make_baseline,
    read_baseline,
    read_candidate,
    replicates_path,
    write_baseline,
)
from experiments.gate.verdicts import compare, render
from experiments.harness import results_reader
from experiments.harness.conf_files import CONF_DIR, ConfDirs
from experiments.harness.plan import ConfigError, build_plan
from experiments.harness.results import ResultsDirError

SCRATCH = Path("/dev/shm")


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
    if not Path(args.baseline).is_file():
        print(f"(no previous baseline at {args.baseline}: this is the first)")
    else:
        try:
            comparison = render(compare(read_baseline(args.baseline), candidate), seconds=seconds)
            print(f"compared with the previous baseline:\n{comparison}")
        except GateInputError as err:
            print(f"(no comparison with the previous baseline: {err})")
    write_baseline(args.baseline, baseline)
    tol = baseline["tolerance"]
    print(
        f"wrote {args.baseline}: {len(baseline)} cells, config {current[:12]}, tolerance "
        f"(log-ratio) min {tol.min():.3f} / median {tol.median():.3f} / max {tol.max():.3f}; "
        f"their per-replicate errors (paired test) in {replicates_path(args.baseline)}"
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
