"""The measured numbers the README quotes, computed from the committed reference outputs.

Each ``*_numbers`` function returns the values of some README markers
(``<!--n:KEY-->value<!--/n-->``) by key, written the way the README writes them
(:func:`sig`, :func:`fixed`, :func:`count`, :func:`sci`); each ``*_block``
function returns a generated table.  The files are those of :data:`SOURCES`,
paths relative to the project root, read by :mod:`readme_tools.reference_tables`.
Labels appear only where a reference table is keyed by them (the peers table);
figure tables are read by the names the figures show.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from readme_tools.reference_tables import NumbersError, Table, number, pick, value

from experiments.gate.baseline import GateInputError, read_baseline
from experiments.reports.tables import markdown_table

REFERENCE = (
    "figure1/figure1_ratios.md figure1/run.json figure1/paper_tuning_study.md "
    "figure1_replace_one/figure1_ratios.md figure1_plugin/figure1_ratios.md "
    "figure1_plugin/run.json figure1_bounds/bounds_coverage.md figure2/figure2_table.md "
    "figure2/run.json peers/peers_table.md peers/run.json audit/audit.json "
    "figure1_replace_one/run.json quantiles/quantiles_table.md mode/mode_table.md "
    "mean/mean_table.md ptr/ptr_table.md trimmed_mean_hypothesis/trimmed_median_table.md "
    "intervals/intervals_table.md audit/audit_intervals.json audit/audit_black_box.json"
)
SOURCES = tuple(f"results/reference/{name}" for name in REFERENCE.split())
F1, F1_RUN, F1_STUDY, F1_NRS07, PLUGIN, PLUGIN_RUN = SOURCES[:6]
BOUNDS, F2, F2_RUN, PEERS, PEERS_RUN, AUDIT, F1_NRS07_RUN, QUANTILES = SOURCES[6:14]
MODE, MEAN, PTR, TRIMMED, INTERVALS, AUDIT_INTERVALS, AUDIT_BLACK_BOX = SOURCES[14:]
BASELINE, BENCH = "results/baselines/regression.csv", "benchmarks/results.md"
SETUP = "docs/measured/setup.json"
SOURCES += (BASELINE, BENCH, SETUP)
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
DISTRIBUTIONS = ("N(0, 1)", "U(0, 1)", "Beta(0.5, 0.5)")
Numbers = dict[str, str]


# ---------------------------------------------------------------- formatting


def _grouped(exact: Decimal) -> str:
    whole, dot, fraction = f"{exact:f}".partition(".")
    return f"{int(whole):,}".replace(",", " ") + dot + fraction


def count(n: Any) -> str:
    """An integer, thousands grouped: ``21 600``."""
    return _grouped(Decimal(int(n)))


def sig(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant figures, half up, thousands grouped: ``5 400``."""
    d = Decimal(repr(float(x)))
    return _grouped(d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), ROUND_HALF_UP))


