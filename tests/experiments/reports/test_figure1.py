"""Tests of ``duff-plot figure1`` (:mod:`experiments.reports.figure1` and the modules it uses)
and :mod:`experiments.reports.style`, on synthetic results directories and a tiny real run."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
from pathlib import Path

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from harness_mechanisms import CONF_DIR
from omegaconf import OmegaConf
from results_helpers import write_results

from experiments.harness import results_reader
from experiments.reports import bounds_coverage, cli, style
from experiments.reports.figure1 import command as figure1
from experiments.reports.figure1 import data as figure1_data
from experiments.reports.figure1 import plot as figure1_plot
from experiments.reports.figure1.report import paper_table
from experiments.reports.selection import median_rows, split_failed

CONF = CONF_DIR
ERROR = "duff-plot figure1: error: "


def plot(*args: object) -> int:
    """``duff-plot figure1 ARGS``; returns the exit status."""
    return cli.main(["figure1", *map(str, args)])


DATASETS = ("normal", "uniform", "beta")
EPSILONS = (0.1, 1.0, 2.0)
REPLICATES = 4
N = 1000
# label -> registry name, options, requested delta, reported guarantee epsilon (None: =
# requested), rho, private
MECHANISMS = {
    "duff": ("duff", {}, 0.0, None, None, True),
    "smooth_cauchy": ("smooth_cauchy", {}, 0.0, None, None, True),
    "smooth_laplace_oracle": ("smooth_laplace", {"tuning": "oracle"}, 1.0 / N, None, None, False),
    "laplace_ln_oracle": ("laplace_ln", {"tuning": "oracle"}, 1.0 / N, 7.25, "eps^2/2", False),
    "laplace_ln_public": ("laplace_ln", {"tuning": "public"}, 1.0 / N, 7.25, "eps^2/2", True),
}
OPTIONS = {label: entry[1] for label, entry in MECHANISMS.items()}
SCALE = {"duff": 1.0, "smooth_cauchy": 30.0, "smooth_laplace_oracle": 8.0}
SCALE["laplace_ln_oracle"] = 5.0
SCALE["laplace_ln_public"] = 6.0
# Normal data, smooth_cauchy: the paper quotes 187x (eps 0.1) and 34x (eps 2).  We make
# ours 1.1 * 187 (agrees within 25%) and 2 * 34 (does not).
TARGET = {0.1: 1.1 * 187.0, 2.0: 2.0 * 34.0}


def _row(dataset: str, replicate: int, mechanism: str, epsilon: float, error: float) -> dict:
    name, _, delta, g_eps, rho, private = MECHANISMS[mechanism]
    lower, upper = (-10.0, 10.0) if dataset == "normal" else (0.0, 1.0)
    return {
        "dataset": dataset,
        "replicate": replicate,
        "subset": "",
        "n": N,
        "lower": lower,
        "upper": upper,
        "mechanism": mechanism,
        "registry_name": name,
        "epsilon": epsilon,
        "delta": delta,
        "trials": 50,
        "true_value": 0.0,
        "mean_abs_error": error,
        "sd_abs_error": error / 2,
        "rmse": error * 1.2,
        "seconds": 0.01,
        "guarantee_epsilon": epsilon if g_eps is None else g_eps * epsilon,
        "guarantee_delta": delta,
        "rho": epsilon**2 / 2 if rho else np.nan,
        "neighbouring": "add_remove",
        "private": private,
        "status": "ok",
    }


def build_summary() -> pd.DataFrame:
    """Errors with replicate-to-replicate spread that differs between mechanisms, so a
    mean of per-dataset ratios differs from the ratio of means."""
    rng = np.random.default_rng(20240601)
    rows = []
    for dataset in DATASETS:
        for mechanism in MECHANISMS:
            for epsilon in EPSILONS:
                errors = SCALE[mechanism] * 0.01 / epsilon * rng.uniform(0.2, 3.0, REPLICATES)
                rows += [_row(dataset, r, mechanism, epsilon, e) for r, e in enumerate(errors)]
    frame = pd.DataFrame.from_records(rows)
    for epsilon, target in TARGET.items():
        duff = _cell(frame, "normal", "duff", epsilon)
        cauchy = _cell(frame, "normal", "smooth_cauchy", epsilon)
        values = frame.loc[cauchy, "mean_abs_error"]
        frame.loc[cauchy, "mean_abs_error"] = (
            values / values.mean() * target * frame.loc[duff, "mean_abs_error"].mean()
        )
    return frame


def _cell(frame: pd.DataFrame, dataset: str, mechanism: str, epsilon: float) -> pd.Series:
    return (
        (frame["dataset"] == dataset)
        & (frame["mechanism"] == mechanism)
        & np.isclose(frame["epsilon"], epsilon)
    )


def _mean(frame: pd.DataFrame, dataset: str, mechanism: str, epsilon: float) -> float:
    return float(frame.loc[_cell(frame, dataset, mechanism, epsilon), "mean_abs_error"].mean())


def _write(tmp_path: Path, frame: pd.DataFrame, options: dict | None = None) -> Path:
    return write_results(tmp_path / "results", frame, OPTIONS if options is None else options)


def _palette(results: Path) -> style.Palette:
    return style.palette(results_reader.load(results))


def _tables(frame: pd.DataFrame, palette: style.Palette) -> tuple[pd.DataFrame, ...]:
    """``(agg, ratios, paper comparison)`` of a summary, as the script computes them."""
    ok, _ = split_failed(frame)
    agg = figure1_data.aggregate(ok)
    ratios = figure1_data.ratios_to_reference(agg, "duff")
    return agg, ratios, figure1_data.compare_with_paper(agg, ratios, 0.25, palette)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame, str, int]:
    """One full run of the script, shared by the tests that only read its outputs."""
    frame = build_summary()
    results = _write(tmp_path_factory.mktemp("run"), frame)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = plot(str(results))
    return results, frame, stdout.getvalue(), status


def test_writes_png_pdf_and_report(run: tuple[Path, pd.DataFrame, str, int]) -> None:
    results, _, stdout, status = run
    assert status == 0
    png, pdf = results / "figure1.png", results / "figure1.pdf"
    assert png.stat().st_size > 1000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    report = (results / "figure1_ratios.md").read_text(encoding="utf-8")
    for heading in (
        "## Ratios quoted in the paper",
        "## Ratio to Duff at every ε",
        "## Mean error (mean ± sd across datasets)",
        "## Privacy guarantee actually given",
        "## Where the reproduction disagrees, and why",
    ):
        assert heading in report
    assert "| N(0, 1) | SmoothSens_ε (Cauchy) | 0.1 |" in stdout


def test_ratios_are_ratios_of_means(run: tuple[Path, pd.DataFrame, str, int]) -> None:
    results, frame, stdout, _ = run
    report = (results / "figure1_ratios.md").read_text(encoding="utf-8")
    _, ratios, _ = _tables(frame, _palette(results))
    assert len(ratios) == len(DATASETS) * len(EPSILONS) * (len(MECHANISMS) - 1)
    for row in ratios.itertuples(index=False):
        expected = _mean(frame, row.dataset, row.mechanism, row.epsilon) / _mean(
            frame, row.dataset, "duff", row.epsilon
        )
        mean_of_ratios = np.mean(
            frame.loc[
                _cell(frame, row.dataset, row.mechanism, row.epsilon), "mean_abs_error"
            ].values
            / frame.loc[_cell(frame, row.dataset, "duff", row.epsilon), "mean_abs_error"].values
        )
        assert row.ratio == pytest.approx(expected, rel=1e-12)
        assert abs(expected / mean_of_ratios - 1) > 1e-3  # the data tells the two apart
        assert f"{expected:.3g}×" in report
        assert f"{expected:.3g}×" in stdout


def test_paper_comparison(run: tuple[Path, pd.DataFrame, str, int], tmp_path: Path) -> None:
    results, frame, _, _ = run
    _, _, table = _tables(frame, _palette(results))
    assert len(table) == len(figure1_data.PAPER_RATIOS)  # one series of each quoted mechanism
    cauchy = table.loc[table["family"] == "smooth_cauchy"].set_index("epsilon")
    assert (cauchy["mechanism"] == "smooth_cauchy").all()
    assert cauchy.loc[0.1, "ours"] == pytest.approx(1.1 * 187.0, rel=1e-9)
    assert pd.notna(cauchy.loc[0.1, "agrees"]) and cauchy.loc[0.1, "agrees"]
    assert cauchy.loc[2.0, "ours"] == pytest.approx(2.0 * 34.0, rel=1e-9)
    assert pd.notna(cauchy.loc[2.0, "agrees"]) and not cauchy.loc[2.0, "agrees"]
    laplace = table.loc[table["family"] == "smooth_laplace"].set_index("epsilon")
    assert laplace.loc[2.0, "delta"] == pytest.approx(1.0 / N)
    expected = _mean(frame, "normal", "smooth_laplace_oracle", 2.0)
    expected /= _mean(frame, "normal", "duff", 2.0)
    assert laplace.loc[2.0, "ours"] == pytest.approx(expected, rel=1e-12)
    # LaplaceLN is quoted with the paper's (oracle) tuning: the public series is not matched.
    assert set(table.loc[table["family"] == "laplace_ln", "mechanism"]) == {"laplace_ln_oracle"}
    # A quote whose delta rule has no matching run is "not run", not a silent match.
    other_delta = frame.assign(
        delta=np.where(frame["mechanism"] == "laplace_ln_oracle", 0.01, frame["delta"])
    )
    _, _, table2 = _tables(other_delta, _palette(_write(tmp_path, other_delta)))
    ln = table2.loc[table2["family"] == "laplace_ln"]
    assert ln["ours"].isna().all() and ln["agrees"].isna().all()
    assert "not run" in paper_table(table2, 0.25, _palette(results))


def _nrs07_twins(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` plus, for each smooth-sensitivity series, a replace-one twin labelled
    ``<label>_nrs07`` with the errors times 1.5."""
    smooth = ["smooth_cauchy", "smooth_laplace_oracle", "laplace_ln_oracle"]
    twins = frame.loc[frame["mechanism"].isin(smooth)]
    twins = twins.assign(
        mechanism=twins["mechanism"] + "_nrs07",
        neighbouring="replace_one",
        mean_abs_error=twins["mean_abs_error"] * 1.5,
    )
    return pd.concat([frame, twins], ignore_index=True)


