"""The layer contract of the packages, read from every import statement of their source.

Every import counts: at the top of a module, inside a function, under
``TYPE_CHECKING``.  A module may import from its own package and from the layers
below it; packages of one layer (the statistic families, say) never import each
other; and no set of modules imports itself round in a circle.  The check reads
the source with :mod:`ast` and runs nothing, so it also sees imports that a test
run never executes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness_mechanisms import PROJECT_ROOT

ROOT = PROJECT_ROOT

LAYERS: tuple[tuple[str, ...], ...] = (
    ("mechanisms.core",),
    ("mechanisms.sampling", "mechanisms.noise"),
    ("mechanisms.smooth",),
    ("mechanisms.median", "mechanisms.mode", "mechanisms.mean", "mechanisms.multi"),
    ("mechanisms.intervals", "mechanisms.peers"),
    ("mechanisms",),  # the public modules: base, validation, statistics, registry
    ("experiments.base",),
    ("experiments.data",),
    ("experiments.harness",),
    ("experiments.reports",),
    ("experiments.gate", "experiments.audit"),
    ("experiments",),  # the commands: run, regress, and the datasets facade
)
"""From the bottom up: a package may import its own modules and any package of a lower
layer; never a package of its own layer other than itself, nor one above."""


def package_of(module: str) -> str:
    """The most specific package of :data:`LAYERS` that ``module`` belongs to."""
    candidates = [p for layer in LAYERS for p in layer if module == p or module.startswith(p + ".")]
    if not candidates:
        raise ValueError(f"{module} is in no layer")
    return max(candidates, key=len)


def rank_of(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules() -> Iterator[Path]:
    for top in ("mechanisms", "experiments"):
        yield from sorted((ROOT / top).rglob("*.py"))


def imported(path: Path, tree: ast.AST | None = None) -> set[str]:
    """The project modules that the module at ``path`` imports, anywhere in its body."""
    tree = tree or ast.parse(path.read_text(), str(path))
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            # ``from package import module`` imports a module, ``from module import name`` one too
            found |= {f"{base}.{alias.name}" for alias in node.names} | {base}
    project = {m for m in found if m.split(".")[0] in ("mechanisms", "experiments")}
    return {resolve(m) for m in project} - {None, own}  # type: ignore[arg-type]


MODULES = {module_name(p): p for p in source_modules()}


def resolve(name: str) -> str | None:
    """The project module ``name`` refers to: itself, or the module it is an attribute of."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def graph() -> dict[str, set[str]]:
    return {name: imported(path) for name, path in MODULES.items()}


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """Imports of a package of the same or a higher layer (other than one's own package)."""
    wrong = []
    for module, targets in edges.items():
        here = package_of(module)
        for target in sorted(targets):
            there = package_of(target)
            if there == here:
                continue
            same_or_above = rank_of(there) >= rank_of(here)
            if same_or_above and not (here == "mechanisms" or here == "experiments"):
                wrong.append(f"{module} imports {target} ({there} is not below {here})")
            elif here in ("mechanisms", "experiments") and rank_of(there) > rank_of(here):
                wrong.append(f"{module} imports {target} ({there} is above {here})")
    return wrong


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_is_in_a_layer() -> None:
    for name in MODULES:
        package_of(name)


def test_no_import_points_up_or_across_a_layer() -> None:
    assert upward_imports(graph()) == []


def test_no_import_cycle_of_any_kind() -> None:
    assert cycles(graph()) == []


def test_mechanisms_has_at_most_ten_modules_at_its_top() -> None:
    assert len(list((ROOT / "mechanisms").glob("*.py"))) <= 10


@pytest.mark.parametrize("path", sorted(MODULES.values()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_450_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= 450


def test_a_planted_upward_import_is_caught() -> None:
    """Planted: the core interface importing a family module inside a function."""
    edges = graph()
    path = MODULES["mechanisms.core.interface"]
    planted = path.read_text() + "\n\ndef _planted():\n    from mechanisms.median import duff\n"
    edges["mechanisms.core.interface"] = imported(path, ast.parse(planted))
    wrong = upward_imports(edges)
    assert any("mechanisms.core.interface imports mechanisms.median.duff" in w for w in wrong)
    assert cycles(edges)  # duff imports the core interface: the plant also closes a circle


def test_a_planted_import_across_families_is_caught() -> None:
    """Planted: the mean family importing the mode family under ``TYPE_CHECKING``."""
    edges = graph()
    path = MODULES["mechanisms.mean.duff"]
    planted = path.read_text() + (
        "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from mechanisms.mode.release import ModeRelease\n"
    )
    edges["mechanisms.mean.duff"] = imported(path, ast.parse(planted))
    assert any("mechanisms.mode.release" in w for w in upward_imports(edges))


def test_a_planted_cycle_inside_one_package_is_caught() -> None:
    edges = graph()
    edges["mechanisms.core.validation"] = {
        *edges["mechanisms.core.validation"],
        "mechanisms.core.interface",
    }
    assert any("mechanisms.core.validation" in c for c in cycles(edges))
