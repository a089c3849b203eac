"""A release's memory goes when the release goes, without the cyclic garbage collector.

A release holds the bounded data (its cdf reads them); an object of the release
that refers back to itself (a bound method of the smooth-sensitivity object kept
by its envelope did) makes a reference cycle, and the data then stay until the
cyclic collector happens to run: at n = 10⁷, 80 MB per release of every worker.
With the collector off, each built-in mechanism's release is made, sampled and
dropped, and the memory it allocated must be back to a small fraction of one
dataset (caches of public parameters hold arrays far smaller than the data).
The peers' libraries are left out: OpenDP's ctypes conversions do make cycles that
hold a copy of the data, which is theirs to fix.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest

import mechanisms
from mechanisms import registry
from mechanisms.peers import PeerMechanism
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity

N = 20_000
"""Above mechanisms.core.selection.MIN_SAMPLED, so releases go through selection."""
BOUNDS = (-10.0, 10.0)
KEPT_FRACTION = 0.5
"""A cycle keeps at least the bounded copy of the data (one dataset); caches keep less."""


def built_ins() -> list[str]:
    """The package's mechanisms, without the peer libraries' (their internals are not ours)
    and any a test registered."""
    return [
        name
        for name in mechanisms.available()
        if registry.get(name).__module__.startswith("mechanisms.")
        and not issubclass(registry.get(name), PeerMechanism)
    ]


def configured(name: str) -> mechanisms.Mechanism:
    """``name`` at ε = 1 (none for a non-private reference), δ = 1e-6 where it takes one."""
    cls = registry.get(name)
    epsilon = 1.0 if cls.requires_epsilon else None
    return registry.configure(cls, epsilon=epsilon, delta=1e-6 if cls.requires_delta else None)


@pytest.fixture
def no_cyclic_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def memory_kept(mechanism: mechanisms.Mechanism, data: np.ndarray) -> float:
    """Bytes still allocated after a release is made, sampled and dropped (after one untimed
    release that fills the caches)."""
    rng = np.random.default_rng(0)
    mechanism.release(data, BOUNDS).sample(10, rng)
    tracemalloc.start()
    try:
        release = mechanism.release(data, BOUNDS)
        release.sample(10, rng)
        del release
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", built_ins())
def test_a_dropped_release_frees_its_data(name: str, no_cyclic_collector: None) -> None:
    data = np.random.default_rng(1).normal(size=N)
    assert memory_kept(configured(name), data) < KEPT_FRACTION * data.nbytes


def test_a_reference_cycle_through_the_data_is_caught(
    no_cyclic_collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted bug: the smooth-sensitivity object keeps a bound method of itself."""
    original = QuantileSmoothSensitivity.__init__

    def cyclic(self: QuantileSmoothSensitivity, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        self.myself = self.log  # type: ignore[attr-defined]

    monkeypatch.setattr(QuantileSmoothSensitivity, "__init__", cyclic)
    data = np.random.default_rng(1).normal(size=N)
    assert memory_kept(configured("smooth_cauchy"), data) > 0.9 * data.nbytes