def test_paper_quotes_match_mechanisms_by_what_they_are(tmp_path: Path) -> None:
    # Before: quotes matched the label string, so a replace-one run (labels *_nrs07)
    # showed "not run" in every row.
    frame = _nrs07_twins(build_summary())
    options = {**OPTIONS, **{f"{k}_nrs07": OPTIONS[k] for k in OPTIONS}}
    palette = _palette(_write(tmp_path, frame, options))
    _, _, table = _tables(frame, palette)
    assert table["agrees"].notna().all()
    cauchy = table.loc[(table["family"] == "smooth_cauchy") & (table["epsilon"] == 0.1)]
    assert list(cauchy["mechanism"]) == ["smooth_cauchy", "smooth_cauchy_nrs07"]
    assert cauchy["ours"].iloc[1] == pytest.approx(1.5 * cauchy["ours"].iloc[0], rel=1e-12)
    markdown = paper_table(table, 0.25, palette)
    assert "| N(0, 1) | SmoothSens_ε (Cauchy), NRS07 replace-one SS | 0.1 | 0 | 0 |" in markdown
    assert "not run" not in markdown


def test_a_replace_one_run_alone_reproduces_the_quoted_rows(tmp_path: Path) -> None:
    # The mechanisms of conf/experiment/figure1_replace_one.yaml, labels as written there.
    config = OmegaConf.load(CONF / "experiment" / "figure1_replace_one.yaml")
    entries = [
        OmegaConf.to_container(
            OmegaConf.load(CONF / "mechanism" / f"{m}.yaml") if isinstance(m, str) else m
        )
        for m in config.mechanisms
    ]
    labels = {}  # our synthetic series -> the config's label of the same mechanism
    for entry in entries:
        options = {k: v for k, v in entry.get("options", {}).items() if k != "neighbours"}
        for label, (name, synthetic, *_) in MECHANISMS.items():
            if entry.get("name") == name != "duff" and synthetic == options:
                labels[label] = entry["label"]
    assert set(labels) == {"smooth_cauchy", "smooth_laplace_oracle", "laplace_ln_oracle"}
    frame = build_summary()
    frame = frame.loc[frame["mechanism"].isin(["duff", *labels])]
    frame = frame.assign(
        mechanism=frame["mechanism"].replace(labels),
        neighbouring=np.where(frame["mechanism"] == "duff", "add_remove", "replace_one"),
    )
    options = {e["label"]: e.get("options", {}) for e in entries}
    assert set(frame["mechanism"]) <= set(options)
    palette = _palette(_write(tmp_path, frame, options))
    _, _, table = _tables(frame, palette)
    assert table["agrees"].notna().all(), table  # no "not run"
    assert set(table["mechanism"]) == set(labels.values())
    name = palette.name(labels["smooth_laplace_oracle"])
    assert name == "SmoothSens_ε,δ (Laplace), NRS07 replace-one SS"
    # The long names still fit: the legend takes more rows rather than leave the figure.
    agg, _, _ = _tables(frame, palette)
    fig, _ = figure1_plot.draw_figure(agg, DATASETS, palette)
    try:
        legend = fig.legends[0]
        assert legend.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width
        assert name + ", δ=0.001" in [t.get_text() for t in legend.get_texts()]
    finally:
        plt.close(fig)