def fixed(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` decimals, half up."""
    return _grouped(Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP))


def sci(x: float, digits: int) -> str:
    """``1.1·10⁻⁵``."""
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}·10{str(int(exponent)).translate(SUPERSCRIPT)}"


def decimals(k: int) -> Callable[[float], str]:
    """:func:`fixed` with ``k`` decimals, as a function of the value."""
    return lambda x: fixed(x, k)


def figures(k: int) -> Callable[[float], str]:
    """:func:`sig` with ``k`` significant figures, as a function of the value."""
    return lambda x: sig(x, k)


def span(key: str, values: list[float], show: Callable[[float], str]) -> Numbers:
    """``key_min`` and ``key_max`` of ``values``, written by ``show``."""
    if not values:
        raise NumbersError(f"no values for {key}: a reference table lost its rows")
    return {f"{key}_min": show(min(values)), f"{key}_max": show(max(values))}


# -------------------------------------------------------------------- values


PAPER_COLUMNS = (
    ("cauchy", "SmoothSens_ε (Cauchy)"),
    ("ln", "LaplaceLN, δ=0.001"),
    ("laplace", "SmoothSens_ε,δ (Laplace), δ=0.001"),
)
GRID = {"baseline": "SmoothSens_ε,δ", "smooth sensitivity": "replace_one"}
GRID["variant"] = "β best of a 20-point grid in [1e-4, 1]"


def by_distribution(root: Path, rel: str, section: str) -> list[Table]:
    """The tables of section ``section`` of ``rel``, one per Figure 1 distribution."""
    return [pick(root, rel, section, f"**{d}**") for d in DISTRIBUTIONS]


def figure1_numbers(root: Path) -> Numbers:
    """Figure 1: ranges of the ratios to Duff, the paper comparison, public against oracle."""
    ratios = by_distribution(root, F1, "Ratio to Duff")
    qem = [x for t in ratios for x in t.numbers("Quantile EM")]
    others = [x for t in ratios for c in t.header() if c not in ("ε", "Quantile EM")
              for x in t.numbers(c)]  # fmt: skip
    out = span("f1.ratio", others, figures(2)) | span("f1.qem", qem, decimals(2))
    nrs07 = by_distribution(root, F1_NRS07, "Ratio to Duff")[0]
    columns = [(ratios[0], key, column) for key, column in PAPER_COLUMNS]
    cauchy = nrs07.named("SmoothSens_ε (Cauchy)")
    for table, key, column in [*columns, (nrs07, "nrs07", cauchy)]:
        for eps in ("0.1", "2"):
            out[f"f1.{key}_{eps}"] = table.get({"ε": eps}, column).removesuffix("×")
    errors = by_distribution(root, F1, "Mean error")
    for key, oracle in (("ss", "SmoothSens_ε,δ (Laplace)"), ("ln", "LaplaceLN")):
        public = [x for t in errors for x in t.numbers(f"{oracle}, public tuning, δ=0.001")]
        private = [x for t in errors for x in t.numbers(f"{oracle}, δ=0.001")]
        share = [p / q for p, q in zip(public, private, strict=True)]
        out |= span(f"f1.public_{key}", share, figures(3))
    given = pick(root, F1, "Privacy guarantee")
    zcdp = given.get({"mechanism": "LaplaceLN", "ε (requested)": "1"}, "guarantee ε")
    out["f1.ln_eps1"] = fixed(number(zcdp, F1), 2)
    study = pick(root, F1_STUDY, "")
    for eps in ("0.1", "2"):
        out[f"f1.grid_{eps}"] = study.get(GRID, f"ε = {eps}").removesuffix("×")
    out["f1.releases"] = count(value(root, F1_RUN, "rows"))
    slower = value(root, F1_NRS07_RUN, "runtime_seconds") / value(root, F1_RUN, "runtime_seconds")
    out["f1r1.slowdown"] = fixed(slower, 1)
    return out


def plugin_numbers(root: Path) -> Numbers:
    """The plug-in example: rows of its run, binned_rr's ratio to Duff on N(0, 1)."""
    normal = by_distribution(root, PLUGIN, "Ratio to Duff")[0]
    out = {"plugin.rows": count(value(root, PLUGIN_RUN, "rows"))}
    for eps in ("0.1", "2"):
        out[f"plugin.ratio_{eps}"] = sig(normal.numbers("binned_rr", {"ε": eps})[0], 3)
    return out


def figure2_tables(root: Path) -> tuple[Table, Table]:
    """The ratio table and the per-measurement table of ``figure2_table.md``."""
    return pick(root, F2, "Duff MAE / LaplaceLN MAE"), pick(root, F2, "Per measurement")


def figure2_block(root: Path) -> str:
    """The README's Figure 2 table: Duff's MAE / LaplaceLN's, P(true order) of each."""
    ratio, each = figure2_tables(root)
    rows = []
    cells = (ratio.cells(ratio.rows, c) for c in ("measurement", "AB", "NO"))
    for name, ab, no in zip(*cells, strict=True):
        order = [each.get({"measurement": name, "mechanism": m}, "P(true order)")
                 for m in ("LaplaceLN", "Duff (EM)")]  # fmt: skip
        rows.append([name, ab, no, " / ".join(order)])
    header = ["measurement", "AB", "NO", "P(classes in the true order): LaplaceLN / Duff"]
    return markdown_table(header, rows)


def figure2_numbers(root: Path) -> Numbers:
    """How much tighter Duff is, how often LaplaceLN's estimates are in order, the run."""
    ratio, each = figure2_tables(root)
    tighter = [1 / x for x in ratio.numbers("AB") + ratio.numbers("NO")]
    order = [100 * x for x in each.numbers("P(true order)", {"mechanism": "LaplaceLN"})]
    out = span("f2.tighter", tighter, decimals(1)) | span("f2.order", order, decimals(0))
    out["f2.seconds"] = fixed(value(root, F2_RUN, "runtime_seconds"), 1)
    return out | {"f2.releases": count(value(root, F2_RUN, "rows"))}


PEER_COLUMNS = {  # the README's column: its label in peers_table.md
    "duff": "duff", "quantile_em (add/remove)": "quantile_em",
    "OpenDP EM (add/remove)": "opendp_quantile_em",
    "OpenDP default (permute-and-flip)": "opendp_quantile",
    "quantile_em (replace-one)": "quantile_em_replace_one",
    "diffprivlib (replace-one)": "diffprivlib_quantile",
}  # fmt: skip
PEER_ERRORS, TIME_ROW = ("Peers", "Mean |T(S) − M(S)|"), {"dataset": "**ms per cell** (median)"}


def peers_block(root: Path) -> str:
    """The README's peers table: N(0, 1) rows of the error table and the time per cell."""
    errors = pick(root, PEERS, *PEER_ERRORS)
    rows = errors.select({"dataset": "normal"}) + errors.select(TIME_ROW)
    columns = [errors.cells(rows, c) for c in ("ε", *PEER_COLUMNS.values())]
    columns[0][-1] = "ms per 50 estimates"
    align = ["---"] + ["---:"] * len(PEER_COLUMNS)
    return markdown_table(["ε", *PEER_COLUMNS], [*zip(*columns, strict=True)], align)


def marked_block(root: Path, path: str) -> str:
    """The block of a ``duff-plot`` table between its ``<!-- readme -->`` markers."""
    text = (root / path).read_text(encoding="utf-8")
    start, end = "<!-- readme -->", "<!-- /readme -->"
    if start not in text or end not in text:
        raise NumbersError(f"{path}: no {start} block (rerun its duff-plot command)")
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def quantiles_block(root: Path) -> str:
    """The README's quantiles table: the block ``duff-plot quantiles`` marks for it."""
    return marked_block(root, QUANTILES)


def mode_block(root: Path) -> str:
    return marked_block(root, MODE)


def mean_block(root: Path) -> str:
    return marked_block(root, MEAN)


def ptr_block(root: Path) -> str:
    return marked_block(root, PTR)


def trimmed_block(root: Path) -> str:
    return marked_block(root, TRIMMED)


def intervals_block(root: Path) -> str:
    return marked_block(root, INTERVALS)


def _row_ratios(block: str, name: str) -> list[float]:
    """The ``…×`` numbers of the rows of a study block whose mechanism starts with ``name``."""
    rows = [line for line in block.splitlines() if line.startswith(f"| {name}")]
    return [float(x) for line in rows for x in re.findall(r"([\d.]+)×", line)]


def studies_numbers(root: Path) -> Numbers:
    """The ranges the README quotes from the mean, PTR and trimmed-mean tables."""
    ptr_table = ptr_block(root)
    ptr = _row_ratios(ptr_table, "PTR")
    answered = [float(x) for x in re.findall(r"answered (\d+)%", ptr_table)]
    laplace = _row_ratios(mean_block(root), "Laplace mean")
    rows = [line.split("|") for line in trimmed_block(root).splitlines()]
    ends = {row[1].strip(): re.findall(r"([\d.]+)×", "|".join(row)) for row in rows[2:]}
    return {
        "ptr.ratio_min": sig(min(ptr), 2),
        "ptr.ratio_max": sig(max(ptr), 3),
        "ptr.answered_min": str(int(min(answered))),
        "ptr.answered_max": str(int(max(answered))),
        "mean.laplace_min": fixed(min(laplace), 2),
        "mean.laplace_max": fixed(max(laplace), 2),
        "trimmed.low": ends["0.1"][0],
        "trimmed.high": ends["2"][0],
    }


def quantiles_numbers(root: Path) -> Numbers:
    """Duff's largest margin where it wins, and the range of smooth sensitivity / Duff."""
    cell = re.compile(r"(?P<best>[^|;]+), by (?P<margin>[\d.]+)×[^;]*; SS/Duff (?P<ss>[\d.]+)×")
    found = [m.groupdict() for m in cell.finditer(quantiles_block(root))]
    if not found:
        raise NumbersError(f"{QUANTILES}: the README block has no cells")
    duff = [float(m["margin"]) for m in found if m["best"].strip().startswith("Duff")]
    ratios = [float(m["ss"]) for m in found]
    return {
        "quantiles.duff_margin": str(max(duff)),
        "quantiles.ss_min": str(min(ratios)),
        "quantiles.ss_max": str(max(ratios)),
    }


def peers_numbers(root: Path) -> Numbers:
    """Agreement of the same mechanisms (|z|, error ratio), diffprivlib's cost, versions."""
    out: Numbers = {}
    for key, pair in (("opendp", "`quantile_em` − `opendp_quantile_em`"),
                      ("dpl", "`quantile_em_replace_one` − `diffprivlib_quantile`")):  # fmt: skip
        table = pick(root, PEERS, "Peers", pair)
        out.setdefault("peers.cells", str(len(table.rows)))
        out[f"peers.{key}_z"] = fixed(max(abs(z) for z in table.numbers("z")), 2)
        out |= span(f"peers.{key}_ratio", table.numbers("error ratio"), decimals(2))
    errors, small = pick(root, PEERS, *PEER_ERRORS), {"ε": "0.1"}
    dpl, qem = (errors.numbers(c, small) for c in ("diffprivlib_quantile", "quantile_em"))
    cost = [d / q for d, q in zip(dpl, qem, strict=True)]
    out |= span("peers.dpl_cost", cost, decimals(1))
    for package in ("opendp", "diffprivlib", "scikit-learn"):
        out[f"peers.{package}"] = str(value(root, PEERS_RUN, "versions", package))
    out["peers.opendp_minor"] = ".".join(out["peers.opendp"].split(".")[:2])
    mechanisms = value(root, PEERS_RUN, "mechanisms")
    candidates = [
        m["options"].get("candidates") for m in mechanisms if m["label"] == "opendp_quantile"
    ]
    if len(candidates) != 1 or not isinstance(candidates[0], int):
        raise NumbersError(f"{PEERS_RUN}: no mechanism 'opendp_quantile' with options.candidates")
    return out | {"peers.candidates": count(candidates[0])}


def bounds_numbers(root: Path) -> Numbers:
    """Coverage and looseness of the theoretical bounds (median over cells, ranges)."""
    table = pick(root, BOUNDS, "Theoretical error bounds")
    cauchy, qem = {"mechanism": "smooth_cauchy"}, {"mechanism": "quantile_em"}
    sharp = cauchy | {"vacuous": "0%"}
    out = span("bounds.cauchy_cover", table.numbers("coverage", sharp), decimals(4))
    out["bounds.cauchy_exact"] = fixed(min(table.numbers("min exact P", sharp)), 4)
    out["bounds.cauchy_ratio"] = sig(statistics.median(table.numbers("bound / q95", cauchy)), 3)
    out["bounds.qem_ratio"] = sig(statistics.median(table.numbers("bound / q95", qem)), 3)
    out |= span("bounds.qem_ratio", table.numbers("bound / q95", qem), decimals(1))
    out["bounds.qem_cover"] = fixed(min(table.numbers("coverage", qem)), 4)
    data = {"mechanism": "duff", "bound": "Duff paper, Corollary 1, C from the data"}
    out["bounds.duff_ratio"] = sig(statistics.median(table.numbers("bound / q95", data)), 3)
    out |= span("bounds.duff_ratio", table.numbers("bound / q95", data), figures(2))
    out["bounds.duff_vacuous_eps"] = "none"
    for eps in sorted({r["ε"] for r in table.select(data)}, key=float):
        if any(r["vacuous"] != "100%" for r in table.select(data | {"ε": eps})):
            break
        out["bounds.duff_vacuous_eps"] = eps
    failed = sum(not v.startswith("holds") for v in table.cells(table.rows, "verdict"))
    out["bounds.verdict"] = f"{failed} of {len(table.rows)} fail" if failed else "every bound holds"
    verdicts = table.cells(table.select({"mechanism": "duff"}), "verdict")
    false = [re.search(r"assumption false on (\d+)%", v) for v in verdicts]
    return out | span("bounds.paper_c_false", [float(m[1]) for m in false if m], decimals(0))


def audit_numbers(root: Path) -> Numbers:
    """Largest privacy loss / ε per pure-DP mechanism (the median's, and the intervals' whose
    ends have exact cdfs); largest HS / δ with a guarantee."""
    summary = value(root, AUDIT, "summary")
    out = {}
    for label in ("duff", "quantile_em", "smooth_cauchy", "laplace_global"):
        out[f"audit.{label}"] = fixed(value(root, AUDIT, "summary", label, "max"), 6)
    divergences = [
        s["max"]
        for s in summary.values()
        if s.get("statistic") == "HS/delta" and not str(s.get("status")).startswith("no guarantee")
    ]
    if not divergences or None in divergences:
        raise NumbersError(f"{AUDIT}: no HS/delta maximum of a mechanism with a guarantee")
    for label in ("dp_order_statistic", "drechsler_expmech"):
        loss = value(root, AUDIT_INTERVALS, "summary", label, "max")
        out[f"audit.{label}"] = fixed(loss, 3)
    return out | {"audit.hs": sci(max(divergences), 2)}


def black_box_numbers(root: Path) -> Numbers:
    """The black-box audit's reference: the largest lower bound relative to the claim
    (eps_lower/eps or HS_lower/delta) over the mechanisms audited only from samples, and over
    those with an exact audit too, the largest ratio of the black-box bound to the exact value
    (at most 1 when the bounds hold)."""
    summary = value(root, AUDIT_BLACK_BOX, "summary")
    suffix = " [black-box]"
    sampled = {k.removesuffix(suffix): e for k, e in summary.items() if k.endswith(suffix)}
    both = [label for label in sampled if label in summary]
    only = [e["max"] for label, e in sampled.items() if label not in summary]
    if not only or not both or None in only:
        raise NumbersError(f"{AUDIT_BLACK_BOX}: no black-box rows with and without an exact row")
    ratios = [sampled[label]["max"] / summary[label]["max"] for label in both]
    return {
        "audit.bb_max": fixed(max(only), 3),
        "audit.bb_ratio_max": fixed(max(ratios), 3),
        "audit.bb_laplace_global": fixed(sampled["laplace_global"]["max"], 3),
    }


def baseline_numbers(root: Path) -> Numbers:
    """The regression gate: cells and mechanisms in the committed baseline."""
    try:
        baseline = read_baseline(root / BASELINE)
    except GateInputError as error:
        raise NumbersError(f"{BASELINE}: unreadable baseline ({error})") from None
    mechanisms = baseline.index.get_level_values("mechanism").nunique()
    return {"gate.cells": str(len(baseline)), "gate.mechanisms": str(mechanisms)}


TEST_TARGET_S = 300
"""Issue 31's target for ``make test`` on the 2-core machine: 5 minutes."""


def setup_numbers(root: Path) -> Numbers:
    """How long the set-up commands take (``docs/measured/setup.json``, measured by hand on
    the project's 2-core machine): ``make figure1`` on a fresh clone and again, ``make test``,
    ``make docs``, and the machine's load average while they ran."""
    seconds = {
        key: value(root, SETUP, key, "seconds")
        for key in ("figure1_fresh", "install", "figure1", "test", "docs")
    }
    return {
        "setup.figure1_first_s": sig(seconds["figure1_fresh"], 2),
        "setup.install_s": sig(seconds["install"], 2),
        "setup.figure1_s": sig(seconds["figure1"], 2),
        "setup.test_min": fixed(seconds["test"] / 60, 0),
        "setup.test_s": fixed(seconds["test"], 0),
        "setup.test_verdict": "met" if seconds["test"] <= TEST_TARGET_S else "**missed**",
        "setup.docs_s": sig(seconds["docs"], 2),
        "setup.docs_cpu_s": sig(value(root, SETUP, "docs", "cpu_seconds"), 2),
        "setup.test_cpu_min": fixed(value(root, SETUP, "test", "cpu_seconds") / 60, 0),
        "setup.date": str(value(root, SETUP, "measured")),
        "setup.load": sig(value(root, SETUP, "load_average"), 2),
    }
