"""Small real mechanisms and config helpers for the harness tests.

The mechanisms here are registered at import time under ``harness_*`` names, so
the harness can be tested independently of the benchmark's own mechanisms.
Worker processes find them because the harness imports each mechanism's
defining module (this one, ``harness_mechanisms``, on the path as ``tests/`` is:
``pythonpath`` in pyproject.toml) before making it.  They live here, not in
``conftest.py``, because pytest imports the conftest under its own name
(``tests.conftest``, importlib mode): a class registered there would be registered
again, under another module, by every ``import conftest``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from mechanisms import Guarantee, Mechanism, Neighbouring, Release, register
from mechanisms.core.data import lower_median
from mechanisms.core.validation import check_rng, check_size

TESTS_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = TESTS_DIR.parent
CONF_DIR = PROJECT_ROOT / "conf"


class ClippedNoiseRelease(Release):
    """``T(S) + scale · Z`` with ``Z`` Laplace or standard normal, optionally clipped to [a, b].

    Clipping is post-processing, so it keeps the guarantee; the CDF then has
    atoms ``P(≤ a)`` at ``a`` and ``P(> b)`` at ``b``.
    """

    def __init__(
        self, sorted_x: np.ndarray, lower: float, upper: float, scale: float, law: str, clip: bool
    ) -> None:
        self.lower, self.upper, self.n = lower, upper, int(sorted_x.size)
        self.true_value = lower_median(sorted_x, lower)
        self.scale, self.law, self.clip = scale, law, clip

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        size, rng = check_size(size), check_rng(rng)
        noise = rng.laplace(size=size) if self.law == "laplace" else rng.standard_normal(size)
        values = self.true_value + self.scale * noise
        return np.clip(values, self.lower, self.upper) if self.clip else values

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        points = np.asarray(x, dtype=np.float64)
        z = (points - self.true_value) / self.scale
        if self.law == "laplace":
            tail = 0.5 * np.exp(-np.abs(z))
            inner = np.where(z < 0, tail, 1.0 - tail)
        else:
            inner = special.ndtr(z)
        if not self.clip:
            return inner
        return np.where(points < self.lower, 0.0, np.where(points >= self.upper, 1.0, inner))


@register
class HarnessLaplace(Mechanism):
    """Laplace mechanism for the median on [a, b]: noise Lap((b − a)/ε), clipped; ε-DP.

    The median of data in [a, b] moves by at most b − a between neighbours, so
    this is the Laplace mechanism with global sensitivity b − a (Dwork & Roth,
    Theorem 3.6).  ``clip=False`` skips the final clipping (outputs may leave
    [a, b]; used to test the harness's output checks).
    """

    name = "harness_laplace"

    def __init__(self, *, epsilon: float, delta: float | None = None, clip: bool = True) -> None:
        super().__init__(epsilon=epsilon, delta=delta)
        self.clip = clip

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, Neighbouring.ADD_REMOVE, source="Laplace mechanism")

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        scale = (upper - lower) / self.epsilon
        return ClippedNoiseRelease(sorted_x, lower, upper, scale, "laplace", self.clip)


@register
class HarnessGaussian(Mechanism):
    """Gaussian mechanism for the median on [a, b], σ = (b − a)·sqrt(2 ln(1.25/δ))/ε.

    (ε, δ)-DP for ε < 1 (Dwork & Roth, Theorem A.1); larger ε raises ValueError
    in ``release`` (used to test that a failing cell is recorded, not fatal).
    """

    name = "harness_gaussian"
    requires_delta = True

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, self.delta, Neighbouring.ADD_REMOVE, source="Gaussian")

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        if self.epsilon >= 1:
            raise ValueError("epsilon must be < 1 for the classical Gaussian bound")
        assert self.delta is not None
        sigma = (upper - lower) * math.sqrt(2 * math.log(1.25 / self.delta)) / self.epsilon
        return ClippedNoiseRelease(sorted_x, lower, upper, sigma, "normal", True)


LAPLACE = {"label": "lap", "name": "harness_laplace"}
LAPLACE_WIDE = {"label": "lap_unclipped", "name": "harness_laplace", "options": {"clip": False}}
GAUSSIAN = {"label": "gauss", "name": "harness_gaussian", "takes_delta": True}


def plugin_env() -> dict[str, str]:
    """The environment of a subprocess that imports this module as a plug-in: the project
    first (the packages, never the test folders named like them), then ``tests/``."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), str(TESTS_DIR)])}


def tiny_overrides(**keys: Any) -> list[str]:
    """Hydra overrides for a tiny synthetic sweep (smoke experiment, plain values)."""
    values = {
        "experiment": "smoke",
        "n": 21,
        "replicates": 2,
        "trials": 7,
        "epsilons": "[0.5,0.9]",
        "datasets": "[normal,beta]",
        "n_jobs": 1,
        **keys,
    }
    return [f"{key}={value}" for key, value in values.items()]


def start_cli(*args: str, cwd: Path) -> subprocess.Popen:
    """Start ``python -m experiments.run *args`` in its own session, with this module's
    mechanisms as a plug-in; stdout and stderr are captured as text."""
    command = [sys.executable, "-m", "experiments.run", *args, "plugins=[harness_mechanisms]"]
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=plugin_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