def test_invalid_summary_values_exit_2_naming_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a blank delta was read as 0 and an infinite error was caught only in ok rows
    # after a pandas parse; now every value is checked where it is read.
    frame = build_summary()
    for column, value, message in [
        ("mean_abs_error", np.inf, "line 5, column mean_abs_error: inf is not a finite number"),
        ("delta", np.nan, "line 5, column delta: nan is not a finite number >= 0"),
        ("n", "many", "line 5, column n: 'many' is not an integer"),
    ]:
        broken = frame.astype({column: object})
        broken.loc[3, column] = value
        results = write_results(tmp_path / column, broken, OPTIONS)
        assert plot(str(results)) == 2
        err = capsys.readouterr().err
        assert err.startswith(ERROR) and err.count("\n") == 1
        assert f"{results / 'summary.csv'}: {message}" in err
        assert not (results / "figure1.png").exists()


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        pytest.param(lambda t: t[: len(t) // 3], "truncated (its last line is incomplete)"),
        pytest.param(
            lambda t: t[: t.index("\n", len(t) // 3) + 1],
            "rows where run.json's plan has 180",
            id="cut at a line end",
        ),
        pytest.param(lambda t: t + t.splitlines()[1] + "\n", "repeats the cell of an earlier row"),
        pytest.param(lambda t: t.replace(",ok\n", ",ok,\n", 1), "has {more} of {columns} fields"),
    ],
)
def test_truncated_or_corrupt_summary_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cut, message: str
) -> None:
    # Before: a truncated summary was plotted from the rows that were left (exit 0).
    results = _write(tmp_path, build_summary())
    summary = results / "summary.csv"
    summary.write_text(cut(summary.read_text(encoding="utf-8")), encoding="utf-8")
    assert plot(str(results)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{ERROR}{summary}") and err.count("\n") == 1
    columns = len(results_reader.SUMMARY_SPEC.columns)
    assert message.format(more=columns + 1, columns=columns) in err
    assert f"rerun the experiment with results_dir={results}" in err  # every cut: the remedy
    assert "Traceback" not in err
    assert not (results / "figure1.png").exists()


def test_a_run_without_its_summary_says_how_to_finish_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _write(tmp_path, build_summary())
    (results / "summary.csv").unlink()
    assert plot(str(results)) == 2
    err = capsys.readouterr().err
    assert "summary.csv: no such file" in err and f"results_dir={results} to write it" in err


@pytest.mark.parametrize(("statistic", "command"), [("mode", "mode"), ("mean", "mean")])
def test_a_run_of_another_statistic_names_its_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], statistic: str, command: str
) -> None:
    assert figure1_data.drawn_by(pd.DataFrame({"statistic": [statistic]})).endswith(
        f"drawn by duff-plot {command}"
    )
    assert "duff-plot figure2" in figure1_data.drawn_by(pd.DataFrame({"statistic": ["median"]}))


