"""The identity of the code that computes a work unit, and which units share worker processes.

A unit's numbers are a function of its config (hashed by :attr:`experiments.harness.plan.Plan.
config_hash`) *and of the code that ran*.  A results directory resumed after the code
changed must not keep the units of the old code beside those of the new, so every unit
file records :func:`unit_identity`, a SHA-256 (:data:`IDENTITY_LENGTH` hex digits) over

* the versions of Python (major.minor), numpy and scipy, whose code draws the random
  numbers and computes the special functions;
* the bytes of the source files of the project's code the unit runs: the modules of
  :data:`CORE_PACKAGES` (mechanisms, seeding, datasets, harness) that the worker's entry
  point (:data:`HARNESS_ROOTS`), the unit's mechanism class (the one configured for its
  statistic, :func:`mechanisms.registry.for_statistic`), its statistic's and its dataset's
  class and their base classes import, directly or not (read from the files' ``import``
  statements with :mod:`ast`, so an edit of an unrelated mechanism changes nothing), each
  named by its path inside the package (``mechanisms/median/duff.py``).  A mechanism
  reached by its registry name rather than by an import (a string constant of one of
  those modules, such as ``get("quantile_em")``, or a string option of the entry, such
  as an interval's ``estimator: duff``) brings its class's modules too;
* the source of the plug-in code the unit runs: every module outside the core packages
  and the standard library that defines one of those classes or a base class, with the
  modules of its own top-level package that it imports, directly or not, and their
  packages' ``__init__`` files.

Hashing the source, rather than recording the git commit (or the package version), is
what still works in an installed wheel, which has no git repository and whose version
does not change when a file is edited; it also sees uncommitted edits and plug-ins that
live outside the repository.  The files are read once per process and kept
(:func:`pin`: a worker pins them when it has imported the code, so its identity is that
of the code it runs; a run calls :func:`forget` first, to read the current files).

:func:`isolation_group` names the plug-in modules a unit runs, empty for built-in code
only: :mod:`experiments.harness.execute` runs each group in worker processes of its own, so
a plug-in that patches a built-in class (``Duff``) in its worker process never reaches the
built-in units.
"""

from __future__ import annotations

import ast
import hashlib
import platform
import sys
from collections.abc import Iterable
from functools import cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any

CORE_PACKAGES = ("mechanisms", "experiments.base", "experiments.data", "experiments.harness")
"""The packages of the project's code that computes numbers."""
HARNESS_ROOTS = ("experiments.harness.unit",)
"""What a worker runs for every unit (its imports bring the metrics, seeding, datasets, …)."""
IDENTITY_LENGTH = 16
"""Hex digits of a SHA-256 kept as an identity (64 bits: collisions are not a concern)."""
_NOT_PLUGINS = frozenset({*sys.stdlib_module_names, "builtins", "__future__"})


# ------------------------------------------------------------------- source files


def _package_dir(package: str) -> Path | None:
    try:
        spec = find_spec(package)
    except (ImportError, ValueError):
        return None
    locations = getattr(spec, "submodule_search_locations", None) if spec else None
    return Path(next(iter(locations))) if locations else None


