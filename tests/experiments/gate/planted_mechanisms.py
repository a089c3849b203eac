"""Mechanisms of the regression sweep with their noise scale changed on purpose, to measure
what the gate detects (issue 26, finding 3).

``planted(name, factor)`` is a subclass of the registered class ``name`` whose noise scale
is ``factor`` times the real one, as after a bad code change:

* ``smooth_cauchy``: the Cauchy scale ``6·SS/ε`` times ``factor``;
* ``laplace_mean``: the Laplace scales (of the sum and the count) times ``factor``;
* ``duff``: run at ``ε/factor`` (Duff's utility is scaled by ε: a lower ε spreads it as a
  larger noise scale would).  Only Duff's median and quantile cells: its mean and mode
  are other classes of its family, left as they are.

The classes are defined at import, one per (name, factor) of :data:`FACTORS`, so that
worker processes import them by name.
"""

from __future__ import annotations

from typing import Any

import mechanisms
from mechanisms.noise.additive import Scale

FACTORS = (0.5, 0.86, 0.9, 0.95, 1.05, 1.1, 1.14, 2.0)
NAMES = ("smooth_cauchy", "laplace_mean", "duff")


def _scaled(scale: Any, factor: float) -> Any:
    if isinstance(scale, Scale):
        return Scale(scale.significand * factor, scale.exponent)
    return float(scale) * factor


def _make(name: str, factor: float) -> type:
    base = mechanisms.get(name)
    body: dict[str, Any] = {"__module__": __name__, "planted_factor": factor}
    if name == "duff":

        def __init__(self: Any, *, epsilon: float, **options: Any) -> None:
            base.__init__(self, epsilon=epsilon / factor, **options)

        body["__init__"] = __init__
    elif name == "laplace_mean":

        def scale(self: Any, epsilon: float, delta: float, sensitivity: float) -> Any:
            return _scaled(base.scale(self, epsilon, delta, sensitivity), factor)

        body["scale"] = scale
    else:

        def additive_release(self: Any, *args: Any, scale: Any, **kwargs: Any) -> Any:
            return base.additive_release(self, *args, scale=_scaled(scale, factor), **kwargs)

        body["additive_release"] = additive_release
    qualname = class_name(name, factor)
    cls = type(qualname, (base,), body)
    cls.__qualname__ = qualname
    return cls


def class_name(name: str, factor: float) -> str:
    return f"Planted_{name}_x{factor:g}".replace(".", "_")


PLANTED: dict[tuple[str, float], type] = {}
for _name in NAMES:
    for _factor in FACTORS:
        PLANTED[(_name, _factor)] = globals()[class_name(_name, _factor)] = _make(_name, _factor)


def planted(name: str, factor: float) -> type:
    """The class ``name`` with its noise scale times ``factor`` (module docstring)."""
    return PLANTED[(name, factor)]