def test_a_summary_of_another_plan_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = build_summary()
    results = _write(tmp_path, frame)
    extra = write_results(tmp_path / "more", frame.assign(replicate=frame["replicate"] + 1))
    (results / "summary.csv").write_bytes((extra / "summary.csv").read_bytes())
    assert plot(str(results)) == 2
    err = capsys.readouterr().err
    # (the cell names the statistic too when the summary has that column)
    assert re.search(r"45 missing \(e\.g\. normal replicate 0 (median )?duff ε=0\.1\)", err)
    assert re.search(r"45 not in the plan \(e\.g\. normal replicate 4 (median )?duff ε=0\.1", err)
    assert "rerun the experiment with results_dir=" in err


def test_aggregate_is_mean_and_sd_across_datasets() -> None:
    frame = pd.DataFrame(
        {
            "dataset": ["normal"] * 4 + ["uniform"],
            "replicate": [0, 1, 2, 0, 0],
            "mechanism": ["duff", "duff", "duff", "laplace_ln", "duff"],
            "epsilon": [0.5, 0.5, 0.5, 0.5, 0.5],
            "delta": [0.0, 0.0, 0.0, 0.01, 0.0],
            "n": [100] * 5,
            "mean_abs_error": [0.1, 0.4, 0.25, 3.0, 0.7],
        }
    )
    agg = figure1_data.aggregate(frame).set_index(["dataset", "mechanism"])
    values = np.array([0.1, 0.4, 0.25])
    assert agg.loc[("normal", "duff"), "mean_error"] == pytest.approx(values.mean())
    assert agg.loc[("normal", "duff"), "sd_error"] == pytest.approx(np.std(values, ddof=1))
    assert agg.loc[("normal", "duff"), "datasets"] == 3
    assert np.isnan(agg.loc[("uniform", "duff"), "sd_error"])  # one dataset: no spread
    assert bool(agg.loc[("normal", "laplace_ln"), "delta_is_one_over_n"])
    assert not bool(agg.loc[("normal", "duff"), "delta_is_one_over_n"])