def _tree(package: str, directory: Path) -> dict[str, Path]:
    """The modules (``name -> file``) of every ``*.py`` file below ``directory``."""
    found = {}
    for path in directory.rglob("*.py"):
        parts = [package, *path.relative_to(directory).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


@cache
def _core_files() -> dict[str, Path]:
    """Every module of the core packages, by name."""
    files: dict[str, Path] = {}
    for package in CORE_PACKAGES:
        directory = _package_dir(package)
        if directory is not None:
            files.update(_tree(package, directory))
    return files


@cache
def _content(path: Path) -> bytes:
    """A file's bytes, read once per process (:func:`forget` drops them)."""
    try:
        return path.read_bytes()
    except OSError:
        return b"<unreadable>"


@cache
def _imports(module: str) -> frozenset[str]:
    """The core modules that ``module``'s file imports (any ``import`` statement in it)."""
    files = _core_files()
    try:
        tree = ast.parse(_content(files[module]))
    except (SyntaxError, ValueError, KeyError):
        return frozenset()
    package = module if files[module].name == "__init__.py" else module.rpartition(".")[0]
    names = _imported_names(tree, package)
    found: set[str] = set()
    for name in names:
        parts = name.split(".")
        found.update(
            ".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in files
        )
    return frozenset(found)


@cache
def _strings(module: str) -> frozenset[str]:
    """The string constants of a core module's file (where a registry name may hide)."""
    try:
        tree = ast.parse(_content(_core_files()[module]))
    except (SyntaxError, ValueError, KeyError):
        return frozenset()
    return frozenset(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 64
    )


@cache
def _registry_index() -> dict[str, frozenset[str]]:
    """Each registered mechanism's name -> the core modules of its class and bases."""
    from mechanisms.core.registration import registered

    return {
        name: frozenset(b.__module__ for b in cls.__mro__ if _is_core(b.__module__))
        for name, cls in registered().items()
    }


def _registry_modules(names: Iterable[str]) -> set[str]:
    """The core modules defining the registered mechanisms ``names`` (those that are) and
    their bases."""
    index = _registry_index()
    return {module for name in names if name in index for module in index[name]}


def _closure(roots: Iterable[str]) -> list[str]:
    """``roots`` and every core module they import, directly or not, or name a registered
    mechanism of (a string constant), sorted."""
    files = _core_files()
    seen: set[str] = set()
    todo = [root for root in roots if root in files]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in files]
        todo += _imports(module)
        todo += _registry_modules(_strings(module))
    return sorted(seen)


def _hash_file(digest: Any, name: str, path: Path) -> None:
    content = _content(path)
    digest.update(f"{name}\0{len(content)}\0".encode())
    digest.update(content)


def _versions() -> bytes:
    import numpy
    import scipy

    python = ".".join(platform.python_version_tuple()[:2])
    return f"python {python} numpy {numpy.__version__} scipy {scipy.__version__}\0".encode()


def _relative(module: str, path: Path) -> str:
    """``mechanisms/median/duff.py`` for module ``mechanisms.median.duff``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    return "/".join([*package, path.name])


# ----------------------------------------------------------------------- identities


def pin() -> None:
    """Read every core file now (a worker calls it once it has imported the code)."""
    for path in _core_files().values():
        _content(path)


def forget() -> None:
    """Drop this process's files and hashes, so that the next identity reads the files again
    (a run calls it first: the same process may run again after the code changed)."""
    caches = (_core_files, _content, _imports, _strings, _registry_index, _plugin_source)
    for cached in (*caches, _group, _identity):
        cached.cache_clear()


def core_identity() -> str:
    """The identity of every core file and of the numeric libraries (a change of any
    replaces the worker processes, :class:`experiments.harness.supervisor.LokyPool`)."""
    digest = hashlib.sha256(_versions())
    for module, path in sorted(_core_files().items()):
        _hash_file(digest, _relative(module, path), path)
    return digest.hexdigest()[:IDENTITY_LENGTH]


def _is_core(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in CORE_PACKAGES)


def plugin_modules(classes: Iterable[type]) -> tuple[str, ...]:
    """The modules outside the core packages and the standard library that define
    ``classes`` or one of their bases, sorted (empty: built-in code only)."""
    modules = {
        base.__module__
        for cls in classes
        for base in cls.__mro__
        if not _is_core(base.__module__)
        and base.__module__.partition(".")[0] not in _NOT_PLUGINS
        and not base.__module__.startswith("_")
    }
    return tuple(sorted(modules))


def _imported_names(tree: ast.AST, package: str) -> set[str]:
    """The module names that the ``import`` statements of ``tree`` (a module of ``package``)
    name, relative imports resolved, with the names imported from them."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@cache
