"""Seeds keyed on stable identities, so numbers do not depend on loop order or n_jobs.

Every random stream of a sweep is a ``numpy.random.SeedSequence(seed,
spawn_key=key)`` whose ``key`` is built from *what* the stream is for, never
from *when* it is used:

* data of one dataset replicate: ``("data", dataset, replicate)`` — the same for
  every mechanism and ε, so all comparisons are paired;
* noise of one (dataset, replicate, statistic, mechanism label, ε) cell:
  ``("noise", dataset, replicate, label, ε)`` for the median and
  ``("noise", dataset, replicate, statistic, label, ε)`` for any other statistic
  (the median was the only statistic before statistics became an axis of the
  sweep; keeping its key keeps every earlier number).

Strings map to integers through SHA-256 (stable across processes and Python
versions, unlike ``hash()``), floats through ``float.hex`` (exact).  Adding a
mechanism or an ε to a sweep therefore adds streams and changes none.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

from mechanisms.core.validation import check_integer
from mechanisms.statistics import MEDIAN


@lru_cache(maxsize=1 << 14, typed=True)  # typed: True and 1 are different keys
def stable_int(value: str | float | int) -> int:
    """A 64-bit integer determined by ``value`` alone.

    Strings hash their UTF-8 bytes; floats (ε, …) hash ``float.hex`` so 1 and
    1.0 agree and nearby floats never collide; non-negative ints map to themselves.
    """
    if isinstance(value, bool):
        raise ValueError(f"value must be a str, float or int, got bool {value!r}")
    if isinstance(value, (int, np.integer)):
        if value < 0:
            raise ValueError(f"value must be a non-negative integer, got {value!r}")
        return int(value)
    if isinstance(value, (float, np.floating)):
        text = "float:" + float(value).hex()
    elif isinstance(value, str):
        text = "str:" + value
    else:
        raise ValueError(f"value must be a str, float or int, got {type(value).__name__}")
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def seed_sequence(seed: int, *key: str | float | int) -> np.random.SeedSequence:
    """``SeedSequence(seed, spawn_key=…)`` for the stream identified by ``key``."""
    seed = check_integer(seed, "seed", minimum=0)
    return np.random.SeedSequence(seed, spawn_key=tuple(stable_int(k) for k in key))


def data_rng(seed: int, dataset: str, replicate: int) -> np.random.Generator:
    """The generator that draws replicate ``replicate`` of dataset ``dataset``."""
    return np.random.default_rng(seed_sequence(seed, "data", dataset, replicate))


def noise_rng(
    seed: int,
    dataset: str,
    replicate: int,
    label: str,
    epsilon: float,
    statistic: str = MEDIAN.id,
) -> np.random.Generator:
    """The generator for mechanism ``label``'s estimates of ``statistic`` (its id) at
    ``epsilon`` on one dataset."""
    cell: tuple[str | float, ...] = (label, float(epsilon))
    if statistic != MEDIAN.id:
        cell = (statistic, *cell)
    return np.random.default_rng(seed_sequence(seed, "noise", dataset, replicate, *cell))