def test_error_bars_drawn_are_mean_plus_minus_sd(run: tuple[Path, pd.DataFrame, str, int]) -> None:
    results, frame, _, _ = run
    palette = _palette(results)
    agg, _, _ = _tables(frame, palette)
    fig, panels = figure1_plot.draw_figure(agg, DATASETS, palette)
    try:
        ax = panels["uniform"]
        label = palette.name("duff")
        (container,) = [c for c in ax.containers if c.get_label() == label]
        segments = container.lines[2][0].get_segments()
        expected = agg.loc[(agg["dataset"] == "uniform") & (agg["mechanism"] == "duff")]
        expected = expected.sort_values("epsilon")
        lows = [seg[0][1] for seg in segments]
        highs = [seg[1][1] for seg in segments]
        np.testing.assert_allclose(lows, expected["mean_error"] - expected["sd_error"])
        np.testing.assert_allclose(highs, expected["mean_error"] + expected["sd_error"])
        assert ax.get_yscale() == "log"
    finally:
        plt.close(fig)


def test_failed_rows_are_excluded_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = build_summary()
    failed = frame.index[_cell(frame, "normal", "laplace_ln_oracle", 0.1)][:3]
    broken = frame.copy()
    broken.loc[failed, ["true_value", "mean_abs_error", "sd_abs_error", "rmse"]] = np.nan
    broken.loc[failed, "status"] = "ValueError: optimiser did not converge"
    results = _write(tmp_path, broken)
    assert plot(str(results)) == 0
    err = capsys.readouterr().err
    assert "excluded 3 row(s) with status != 'ok'" in err
    assert "3 x dataset=normal mechanism=laplace_ln_oracle" in err
    assert "optimiser did not converge" in err
    report = (results / "figure1_ratios.md").read_text(encoding="utf-8")
    kept = frame.loc[frame.index.difference(failed)]
    expected = _mean(kept, "normal", "laplace_ln_oracle", 0.1) / _mean(frame, "normal", "duff", 0.1)
    assert f"{expected:.3g}×" in report  # the failed rows did not enter the mean
    assert "ValueError: optimiser did not converge" in report.split("## Excluded rows")[1]


@pytest.mark.parametrize("column", ["status", "mean_abs_error", "guarantee_epsilon"])
def test_missing_column_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    results = _write(tmp_path, build_summary())
    summary = pd.read_csv(results / "summary.csv", keep_default_na=False, dtype=str)
    summary.drop(columns=[column]).to_csv(results / "summary.csv", index=False)
    assert plot(str(results)) == 2
    err = capsys.readouterr().err
    assert f"(missing: {column}; unexpected: -)" in err
    assert "Traceback" not in err
    assert not (results / "figure1.png").exists()


def test_missing_duff_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = build_summary()
    results = _write(tmp_path, frame.loc[frame["mechanism"] != "duff"])
    assert plot(str(results)) == 2
    assert "need one Duff series as reference; the run has none" in capsys.readouterr().err


