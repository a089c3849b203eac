"""The mechanism registry: names to classes, built-ins plus plug-ins.

Built-in mechanisms register themselves with :func:`register`.  A mechanism
defined outside this package is found through the ``duff_bench.mechanisms``
entry-point group (``name = "package.module:Class"``), or registered at run
time by calling :func:`register` on its class.
"""

from __future__ import annotations

import inspect
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, TypeVar

from mechanisms.base import Mechanism

ENTRY_POINT_GROUP = "duff_bench.mechanisms"
BUILTIN_MODULES = (
    "mechanisms.duff",
    "mechanisms.quantile_em",
    "mechanisms.smooth_cauchy",
    "mechanisms.smooth_laplace",
    "mechanisms.laplace_ln",
    "mechanisms.global_noise",
)

_REGISTRY: dict[str, type[Mechanism]] = {}
_M = TypeVar("_M", bound=type[Mechanism])


def register(cls: _M) -> _M:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__qualname__} must define a non-empty class attribute `name`")
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls:
        raise ValueError(
            f"mechanism name {name!r} is already registered by {existing.__qualname__}"
        )
    _REGISTRY[name] = cls
    return cls


def _load_entry_points() -> None:
    for module in BUILTIN_MODULES:
        import_module(module)  # each registers its classes on import
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _REGISTRY:
            register(entry.load())


def available() -> list[str]:
    """Names of all registered mechanisms, built-in and plug-in, sorted."""
    _load_entry_points()
    return sorted(_REGISTRY)


def get(name: str) -> type[Mechanism]:
    """The mechanism class registered under ``name``."""
    if name not in _REGISTRY:
        _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"name: unknown mechanism {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None


def make(name: str, *, epsilon: float, delta: float | None = None, **options: Any) -> Mechanism:
    """Configure the mechanism ``name`` with its privacy parameters and options.

    An option the mechanism does not take is a ``ValueError`` naming it and
    the options it does take, not a bare ``TypeError`` from the constructor.
    """
    cls = get(name)
    accepted = _options_of(cls)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(
            f"options: {name!r} does not take {', '.join(unknown)}; "
            f"it takes {', '.join(sorted(accepted)) or 'no options'}"
        )
    return cls(epsilon=epsilon, delta=delta, **options)


def _options_of(cls: type[Mechanism]) -> set[str]:
    """Keyword options of ``cls`` other than ε and δ, following ``**options`` up the MRO."""
    accepted: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        parameters = inspect.signature(vars(klass)["__init__"]).parameters.values()
        accepted |= {
            p.name
            for p in parameters
            if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        }
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            break
    return accepted - {"self", "epsilon", "delta"}
