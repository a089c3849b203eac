"""Adapters for the DP quantiles of other libraries (the optional extra ``peers``).

* :mod:`mechanisms.peers.opendp_quantile`: OpenDP's ``make_private_quantile``
  (``opendp_quantile``);
* :mod:`mechanisms.peers.diffprivlib_quantile`: IBM diffprivlib's
  ``tools.quantile`` (``diffprivlib_quantile``);
* :mod:`mechanisms.peers.google_dp_quantile`: Google's quantile tree through
  python-dp's ``pydp.algorithms.quantile_tree.QuantileTree`` (``google_dp_quantile``;
  no closed-form cdf);
* :mod:`mechanisms.peers.tumult_quantile`: Tumult Core's ``NoisyQuantile``
  (``tumult_quantile``).  Not in the extra: Tumult Core 0.20 pins pandas<2 on
  Python 3.11, so it is installed by hand (its module's ``INSTALL``), and its
  ``ImportError`` says so instead of naming the extra.

Their multi-quantile entry points (statistic ``"quantiles"``, base class and release in
:mod:`mechanisms.peers.quantiles`): ``opendp_quantiles``, ``diffprivlib_quantiles``,
``tumult_quantiles`` and ``google_dp_quantiles``, one module each.

Each adapter is a :class:`PeerMechanism`: the interface of
:class:`mechanisms.Mechanism`, the library's own neighbouring relation and
guarantee, and in ``library`` the top-level package it needs.  The adapters are
built-in mechanisms (:data:`mechanisms.registry.BUILTIN_MODULES`); their modules
import without the library, which is imported only when a mechanism is
configured.  ``mechanisms.available()`` lists an adapter only when its library
is installed; ``mechanisms.get``/``make`` of one whose library is missing raise
an ``ImportError`` naming the extra (:func:`missing_extra`).
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from types import ModuleType
from typing import ClassVar

from mechanisms.core.interface import Mechanism, Release

EXTRA = "peers"


def missing_extra(package: str, mechanism: str) -> str:
    """The message for ``mechanism`` whose optional ``package`` cannot be imported."""
    return (
        f"mechanism {mechanism!r} needs the optional package {package!r}, part of the extra "
        f'{EXTRA!r}: pip install "duff-bench[{EXTRA}]" (in a checkout: pip install -e ".[{EXTRA}]")'
    )


def require(module: str, mechanism: str) -> ModuleType:
    """Import the peer library ``module`` for ``mechanism``, or say which extra provides it."""
    try:
        return import_module(module)
    except ImportError as err:
        package = module.partition(".")[0]
        raise ImportError(f"{missing_extra(package, mechanism)}: {err}") from err


class PeerMechanism(Mechanism[Release]):
    """A mechanism computed by another library, whose top-level package is ``library``."""

    library: ClassVar[str]

    @classmethod
    def installed(cls) -> bool:
        """Whether ``library`` is installed: found on the path, not imported (seconds)."""
        return find_spec(cls.library) is not None

    @classmethod
    def check_installed(cls) -> None:
        """Raise ``ImportError`` naming the extra unless ``library`` is installed."""
        if not cls.installed():
            raise ImportError(missing_extra(cls.library, cls.name))
