"""The text of ``figure1_ratios.md``: Figure 1's numbers as Markdown tables.

Sections: the setup (ours beside section 6.1's), the paper's quoted ratios beside
ours, the ratio of every baseline to Duff at every ε, the mean error (mean ± sd
across datasets), the privacy guarantee each mechanism reports (``guarantee_*``
and ``rho`` columns of the summary), the rows left out, and a section of notes
copied verbatim from a file written by hand: this module writes no explanations
of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from experiments.reports import families, style
from experiments.reports.figure1.data import (
    PAPER_BOUNDS,
    PAPER_SETUP,
    TRUTHS,
    Figure1,
    failure_counts,
    guarantees,
    series_order,
    setup_summary,
)
from experiments.reports.figure1.plot import series_label
from experiments.reports.tables import markdown_table, three_digits, value_text

POPULATION_NOTE = " (θ the population median of the dataset's law, not the sample's)"

GUARANTEE_HEADER = [
    "mechanism",
    "ε (requested)",
    "δ (requested)",
    "guarantee ε",
    "guarantee δ",
    "ρ (zCDP)",
    "neighbouring",
    "private",
]


def paper_table(comparison: pd.DataFrame, tolerance: float, palette: style.Palette) -> str:
    """Markdown: paper's quoted ratio, ours (each matching series), and whether they agree."""
    rows = []
    for r in comparison.itertuples(index=False):
        paper_delta = "0" if r.paper_delta == "0" else "1/n"
        verdict = "not run" if r.agrees is None else ("yes" if r.agrees else "**no**")
        rows.append(
            [
                style.dataset_title(r.dataset),
                palette.name(r.mechanism) if r.mechanism else families.family(r.family).name,
                value_text(r.epsilon),
                paper_delta,
                value_text(r.delta),
                three_digits(r.paper, "×"),
                three_digits(r.ours, "×"),
                three_digits(r.ours / r.paper),
                verdict,
            ]
        )
    header = [
        "distribution",
        "baseline",
        "ε",
        "δ (paper)",
        "δ (ours)",
        "paper",
        "ours",
        "ours / paper",
    ]
    return markdown_table([*header, f"agrees within {tolerance:.0%}?"], rows)


def _per_dataset(
    frame: pd.DataFrame,
    datasets: Sequence[str],
    palette: style.Palette,
    cell: Callable[[pd.DataFrame], str],
    title: Callable[[str, pd.DataFrame], str],
) -> str:
    """One table per dataset of ``frame``: rows ε, columns the series in drawing order,
    ``cell(rows of that ε and series)`` in each cell (an em dash where there are none)."""
    parts = []
    series = series_order(frame, palette)
    for dataset in datasets:
        part = frame.loc[frame["dataset"] == dataset]
        if part.empty:
            continue
        header = ["ε", *(series_label(palette, m, d) for m, d in series)]
        rows = []
        for epsilon in sorted(part["epsilon"].unique()):
            cells = [value_text(epsilon)]
            for mechanism, delta in series:
                match = part.loc[
                    (part["epsilon"] == epsilon)
                    & (part["mechanism"] == mechanism)
                    & (part["delta"] == delta)
                ]
                cells.append(cell(match) if len(match) else "—")
            rows.append(cells)
        parts.append(title(dataset, part) + "\n\n" + markdown_table(header, rows))
    return "\n\n".join(parts)


def ratio_tables(ratios: pd.DataFrame, datasets: Sequence[str], palette: style.Palette) -> str:
    """Markdown, one table per dataset: rows ε, columns baselines, cells error / Duff error."""
    return _per_dataset(
        ratios,
        datasets,
        palette,
        lambda match: three_digits(float(match["ratio"].iloc[0]), "×"),
        lambda dataset, _: f"**{style.dataset_title(dataset)}**",
    )


def error_tables(agg: pd.DataFrame, datasets: Sequence[str], palette: style.Palette) -> str:
    """Markdown, one table per dataset: mean ± sd of the per-dataset mean error.

    A cell shows ``[k]`` when it averages fewer datasets than the most in that table.
    """
    most = agg.groupby("dataset")["datasets"].max()

    def cell(match: pd.DataFrame) -> str:
        r = match.iloc[0]
        text = f"{three_digits(r['mean_error'])} ± {three_digits(r['sd_error'])}"
        if int(r["datasets"]) < int(most[r["dataset"]]):
            text += f" [{int(r['datasets'])}]"
        return text

    def title(dataset: str, part: pd.DataFrame) -> str:
        return (
            f"**{style.dataset_title(dataset)}** ({int(part['datasets'].max())} datasets per cell"
            " unless marked [k])"
        )

    return _per_dataset(agg, datasets, palette, cell, title)


