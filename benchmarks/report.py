"""Write ``benchmarks/results.md`` and ``benchmarks/release_cost.png`` from the JSON results.

Reads ``benchmarks/results/{release,release_before,sweep,memory,small*,racing,harness*,
black_box_audit}.json`` (written by the ``bench_*.py`` scripts; a missing file leaves its
section out) and checks each measurement against the targets of the scaling issues:

* the per-release targets (:mod:`report_release`): every mechanism within 1.5× of
  ``np.sort`` at n >= 10^5, the releases by selection within 0.5× of it at n >= 10^6,
  Duff's warm release + sample(100) at n = 10^3 in at most 20 µs;
* parallel efficiency >= 85 % at 2 workers;
* the full figure1 experiment in at most 5 s of wall time (2 cores), the regression gate
  in at most 3 s;
* peak memory of a sweep bounded by a few datasets, not by the sweep's size;
* the faster of Duff's two exact samplers is the default (``inverse_cdf``, unless
  racing is faster somewhere);
* the black-box privacy audit (``bench_black_box_audit.py``) never flags a correct
  mechanism and detects a 2ε bug (×2 inflation) of each one in every run;
* the targets of issue 31 against an older checkout (``bench_targets.py``): ``figure1``
  at most 0.4× its time, the gate at most 0.5×, Duff's small release at most 25 µs.

Usage::

    python benchmarks/report.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from report_release import (
    before_after_section,
    plot_release,
    release_section,
    small_section,
    speed_section,
    verdict,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
HARNESS_ROWS = 8
SHOWN = {
    "levels": ("levels", str),
    "n": ("n", lambda n: f"{n:.0e}"),
    "epsilon": ("ε", lambda e: f"{e:g}"),
}
"""The heading and the format of each key column of the racing tables."""
EFFICIENCY_TARGET = 0.85
WALL_TARGET = 5.0
GATE_TARGET = 3.0
MEMORY_TARGET_DATASETS = 8.0  # "a few datasets' worth" for 2 workers + the parent


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def labelled(pattern: str) -> list[dict]:
    """The result files matching ``pattern``, the run labelled ``before`` first."""
    runs = [json.loads(path.read_text()) for path in sorted(RESULTS.glob(pattern))]
    return sorted(runs, key=lambda run: run["label"] != "before")


def sweep_section(sweep: dict) -> list[str]:
    lines = [
        f"## Sweep throughput (figure1, {sweep['replicates']} replicates per distribution)",
        "",
        "| run | units | wall (s) | units/s | wall efficiency | CPU (s) | CPU efficiency |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sweep["runs"]:
        efficiency = f"{r['efficiency']:.0%}" if "efficiency" in r else ""
        cpu_efficiency = f"{r['cpu_efficiency']:.0%}" if "cpu_efficiency" in r else ""
        lines.append(
            f"| {r['label']} | {r['units']} | {r['wall_seconds']:.1f} | "
            f"{r['units_per_second']:.1f} | {efficiency} | {r['cpu_seconds']:.1f} | "
            f"{cpu_efficiency} |"
        )
    loky2 = next((r for r in sweep["runs"] if r["label"] == "loky n_jobs=2"), None)
    lines.append("")
    lines.append(
        "Load average before / after: "
        + ", ".join(f"{x:.1f}" for x in sweep["load_average_before"])
        + " / "
        + " ; ".join(", ".join(f"{x:.1f}" for x in r["load_average_after"]) for r in sweep["runs"])
        + "."
    )
    if loky2 is not None and "efficiency" in loky2:
        full = sweep["replicates"] == 100
        lines += [
            "",
            f"* Parallel efficiency at 2 workers: {loky2['efficiency']:.0%} of wall time "
            f"(target >= {EFFICIENCY_TARGET:.0%}): "
            f"{verdict(loky2['efficiency'] >= EFFICIENCY_TARGET)}; by CPU time "
            f"{loky2['cpu_efficiency']:.0%} (the bound on an idle machine).",
        ]
        if full:
            lines.append(
                f"* Full figure1 wall time at n_jobs = 2: {loky2['wall_seconds']:.1f} s "
                f"(target <= {WALL_TARGET:.0f} s): "
                f"{verdict(loky2['wall_seconds'] <= WALL_TARGET)}."
            )
    if "gate" in sweep:
        gate = sweep["gate"]
        lines += [
            "",
            f"The regression gate (`duff-regress --n-jobs {gate['n_jobs']}`, from a fresh "
            "interpreter: start-up, plan, sweep, comparison):",
            "",
            f"| n_jobs | wall (s) | ≤ {GATE_TARGET:.0f} s |",
            "|---|---|---|",
            f"| {gate['n_jobs']} | {gate['wall_seconds']:.1f} | "
            f"{verdict(gate['wall_seconds'] <= GATE_TARGET)} |",
        ]
    return lines


def memory_section(memory: dict) -> list[str]:
    base = memory["baseline"]
    lines = [
        "## Peak memory of a sweep",
        "",
        f"Method: {memory['method']}.  Baseline (same sweep at n = {base['n']}: "
        f"interpreters and libraries): {base['peak_tree_rss_mb']:.0f} MB for the tree, "
        f"{base['peak_worker_rss_mb']:.0f} MB for the largest worker.",
        "",
        "| n | replicates | units | n_jobs | wall (s) | dataset (MB) | peak tree RSS (MB) | "
        "above baseline (datasets) | peak parent (MB) | peak worker (MB) | "
        "max child ru_maxrss (MB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in memory["rows"]:
        lines.append(
            f"| {r['n']:.0e} | {r['replicates']} | {r['units']} | {r['n_jobs']} | "
            f"{r['wall_seconds']:.1f} | {r['dataset_mb']:.0f} | {r['peak_tree_rss_mb']:.0f} | "
            f"{r['above_baseline_datasets']:.1f} | {r['peak_parent_rss_mb']:.0f} | "
            f"{r['peak_worker_rss_mb']:.0f} | {r['children_ru_maxrss_mb']:.0f} |"
        )
    above = [r["above_baseline_datasets"] for r in memory["rows"]]
    peaks = [r["peak_tree_rss_mb"] for r in memory["rows"]]
    flat = max(peaks) <= 1.1 * min(peaks)
    ok = flat and max(above) <= MEMORY_TARGET_DATASETS
    lines += [
        "",
        f"* Peak memory above the baseline: at most {max(above):.1f} datasets' worth "
        f"({max(above) / memory['rows'][0]['n_jobs']:.1f} per worker), the same "
        f"(within {100 * (max(peaks) / min(peaks) - 1):.1f} %) for sweeps of "
        + ", ".join(str(r["units"]) for r in memory["rows"])
        + f" units (target: a few datasets, <= {MEMORY_TARGET_DATASETS:.0f} for "
        f"{memory['rows'][0]['n_jobs']} workers, independent of the sweep's size): "
        f"{verdict(ok)}.",
    ]
    return lines


def harness_section(runs: list[dict]) -> list[str]:
    """Where a sweep's single-core time goes, per part, for each labelled harness run."""
    lines = [
        "## Where a sweep's time goes (single core, projected from a slice)",
        "",
        "`bench_harness.py`: the units of the first replicates run in one process with "
        "timers around the harness's steps, projected to the whole sweep; CPU seconds.",
        "",
    ]
    experiments = sorted({r["experiment"] for run in runs for r in run["runs"]})
    for experiment in experiments:
        found = [
            (run["label"] or "run", r)
            for run in runs
            for r in run["runs"]
            if r["experiment"] == experiment
        ]
        parts = list(found[0][1]["rows"][0]["seconds"])
        lines += [
            f"{experiment} ({found[0][1]['cells']} cells):",
            "",
            "| run | " + " | ".join(parts) + " | total | harness share |",
            "|" + "---|" * (len(parts) + 3),
        ]
        for label, r in found:
            totals = {p: sum(row["seconds"][p] for row in r["rows"]) for p in parts}
            total = sum(totals.values())
            harness = total - totals["mechanism"]
            lines.append(
                f"| {label} | "
                + " | ".join(f"{totals[p]:.1f}" for p in parts)
                + f" | {total:.1f} | {harness / total:.0%} |"
            )
        lines.append("")
        label, last = found[-1]
        lines += [
            f"Slowest (mechanism, statistic) pairs in the {label} run (CPU seconds, projected):",
            "",
            "| mechanism | statistic | units | mechanism (s) | harness (s) |",
            "|---|---|---|---|---|",
        ]
        for row in last["rows"][:HARNESS_ROWS]:
            seconds = row["seconds"]
            harness = sum(seconds.values()) - seconds["mechanism"]
            lines.append(
                f"| {row['mechanism']} | {row['statistic']} | {row['units']} | "
                f"{seconds['mechanism']:.1f} | {harness:.1f} |"
            )
        lines.append("")
    return lines[:-1]