def test_all_duff_rows_failed_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = build_summary()
    duff = frame["mechanism"] == "duff"
    frame.loc[duff, "status"] = "RuntimeError: boom"
    frame.loc[duff, ["true_value", "mean_abs_error", "rmse"]] = np.nan
    results = _write(tmp_path, frame)
    assert plot(str(results)) == 2
    err = capsys.readouterr().err
    assert "mechanism=duff" in err and "RuntimeError: boom" in err
    assert "no successful 'duff' rows" in err


def test_missing_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert plot(str(tmp_path)) == 2
    assert f"{tmp_path / 'run.json'}: no such file" in capsys.readouterr().err
    results = _write(tmp_path, build_summary())
    (results / "summary.csv").unlink()
    assert plot(str(results)) == 2
    assert f"{results / 'summary.csv'}: no such file" in capsys.readouterr().err


def test_notes_are_copied_verbatim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _write(tmp_path, build_summary())
    out = tmp_path / "figures"
    assert plot(str(results), "--out", str(out)) == 0
    report = (out / "figure1_ratios.md").read_text(encoding="utf-8")
    assert "No notes file found" in report.split("## Where the reproduction disagrees, and why")[1]
    assert not (results / "figure1_ratios.md").exists()

    (results / "figure1_notes.md").write_text(
        "LaplaceLN differs: see issue 12.\n", encoding="utf-8"
    )
    assert plot(str(results), "--out", str(out)) == 0
    report = (out / "figure1_ratios.md").read_text(encoding="utf-8")
    tail = report.split("## Where the reproduction disagrees, and why")[1]
    assert "LaplaceLN differs: see issue 12." in tail
    assert "No notes file found" not in tail

    assert plot(str(results), "--notes", str(tmp_path / "absent.md")) == 2
    assert "--notes" in capsys.readouterr().err


def test_mechanisms_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _write(tmp_path, build_summary())
    assert plot(str(results), "--mechanisms", "smooth_cauchy") == 0
    report = (results / "figure1_ratios.md").read_text(encoding="utf-8")
    ratio_section = report.split("## Ratio to Duff at every ε")[1].split("## Mean error")[0]
    assert "SmoothSens_ε (Cauchy)" in ratio_section
    assert "LaplaceLN" not in ratio_section
    assert plot(str(results), "--mechanisms", "nope") == 2
    assert "--mechanisms: no rows for nope" in capsys.readouterr().err


def test_guarantee_table_uses_reported_guarantee(run: tuple[Path, pd.DataFrame, str, int]) -> None:
    results, *_ = run
    report = (results / "figure1_ratios.md").read_text(encoding="utf-8")
    section = report.split("## Privacy guarantee actually given")[1].split("## Excluded")[0]
    # LaplaceLN at requested eps = 2 reports guarantee epsilon 7.25 * 2 = 14.5 and rho = 2.
    assert "| LaplaceLN | 2 | 0.001 | 14.5 | 0.001 | 2 |" in section
    assert "| Duff (EM) | 0.1 | 0 | 0.1 | 0 | — | add_remove | True |" in section
    assert (
        "| SmoothSens_ε,δ (Laplace) | 2 | 0.001 | 2 | 0.001 | — | add_remove | False |" in section
    )


def _info(label: str, name: str, **options: str) -> results_reader.MechanismInfo:
    return results_reader.MechanismInfo(label, name, options, takes_delta=False)


