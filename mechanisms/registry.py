"""The mechanism registry: names to classes, built-ins plus plug-ins.

Built-in mechanisms are the classes of :data:`BUILTIN_MODULES`, which register
themselves with :func:`register` when imported; they include the peer adapters
(:mod:`mechanisms.peers`), whose modules import without their library.  A peer
is listed by :func:`available` only when its library is installed, and
:func:`get`/:func:`make` of a peer whose library is missing raise an
``ImportError`` naming the extra to install.  A mechanism defined outside this
package is found through the ``duff_bench.mechanisms`` entry-point group
(``name = "package.module:Class"``), or registered at run time by calling
:func:`register` on its class.
"""

from __future__ import annotations

import inspect
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, TypeVar

from mechanisms.base import Mechanism
from mechanisms.peers import PeerMechanism
from mechanisms.targets import import_class

ENTRY_POINT_GROUP = "duff_bench.mechanisms"
BUILTIN_MODULES = (
    "mechanisms.duff",
    "mechanisms.quantile_em",
    "mechanisms.smooth_cauchy",
    "mechanisms.smooth_laplace",
    "mechanisms.laplace_ln",
    "mechanisms.global_noise",
    "mechanisms.duff_mean",
    "mechanisms.mean_noise",
    "mechanisms.trimmed_mean_noise",
    "mechanisms.ptr",
    "mechanisms.duff_mode",
    "mechanisms.count_em",
    "mechanisms.permute_and_flip",
    "mechanisms.report_noisy_max",
    "mechanisms.stability_histogram",
    "mechanisms.intervals.nonprivate",
    "mechanisms.intervals.order_statistic",
    "mechanisms.intervals.drechsler",
    "mechanisms.intervals.subsample_aggregate",
    "mechanisms.peers.opendp_quantile",
    "mechanisms.peers.diffprivlib_quantile",
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


def _load() -> None:
    """Import the built-in modules and register the entry-point plug-ins not yet registered."""
    for module in BUILTIN_MODULES:
        import_module(module)  # each registers its classes on import
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _REGISTRY:
            register(entry.load())


def _installed(cls: type[Mechanism]) -> bool:
    """False only for a peer adapter whose library is not installed."""
    return not issubclass(cls, PeerMechanism) or cls.installed()


def available() -> list[str]:
    """Names of the usable registered mechanisms, built-in and plug-in, sorted.

    A peer adapter whose library is not installed is registered but not listed.
    """
    _load()
    return sorted(name for name, cls in _REGISTRY.items() if _installed(cls))


def get(name: str) -> type[Mechanism]:
    """The mechanism class registered under ``name``.

    Raises ``ValueError`` for an unknown name and ``ImportError`` naming the
    extra for a peer adapter whose library is not installed.
    """
    if name not in _REGISTRY:
        _load()
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ValueError(f"name: unknown mechanism {name!r}; available: {', '.join(available())}")
    if issubclass(cls, PeerMechanism):
        cls.check_installed()
    return cls


def resolve(reference: str) -> type[Mechanism]:
    """The mechanism class ``reference`` names: a registered name (:func:`get`), or
    ``package.module.ClassName`` of a :class:`Mechanism` subclass, which is imported and
    registered under its ``name`` (``ValueError`` if that name is another class's)."""
    if "." not in reference:
        return get(reference)
    return register(import_class(reference, Mechanism))


def make(
    name: str, *, epsilon: float | None, delta: float | None = None, **options: Any
) -> Mechanism:
    """Configure the mechanism ``name`` with its privacy parameters and options.

    An option the mechanism does not take is a ``ValueError`` naming it and
    the options it does take, not a bare ``TypeError`` from the constructor.
    """
    return configure(get(name), epsilon=epsilon, delta=delta, **options)


def configure(
    cls: type[Mechanism], *, epsilon: float | None, delta: float | None = None, **options: Any
) -> Mechanism:
    """:func:`make` for a class rather than a name (the harness's workers receive classes).

    ``epsilon`` is None only for a class with ``requires_epsilon = False`` (a non-private
    reference, which refuses an ε).

    An option the class does not take is a ``ValueError`` naming it and the
    options it does take, not a bare ``TypeError`` from the constructor.
    """
    accepted = _options_of(cls)
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
def _options_of(cls: type[Mechanism]) -> frozenset[str]:
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
