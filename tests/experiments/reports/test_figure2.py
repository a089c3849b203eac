"""Tests of ``duff-plot figure2`` (:mod:`experiments.reports.figure2` and the modules it uses)
on a hand-made results directory and on a tiny real run.

The results directories here use a synthetic ``column_2C.dat`` written to a
temporary directory (310 rows, 210 AB then 100 NO, two decimals, with ties), so
nothing depends on the real data or the network.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from harness_mechanisms import CONF_DIR
from results_helpers import write_results

from experiments.data.vertebral import VERTEBRAL_MEASUREMENTS, VertebralColumn
from experiments.harness.plan import build_plan
from experiments.reports import cli, style
from experiments.reports.figure2 import data as figure2_data
from experiments.reports.figure2 import numbers as figure2_numbers
from experiments.reports.figure2 import plot as figure2_plot

CONF = CONF_DIR
LAPLACE_LN = "laplace_ln_oracle"
"""The label of LaplaceLN (oracle tuning, as in the paper) in the hand-made results."""
REGISTRY = {LAPLACE_LN: "laplace_ln"}

EPSILON = 0.5
MEDIAN_AB, MEDIAN_NO = 60.0, 50.0
"""Lower medians of the synthetic pelvic incidence classes."""
# Hand-made estimates of pelvic incidence, as offsets from each class's true median.
# Duff: AB = 50 + [5, 0, 0, 20], NO = 50 + [0, 0, -5, 10]: of the 16 (AB, NO) pairs,
# 9 have AB > NO and 4 tie (50 = 50), so P(true order) = (2·9 + 4) / 32 = 0.6875.
DUFF_OFFSETS = {"AB": [-5.0, -10.0, -10.0, 10.0], "NO": [0.0, 0.0, -5.0, 10.0]}
LAPLACE_OFFSETS = {"AB": [-20.0, 20.0, -10.0, 10.0], "NO": [10.0, -10.0, 20.0, -20.0]}
DUFF_MAE = {"AB": 8.75, "NO": 3.75}
LAPLACE_MAE = {"AB": 15.0, "NO": 15.0}
DUFF_ORDER = 0.6875


# ------------------------------------------------------------------ synthetic inputs


def _class_values(rng: np.random.Generator, n: int, median: float) -> np.ndarray:
    """``n`` two-decimal values with lower median exactly ``median`` and many ties."""
    m = (n - 1) // 2  # 0-based index of the lower median
    below = np.round(rng.uniform(median - 30, median - 0.01, m), 2)
    above = np.round(rng.uniform(median + 0.01, median + 30, n - m - 1), 2)
    values = np.concatenate((below, [median], above))
    values[1::7] = values[0::7][: values[1::7].size]  # repeat values: ties on both sides
    values = np.sort(values)
    values[m] = median
    return values


def write_vertebral_file(path: Path, seed: int = 7) -> Path:
    """A synthetic column_2C.dat: pelvic incidence has lower medians 60 (AB) and 50 (NO)."""
    rng = np.random.default_rng(seed)
    columns = {}
    for label, n in (("AB", 210), ("NO", 100)):
        cols = [_class_values(rng, n, MEDIAN_AB if label == "AB" else MEDIAN_NO)]
        for k in range(1, 6):
            cols.append(_class_values(rng, n, 40.0 + 5 * k + (3 if label == "AB" else 0)))
        columns[label] = np.column_stack([rng.permutation(c) for c in cols])
    lines = [
        " ".join(f"{v:.2f}" for v in row) + f" {label}"
        for label in ("AB", "NO")
        for row in columns[label]
    ]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


def _row(
    dataset, mechanism: str, estimates: np.ndarray, epsilon: float = EPSILON, status: str = "ok"
) -> dict:
    truth = float(np.sort(dataset.values)[(dataset.size - 1) // 2])
    name = REGISTRY.get(mechanism, mechanism)
    delta = 1.0 / dataset.size if name == "laplace_ln" else 0.0
    ok = status == "ok"
    return {
        "dataset": "vertebral",
        "subset": dataset.subset,
        "replicate": 0,
        "n": dataset.size,
        "lower": dataset.lower,
        "upper": dataset.upper,
        "mechanism": mechanism,
        "registry_name": name,
        "epsilon": epsilon,
        "delta": delta,
        "trials": estimates.size,
        "true_value": truth if ok else np.nan,
        "mean_abs_error": float(np.mean(np.abs(estimates - truth))) if ok else np.nan,
        "sd_abs_error": float(np.std(np.abs(estimates - truth), ddof=1)) if ok else np.nan,
        "rmse": float(np.sqrt(np.mean((estimates - truth) ** 2))) if ok else np.nan,
        "mean_error": float(np.mean(estimates - truth)) if ok else np.nan,
        "seconds": 0.01,
        "guarantee_epsilon": 4.2 if name == "laplace_ln" else epsilon,
        "guarantee_delta": delta,
        "rho": epsilon**2 / 2 if name == "laplace_ln" else np.nan,
        "neighbouring": "add_remove",
        "private": name != "laplace_ln",
        "status": status,
    }


def build_results(
    tmp_path: Path, epsilons: tuple[float, ...] = (EPSILON,)
) -> tuple[Path, Path, pd.DataFrame]:
    """A results directory in the harness's format: run.json, summary.csv, estimates.npz.

    quantile_em fails on every subset (status "ValueError: boom"): excluded and listed.
    """
    data_file = write_vertebral_file(tmp_path / "column_2C.dat")
    datasets = VertebralColumn.from_config(name="vertebral", path=str(data_file))
    rng = np.random.default_rng(11)
    rows, matrices = [], []
    for dataset in datasets:
        measurement, label = dataset.subset.split("/")
        truth = float(np.sort(dataset.values)[(dataset.size - 1) // 2])
        for mechanism, offsets in ((LAPLACE_LN, LAPLACE_OFFSETS), ("duff", DUFF_OFFSETS)):
            if measurement == "pelvic_incidence":
                estimates = truth + np.array(offsets[label])
            else:
                scale = 5.0 if mechanism == LAPLACE_LN else 0.5
                estimates = truth + rng.normal(0, scale, 4)
            estimates = np.clip(estimates, dataset.lower, dataset.upper)
            rows += [_row(dataset, mechanism, estimates, epsilon) for epsilon in epsilons]
            matrices += [estimates] * len(epsilons)
        rows += [_row(dataset, "quantile_em", np.zeros(4), e, "ValueError: boom") for e in epsilons]
        matrices += [np.full(4, np.nan)] * len(epsilons)
    summary = pd.DataFrame.from_records(rows)
    results = write_results(
        tmp_path / "results",
        summary,
        {LAPLACE_LN: {"tuning": "oracle"}},
        dataset_fields={d.id: d.describe() for d in datasets},
        estimates=np.vstack(matrices),
        experiment="figure2",
        runtime_seconds=1.5,
        datasets=[{"id": d.id, "source": d.source} for d in datasets],
    )
    return results, data_file, summary


def run_main(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["figure2", *args])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, str]:
    """One run of the script (two measurements), shared by the output tests."""
    results, _, _ = build_results(tmp_path_factory.mktemp("figure2"))
    out = results / "out"
    args = [str(results), "--out", str(out), "--measurements", "pelvic_incidence", "pelvic_tilt"]
    status, stdout, stderr = run_main(args)
    return out, status, stdout, stderr


# ------------------------------------------------------------------ numbers


def test_order_probability_counts_every_pair_and_halves_ties() -> None:
    ab = np.array([55.0, 50.0, 50.0, 70.0])
    no = np.array([50.0, 50.0, 45.0, 60.0])
    assert figure2_numbers.order_probability(ab, no) == DUFF_ORDER
    assert figure2_numbers.order_probability(no, ab) == 1 - DUFF_ORDER
    brute = np.mean([(x > y) + 0.5 * (x == y) for x in ab for y in no])
    assert figure2_numbers.order_probability(ab, no) == brute
    assert figure2_numbers.order_probability(np.ones(3), np.ones(5)) == 0.5
    assert figure2_numbers.order_probability(np.array([2.0]), np.array([1.0, 3.0])) == 0.5
    with pytest.raises(ValueError, match="non-empty"):
        figure2_numbers.order_probability(np.array([]), no)


def test_true_order_follows_the_data() -> None:
    def cell(label: str, truth: float, estimates: list[float]):
        return figure2_data.Cell("m", label, "duff", np.array(estimates), truth, 0, 100, 4, 0, 0)

    up = [1.0, 2.0, 3.0]
    down = [2.0, 2.0, 9.0]
    # AB's true median is below NO's: the probability that NO's estimate is above AB's.
    p = figure2_numbers.true_order_probability(cell("AB", 1.0, up), cell("NO", 5.0, down))
    assert p == figure2_numbers.order_probability(np.array(down), np.array(up))
    same = figure2_numbers.true_order_probability(cell("AB", 3.0, up), cell("NO", 3.0, down))
    assert np.isnan(same)


def test_loaded_cells_and_table(tmp_path: Path) -> None:
    results_dir, _, _ = build_results(tmp_path)
    results = figure2_data.load_results(results_dir)
    assert results.mechanisms == (LAPLACE_LN, "duff")
    assert results.measurements == VERTEBRAL_MEASUREMENTS
    assert results.epsilon == EPSILON
    assert set(results.failed["mechanism"]) == {"quantile_em"}
    assert len(results.failed) == 2 * len(VERTEBRAL_MEASUREMENTS)
    table = figure2_numbers.table_rows(results).set_index(["measurement", "mechanism"])
    duff = table.loc[("pelvic_incidence", "duff")]
    laplace = table.loc[("pelvic_incidence", LAPLACE_LN)]
    assert (duff["median_AB"], duff["median_NO"]) == (MEDIAN_AB, MEDIAN_NO)
    assert duff["mae_AB"] == pytest.approx(DUFF_MAE["AB"], rel=1e-12)
    assert duff["mae_NO"] == pytest.approx(DUFF_MAE["NO"], rel=1e-12)
    assert duff["p_true_order"] == DUFF_ORDER
    assert laplace["mae_AB"] == pytest.approx(LAPLACE_MAE["AB"], rel=1e-12)
    assert duff["ratio_AB"] == pytest.approx(DUFF_MAE["AB"] / LAPLACE_MAE["AB"], rel=1e-12)
    assert duff["ratio_NO"] == pytest.approx(DUFF_MAE["NO"] / LAPLACE_MAE["NO"], rel=1e-12)
    assert laplace["ratio_AB"] == 1.0


def test_mechanism_order_puts_laplace_ln_and_duff_first() -> None:
    from experiments.harness.results_reader import MechanismInfo

    entries = {
        "my_plugin": ("mine", {}, True),
        "quantile_em": ("quantile_em", {}, True),
        "the_paper_s_duff": ("duff", {}, True),
        "smooth_cauchy": ("smooth_cauchy", {}, True),
        "laplace_ln_public": ("laplace_ln", {"tuning": "public"}, True),
        "ln": ("laplace_ln", {"tuning": "oracle"}, False),
    }
    palette = style.Palette(
        {
            label: style.kind_of(MechanismInfo(label, name, options, True), private, "")
            for label, (name, options, private) in entries.items()
        }
    )
    assert sorted(entries, key=lambda m: figure2_data.mechanism_order(palette, m)) == [
        "ln",
        "laplace_ln_public",
        "the_paper_s_duff",
        "quantile_em",
        "smooth_cauchy",
        "my_plugin",
    ]


def test_class_colours_are_fixed_and_distinct() -> None:
    ab, no = style.class_colour("AB"), style.class_colour("NO")
    assert ab != no
    assert {ab, no}.isdisjoint(f.colour for f in style.FAMILIES)
    assert style.class_colour("XY") == style.class_colour("XY")
    assert style.class_name("NO") == "NO (normal)"
    with pytest.raises(ValueError, match="label"):
        style.class_colour("")


# ------------------------------------------------------------------ outputs


def test_writes_figures_and_table(drawn: tuple[Path, int, str, str]) -> None:
    out, status, _, stderr = drawn
    assert status == 0, stderr
    for stem in ("figure2", "figure3"):
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
    # Figure 3 has two rows here, Figure 2 one: it is taller.
    height = lambda png: int.from_bytes(png.read_bytes()[20:24], "big")  # noqa: E731 (IHDR)
    assert height(out / "figure3.png") > 1.5 * height(out / "figure2.png")
    assert "quantile_em" in stderr and "boom" in stderr
    assert (out / "figure2_table.md").is_file()


def test_figure3_layout(tmp_path: Path) -> None:
    """Six rows of data + one panel per mechanism; x = [a, b] per row; medians everywhere."""
    results_dir, _, _ = build_results(tmp_path)
    results = figure2_data.load_results(results_dir)
    data = figure2_data.load_class_data(results, None, io.StringIO())
    fig = figure2_plot.draw_figure(results, data, results.measurements)
    try:
        axes = np.array(fig.axes[: 6 * 3]).reshape(6, 3)
        titles = [ax.get_title() for ax in axes[0]]
        assert titles[0] == "data" and titles[2] == "Duff (EM)"
        assert titles[1].startswith("LaplaceLN, δ = 1/n\n")  # δ = 1/n of each class
        assert "ε' = 4.20" in titles[1] and "not private" in titles[1]
        for row, measurement in zip(axes, VERTEBRAL_MEASUREMENTS, strict=True):
            bounds = data[(measurement, "AB")].bounds
            medians = {
                float(
                    np.sort(data[(measurement, c)].values)[(data[(measurement, c)].size - 1) // 2]
                )
                for c in ("AB", "NO")
            }
            for ax in row:
                assert ax.get_xlim() == pytest.approx(bounds)
                vertical = {float(line.get_xdata()[0]) for line in ax.get_lines()}
                assert vertical == medians
        colours = {patch.get_facecolor()[:3] for ax in fig.axes[:18] for patch in ax.patches}
        expected = {matplotlib.colors.to_rgb(style.class_colour(c)) for c in ("AB", "NO")}
        assert colours == expected
        legend = [text.get_text() for text in fig.legends[0].get_texts()]
        assert any("AB (abnormal)" in t for t in legend) and any("median" in t for t in legend)
    finally:
        plt.close(fig)


def test_table_numbers(drawn: tuple[Path, int, str, str]) -> None:
    out, _, stdout, _ = drawn
    table = (out / "figure2_table.md").read_text(encoding="utf-8")
    for heading in (
        "## Duff MAE / LaplaceLN MAE",
        "## Per measurement and mechanism",
        "## Mechanisms",
        "## Excluded rows (status != ok)",
    ):
        assert heading in table
    duff_row = next(
        line for line in table.splitlines() if line.startswith("| pelvic incidence | Duff (EM) |")
    )
    cells = [c.strip() for c in duff_row.strip("|").split("|")]
    assert cells[2:] == ["60", "50", "AB > NO", "8.75", "3.75", "0.6875", "0.583; 0.250"]
    ratio_row = next(
        line
        for line in table.splitlines()
        if line.startswith("| pelvic incidence |") and line.count("|") == 5
    )
    assert [c.strip() for c in ratio_row.strip("|").split("|")][1:3] == ["0.583", "0.250"]
    assert "| pelvic_tilt/NO | quantile_em | ValueError: boom |" in table
    assert "AB: 0.00476; NO: 0.01" in table  # LaplaceLN's δ = 1/n per class
    assert "took 1.5 s" in table
    assert "| pelvic incidence | Duff (EM) |" in stdout


def test_only_selected_measurements(tmp_path: Path) -> None:
    results, _, _ = build_results(tmp_path)
    out = tmp_path / "only"
    status, _, stderr = run_main(
        [str(results), "--out", str(out), "--measurements", "pelvic_radius"]
    )
    assert status == 0, stderr
    assert not (out / "figure2.png").exists()  # pelvic incidence not selected
    assert "figure2 not drawn" in stderr
    table = (out / "figure2_table.md").read_text(encoding="utf-8")
    assert "| pelvic radius |" in table and "| pelvic incidence |" not in table


# ------------------------------------------------------------------ errors


def _error(args: list[str]) -> str:
    status, _, stderr = run_main(args)
    assert status == 2
    assert stderr.splitlines()[-1].startswith("duff-plot figure2: error: ")
    return stderr


def test_missing_estimates_is_exit_2(tmp_path: Path) -> None:
    results, _, _ = build_results(tmp_path)
    (results / "estimates.npz").unlink()
    stderr = _error([str(results)])
    assert "estimates.npz: no such file" in stderr and "keep_estimates=true" in stderr
    assert not (results / "figure3.png").exists()


def test_missing_run_and_summary_are_exit_2(tmp_path: Path) -> None:
    results, _, _ = build_results(tmp_path)
    (results / "summary.csv").unlink()
    assert "summary.csv: no such file" in _error([str(results)])
    (results / "run.json").unlink()
    assert "run.json: no such file" in _error([str(results)])


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        pytest.param(lambda t: t[:-3], "truncated (its last line is incomplete)", id="mid-line"),
        pytest.param(
            lambda t: "".join(t.splitlines(keepends=True)[:-6]),
            "30 rows where run.json's plan has 36; 6 missing",
            id="rows lost",
        ),
    ],
)
def test_truncated_summary_is_exit_2(tmp_path: Path, cut, message: str) -> None:
    # Before: a summary cut at a line end was drawn from the rows that were left (exit 0),
    # or the estimates were refused as misaligned without saying that the summary was cut.
    results, _, _ = build_results(tmp_path)
    summary = results / "summary.csv"
    summary.write_text(cut(summary.read_text(encoding="utf-8")), encoding="utf-8")
    stderr = _error([str(results)])
    assert stderr.count("\n") == 1 and f"{summary}: {message}" in stderr
    assert not (results / "figure3.png").exists()


def test_corrupt_estimates_are_exit_2(tmp_path: Path) -> None:
    results, _, _ = build_results(tmp_path)
    npz = results / "estimates.npz"
    npz.write_bytes(npz.read_bytes()[:100])
    stderr = _error([str(results)])
    assert stderr.count("\n") == 1 and f"{npz}: unreadable" in stderr
    assert "rerun the experiment with results_dir=" in stderr


def test_misaligned_estimates_are_exit_2(tmp_path: Path) -> None:
    results, _, _ = build_results(tmp_path)
    with np.load(results / "estimates.npz") as stored:
        arrays = {key: stored[key] for key in stored.files}
    arrays["true_value"] = arrays["true_value"][::-1].copy()
    np.savez(results / "estimates.npz", **arrays)
    assert "true_value column differs" in _error([str(results)])


def test_other_data_is_refused(tmp_path: Path) -> None:
    results, _, _ = build_results(tmp_path)
    other = write_vertebral_file(tmp_path / "other.dat", seed=8)
    stderr = _error([str(results), "--data", str(other)])
    assert "not the data the results were computed on" in stderr


def test_several_epsilons_need_a_choice(tmp_path: Path) -> None:
    results, _, _ = build_results(tmp_path, epsilons=(EPSILON, 1.0))
    assert "choose one with --epsilon" in _error([str(results)])
    status, _, stderr = run_main([str(results), "--epsilon", "1", "--out", str(tmp_path / "o")])
    assert status == 0, stderr
    assert "no rows at ε = 2" in _error([str(results), "--epsilon", "2"])


# ------------------------------------------------------------------ the real harness


def test_figure2_config_and_a_tiny_real_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """conf/experiment/figure2.yaml composes to the paper's setup; a shrunk run plots."""
    from hydra import compose, initialize_config_dir

    from experiments.run import run

    data_file = write_vertebral_file(tmp_path / "column_2C.dat")
    monkeypatch.setenv("VERTEBRAL_DATA", str(data_file))
    results_dir = tmp_path / "run"
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        paper = compose(config_name="config", overrides=["experiment=figure2"])
        labels = [*paper.mechanisms, "quantile_em"]
        tiny = compose(
            config_name="config",
            overrides=[
                "experiment=figure2",
                "trials=25",
                f"mechanisms=[{','.join(labels)}]",
                f"results_dir={results_dir}",
            ],
        )
    assert paper.name == "figure2"
    assert list(paper.epsilons) == [0.5] and paper.trials == 1000
    assert list(paper.datasets) == ["vertebral"] and paper.delta == "1/n"
    assert paper.keep_estimates is True
    # LaplaceLN tuned on the data (the paper's choice), then Duff: whatever their labels
    entries = [(m.name, m.options.get("tuning")) for m in build_plan(paper).mechanisms]
    assert entries == [("laplace_ln", "oracle"), ("duff", None)]

    run(tiny, n_jobs=1)
    status, _, stderr = run_main([str(results_dir), "--measurements", "pelvic_incidence"])
    assert status == 0, stderr
    assert (results_dir / "figure2.png").is_file() and (results_dir / "figure3.pdf").is_file()
    summary = pd.read_csv(results_dir / "summary.csv", dtype={"subset": str})
    results = figure2_data.load_results(results_dir, measurements=["pelvic_incidence"])
    table = figure2_numbers.table_rows(results).set_index(["measurement", "mechanism"])
    for label in ("AB", "NO"):
        for mechanism in labels:
            row = summary.loc[
                (summary["subset"] == f"pelvic_incidence/{label}")
                & (summary["mechanism"] == mechanism)
            ].iloc[0]
            if row["status"] != "ok":
                continue
            mae = table.loc[("pelvic_incidence", mechanism), f"mae_{label}"]
            assert mae == pytest.approx(row["mean_abs_error"], rel=1e-12)
            assert table.loc[("pelvic_incidence", mechanism), f"median_{label}"] == (
                MEDIAN_AB if label == "AB" else MEDIAN_NO
            )
