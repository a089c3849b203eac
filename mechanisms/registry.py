"""The mechanism registry: one discovery path for built-ins, entry points and plug-ins.

Built-in mechanisms are the registered classes of every module below this package
(:func:`builtin_modules`, found by walking the package: adding a mechanism is adding
its module); they include the peer adapters (:mod:`mechanisms.peers`), whose modules
import without their library.  A peer is listed by :func:`available` only when its
library is installed, and :func:`get`/:func:`make` of a peer whose library is missing
raise an ``ImportError`` naming the extra to install.  A mechanism defined outside
this package is found through the ``duff_bench.mechanisms`` entry-point group
(``name = "package.module:Class"``), by ``_target_: package.module.Class`` in a
config (:func:`resolve`), or registered at run time by calling :func:`register` on
its class.  The names, options and guarantees of the registered classes are in
:mod:`mechanisms.catalogue`.
"""

from __future__ import annotations

import pkgutil
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from mechanisms.core.interface import Mechanism
from mechanisms.core.registration import (
    add_loader,
    available,
    configure,
    for_statistic,
    get,
    is_registered,
    register,
    registered,
    resolve,
    supported_statistics,
)

ENTRY_POINT_GROUP = "duff_bench.mechanisms"
LAYERS = (
    "mechanisms.core",
    "mechanisms.sampling",
    "mechanisms.noise",
    "mechanisms.smooth",
)
"""Packages of shared code below the families: they define no registered mechanism."""

__all__ = [
    "ENTRY_POINT_GROUP",
    "available",
    "builtin_modules",
    "configure",
    "for_statistic",
    "get",
    "make",
    "register",
    "registered",
    "resolve",
    "supported_statistics",
]


@cache
def builtin_modules() -> tuple[str, ...]:
    """Every module of the family packages (:mod:`mechanisms.median`, ``mode``, ``mean``,
    ``intervals``, ``peers``, ...), sorted: the modules whose classes register themselves."""
    found = []
    package_dir = str(Path(__file__).resolve().parent)
    for info in pkgutil.walk_packages([package_dir], prefix="mechanisms."):
        package = info.name.rpartition(".")[0]
        if info.name.startswith(LAYERS) or package == "mechanisms":
            continue
        found.append(info.name)
    return tuple(sorted(found))


def _load() -> None:
    """Import the built-in modules and register the entry-point plug-ins not yet registered."""
    for module in builtin_modules():
        import_module(module)  # each registers its classes on import
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if not is_registered(entry.name):
            register(entry.load())


def make(
    name: str, *, epsilon: float | None, delta: float | None = None, **options: Any
) -> Mechanism:
    """Configure the mechanism ``name`` with its privacy parameters and options.

    An option the mechanism does not take is a ``ValueError`` naming it and
    the options it does take, not a bare ``TypeError`` from the constructor.
    """
    return configure(get(name), epsilon=epsilon, delta=delta, **options)


add_loader(_load)
