"""The per-release sections of ``benchmarks/results.md`` (``report.py`` writes the file).

* the ratio tables of ``bench_release.py`` (release + ``sample(1)`` and + ``sample(100)``
  against ``np.sort``), with the targets: <= 1.5× at n >= 10^5 for every mechanism, and
  <= 0.5× at n >= 10^6 for those that release by selection;
* before → after, when ``results/release_before.json`` (the previous code) exists;
* the side-by-side table the README copies (between ``<!-- readme -->`` markers);
* warm releases at n = 10^3 (``bench_small.py``), with the small-data target;
* ``release_cost.png``, the cost against n.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

RATIO_TARGET, RATIO_FROM_N = 1.5, 10**5
SELECTION_TARGET, SELECTION_FROM_N = 0.5, 10**6
SELECTING = ("duff", "quantile_em", "smooth_cauchy", "smooth_laplace_public", "laplace_ln_public")
"""Benchmark labels that start with these have the selection target (mechanisms.core.selection,
mechanisms.smooth.selection): the oracle-tuned smooth-sensitivity ones select too, but their
parameter search is a target of its own."""
SPEED_SIZES = (10**3, 10**5, 10**6, 10**7)
"""The sizes of the README's side-by-side table."""
SMALL_TARGET_US = 20.0
PEER = "peer"
"""The verdict cell of a peer library's row: the targets are ours, not theirs."""


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def release_section(release: dict, table: dict) -> list[str]:
    """The ratio table of one sample size (``table["trials"]``), with the peers' rows."""
    rows, trials = table["rows"], table["trials"]
    labels = list(rows[0]["ratio"])
    sizes = " | ".join(f"n = {r['n']:.0e}" for r in rows)
    head = f"| mechanism | {sizes} | ≤ 1.5× at n ≥ 1e5 | ≤ 0.5× at n ≥ 1e6 (selection) |"
    lines = [
        f"## Per-release cost, sample({trials}) (ratio to `np.sort` of the same unsorted data)",
        "",
        f"release(data, bounds) + sample({trials}), ε = {release['epsilon']}, "
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
    for label in rows[0].get("peer_ratio", {}):
        if all(r["peer_ratio"][label] is None for r in rows):
            continue
        cells = " | ".join(
            "—" if r["peer_ratio"][label] is None else f"{r['peer_ratio'][label]:.3g}" for r in rows
        )
        lines.append(f"| {label} | {cells} | {PEER} | |")
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


def before_after_section(before: dict, after: dict) -> list[str]:
    """Ratios to ``np.sort`` of the same release in the run ``before`` (``release_before.json``,
    the code before this round) and ``after``, at the sizes and sample size both measured."""
    trials = before["tables"][0]["trials"]
    table = next(t for t in after["tables"] if t["trials"] == trials)
    sizes = [r["n"] for r in before["tables"][0]["rows"]]
    old = {r["n"]: r for r in before["tables"][0]["rows"]}
    new = {r["n"]: r for r in table["rows"] if r["n"] in old}
    labels = [label for label in old[sizes[0]]["ratio"] if label in new[sizes[0]]["ratio"]]

    def pair(b: float, a: float) -> str:
        return f"{b:.3g} → {a:.3g}"

    lines = [
        f"## Per-release cost before and after, sample({trials}) (ratio to `np.sort`)",
        "",
        f"Before: {before.get('code', 'the previous code')}, measured on this machine "
        "just before the run above; each cell is before → after.",
        "",
        "| mechanism | " + " | ".join(f"n = {n:.0e}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
        "| `np.sort` (ms) | "
        + " | ".join(
            pair(old[n]["sort_seconds"] * 1e3, new[n]["sort_seconds"] * 1e3) for n in sizes
        )
        + " |",
    ]
    for label in labels:
        cells = [pair(old[n]["ratio"][label], new[n]["ratio"][label]) for n in sizes]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def speed_section(table: dict) -> list[str]:
    """The README's side-by-side table: milliseconds per release + ``sample(1)`` (and the ratio
    to ``np.sort``) of the references, each of our median mechanisms and the peers, between
    ``<!-- readme -->`` markers (``scripts/readme_numbers.py`` copies it)."""
    rows = [r for r in table["rows"] if r["n"] in SPEED_SIZES]
    sort = {r["n"]: r["sort_seconds"] for r in rows}

    def cell(seconds: float | None, n: int) -> str:
        return "—" if seconds is None else f"{seconds * 1e3:.3g} ({seconds / sort[n]:.2g}×)"

    body = [
        (
            "`np.partition` (median)",
            [cell(r["partition_ratio"] * sort[r["n"]], r["n"]) for r in rows],
        ),
        ("`np.sort`", [cell(sort[r["n"]], r["n"]) for r in rows]),
    ]
    medians = [label for label in rows[0]["ratio"] if "_q" not in label]
    body += [(label, [cell(r["seconds"][label], r["n"]) for r in rows]) for label in medians]
    peers = [p for p in rows[0].get("peer_seconds", {}) if any(r["peer_seconds"][p] for r in rows)]
    body += [(label, [cell(r["peer_seconds"][label], r["n"]) for r in rows]) for label in peers]
    return [
        f"## Side by side: milliseconds per release + sample({table['trials']}) "
        "(ratio to `np.sort`)",
        "",
        "Medians, ε = 1, the rows of the table above; a peer is timed at a size only while "
        "its predicted release takes under the peer limit (—: not run).",
        "",
        "<!-- readme -->",
        "| mechanism | " + " | ".join(f"n = {r['n']:.0e}" for r in rows) + " |",
        "|---|" + "---:|" * len(rows),
        *(f"| {label} | " + " | ".join(cells) + " |" for label, cells in body),
        "<!-- /readme -->",
    ]


def small_section(runs: list[dict]) -> list[str]:
    """Warm releases at n = 1e3 (``bench_small.py``), each labelled run side by side, and the
    small-data target on Duff's."""
    first = runs[0]
    labels = list(first["seconds"])
    lines = [
        f"## Small data, warm: release + sample({first['trials']}) at n = {first['n']:.0e}",
        "",
        "`bench_small.py`: calls of one mechanism back to back, as within a work unit "
        "(µs per call, and the ratio to `np.sort` of the same data timed the same way).",
        "",
        "| run | `np.sort` (µs) | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * (len(labels) + 1),
    ]
    for run in runs:
        sort = run["sort_seconds"]
        cells = [f"{run['seconds'][k] * 1e6:.1f} ({run['seconds'][k] / sort:.2f}×)" for k in labels]
        lines.append(f"| {run['label']} | {sort * 1e6:.1f} | " + " | ".join(cells) + " |")
    micro = runs[-1]["seconds"]["duff"] * 1e6
    lines += [
        "",
        f"* Duff at n = {first['n']:.0e} ({runs[-1]['label']}): {micro:.1f} µs "
        f"(target <= {SMALL_TARGET_US:.0f} µs, set on a machine whose sort is faster): "
        f"{verdict(micro <= SMALL_TARGET_US)}.",
    ]
    return lines


def plot_release(table: dict, path: Path) -> None:
    rows = table["rows"]
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.plot(ns, [r["sort_seconds"] for r in rows], "k--", lw=2, label="np.sort")
    for label in rows[0]["seconds"]:
        ax.plot(ns, [r["seconds"][label] for r in rows], marker="o", ms=3, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (points per dataset)")
    ax.set_ylabel(f"seconds per release (release + sample({table['trials']}))")
    ax.set_title("Per-release cost against n (log-log)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
