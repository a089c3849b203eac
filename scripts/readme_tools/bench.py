"""The README's Scale section, numbers and side-by-side table, from ``benchmarks/results.md``.

``benchmarks/report.py`` writes that file from one run of ``make benchmarks``;
these functions read its tables (:mod:`readme_tools.reference_tables`) by
their section headings, so every figure the README quotes about speed is one the
benchmark measured:

* per release (``release + sample(1)``, ratios to ``np.sort`` of the same data): the
  selection target (≤ 0.5× at n ≥ 10⁶);
* Duff's warm release at n = 10³ before and after (``bench_small.py``);
* the figure1 sweep and the regression gate (wall time, parallel efficiency), and
  where a sweep's single-core time goes before and after (``bench_harness.py``);
* the racing sampler against inversion;
* the speed targets of issue 31 against an older checkout (``bench_targets.py``).
"""

from __future__ import annotations

from pathlib import Path

from readme_tools.reference_tables import NumbersError, Table, number, pick
from readme_tools.values import BENCH, Numbers, count, decimals, figures, fixed, marked_block, span

SELECTION = "≤ 0.5× at n ≥ 1e6 (selection)"
"""The column whose cell only the mechanisms with the selection target fill."""
SORT_TARGET = "≤ 1.5× at n ≥ 1e5"
"""The column of every mechanism's verdict (``peer`` for a peer library, empty for the
``np.sort`` and ``np.partition`` reference rows)."""
PEER = "peer"
SORT, PARTITION = "`np.sort` (ms)", "`np.partition` (median)"


def column(n: int) -> str:
    """The heading of the column of size ``n``: ``n = 1e+06``."""
    return f"n = {n:.0e}"


def per_release(root: Path) -> Table:
    """The ratio table of ``release + sample(1)``."""
    return pick(root, BENCH, "Per-release cost, sample(1)", "release(data, bounds)")


def ours(table: Table) -> list[dict[str, str]]:
    """The rows of this project's mechanisms (not the references, not the peers)."""
    return [r for r in table.rows if r[SORT_TARGET] not in ("", PEER)]


def release_numbers(root: Path) -> Numbers:
    """Selection against np.sort and np.partition, and Duff's small-data cost."""
    one = per_release(root)
    selecting = [r for r in ours(one) if r[SELECTION]]
    out = {"bench.sort_1e6": one.get({"mechanism": SORT}, column(10**6))}
    out["bench.partition_1e6"] = one.get({"mechanism": PARTITION}, column(10**6))
    for k in (6, 7):
        ratios = [number(c, BENCH) for c in one.cells(selecting, column(10**k))]
        out |= span(f"bench.select_1e{k}", ratios, decimals(2))
    met = one.cells(selecting, SELECTION).count("met")
    out["bench.select_target"] = "all" if met == len(selecting) else f"{met} of {len(selecting)}"
    out["bench.selecting"] = count(len(selecting))
    return out | small_numbers(root)


def small_numbers(root: Path) -> Numbers:
    """Duff's warm release + sample(100) at n = 10³ (``bench_small.py``): µs and ratio to the
    sort, before and after."""
    table = pick(root, BENCH, "Small data, warm")
    out = {}
    for run in ("before", "after"):
        micro, times = table.get({"run": run}, "duff").split("(", 1)
        out[f"bench.small_{run}_us"] = fixed(number(micro, BENCH), 0)
        out[f"bench.small_{run}_ratio"] = fixed(number(times, BENCH), 1)
    sort = table.numbers("`np.sort` (µs)", {"run": "after"})[0]
    return out | {"bench.small_sort_us": fixed(sort, 0)}


