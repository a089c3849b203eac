"""Write the measured numbers quoted in README.md and the docs pages from the committed
reference outputs.

Usage::

    python scripts/readme_numbers.py [--check] [--readme PATH] [--docs DIR] [--root DIR]

Every measured figure in the README and in the hand-written pages of the documentation
(``docs/**/*.md``, not ``docs/generated`` or ``docs/_build``: :func:`pages`) sits between
markers that GitHub and Sphinx do not show: ``<!--n:KEY-->value<!--/n-->`` around one
number in the prose, and ``<!-- readme_numbers:NAME -->`` … ``<!-- /readme_numbers:NAME
-->`` around a generated table.  A key may be quoted on several pages, and each page
quotes the keys it needs: together they must quote every key.  The README's first
:data:`HEAD_LINES` lines are read as raw text by people, so they hold no marker; the
numbers they quote are checked as phrases instead (:data:`HEAD_QUOTES`, e.g. "4 min the
first time").  :mod:`readme_tools.values` computes each value from the reference files
(paths relative to ``--root``, the project by default) and this module rewrites the
pages in place.  ``--check`` rewrites nothing: it prints one line per difference (key,
page value, reference value) and exits 1 if there is any.  A key no page quotes, a
marker with no reference value, a marker at the start of a line (GitHub would end the
paragraph there), a marker in the README's head and a head phrase whose number
disagrees are differences too.  Exit status 2: a reference file is missing or malformed
(named in the message).  ``tests/scripts/test_docs_numbers.py`` runs the check.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from readme_tools.bench import bench_numbers, speed_block
from readme_tools.reference_tables import NumbersError
from readme_tools.values import (
    Numbers,
    audit_numbers,
    baseline_numbers,
    black_box_numbers,
    bounds_numbers,
    figure1_numbers,
    figure2_block,
    figure2_numbers,
    intervals_block,
    mean_block,
    mode_block,
    peers_block,
    peers_numbers,
    plugin_numbers,
    ptr_block,
    quantiles_block,
    quantiles_numbers,
    setup_numbers,
    studies_numbers,
    trimmed_block,
)

ROOT = Path(__file__).resolve().parents[2]
"""The project (a checkout: the README and its references live there, not in the package)."""
README = ROOT / "README.md"
DOCS = ROOT / "docs"
NOT_PAGES = ("_build", "generated")
"""Folders of ``docs/`` that Sphinx or the docs extension write: never hand-written pages."""
HEAD_LINES = 40
"""The README's first lines, read as raw text: no markers there."""
HEAD_QUOTES = {
    "setup.figure1_first_s": "{} s the first time",
    "setup.figure1_s": "then {} s",
    "setup.test_min": "about {} min on 2 cores",
}
"""Numbers the README's head quotes without markers, as the phrase each sits in."""
INLINE = re.compile(r"<!--n:(.*?)-->(.*?)<!--/n-->")
BLOCK = re.compile(r"<!-- readme_numbers:([\w.-]+) -->\n(.*?)<!-- /readme_numbers:\1 -->", re.S)
NUMBERS = (
    figure1_numbers,
    plugin_numbers,
    figure2_numbers,
    peers_numbers,
    bounds_numbers,
    bench_numbers,
    audit_numbers,
    black_box_numbers,
    baseline_numbers,
    quantiles_numbers,
    studies_numbers,
    setup_numbers,
)
BLOCKS = {
    "figure2_table": figure2_block,
    "peers_table": peers_block,
    "quantiles_table": quantiles_block,
    "mode_table": mode_block,
    "mean_table": mean_block,
    "ptr_table": ptr_block,
    "trimmed_median_table": trimmed_block,
    "intervals_table": intervals_block,
    "speed_table": speed_block,
}
Difference = tuple[str, str, str]


def reference(root: Path = ROOT) -> tuple[Numbers, Numbers]:
    """Every inline number and every generated table, from the reference files under ``root``."""
    numbers: Numbers = {}
    for compute in NUMBERS:
        numbers |= compute(root)
    return numbers, {name: f"\n{block(root)}\n\n" for name, block in BLOCKS.items()}


def pages(readme: Path = README, docs: Path = DOCS) -> list[Path]:
    """The README, then every hand-written Markdown page of ``docs`` (sorted)."""
    found = [readme]
    if docs.is_dir():
        found += sorted(
            path for path in docs.rglob("*.md") if path.relative_to(docs).parts[0] not in NOT_PAGES
        )
    return found


def _head_quote(template: str) -> re.Pattern[str]:
    before, after = (re.escape(part) for part in template.split("{}"))
    return re.compile(f"{before}(\\S+?){after}")