def guarantee_table(table: pd.DataFrame, palette: style.Palette) -> str:
    """Markdown: requested (ε, δ) beside the guarantee each mechanism reports."""
    order = sorted(
        table.itertuples(index=False),
        key=lambda r: (palette.sort_key(r.mechanism), r.delta, r.epsilon),
    )
    rows = [
        [
            palette.name(r.mechanism),
            value_text(r.epsilon),
            value_text(r.delta),
            r.guarantee_epsilon,
            r.guarantee_delta,
            r.rho,
            r.neighbouring,
            r.private,
        ]
        for r in order
    ]
    return markdown_table(GUARANTEE_HEADER, rows)


def setup_table(setup: pd.DataFrame) -> str:
    """Markdown: our replicates, trials, n and bounds beside section 6.1's."""
    rows = [
        [
            style.dataset_title(r.dataset),
            f"{r.datasets} / {PAPER_SETUP['datasets']}",
            f"{r.trials} / {PAPER_SETUP['trials']}",
            f"{r.n} / {PAPER_SETUP['n']}",
            f"{r.bounds} / {PAPER_BOUNDS.get(r.dataset, '—')}",
        ]
        for r in setup.itertuples(index=False)
    ]
    header = ["distribution", "datasets (ours / paper)", "trials per dataset", "n", "[a, b]"]
    return markdown_table(header, rows)


def failure_table(failed: pd.DataFrame, palette: style.Palette) -> str:
    """Markdown: counts of excluded rows, or a sentence saying there were none."""
    if failed.empty:
        return "None: every row has status `ok`."
    rows = [
        [
            style.dataset_title(str(r.dataset)),
            palette.name(str(r.mechanism)),
            value_text(r.epsilon),
            value_text(r.delta),
            str(r.rows),
            r.status.replace("|", "\\|").replace("\n", " "),
        ]
        for r in failure_counts(failed).itertuples(index=False)
    ]
    return markdown_table(["distribution", "mechanism", "ε", "δ", "rows", "status"], rows)


def build_report(figure: Figure1, notes: str | None, notes_path: Path) -> str:
    """The full text of ``figure1_ratios.md`` (``notes``: the hand-written section, None
    when the file ``notes_path`` does not exist)."""
    if notes is None:
        notes_text = (
            f"_No notes file found at `{notes_path}`. This section is written by hand after "
            "the reference run; this script does not generate explanations._"
        )
    else:
        notes_text = notes.strip()
    palette, datasets = figure.palette, figure.datasets
    sections = [
        "# Figure 1: Duff against the baselines (Duff paper, section 6.1)",
        f"Generated by `scripts/plot_figure1.py` from `{figure.summary_path}`. "
        f"Error of a mechanism on one dataset = mean of {TRUTHS[figure.truth]} over its trials"
        f"{POPULATION_NOTE if figure.truth == 'population' else ''}; "
        "the figures below average that over datasets. "
        "Ratio = baseline's mean error / Duff's mean error at the same ε (> 1: Duff is better).",
        "## Setup (ours / paper)",
        setup_table(setup_summary(figure.ok)),
        "## Ratios quoted in the paper",
        "Section 6.1 quotes these for N(0, 1). It gives δ = 1/|S| = 0.001 for SmoothSens_ε,δ; "
        "it does not give LaplaceLN's δ for Figure 1, so δ = 1/n is assumed (section 6.2 uses it). "
        "Each quote is compared with every series of that mechanism tuned as in the paper "
        "(on the data), whatever its neighbours. "
        f'"Agrees" means |ours / paper − 1| ≤ {figure.tolerance:g}.',
        paper_table(figure.comparison, figure.tolerance, palette),
        "## Ratio to Duff at every ε",
        ratio_tables(figure.ratios, datasets, palette),
        "## Mean error (mean ± sd across datasets)",
        error_tables(figure.agg, datasets, palette),
        "## Privacy guarantee actually given",
        "As reported by each mechanism (`guarantee_*`, `rho` columns of the summary). "
        "A zCDP mechanism's (ε, δ) is its conversion, which can be far above the requested ε. "
        "`private` is false when parameters were tuned on the private data.",
        guarantee_table(guarantees(figure.ok), palette),
        "## Excluded rows (status != ok)",
        failure_table(figure.failed, palette),
        "## Where the reproduction disagrees, and why",
        notes_text,
    ]
    return "\n\n".join(sections) + "\n"