def test_figure_style_follows_the_mechanism_not_its_label() -> None:
    kinds = {
        "duff": style.kind_of(_info("duff", "duff"), True, "add_remove"),
        "my_plugin": style.kind_of(_info("my_plugin", "mine"), True, "add_remove"),
        # labels that lie: the style must follow the data
        "laplace_ln_public": style.kind_of(
            _info("laplace_ln_public", "laplace_ln", tuning="oracle"), False, "add_remove"
        ),
        "ln": style.kind_of(_info("ln", "laplace_ln", tuning="public"), True, "add_remove"),
        "x": style.kind_of(_info("x", "laplace_ln", target="approx_dp"), False, "add_remove"),
        "cauchy_nrs07": style.kind_of(
            _info("cauchy_nrs07", "smooth_cauchy", neighbours="replace_one"), True, "replace_one"
        ),
        "cauchy": style.kind_of(_info("cauchy", "smooth_cauchy"), True, "add_remove"),
    }
    palette = style.Palette(kinds)
    duff = palette.style("duff")
    assert duff.name == "Duff (EM)" and duff.linestyle == "-"
    oracle, public = palette.style("laplace_ln_public"), palette.style("ln")
    assert oracle.name == "LaplaceLN" and oracle.linestyle == "-"  # private False: oracle
    assert public.name == "LaplaceLN, public tuning" and public.linestyle == "--"
    assert public.colour == oracle.colour and public.marker == oracle.marker
    assert palette.name("x") == "LaplaceLN, (ε, δ)-matched"
    twin, plain = palette.style("cauchy_nrs07"), palette.style("cauchy")
    assert twin.name == "SmoothSens_ε (Cauchy), NRS07 replace-one SS" and twin.linestyle == "-."
    assert twin.marker == plain.marker and twin.colour != plain.colour
    hue = [
        matplotlib.colors.rgb_to_hsv(matplotlib.colors.to_rgb(s.colour))[0] for s in (twin, plain)
    ]
    assert hue[0] == pytest.approx(hue[1], abs=0.02)  # same colour family, lighter
    unknown = palette.style("my_plugin")
    assert unknown.name == "my_plugin"
    assert unknown.colour not in {f.colour for f in style.FAMILIES}
    no_rows = style.kind_of(_info("my_plugin", "mine"), None, None)  # options decide
    assert style.style_of(no_rows) == unknown
    # a class that names itself is shown by that name, in its family's look
    named = results_reader.MechanismInfo("d", "duff", {}, False, display_name="My Duff")
    own = style.style_of(style.kind_of(named, True, "add_remove"))
    assert (own.name, own.colour, own.marker) == ("My Duff", duff.colour, duff.marker)
    order = sorted(kinds, key=palette.sort_key)
    assert order == ["duff", "cauchy", "cauchy_nrs07", "laplace_ln_public", "ln", "x", "my_plugin"]
    with pytest.raises(ValueError, match="label"):
        palette.style("absent")


# ------------------------------------------------------------------ --bounds