def sweep_numbers(root: Path) -> Numbers:
    """The figure1 sweep's wall time and efficiency, the gate's wall time, peak memory."""
    sweep, loky2 = pick(root, BENCH, "Sweep throughput"), {"run": "loky n_jobs=2"}
    runs = {"loky1": "loky n_jobs=1", "loky2": "loky n_jobs=2", "dask": "dask 2 workers"}
    out = {f"bench.{key}_s": sweep.get({"run": run}, "wall (s)") for key, run in runs.items()}
    out["bench.loky2_round"] = fixed(number(out["bench.loky2_s"], BENCH), 0)
    out["bench.units"] = count(sweep.numbers("units", loky2)[0])
    out["bench.efficiency"] = fixed(sweep.numbers("wall efficiency", loky2)[0], 0)
    gate = pick(root, BENCH, "Sweep throughput", "The regression gate")
    out["bench.gate_s"] = fixed(gate.numbers("wall (s)")[0], 0)
    memory = pick(root, BENCH, "Peak memory")
    out["bench.memory"] = fixed(max(memory.numbers("above baseline (datasets)")), 1)
    return out | {"bench.memory_units": " and ".join(memory.cells(memory.rows, "units"))}


def harness_numbers(root: Path) -> Numbers:
    """Single-core CPU seconds of figure1 and the gate before and after, and the mechanisms'
    share after (``bench_harness.py``)."""
    out = {}
    for experiment in ("figure1", "regression"):
        table = pick(root, BENCH, "Where a sweep's time goes", experiment)
        for run in ("before", "after"):
            total = table.numbers("total", {"run": run})
            if len(total) != 1:
                raise NumbersError(f"{BENCH}: no {run!r} row for {experiment}")
            out[f"bench.{experiment}_{run}_s"] = fixed(total[0], 0)
        share = number(table.get({"run": "after"}, "harness share"), BENCH)
        out[f"bench.{experiment}_harness_share"] = fixed(share, 0)
    return out


def racing_numbers(root: Path) -> Numbers:
    """Racing (Algorithm 1) / inverse cdf, per draw, over every setting measured."""
    racing = pick(root, BENCH, "Duff's two exact samplers", "Per draw, on a release")
    per_release_table = pick(root, BENCH, "Duff's two exact samplers", "Per release")
    ratios = racing.numbers("racing / inverse") + per_release_table.numbers("racing / inverse")
    return span("bench.racing", ratios, figures(2))


TARGET_ROWS = {"figure1": "paper-scale `figure1` (`n_jobs=2`)", "gate": "regression gate"}
"""The rows of the targets table quoted, by marker name."""


def targets_numbers(root: Path) -> Numbers:
    """Issue 31's targets (``bench_targets.py``): each sweep's wall seconds before and after,
    their ratio and verdict; Duff's small release in µs."""
    table = pick(root, BENCH, "Speed targets against")
    out = {"bench.targets_before": table.section.split("against ")[1].split()[0]}
    for key, row in TARGET_ROWS.items():
        where = {"measurement": row}
        for column in ("before", "after"):
            out[f"bench.target_{key}_{column}_s"] = fixed(
                number(table.get(where, column), BENCH), 1
            )
        out[f"bench.target_{key}_ratio"] = fixed(
            number(table.get(where, "after / before"), BENCH), 2
        )
        out[f"bench.target_{key}_verdict"] = table.get(where, "verdict")
    small = {"measurement": "Duff release + sample(100), n = 1e3"}
    for column in ("before", "after"):
        out[f"bench.target_small_{column}_us"] = fixed(number(table.get(small, column), BENCH), 1)
    return out | {"bench.target_small_verdict": table.get(small, "verdict")}


def bench_numbers(root: Path) -> Numbers:
    """Every number of the Scale section."""
    return (
        release_numbers(root)
        | sweep_numbers(root)
        | harness_numbers(root)
        | racing_numbers(root)
        | targets_numbers(root)
    )


def speed_block(root: Path) -> str:
    """The side-by-side table (ms per release + sample(1)) that ``benchmarks/report.py`` marks."""
    return marked_block(root, BENCH)