def racing_section(racing: dict) -> list[str]:
    """The Duff paper's racing sampler (Algorithm 1) against inversion: ns per draw."""

    def table(caption: str, keys: list[str], rows: list[dict]) -> list[str]:
        head = [
            *(SHOWN[key][0] for key in keys),
            "draws",
            "inverse cdf (ns/draw)",
            "racing (ns/draw)",
            "racing / inverse",
        ]
        lines = [caption, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            ns, shown = r["ns_per_draw"], [SHOWN[key][1](r[key]) for key in keys]
            cells = [*shown, str(r["draws"]), f"{ns['inverse_cdf']:.1f}", f"{ns['racing']:.1f}"]
            lines.append("| " + " | ".join([*cells, f"{r['ratio']:.2f}"]) + " |")
        return [*lines, ""]

    ratios = [r["ratio"] for r in (*racing["by_levels"], *racing["at_sweep_sizes"])]
    return [
        "## Duff's two exact samplers: racing (Algorithm 1) against the inverse cdf",
        "",
        *table(
            "Per draw, on a release built once (N levels, one per gap):",
            ["levels"],
            racing["by_levels"],
        ),
        *table(
            "Per release (build on sorted N(0, 1) data on [-10, 10] + sample), per draw:",
            ["n", "epsilon", "levels"],
            racing["at_sweep_sizes"],
        ),
        f"* Racing / inverse cdf: {min(ratios):.2f}× to {max(ratios):.2f}× over the "
        f"{len(ratios)} settings; the default sampler stays the inverse cdf: "
        f"{verdict(min(ratios) >= 1.0)}.",
    ]


def black_box_section(power: dict) -> list[str]:
    """The black-box audit's power: detection rate of each ε inflation, the smallest detected."""
    p = power["parameters"]
    lines = [
        "## Power of the black-box privacy audit",
        "",
        f"Claimed ε = {p['epsilon']:g}, the mechanism run at f·ε; {p['samples']} outputs per "
        f"side (the default budget), {p['runs']} audits per cell, family-wise level 1e-9; "
        f"`python benchmarks/bench_black_box_audit.py` ({power['wall_seconds']:.0f} s).",
        "",
        "| mechanism | f | true ε | detected | median ε_lower | max ε_lower | s/audit |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in power["rows"]:
        lines.append(
            f"| {r['mechanism']} | ×{r['factor']:g} | {r['true_epsilon']:.3f} | "
            f"{r['detected']:.0%} | {r['median_epsilon_lower']:.3f} | "
            f"{r['max_epsilon_lower']:.3f} | {r['seconds_per_audit']:.3f} |"
        )
    detected = f"smallest f detected in >= {p['power']:.0%} of runs"
    lines += ["", f"| mechanism | {detected} |", "|---|---|"]
    for name, factor in power["smallest_detected"].items():
        lines.append(f"| {name} | {'none' if factor is None else f'×{factor:g}'} |")
    correct = all(r["detected"] == 0 for r in power["rows"] if r["true_epsilon"] <= p["epsilon"])
    doubled = all(r["detected"] == 1 for r in power["rows"] if r["factor"] == 2)
    return [
        *lines,
        "",
        f"* No mechanism with true ε <= the claim flagged: {verdict(correct)}; "
        f"the ×2 inflation (the 2ε bug) flagged in every run: {verdict(doubled)}.",
    ]


def peers_section(peers: dict) -> list[str]:
    """The peer libraries beside ours: accuracy at n = 1000 and time / np.sort against n."""
    p = peers["parameters"]
    sizes = [t["n"] for t in peers["rows"][0]["timing"]]
    lines = [
        "## The peer libraries beside ours",
        "",
        f"N(0, 1) on [{p['bounds'][0]:g}, {p['bounds'][1]:g}], ε = {p['epsilon']:g}. Accuracy: "
        f"n = 1000, {p['datasets']} datasets × {p['draws']} draws. Time: one release + "
        f"`sample(1)` as a ratio to `np.sort` of the same data, median of {p['repeats']} "
        f"(— : skipped after a call over {p['limit_seconds']:g} s); "
        f"`python benchmarks/bench_peers.py` ({peers['wall_seconds']:.0f} s).",
        "",
        "| mechanism | mean abs. error | mean rank error | "
        + " | ".join(f"n = 10^{round(math.log10(n))}" for n in sizes)
        + " |",
        "|---|---|---|" + "---|" * len(sizes),
    ]
    for row in peers["rows"]:
        times = ["—" if t["ratio"] is None else f"{t['ratio']:.3g}×" for t in row["timing"]]
        lines.append(
            f"| {row['mechanism']} | {row['mean_abs_error']:.3g} | "
            f"{row['mean_rank_error']:.3g} | " + " | ".join(times) + " |"
        )
    return lines


def targets_section(targets: dict) -> list[str]:
    """Issue 31's targets: each sweep's median wall time on both trees, and their ratio."""
    before, after = targets["medians"]["before"], targets["medians"]["after"]
    goal = targets["targets"]
    lines = [
        f"## Speed targets against {targets['before_commit']} (issue 31)",
        "",
        f"`bench_targets.py`: both trees interleaved, {targets['rounds']} rounds each, every "
        "command a fresh process on 2 cores (wall seconds; CPU seconds of the process tree "
        "in parentheses; median of the rounds).  Load average after the run: "
        + ", ".join(f"{x:.1f}" for x in targets["load_average"])
        + ".",
        "",
        "| measurement | before | after | after / before | target | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    names = {"figure1": "paper-scale `figure1` (`n_jobs=2`)", "gate": "regression gate"}
    for key, name in names.items():
        old, new = before[key], after[key]
        ratio = new["wall"] / old["wall"]
        lines.append(
            f"| {name} | {old['wall']:.1f} s ({old['cpu']:.0f}) | {new['wall']:.1f} s "
            f"({new['cpu']:.0f}) | {ratio:.2f}× | ≤ {goal[key]}× | {verdict(ratio <= goal[key])} |"
        )
    old_us, new_us = before["small"]["duff"], after["small"]["duff"]
    lines.append(
        f"| Duff release + sample(100), n = 1e3 | {old_us:.1f} µs | {new_us:.1f} µs | "
        f"{new_us / old_us:.2f}× | ≤ {goal['small_us']:.0f} µs | "
        f"{verdict(new_us <= goal['small_us'])} |"
    )
    return lines


def main() -> None:
    lines = [
        "# Benchmarks",
        "",
        "Written by `python benchmarks/report.py` from `benchmarks/results/*.json`; "
        "see `benchmarks/README.md` for how to rerun each measurement.",
        "",
    ]
    release, sweep, memory = load("release"), load("sweep"), load("memory")
    racing, power, peers = load("racing"), load("black_box_audit"), load("peers")
    harness, small = labelled("harness*.json"), labelled("small*.json")
    targets = load("targets")
    if targets:
        lines += [*targets_section(targets), ""]
    if release:
        host = release["host"]
        lines += [f"Host: {host['platform']}, {host['cpu_count']} cores.", ""]
        for table in release["tables"]:
            lines += [*release_section(release, table), ""]
        lines += [*speed_section(release["tables"][0]), ""]
        before = load("release_before")
        if before:
            lines += [*before_after_section(before, release), ""]
        plot_release(release["tables"][-1], HERE / "release_cost.png")
        lines += ["![per-release cost against n](release_cost.png)", ""]
    if sweep:
        lines += [*sweep_section(sweep), ""]
    if memory:
        lines += [*memory_section(memory), ""]
    if small:
        lines += [*small_section(small), ""]
    if harness:
        lines += [*harness_section(harness), ""]
    if racing:
        lines += [*racing_section(racing), ""]
    if power:
        lines += [*black_box_section(power), ""]
    if peers:
        lines += [*peers_section(peers), ""]
    (HERE / "results.md").write_text("\n".join(lines))
    print(f"wrote {HERE / 'results.md'}")


if __name__ == "__main__":
    main()
