"""Write ``benchmarks/results.md`` and ``benchmarks/release_cost.png`` from the JSON results.

Reads ``benchmarks/results/{release,sweep,memory}.json`` (written by the
``bench_*.py`` scripts; a missing file leaves its section out) and checks each
measurement against the targets of the scaling issue:

* every mechanism within 1.5× of ``np.sort`` at n >= 10^5;
* the releases by selection (Duff, the quantile EM) within 0.5× of it at n >= 10^6;
* parallel efficiency >= 80 % at 2 workers;
* the full figure1 experiment in under 2 minutes of wall time (2 cores);
* peak memory of a sweep bounded by a few datasets, not by the sweep's size.

Usage::

    python benchmarks/report.py
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RATIO_TARGET, RATIO_FROM_N = 1.5, 10**5
SELECTION_TARGET, SELECTION_FROM_N = 0.5, 10**6
SELECTING = ("duff", "quantile_em")
"""Benchmark labels that start with these release by selection (mechanisms.selection)."""
EFFICIENCY_TARGET = 0.8
WALL_TARGET = 120.0
MEMORY_TARGET_DATASETS = 8.0  # "a few datasets' worth" for 2 workers + the parent


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def release_section(release: dict) -> list[str]:
    rows = release["rows"]
    labels = list(rows[0]["ratio"])
    sizes = " | ".join(f"n = {r['n']:.0e}" for r in rows)
    head = f"| mechanism | {sizes} | ≤ 1.5× at n ≥ 1e5 | ≤ 0.5× at n ≥ 1e6 (selection) |"
    lines = [
        "## Per-release cost (ratio to `np.sort` of the same unsorted data)",
        "",
        f"release(data, bounds) + sample({release['trials']}), ε = {release['epsilon']}, "
        "δ = 1/n, N(0, 1) data on [-10, 10]; CPU time, median over repetitions "
        "interleaved with the sort.  Load average after the run: "
        + ", ".join(f"{x:.1f}" for x in release["load_average"])
        + ".",
        "",
        head,
        "|" + "---|" * (len(rows) + 3),
        "| `np.sort` (ms) | "
        + " | ".join(f"{r['sort_seconds'] * 1e3:.3g}" for r in rows)
        + " | | |",
        "| `np.partition` (median) | "
        + " | ".join(f"{r['partition_ratio']:.2f}" for r in rows)
        + " | | |",
    ]
    for label in labels:
        large = [r for r in rows if r["n"] >= RATIO_FROM_N]
        within = [
            r["n"]
            for i, r in enumerate(large)
            if all(later["ratio"][label] <= RATIO_TARGET for later in large[i:])
        ]
        note = verdict(bool(large) and len(within) == len(large))
        if within and len(within) < len(large):
            note += f" (met from n = {within[0]:.0e})"
        cells = " | ".join(f"{r['ratio'][label]:.2f}" for r in rows)
        lines.append(f"| {label} | {cells} | {note} | {selection_note(rows, label)} |")
    lines += [
        "",
        "One-off cost of the first release at each n (public tuning fills its cache "
        "here; seconds):",
        "",
        "| mechanism | " + " | ".join(f"n = {r['n']:.0e}" for r in rows) + " |",
        "|" + "---|" * (len(rows) + 1),
    ]
    for label in labels:
        cells = " | ".join(f"{r['first_call_seconds'][label]:.3g}" for r in rows)
        lines.append(f"| {label} | {cells} |")
    return lines


def selection_note(rows: list[dict], label: str) -> str:
    """Whether a mechanism that releases by selection is within 0.5× of np.sort at n >= 1e6."""
    if not label.startswith(SELECTING):
        return ""
    large = [r["ratio"][label] for r in rows if r["n"] >= SELECTION_FROM_N]
    return verdict(bool(large) and max(large) <= SELECTION_TARGET) if large else ""


def plot_release(release: dict, path: Path) -> None:
    rows = release["rows"]
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.plot(ns, [r["sort_seconds"] for r in rows], "k--", lw=2, label="np.sort")
    for label in rows[0]["seconds"]:
        ax.plot(ns, [r["seconds"][label] for r in rows], marker="o", ms=3, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (points per dataset)")
    ax.set_ylabel("seconds per release (release + sample)")
    ax.set_title("Per-release cost against n (log-log)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
                f"(target < {WALL_TARGET:.0f} s): "
                f"{verdict(loky2['wall_seconds'] < WALL_TARGET)}."
            )
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


def main() -> None:
    lines = [
        "# Benchmarks",
        "",
        "Written by `python benchmarks/report.py` from `benchmarks/results/*.json`; "
        "see `benchmarks/README.md` for how to rerun each measurement.",
        "",
    ]
    release, sweep, memory = load("release"), load("sweep"), load("memory")
    if release:
        host = release["host"]
        lines += [f"Host: {host['platform']}, {host['cpu_count']} cores.", ""]
        lines += [*release_section(release), ""]
        plot_release(release, HERE / "release_cost.png")
        lines += ["![per-release cost against n](release_cost.png)", ""]
    if sweep:
        lines += [*sweep_section(sweep), ""]
    if memory:
        lines += [*memory_section(memory), ""]
    (HERE / "results.md").write_text("\n".join(lines))
    print(f"wrote {HERE / 'results.md'}")


if __name__ == "__main__":
    main()
