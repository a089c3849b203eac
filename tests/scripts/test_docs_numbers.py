"""``scripts/readme_numbers.py`` (:mod:`readme_tools.markers`) over the README and the docs
pages: every quoted number comes from the committed references, and drift is caught.

The numbers moved with the research content from the README into ``docs/``: a key may be
quoted on any page (and on several), the pages together quote every key, and the
README's first lines quote theirs as plain phrases, checked all the same.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from harness_mechanisms import PROJECT_ROOT
from readme_tools import markers as readme_numbers
from readme_tools import values as readme_values
from readme_tools.reference_tables import NumbersError

README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
BLOCKS = {
    "figure2_table",
    "peers_table",
    "quantiles_table",
    "mode_table",
    "mean_table",
    "ptr_table",
    "trimmed_median_table",
    "intervals_table",
    "speed_table",
}


@pytest.fixture(scope="module")
def numbers() -> ModuleType:
    assert readme_numbers.README == README  # the checkout's README, found from the package
    assert readme_numbers.DOCS == DOCS
    return readme_numbers


@pytest.fixture
def references(tmp_path: Path) -> Path:
    """A copy of every reference file the pages' numbers are read from, to plant changes in."""
    root = tmp_path / "project"
    for rel in readme_values.SOURCES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_ROOT / rel, root / rel)
    return root