def _head_differences(text: str, numbers: Numbers) -> list[Difference]:
    head = "\n".join(text.splitlines()[:HEAD_LINES])
    found = [
        (f"README line {i}", line.strip()[:40], f"no marker in the first {HEAD_LINES} lines")
        for i, line in enumerate(head.splitlines(), 1)
        if "<!--n:" in line or "readme_numbers:" in line
    ]
    for key, template in HEAD_QUOTES.items():
        quoted = _head_quote(template).search(head)
        expected = numbers.get(key, "<no reference value>")
        if quoted is None:
            found.append((f"README head {key}", "<not quoted>", template.format(expected)))
        elif quoted[1] != expected:
            found.append((f"README head {key}", quoted[1], expected))
    return found


def differences(
    texts: Mapping[str, str] | str, numbers: Numbers, blocks: Numbers
) -> list[Difference]:
    """(key, page value, reference value) for each marker that disagrees or is missing.

    ``texts``: the text of each page by its name, the README's as ``"README"`` (its head is
    checked too); a single text is the README alone."""
    if isinstance(texts, str):
        texts = {"README": texts}
    found = []
    seen: dict[str, set[str]] = {"": set(), "table ": set()}
    for page, text in texts.items():
        found += [
            (f"{page} line {i}", line.strip()[:40], "a marker may not start a line")
            for i, line in enumerate(text.splitlines(), 1)
            if line.lstrip().startswith("<!--n:")
        ]
        if page == "README":
            found += _head_differences(text, numbers)
        for kind, pattern, values in (("", INLINE, numbers), ("table ", BLOCK, blocks)):
            for match in pattern.finditer(text):
                key, old_lines = match[1], match[2].split("\n")
                new_lines = values.get(key, "<no reference value>").split("\n")
                seen[kind].add(key)
                for line, (was, now) in enumerate(zip(old_lines, new_lines, strict=False), 1):
                    if was != now:
                        found.append((kind + key + (f" line {line}" if kind else ""), was, now))
                if len(old_lines) != len(new_lines):
                    found.append((kind + key, f"{len(old_lines)} lines", f"{len(new_lines)} lines"))
    for kind, values in (("", numbers), ("table ", blocks)):
        found += [
            (kind + key, "<not in README or docs>", values[key])
            for key in values
            if key not in seen[kind] and key not in HEAD_QUOTES
        ]
    return found


def render(text: str, numbers: Numbers, blocks: Numbers, head: bool = False) -> str:
    """``text`` with every marker filled from the references (and, ``head``: the README's
    head phrases of :data:`HEAD_QUOTES`)."""
    for kind, pattern, values in (("number", INLINE, numbers), ("table", BLOCK, blocks)):
        unknown = sorted({m[1] for m in pattern.finditer(text)} - set(values))
        if unknown:
            raise NumbersError(f"no reference value for the {kind} marker(s) {unknown}")
    text = INLINE.sub(lambda m: f"<!--n:{m[1]}-->{numbers[m[1]]}<!--/n-->", text)
    text = BLOCK.sub(
        lambda m: f"<!-- readme_numbers:{m[1]} -->\n{blocks[m[1]]}<!-- /readme_numbers:{m[1]} -->",
        text,
    )
    if head:
        lines = text.split("\n")
        top = "\n".join(lines[:HEAD_LINES])
        for key, template in HEAD_QUOTES.items():
            if key in numbers:
                top = _head_quote(template).sub(template.format(numbers[key]), top, count=1)
        text = "\n".join([top, *lines[HEAD_LINES:]])
    return text


def _texts(readme: Path, docs: Path) -> dict[str, str]:
    return {
        "README" if path == readme else str(path.relative_to(docs.parent)): path.read_text(
            encoding="utf-8"
        )
        for path in pages(readme, docs)
    }


def check(readme: Path = README, root: Path = ROOT, docs: Path = DOCS) -> list[Difference]:
    """The differences between ``readme`` with the pages of ``docs`` and the references
    under ``root``."""
    return differences(_texts(readme, docs), *reference(root))


def main(argv: list[str] | None = None) -> int:
    """Rewrite the README and the docs pages (or ``--check`` them); returns the exit status
    0, 1 or 2."""
    parser = argparse.ArgumentParser(
        prog="readme_numbers.py", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--docs", type=Path, default=DOCS, help="the documentation's sources")
    parser.add_argument("--root", type=Path, default=ROOT, help="where the reference files are")
    args = parser.parse_args(argv)
    try:
        texts = _texts(args.readme, args.docs)
        numbers, blocks = reference(args.root)
        if args.check:
            found = differences(texts, numbers, blocks)
            for key, was, now in found[:20]:
                print(f"{key}: page {was!r}, reference {now!r}")
            if len(found) > 20:
                print(f"… and {len(found) - 20} more differences")
            return 1 if found else 0
        rendered = {
            path: render(path.read_text(encoding="utf-8"), numbers, blocks, path == args.readme)
            for path in pages(args.readme, args.docs)
        }
        for path, text in rendered.items():
            if path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
    except (NumbersError, OSError) as error:
        print(f"readme_numbers: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
