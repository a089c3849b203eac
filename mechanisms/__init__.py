"""Differentially private median mechanisms (importable without Hydra).

>>> import numpy as np, mechanisms
>>> release = mechanisms.make("duff", epsilon=1.0).release(np.arange(11.0), (0, 10))
>>> release.true_value
5.0
"""

from mechanisms.core.guarantee import Guarantee, Neighbouring
from mechanisms.core.interface import Mechanism, Release
from mechanisms.registry import available, configure, get, make, register, resolve

__all__ = [
    "Guarantee",
    "Mechanism",
    "Neighbouring",
    "Release",
    "available",
    "configure",
    "get",
    "make",
    "register",
    "resolve",
]
