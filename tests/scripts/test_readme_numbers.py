"""``scripts/readme_numbers.py`` (:mod:`readme_tools.markers`): the README quotes
the committed references, and drift is caught."""

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


@pytest.fixture(scope="module")
def numbers() -> ModuleType:
    assert readme_numbers.README == README  # the checkout's README, found from the package
    return readme_numbers


@pytest.fixture
def references(tmp_path: Path) -> Path:
    """A copy of every reference file the README's numbers are read from, to plant changes in."""
    root = tmp_path / "project"
    for rel in readme_values.SOURCES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_ROOT / rel, root / rel)
    return root


def planted(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the README with the one occurrence of ``old`` replaced by ``new``."""
    text = README.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = tmp_path / "README.md"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_the_readme_agrees_with_the_committed_references(numbers: ModuleType) -> None:
    assert numbers.check() == []
    text = README.read_text(encoding="utf-8")
    assert numbers.render(text, *numbers.reference()) == text


def test_every_marked_number_is_in_a_marker_the_script_fills(numbers: ModuleType) -> None:
    text = README.read_text(encoding="utf-8")
    inline, blocks = numbers.reference()
    assert {m[1] for m in numbers.INLINE.finditer(text)} == set(inline)
    assert (
        {m[1] for m in numbers.BLOCK.finditer(text)}
        == set(blocks)
        == {
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
    )


def test_a_changed_number_in_the_readme_is_named(numbers: ModuleType, tmp_path: Path) -> None:
    reference = numbers.reference()[0]["f2.seconds"]
    marker = f"<!--n:f2.seconds-->{reference}<!--/n-->"
    readme = planted(tmp_path, marker, "<!--n:f2.seconds-->9.9<!--/n-->")
    assert numbers.check(readme) == [("f2.seconds", "9.9", reference)]
    assert numbers.main(["--check", "--readme", str(readme)]) == 1
    assert numbers.main(["--readme", str(readme)]) == 0  # rewritten from the references
    assert numbers.check(readme) == []


def test_a_changed_table_cell_in_the_readme_is_named(numbers: ModuleType, tmp_path: Path) -> None:
    row = next(line for line in README.read_text().splitlines() if line.startswith("| pelvic tilt"))
    cells = row.split(" | ")
    readme = planted(tmp_path, row, " | ".join([cells[0], "9.99", *cells[2:]]))
    (difference,) = numbers.check(readme)
    assert difference[0].startswith("table figure2_table line ")
    assert "9.99" in difference[1] and difference[2] == row


def test_a_number_the_readme_lacks_or_does_not_know_is_a_difference(
    numbers: ModuleType, tmp_path: Path
) -> None:
    marker = re.search(r"<!--n:gate\.mechanisms-->(.*?)<!--/n-->", README.read_text())
    assert marker is not None
    readme = planted(tmp_path, marker[0], marker[1] + " <!--n:no.such-->1<!--/n-->")
    assert set(numbers.check(readme)) == {
        ("gate.mechanisms", "<not in README>", marker[1]),
        ("no.such", "1", "<no reference value>"),
    }
    assert numbers.main(["--readme", str(readme)]) == 2  # nothing to write there: refused


def test_a_marker_at_the_start_of_a_line_is_refused(numbers: ModuleType, tmp_path: Path) -> None:
    readme = planted(
        tmp_path, "by a factor of <!--n:f1.ratio_min-->", "by a factor of\n<!--n:f1.ratio_min-->"
    )
    assert [d[2] for d in numbers.check(readme)] == ["a marker may not start a line"]


def test_a_changed_json_reference_is_named(numbers: ModuleType, references: Path) -> None:
    run = json.loads((references / readme_values.F2_RUN).read_text())
    run["runtime_seconds"] = 2.345
    (references / readme_values.F2_RUN).write_text(json.dumps(run))
    readme_value = numbers.reference()[0]["f2.seconds"]
    assert numbers.check(README, references) == [("f2.seconds", readme_value, "2.3")]


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