@pytest.fixture(scope="module")
def estimates_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny real run with estimates (the bounds need the regenerated datasets)."""
    from experiments.run import run as run_sweep

    config = {
        "name": "plot_bounds_test",
        "seed": 3,
        "n": 41,
        "replicates": 2,
        "trials": 30,
        "epsilons": [0.5, 2.0],
        "delta": "1/n",
        "datasets": ["normal", "beta"],
        "mechanisms": ["duff", "quantile_em", "smooth_cauchy", "smooth_laplace_public"],
        "keep_estimates": True,
        "plugins": [],
        "n_jobs": 1,
    }
    return run_sweep(config, results_dir=tmp_path_factory.mktemp("estimates_run"))


def test_bounds_option_writes_figure_and_coverage(estimates_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert plot(str(estimates_run), "--out", str(out), "--bounds") == 0
    for name in ("figure1.png", "figure1_bounds.png", "figure1_bounds.pdf"):
        assert (out / name).stat().st_size > 1000
    rows = pd.read_csv(out / "bounds.csv", dtype={"subset": str})
    assert set(rows["mechanism"]) == {"duff", "quantile_em", "smooth_cauchy"}
    assert set(rows["dataset"]) == {"normal", "beta"}
    table = (out / "bounds_coverage.md").read_text(encoding="utf-8")
    assert (
        "| quantile_em | Brown's lecture notes, attempt 3 (rank error) | rank error | beta | 2 |"
        in table
    )
    with pytest.raises(SystemExit):
        plot(str(estimates_run), "--bounds", "--eta", "0")
    # --mechanisms keeps Duff and the named mechanism only
    rows, table = figure1.bound_results(estimates_run, 0.05, ["normal"], ["smooth_cauchy"], "duff")
    assert set(rows["mechanism"]) == {"duff", "smooth_cauchy"}
    assert set(table["dataset"]) == {"normal"}


def test_bound_lines_are_dashed_means_in_the_mechanism_colour(estimates_run: Path) -> None:
    rows, _ = bounds_coverage.coverage(estimates_run, 0.05)
    results = results_reader.load(estimates_run)
    palette = style.palette(results)
    ok, _ = split_failed(results.summary)
    agg = figure1_data.aggregate(ok)
    fig, panels = figure1_plot.draw_figure(agg, ["normal", "beta"], palette)
    try:
        figure1_plot.draw_bounds(fig, panels, figure1_plot.bound_lines(rows), 0.05, palette)
        for dataset, ax in panels.items():
            for mechanism, bound in [
                ("duff", "corollary1"),
                ("quantile_em", "attempt3"),
                ("smooth_cauchy", "proposition7"),
            ]:
                label = f"{palette.name(mechanism)}: bound on 0.95-quantile"
                (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
                cell = rows.loc[
                    (rows["dataset"] == dataset)
                    & (rows["mechanism"] == mechanism)
                    & (rows["bound"] == bound)
                ]
                expected = cell.groupby("epsilon")["abs_error"].mean().sort_index()
                np.testing.assert_allclose(line.get_xdata(), expected.index)
                np.testing.assert_allclose(line.get_ydata(), expected.values, rtol=1e-12)
                assert line.get_color() == palette.style(mechanism).colour
                assert line.get_linestyle() == "--"
            paper_c = [ln for ln in ax.get_lines() if "2(b" in str(ln.get_label())]
            assert not paper_c  # the paper-C variant is tabulated, not drawn
        texts = [t.get_text() for t in fig.legends[0].get_texts()]
        assert texts[0] == palette.name("duff")
        assert texts[-1].endswith("bound on 0.95-quantile")
    finally:
        plt.close(fig)


def test_bounds_option_needs_estimates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _write(tmp_path, build_summary())
    assert plot(str(results), "--bounds") == 2
    err = capsys.readouterr().err
    assert "keep_estimates=true" in err and "Traceback" not in err
    assert not (results / "figure1_bounds.png").exists()


def test_only_the_median_rows_are_drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A summary with a ``statistic`` column is drawn from its median rows only; a summary
    without one is all median."""
    results = results_reader.load(_write(tmp_path, build_summary()))
    unnamed = results.summary.drop(columns="statistic", errors="ignore")
    assert median_rows(unnamed) is unnamed
    medians = results.summary.assign(statistic="median")
    other = medians.assign(statistic="quantile(0.1)", mean_abs_error=1e6, status="boom")
    both = pd.concat([other, medians], ignore_index=True)
    pd.testing.assert_frame_equal(median_rows(both), medians.set_axis(both.index[len(other) :]))
    with_quantiles = dataclasses.replace(results, summary=both)
    monkeypatch.setattr(results_reader, "load", lambda *args, **kwargs: with_quantiles)
    stream = io.StringIO()
    figure = figure1_data.compute(results.directory, stream=stream)
    pd.testing.assert_frame_equal(figure.agg, figure1_data.aggregate(results.summary))
    assert figure.failed.empty and stream.getvalue() == ""


def test_a_plugin_dataset_gets_its_own_panel_and_tables(tmp_path: Path) -> None:
    """Any dataset without subsets is drawn after the paper's three, in order of appearance."""
    frame = build_summary()
    extra = frame.loc[frame["dataset"] == "normal"].assign(dataset="contaminated")
    results = _write(tmp_path, pd.concat([extra, frame], ignore_index=True))
    figure = figure1_data.compute(results, stream=io.StringIO())
    assert figure.datasets == ["normal", "uniform", "beta", "contaminated"]
    fig, panels = figure1_plot.draw_figure(figure.agg, figure.datasets, figure.palette)
    try:
        assert panels["contaminated"].get_title() == "contaminated"
    finally:
        plt.close(fig)
    assert plot(results) == 0
    report = (results / "figure1_ratios.md").read_text(encoding="utf-8")
    ratios = report.split("## Ratio to Duff at every ε")[1].split("## Mean error")[0]
    assert ratios.index("**Beta(0.5, 0.5)**") < ratios.index("**contaminated**")


def test_labels_that_share_a_name_are_told_apart() -> None:
    """Two entries of one class that differ only in an option the look ignores (PTR's
    refusal_target): the names carry the labels, and lines differ in tint and style."""
    kinds = {
        label: style.kind_of(_info(label, "ptr_median"), True, "add_remove")
        for label in ("ptr_50", "ptr_10")
    }
    kinds["duff"] = style.kind_of(_info("duff", "duff"), True, "add_remove")
    palette = style.Palette(kinds)
    first, second = palette.style("ptr_10"), palette.style("ptr_50")
    assert (first.name, second.name) == ("PTR [ptr_10]", "PTR [ptr_50]")
    assert first.linestyle != second.linestyle and first.colour != second.colour
    assert palette.style("duff").name == "Duff (EM)"
