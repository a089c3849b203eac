"""Registration of mechanism classes by name, and their configuration.

A class registers itself with :func:`register` (a decorator) under its ``name``.
Which modules hold the built-ins and the plug-ins is the registry's business
(:mod:`mechanisms.registry`, the top layer): it hands this module a *loader*
(:func:`add_loader`), called before a name is looked up, so that a lower layer
(an interval method that wraps any median mechanism by name) can resolve names
without importing the layers above it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from mechanisms.core.interface import Mechanism
from mechanisms.core.targets import import_class

_REGISTRY: dict[str, type[Mechanism]] = {}
_LOADERS: list[Callable[[], None]] = []
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


def add_loader(loader: Callable[[], None]) -> None:
    """Call ``loader`` (which imports modules that register classes) before every look-up."""
    if loader not in _LOADERS:
        _LOADERS.append(loader)


def is_registered(name: str) -> bool:
    """Whether a class is registered under ``name`` (without loading anything)."""
    return name in _REGISTRY


def load() -> None:
    """Run the loaders: every built-in and entry-point mechanism is then registered."""
    for loader in _LOADERS:
        loader()


def registered() -> dict[str, type[Mechanism]]:
    """Every registered class by name (after :func:`load`), installed or not."""
    load()
    return dict(_REGISTRY)


def available() -> list[str]:
    """Names of the usable registered mechanisms, built-in and plug-in, sorted.

    A class whose optional library is not installed (``installed()`` False: the peer
    adapters) is registered but not listed.
    """
    return sorted(name for name, cls in registered().items() if cls.installed())


def get(name: str) -> type[Mechanism]:
    """The mechanism class registered under ``name``.

    Raises ``ValueError`` for an unknown name and ``ImportError`` naming the
    extra for a class whose optional library is not installed.
    """
    if name not in _REGISTRY:
        load()
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ValueError(f"name: unknown mechanism {name!r}; available: {', '.join(available())}")
    cls.check_installed()
    return cls


def resolve(reference: str) -> type[Mechanism]:
    """The mechanism class ``reference`` names: a registered name (:func:`get`), or
    ``package.module.ClassName`` of a :class:`Mechanism` subclass, which is imported and
    registered under its ``name`` (``ValueError`` if that name is another class's)."""
    if "." not in reference:
        return get(reference)
    return register(import_class(reference, Mechanism))


def for_statistic(cls: type[Mechanism], kind: str) -> type[Mechanism]:
    """The class that estimates statistic ``kind`` (a :mod:`mechanisms.statistics` kind) for
    ``cls``: ``cls`` itself if it supports ``kind`` or names no ``family``, else the registered
    class of the same family that does (``duff`` runs Duff's mode and mean mechanisms for
    the mode and the mean)."""
    if kind in cls.statistics or not cls.family:
        return cls
    for other in registered().values():
        if other.family == cls.family and kind in other.statistics:
            return other
    return cls


def supported_statistics(cls: type[Mechanism]) -> frozenset[str]:
    """The statistic kinds ``cls`` can be configured for: its own ``statistics``, and those of
    the other registered classes of its ``family`` (:func:`for_statistic` picks the class)."""
    if not cls.family:
        return cls.statistics
    members = [other for other in registered().values() if other.family == cls.family]
    return frozenset().union(cls.statistics, *(other.statistics for other in members))


def configure(
    cls: type[Mechanism], *, epsilon: float | None, delta: float | None = None, **options: Any
) -> Mechanism:
    """Configure ``cls`` with its privacy parameters and options.

    ``epsilon`` is None only for a class with ``requires_epsilon = False`` (a non-private
    reference, which refuses an ε).  An option the class does not take is a
    ``ValueError`` naming it and the options it does take, not a bare ``TypeError``
    from the constructor.
    """
    accepted = options_of(cls)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(
            f"options: {cls.name!r} does not take {', '.join(unknown)}; "
            f"it takes {', '.join(sorted(accepted)) or 'no options'}"
        )
    if epsilon is None:
        if cls.requires_epsilon:
            raise ValueError(f"epsilon: {cls.name} needs epsilon > 0")
        return cls(delta=delta, **options)
    return cls(epsilon=epsilon, delta=delta, **options)


@cache
def options_of(cls: type[Mechanism]) -> frozenset[str]:
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
    return frozenset(accepted - {"self", "epsilon", "delta"})