@pytest.fixture
def pages(tmp_path: Path, numbers: ModuleType) -> tuple[Path, Path]:
    """A copy of the README and of every hand-written docs page: (readme, docs)."""
    readme, docs = tmp_path / "site" / "README.md", tmp_path / "site" / "docs"
    readme.parent.mkdir()
    shutil.copy(README, readme)
    for page in numbers.pages()[1:]:
        target = docs / page.relative_to(DOCS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(page, target)
    return readme, docs


def plant(path: Path, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in ``path`` by ``new``."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def page_quoting(numbers: ModuleType, docs: Path, marker: str) -> Path:
    """The one page of the copy ``docs`` that quotes ``marker``."""
    (found,) = [p for p in numbers.pages(docs / "none", docs)[1:] if marker in p.read_text()]
    return found


def test_the_pages_agree_with_the_committed_references(numbers: ModuleType) -> None:
    assert numbers.check() == []
    numbers_, blocks = numbers.reference()
    for page in numbers.pages():
        text = page.read_text(encoding="utf-8")
        assert numbers.render(text, numbers_, blocks, head=page == README) == text


def test_every_key_is_quoted_and_every_marker_filled(numbers: ModuleType) -> None:
    inline, blocks = numbers.reference()
    texts = [page.read_text(encoding="utf-8") for page in numbers.pages()]
    quoted = {m[1] for text in texts for m in numbers.INLINE.finditer(text)}
    assert quoted == set(inline)
    assert {m[1] for text in texts for m in numbers.BLOCK.finditer(text)} == set(blocks) == BLOCKS
    assert len(texts) > 10  # the README and the docs pages


def test_the_readme_head_quotes_its_numbers_without_markers(numbers: ModuleType) -> None:
    head = "\n".join(README.read_text(encoding="utf-8").splitlines()[: numbers.HEAD_LINES])
    values = numbers.reference()[0]
    assert "<!--n:" not in head
    for key, template in numbers.HEAD_QUOTES.items():
        assert template.format(values[key]) in head, key


def test_a_changed_head_number_is_named_and_rewritten(
    numbers: ModuleType, pages: tuple[Path, Path]
) -> None:
    readme, docs = pages
    value = numbers.reference()[0]["setup.test_min"]
    plant(readme, f"about {value} min on 2 cores", "about 99 min on 2 cores")
    assert numbers.check(readme, docs=docs) == [("README head setup.test_min", "99", value)]
    assert numbers.main(["--check", "--readme", str(readme), "--docs", str(docs)]) == 1
    assert numbers.main(["--readme", str(readme), "--docs", str(docs)]) == 0
    assert numbers.check(readme, docs=docs) == []


def test_a_marker_in_the_readme_head_is_refused(
    numbers: ModuleType, pages: tuple[Path, Path]
) -> None:
    readme, docs = pages
    value = numbers.reference()[0]["setup.figure1_s"]
    plant(readme, f"then {value} s", f"then <!--n:setup.figure1_s-->{value}<!--/n--> s")
    refused, unquoted = numbers.check(readme, docs=docs)
    assert refused[2] == f"no marker in the first {numbers.HEAD_LINES} lines"
    assert unquoted[0] == "README head setup.figure1_s"  # and the phrase no longer reads as text


def test_a_changed_number_in_a_docs_page_is_named(
    numbers: ModuleType, pages: tuple[Path, Path]
) -> None:
    readme, docs = pages
    reference = numbers.reference()[0]["f2.seconds"]
    marker = f"<!--n:f2.seconds-->{reference}<!--/n-->"
    page = page_quoting(numbers, docs, marker)
    plant(page, marker, "<!--n:f2.seconds-->9.9<!--/n-->")
    assert numbers.check(readme, docs=docs) == [("f2.seconds", "9.9", reference)]
    assert numbers.main(["--check", "--readme", str(readme), "--docs", str(docs)]) == 1
    assert numbers.main(["--readme", str(readme), "--docs", str(docs)]) == 0  # rewritten
    assert numbers.check(readme, docs=docs) == []
    assert marker in page.read_text(encoding="utf-8")


def test_a_changed_number_in_the_readme_is_named(
    numbers: ModuleType, pages: tuple[Path, Path]
) -> None:
    readme, docs = pages
    reference = numbers.reference()[0]["gate.cells"]
    plant(readme, f"<!--n:gate.cells-->{reference}<!--/n-->", "<!--n:gate.cells-->7<!--/n-->")
    assert numbers.check(readme, docs=docs) == [("gate.cells", "7", reference)]


def test_a_changed_table_cell_in_a_docs_page_is_named(
    numbers: ModuleType, pages: tuple[Path, Path]
) -> None:
    readme, docs = pages
    page = page_quoting(numbers, docs, "<!-- readme_numbers:figure2_table -->")
    row = next(line for line in page.read_text().splitlines() if line.startswith("| pelvic tilt"))
    cells = row.split(" | ")
    plant(page, row, " | ".join([cells[0], "9.99", *cells[2:]]))
    (difference,) = numbers.check(readme, docs=docs)
    assert difference[0].startswith("table figure2_table line ")
    assert "9.99" in difference[1] and difference[2] == row


def test_a_number_no_page_quotes_or_none_knows_is_a_difference(
    numbers: ModuleType, pages: tuple[Path, Path]
) -> None:
    readme, docs = pages
    value = numbers.reference()[0]["plugin.rows"]
    marker = f"<!--n:plugin.rows-->{value}<!--/n-->"
    page = page_quoting(numbers, docs, marker)
    plant(page, marker, value + " <!--n:no.such-->1<!--/n-->")
    assert set(numbers.check(readme, docs=docs)) == {
        ("plugin.rows", "<not in README or docs>", value),
        ("no.such", "1", "<no reference value>"),
    }
    assert numbers.main(["--readme", str(readme), "--docs", str(docs)]) == 2  # refused


def test_a_marker_at_the_start_of_a_line_is_refused(
    numbers: ModuleType, pages: tuple[Path, Path]
) -> None:
    readme, docs = pages
    marker = "<!--n:f1.ratio_min-->"
    page = page_quoting(numbers, docs, f"a factor of {marker}")
    plant(page, f"a factor of {marker}", f"a factor of\n{marker}")
    assert [d[2] for d in numbers.check(readme, docs=docs)] == ["a marker may not start a line"]


def test_a_changed_json_reference_is_named(numbers: ModuleType, references: Path) -> None:
    run = json.loads((references / readme_values.F2_RUN).read_text())
    run["runtime_seconds"] = 2.345
    (references / readme_values.F2_RUN).write_text(json.dumps(run))
    page_value = numbers.reference()[0]["f2.seconds"]
    assert numbers.check(README, references) == [("f2.seconds", page_value, "2.3")]


def test_a_changed_set_up_time_is_named(numbers: ModuleType, references: Path) -> None:
    setup = json.loads((references / readme_values.SETUP).read_text())
    setup["test"]["seconds"] = 5999
    (references / readme_values.SETUP).write_text(json.dumps(setup))
    found = {d[0]: d[2] for d in numbers.check(README, references)}
    assert found["README head setup.test_min"] == found["setup.test_min"] == "100"


@pytest.mark.parametrize(
    ("source", "pattern", "new", "key"),
    [
        ("PEERS", r"(\| normal \| 0\.1 \| )[^|]+", "0.0999 ", "table peers_table line 4"),
        (
            "BENCH",
            r"(\| duff(?: \| [^|]+){3} \| )[^|]+",
            "0.99 ",
            "bench.select_1e6_max",
        ),
        ("BOUNDS", r"(\| quantile_em \|(?: [^|]+ \|){4} )[^|]+", "0.9 (1) ", "bounds.qem_cover"),
        ("AUDIT", r'("duff": \{\s*"statistic": "loss/eps",\s*"max": )[^,]+', "0.5", "audit.duff"),
        ("BASELINE", r"(\nbeta,,(?:median,)?)duff,", "other,", "gate.mechanisms"),
    ],
)  # fmt: skip
def test_a_changed_reference_value_is_named(
    numbers: ModuleType, references: Path, source: str, pattern: str, new: str, key: str
) -> None:
    path = references / getattr(readme_values, source)
    text, changed = re.subn(pattern, r"\g<1>" + new, path.read_text(encoding="utf-8"), count=1)
    assert changed == 1, pattern
    path.write_text(text, encoding="utf-8")
    assert key in [d[0] for d in numbers.check(README, references)]


def test_a_missing_reference_is_named(numbers: ModuleType, references: Path) -> None:
    (references / readme_values.AUDIT).unlink()
    with pytest.raises(NumbersError, match=r"results/reference/audit/audit\.json"):
        numbers.check(README, references)
    assert numbers.main(["--check", "--root", str(references)]) == 2


def test_a_malformed_reference_is_named(numbers: ModuleType, references: Path) -> None:
    path = references / readme_values.BOUNDS
    path.write_text(path.read_text().replace("| holds |", "| holds | extra |", 1))
    with pytest.raises(NumbersError, match=r"bounds_coverage\.md: line \d+: 14 cells"):
        numbers.check(README, references)
    (references / readme_values.F2_RUN).write_text("{not json")
    with pytest.raises(NumbersError, match=r"figure2/run\.json: unreadable run\.json"):
        numbers.reference(references)
