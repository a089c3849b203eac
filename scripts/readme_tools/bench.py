"""The README's Scale section, numbers and side-by-side table, from ``benchmarks/results.md``.

``benchmarks/report.py`` writes that file from one run of ``make benchmarks``;
these functions read its tables (:mod:`readme_tools.reference_tables`) by
their section headings, so every figure the README quotes about speed is one the
benchmark measured:

* per release (``release + sample(1)``, ratios to ``np.sort`` of the same data): the
  selection target (≤ 0.5× at n ≥ 10⁶), and the oracle-tuned parameter search (its
  release beyond the publicly tuned one), now and before this round's changes
  (``release_before.json``, the previous code on the same machine);
* Duff's warm release at n = 10³ before and after (``bench_small.py``);
* the figure1 sweep and the regression gate (wall time, parallel efficiency), and
  where a sweep's single-core time goes before and after (``bench_harness.py``);
* the racing sampler against inversion.
"""

from __future__ import annotations

from pathlib import Path

from readme_tools.reference_tables import NumbersError, Table, number, pick, tables
from readme_tools.values import BENCH, Numbers, count, decimals, figures, fixed, marked_block, span

SELECTION = "≤ 0.5× at n ≥ 1e6 (selection)"
"""The column whose cell only the mechanisms with the selection target fill."""
SORT_TARGET = "≤ 1.5× at n ≥ 1e5"
"""The column of every mechanism's verdict (``peer`` for a peer library, empty for the
``np.sort`` and ``np.partition`` reference rows)."""
PEER = "peer"
SORT, PARTITION = "`np.sort` (ms)", "`np.partition` (median)"
ORACLE = {"smooth_laplace": "smooth_laplace_public", "laplace_ln": "laplace_ln_public"}
"""The oracle-tuned (non-private) smooth-sensitivity medians, each with its publicly tuned
counterpart: the same release on the same window of order statistics, with parameters
read from a cache, so the difference of their times is the oracle's parameter search."""
ORACLE_Q01 = ("smooth_laplace_q0.1", "smooth_laplace_public_q0.1")
"""The same pair for the 0.1-quantile."""


def column(n: int) -> str:
    """The heading of the column of size ``n``: ``n = 1e+06``."""
    return f"n = {n:.0e}"


def per_release(root: Path) -> Table:
    """The ratio table of ``release + sample(1)``."""
    return pick(root, BENCH, "Per-release cost, sample(1)", "release(data, bounds)")


def ours(table: Table) -> list[dict[str, str]]:
    """The rows of this project's mechanisms (not the references, not the peers)."""
    return [r for r in table.rows if r[SORT_TARGET] not in ("", PEER)]


def ratio(table: Table, label: str, n: int) -> float:
    """The ratio to ``np.sort`` of ``label``'s release at size ``n``."""
    return number(table.get({"mechanism": label}, column(n)), BENCH)


def release_numbers(root: Path) -> Numbers:
    """Selection against np.sort and np.partition, the oracle-tuned parameter search, and
    Duff's small-data cost."""
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
    sort_ms = number(one.get({"mechanism": SORT}, column(10**5)), BENCH)

    def search(oracle: str, public: str) -> float:
        return (ratio(one, oracle, 10**5) - ratio(one, public, 10**5)) * sort_ms

    out |= span("bench.oracle_ms", [search(*pair) for pair in ORACLE.items()], decimals(1))
    out["bench.oracle_q01_ms"] = fixed(search(*ORACLE_Q01), 0)
    return out | before_numbers(root) | small_numbers(root)


def small_numbers(root: Path) -> Numbers:
    """Duff's warm release + sample(100) at n = 10³ (``bench_small.py``): µs and ratio to the
    sort, before and after."""
    table = pick(root, BENCH, "Small data, warm")
    out, micros = {}, {}
    for run in ("before", "after"):
        micro, times = table.get({"run": run}, "duff").split("(", 1)
        micros[run] = number(micro, BENCH)
        out[f"bench.small_{run}_us"] = fixed(micros[run], 0)
        out[f"bench.small_{run}_ratio"] = fixed(number(times, BENCH), 1)
    out["bench.small_speedup"] = fixed(micros["before"] / micros["after"], 1)
    sort = table.numbers("`np.sort` (µs)", {"run": "after"})[0]
    return out | {"bench.small_sort_us": fixed(sort, 0)}


def before_after(cell: str) -> tuple[float, float]:
    """The two numbers of a ``before → after`` cell."""
    before, arrow, after = cell.partition("→")
    if not arrow:
        raise NumbersError(f"{BENCH}: not a 'before → after' cell: {cell!r}")
    return number(before, BENCH), number(after, BENCH)


def before_numbers(root: Path) -> Numbers:
    """From the before/after table: the oracle-tuned parameter search at n = 10⁵ before this
    round's changes."""
    table = pick(root, BENCH, "Per-release cost before and after")
    sort_ms = before_after(table.get({"mechanism": SORT}, column(10**5)))[0]

    def search(oracle: str, public: str) -> float:
        before = [table.get({"mechanism": label}, column(10**5)) for label in (oracle, public)]
        return (before_after(before[0])[0] - before_after(before[1])[0]) * sort_ms

    pairs = [search(*pair) for pair in ORACLE.items()]
    out = span("bench.oracle_before_ms", pairs, decimals(1))
    return out | {"bench.oracle_q01_before_ms": fixed(search(*ORACLE_Q01), 0)}


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
    slowest = [t for t in tables(root, BENCH) if t.caption.startswith("Slowest")]
    if len(slowest) != 2:
        raise NumbersError(f"{BENCH}: {len(slowest)} tables of the slowest pairs, not 2")
    oracle_q01 = [
        number(row["mechanism (s)"], BENCH)
        for row in slowest[1].rows  # the regression gate's (experiments in sorted order)
        if row["mechanism"].endswith("_oracle") and row["statistic"] == "quantile(0.1)"
    ]
    return out | {"bench.gate_oracle_q01_s": fixed(sum(oracle_q01), 0)}


def racing_numbers(root: Path) -> Numbers:
    """Racing (Algorithm 1) / inverse cdf, per draw, over every setting measured."""
    racing = pick(root, BENCH, "Duff's two exact samplers", "Per draw, on a release")
    per_release_table = pick(root, BENCH, "Duff's two exact samplers", "Per release")
    ratios = racing.numbers("racing / inverse") + per_release_table.numbers("racing / inverse")
    return span("bench.racing", ratios, figures(2))


def bench_numbers(root: Path) -> Numbers:
    """Every number of the Scale section."""
    return (
        release_numbers(root) | sweep_numbers(root) | harness_numbers(root) | racing_numbers(root)
    )


def speed_block(root: Path) -> str:
    """The side-by-side table (ms per release + sample(1)) that ``benchmarks/report.py`` marks."""
    return marked_block(root, BENCH)
