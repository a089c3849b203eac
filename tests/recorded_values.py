"""Outputs of replaced code, recorded in ``tests/data/*.npz``, and how tests compare with them.

Some tests check that the current code gives the numbers of the code it replaced, bit for
bit.  The replaced code is no longer kept in the tests: ``tests/data/generate_expected.py``
ran it once (from git history) on every case those tests cover and recorded its outputs.
Short outputs are recorded whole; long ones (log masses, cdfs, samples) as a 64-bit
BLAKE2b :func:`digest` of their float64 bits, which two arrays share only if they are
equal bit for bit (up to a chance of 2⁻⁶⁴ per comparison).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"


def digest(*arrays: object, canonical: bool = False) -> int:
    """A 64-bit digest of the shapes and float64 bits (little-endian) of ``arrays``.

    ``canonical``: ``-0.0`` counts as ``0.0`` and every NaN as the same NaN, so equal
    digests mean equal arrays as :func:`numpy.testing.assert_array_equal` compares them;
    otherwise every bit counts (``-0.0`` and ``0.0`` differ).
    """
    hasher = hashlib.blake2b(digest_size=8)
    for array in arrays:
        values = np.asarray(array, dtype=np.float64)
        if canonical:
            values = np.where(np.isnan(values), np.nan, values + 0.0)
        hasher.update(repr(values.shape).encode())
        hasher.update(np.ascontiguousarray(values, dtype="<f8").tobytes())
    return int.from_bytes(hasher.digest(), "little")


def bits(values: object) -> np.ndarray:
    """The float64 bits of ``values`` (1-D), to compare as integers: ``-0.0 != 0.0``."""
    return np.atleast_1d(np.asarray(values, dtype=np.float64)).view(np.uint64)


@cache
def recorded(name: str) -> dict[str, np.ndarray]:
    """The arrays of ``tests/data/<name>.npz`` (read once, read-only)."""
    with np.load(DATA_DIR / f"{name}.npz", allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    for array in arrays.values():
        array.setflags(write=False)
    return arrays
