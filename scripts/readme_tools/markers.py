"""Write the measured numbers quoted in README.md from the committed reference outputs.

Usage::

    python scripts/readme_numbers.py [--check] [--readme PATH] [--root DIR]

Every measured figure in the README sits between markers that GitHub does not
show: ``<!--n:KEY-->value<!--/n-->`` around one number in the prose, and
``<!-- readme_numbers:NAME -->`` … ``<!-- /readme_numbers:NAME -->`` around a
generated table.  :mod:`readme_tools.values` computes each value
from the reference files (paths relative to ``--root``, the project by
default) and this module rewrites the README in place.  ``--check`` rewrites
nothing: it prints one line per difference (key, README value, reference
value) and exits 1 if there is any.  A key the README lacks, a marker with no
reference value and a marker at the start of a line (GitHub would end the
paragraph there) are differences too.  Exit status 2: a reference file is
missing or malformed (named in the message).  ``tests/test_readme_numbers.py``
runs the check.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from readme_tools.bench import bench_numbers, speed_block
from readme_tools.reference_tables import NumbersError
from readme_tools.values import (
    Numbers,
    audit_numbers,
    baseline_numbers,
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
    studies_numbers,
    trimmed_block,
)

ROOT = Path(__file__).resolve().parents[2]
"""The project (a checkout: the README and its references live there, not in the package)."""
README = ROOT / "README.md"
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
    baseline_numbers,
    quantiles_numbers,
    studies_numbers,
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


def reference(root: Path = ROOT) -> tuple[Numbers, Numbers]:
    """Every inline number and every generated table, from the reference files under ``root``."""
    numbers: Numbers = {}
    for compute in NUMBERS:
        numbers |= compute(root)
    return numbers, {name: f"\n{block(root)}\n\n" for name, block in BLOCKS.items()}


def differences(text: str, numbers: Numbers, blocks: Numbers) -> list[tuple[str, str, str]]:
    """(key, README value, reference value) for each marker that disagrees or is missing."""
    found = [
        (f"README line {i}", line.strip()[:40], "a marker may not start a line")
        for i, line in enumerate(text.splitlines(), 1)
        if line.lstrip().startswith("<!--n:")
    ]
    for kind, pattern, values in (("", INLINE, numbers), ("table ", BLOCK, blocks)):
        seen = set()
        for match in pattern.finditer(text):
            key, old_lines = match[1], match[2].split("\n")
            new_lines = values.get(key, "<no reference value>").split("\n")
            seen.add(key)
            for line, (was, now) in enumerate(zip(old_lines, new_lines, strict=False), 1):
                if was != now:
                    found.append((kind + key + (f" line {line}" if kind else ""), was, now))
            if len(old_lines) != len(new_lines):
                found.append((kind + key, f"{len(old_lines)} lines", f"{len(new_lines)} lines"))
        found += [(kind + key, "<not in README>", values[key]) for key in values if key not in seen]
    return found


def render(text: str, numbers: Numbers, blocks: Numbers) -> str:
    """``text`` with every marker filled from the references."""
    for kind, pattern, values in (("number", INLINE, numbers), ("table", BLOCK, blocks)):
        unknown = sorted({m[1] for m in pattern.finditer(text)} - set(values))
        if unknown:
            raise NumbersError(f"README: no reference value for the {kind} marker(s) {unknown}")
    text = INLINE.sub(lambda m: f"<!--n:{m[1]}-->{numbers[m[1]]}<!--/n-->", text)
    return BLOCK.sub(
        lambda m: f"<!-- readme_numbers:{m[1]} -->\n{blocks[m[1]]}<!-- /readme_numbers:{m[1]} -->",
        text,
    )


def check(readme: Path = README, root: Path = ROOT) -> list[tuple[str, str, str]]:
    """The differences between ``readme`` and the references under ``root``."""
    return differences(readme.read_text(encoding="utf-8"), *reference(root))


def main(argv: list[str] | None = None) -> int:
    """Rewrite the README (or ``--check`` it); returns the exit status 0, 1 or 2."""
    parser = argparse.ArgumentParser(
        prog="readme_numbers.py", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--root", type=Path, default=ROOT, help="where the reference files are")
    args = parser.parse_args(argv)
    try:
        text = args.readme.read_text(encoding="utf-8")
        numbers, blocks = reference(args.root)
        if args.check:
            found = differences(text, numbers, blocks)
            for key, was, now in found[:20]:
                print(f"{key}: README {was!r}, reference {now!r}")
            if len(found) > 20:
                print(f"… and {len(found) - 20} more differences")
            return 1 if found else 0
        args.readme.write_text(render(text, numbers, blocks), encoding="utf-8")
    except (NumbersError, OSError) as error:
        print(f"readme_numbers: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
