"""Plug-in mechanisms that misbehave on purpose, to check that a sweep survives them.

``harness_hostile`` releases Laplace noise around the median (like
``harness_laplace`` of harness_mechanisms) except on the dataset replicate
``victim_replicate``, where it does what ``behaviour`` says: raise
``SystemExit`` or ``KeyboardInterrupt``, call ``os._exit``, segfault, sleep
forever (interruptibly, or with SIGALRM blocked, as C code would), claim a
wrong truth or a weaker/stronger guarantee.  ``marker`` (a file path) turns
the misbehaviour off once deleted, standing for "the user fixed the plug-in".
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

import numpy as np
from harness_mechanisms import ClippedNoiseRelease

from mechanisms import Guarantee, Mechanism, Neighbouring, Release, register

BEHAVIOURS = (
    "system_exit",
    "keyboard_interrupt",
    "os_exit",
    "segfault",
    "sleep",
    "blocked_sleep",
    "wrong_truth",
    "weaker_guarantee",
    "stronger_guarantee",
)


@register
class Hostile(Mechanism):
    """A Laplace median mechanism that misbehaves on one replicate (see the module)."""

    name = "harness_hostile"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        behaviour: str = "system_exit",
        victim_median: float = 0.0,
        marker: str = "",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta)
        self.behaviour, self.victim_median, self.marker = behaviour, victim_median, marker

    @property
    def armed(self) -> bool:
        return not self.marker or Path(self.marker).exists()

    @property
    def guarantee(self) -> Guarantee:
        claimed = {"weaker_guarantee": 2 * self.epsilon, "stronger_guarantee": 1e-9}
        epsilon = claimed.get(self.behaviour, self.epsilon) if self.armed else self.epsilon
        return Guarantee(epsilon, 0.0, Neighbouring.ADD_REMOVE, source="Laplace, GS = b - a")

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        release = ClippedNoiseRelease(
            sorted_x, lower, upper, (upper - lower) / self.epsilon, "laplace", True
        )
        if self.armed and release.true_value == self.victim_median:
            self._misbehave(release)
        return release

    def _misbehave(self, release: ClippedNoiseRelease) -> None:
        if self.behaviour == "system_exit":
            raise SystemExit(4)
        if self.behaviour == "keyboard_interrupt":
            raise KeyboardInterrupt
        if self.behaviour == "os_exit":
            os._exit(4)
        if self.behaviour == "segfault":
            ctypes.string_at(0)
        if self.behaviour == "sleep":
            time.sleep(3600)
        if self.behaviour == "blocked_sleep":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)
        if self.behaviour == "wrong_truth":
            release.true_value = release.upper  # "my output is the truth"
