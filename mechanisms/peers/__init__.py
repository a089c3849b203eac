"""Adapters for the DP quantiles of other libraries (the optional extra ``peers``).

* :mod:`mechanisms.peers.opendp_quantile`: OpenDP's ``make_private_quantile``
  (``opendp_quantile``);
* :mod:`mechanisms.peers.diffprivlib_quantile`: IBM diffprivlib's
  ``tools.quantile`` (``diffprivlib_quantile``).

Each adapter has the interface of :class:`mechanisms.Mechanism` and states the
library's own neighbouring relation and guarantee.  The peer library is
imported only when a mechanism is configured, so importing these modules (and
``mechanisms.available()``) works without it; configuring one without its
library raises an ``ImportError`` naming the extra: ``pip install -e ".[peers]"``.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

EXTRA = "peers"
MODULES = ("mechanisms.peers.opendp_quantile", "mechanisms.peers.diffprivlib_quantile")


def require(module: str, mechanism: str) -> ModuleType:
    """Import the peer library ``module`` for ``mechanism``, or say which extra provides it."""
    try:
        return import_module(module)
    except ImportError as err:
        raise ImportError(
            f"mechanism {mechanism!r} needs the optional package {module.split('.')[0]!r} "
            f'(the extra {EXTRA!r}: pip install -e ".[{EXTRA}]"): {err}'
        ) from err