def _plugin_source(module: str) -> tuple[tuple[tuple[str, Path], ...], frozenset[str]]:
    """The files of plug-in ``module``, named: its own, its packages' ``__init__`` files and
    those of the modules of its top-level package that it imports, directly or not; and the
    core modules they import."""
    top = module.partition(".")[0]
    directory = _package_dir(top) if top != module else None
    if directory is not None:
        tree_files = _tree(top, directory)
    else:
        loaded = sys.modules.get(module)
        if loaded is None:
            try:
                loaded = import_module(module)
            except Exception:  # the unit that needs it records the error
                loaded = None
        source = getattr(loaded, "__file__", None)
        tree_files = {module: Path(source)} if source else {}
    core = _core_files()
    seen: set[str] = set()
    imported: set[str] = set()
    todo = [module] if module in tree_files else []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [
            ".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in tree_files
        ]
        path = tree_files[name]
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        try:
            names = _imported_names(ast.parse(_content(path)), package)
        except (SyntaxError, ValueError):
            continue
        imported |= names
        todo += [other for other in names if other in tree_files]
    files = tuple((name, tree_files[name]) for name in sorted(seen))
    return files, frozenset(name for name in imported if name in core)


@cache
def _group(
    cls: Any, kind: str, statistic: Any, dataset: Any, named: tuple[str, ...]
) -> tuple[tuple[str, ...], str]:
    """The plug-in modules and the identity of a unit's classes (:func:`unit_identity`);
    ``named``: the string options of its entry (registry names among them count)."""
    from mechanisms.core.registration import registered
    from mechanisms.registry import for_statistic

    try:
        configured = for_statistic(cls, kind)
    except Exception:  # a broken plug-in: the unit records the error when it runs
        configured = cls
    classes = [configured, cls, statistic, dataset]
    classes += [c for name, c in registered().items() if name in named]
    plugins = plugin_modules(classes)
    roots = {base.__module__ for c in classes for base in c.__mro__ if _is_core(base.__module__)}
    for module in plugins:
        roots |= _plugin_source(module)[1]
    return plugins, _identity(tuple(sorted(roots)), plugins)


@cache
def _identity(roots: tuple[str, ...], plugins: tuple[str, ...]) -> str:
    digest = hashlib.sha256(_versions())
    files = _core_files()
    for module in _closure((*HARNESS_ROOTS, *roots)):
        _hash_file(digest, _relative(module, files[module]), files[module])
    for plugin in plugins:
        digest.update(f"plug-in {plugin}\0".encode())
        for name, path in _plugin_source(plugin)[0]:
            _hash_file(digest, name, path)
    return digest.hexdigest()[:IDENTITY_LENGTH]


def _texts(value: object) -> set[str]:
    """The strings inside a (nested) option value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*map(_texts, value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*map(_texts, value)) if value else set()
    return set()


def _classes(unit: Any) -> tuple[Any, str, Any, Any, tuple[str, ...]]:
    statistic: Any = type(unit.statistic)
    dataset: Any = type(unit.dataset)
    named = tuple(sorted(_texts(dict(unit.mechanism.options))))
    return unit.mechanism.cls, unit.statistic.kind, statistic, dataset, named


def isolation_group(unit: Any) -> tuple[str, ...]:
    """The plug-in modules a unit runs (:func:`plugin_modules` of its mechanism's class for
    its statistic, that class as configured, the statistic's and the dataset's class);
    empty for built-in code."""
    return _group(*_classes(unit))[0]


def unit_identity(unit: Any) -> str:
    """The identity of the code that computes ``unit`` (module docstring)."""
    return _group(*_classes(unit))[1]


def group_identity(group: Iterable[str]) -> str:
    """What a worker pool of isolation ``group`` is tagged with: every core file and the
    group's plug-in modules (a change of any starts fresh workers)."""
    digest = hashlib.sha256(core_identity().encode())
    for plugin in sorted(group):
        for name, path in _plugin_source(plugin)[0]:
            _hash_file(digest, name, path)
    return digest.hexdigest()[:IDENTITY_LENGTH]
