"""The UCI Vertebral Column data (Duff paper, section 6.2): loader and dataset plug-in.

``column_2C.dat`` holds 310 patients (210 ``AB`` then 100 ``NO``) with six
measurements each.  :class:`VertebralColumn` gives one fixed dataset per
selected (measurement, class), with bounds the measurement's range over both
classes combined.  The file is looked up at the configured ``path``,
``$VERTEBRAL_DATA``, the user's cache and ``../shared/data`` next to the
project; else the official UCI archive is downloaded into the cache and
checked (310 rows, 6 numeric columns, 210 AB / 100 NO).  No copy is part of
this repository.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments.base.atomic_files import write_bytes_atomic
from experiments.data.datasets import DatasetError, FixedDataset

PROJECT_ROOT = Path(__file__).resolve().parents[2]
VERTEBRAL_URL = "https://archive.ics.uci.edu/static/public/212/vertebral+column.zip"
VERTEBRAL_MEMBER = "column_2C.dat"
VERTEBRAL_ENV = "VERTEBRAL_DATA"
VERTEBRAL_MEASUREMENTS = (
    "pelvic_incidence",
    "pelvic_tilt",
    "lumbar_lordosis_angle",
    "sacral_slope",
    "pelvic_radius",
    "grade_of_spondylolisthesis",
)
VERTEBRAL_CLASSES = ("AB", "NO")
VERTEBRAL_COUNTS = {"AB": 210, "NO": 100}
SHARED_DATA_DIR = PROJECT_ROOT.parent / "shared" / "data"
MAX_DOWNLOAD_BYTES = 20_000_000


@dataclass(frozen=True)
class VertebralData:
    """The parsed ``column_2C.dat``: ``values`` (310 × 6) and ``classes`` (310,)."""

    values: np.ndarray
    classes: np.ndarray
    source: str
    sha256: str

    def column(self, measurement: str, label: str | None = None) -> np.ndarray:
        """One measurement, for one class (``"AB"``/``"NO"``) or for both."""
        values = self.values[:, VERTEBRAL_MEASUREMENTS.index(measurement)]
        return values if label is None else values[self.classes == label]


def parse_vertebral(content: bytes, source: str) -> VertebralData:
    """Parse and check ``column_2C.dat``: 310 rows of 6 numbers and a class, 210 AB / 100 NO.

    Raises :class:`DatasetError` naming ``source`` and the first problem found.
    """
    try:
        text = content.decode("ascii")
    except UnicodeDecodeError as err:
        raise DatasetError(
            f"vertebral data {source}: not a text file (byte {err.start} is not ASCII)"
        ) from None
    rows, classes = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 7:
            raise DatasetError(
                f"vertebral data {source}: line {number} has {len(fields)} fields, "
                "expected 7 (six measurements and a class)"
            )
        try:
            numbers = [float(v) for v in fields[:6]]
        except ValueError:
            raise DatasetError(
                f"vertebral data {source}: line {number} has a non-numeric measurement"
            ) from None
        if not all(math.isfinite(v) for v in numbers):
            raise DatasetError(f"vertebral data {source}: line {number} has a non-finite value")
        if fields[6] not in VERTEBRAL_CLASSES:
            raise DatasetError(
                f"vertebral data {source}: line {number} has class {fields[6]!r}, expected AB or NO"
            )
        rows.append(numbers)
        classes.append(fields[6])
    expected_rows = sum(VERTEBRAL_COUNTS.values())
    if len(rows) != expected_rows:
        raise DatasetError(f"vertebral data {source}: {len(rows)} rows, expected {expected_rows}")
    labels = np.array(classes)
    counts = {label: int((labels == label).sum()) for label in VERTEBRAL_CLASSES}
    if counts != VERTEBRAL_COUNTS:
        raise DatasetError(
            f"vertebral data {source}: class counts {counts}, expected {VERTEBRAL_COUNTS}"
        )
    return VertebralData(
        values=np.array(rows, dtype=np.float64),
        classes=labels,
        source=source,
        sha256=hashlib.sha256(content).hexdigest(),
    )


def cache_dir() -> Path:
    """The user's data cache: ``$XDG_CACHE_HOME/duff-bench`` or ``~/.cache/duff-bench``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "duff-bench"


def _explicit_file(path: str | os.PathLike[str], origin: str) -> Path:
    candidate = Path(path).expanduser()
    if candidate.is_dir():
        candidate = candidate / VERTEBRAL_MEMBER
    if not candidate.is_file():
        raise DatasetError(f"vertebral data: {origin} points to {candidate}, which does not exist")
    return candidate


def locate_vertebral(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The first existing ``column_2C.dat`` among the configured locations, or None.

    Order: ``path`` (from the config), ``$VERTEBRAL_DATA``, the user's cache
    (:func:`cache_dir`), ``../shared/data`` next to the project.  An explicitly
    given path or variable that does not exist is an error, not skipped.
    """
    if path:
        return _explicit_file(path, "the config's path")
    env = os.environ.get(VERTEBRAL_ENV)
    if env:
        return _explicit_file(env, f"${VERTEBRAL_ENV}")
    for candidate in _default_places():
        if candidate.is_file():
            return candidate
    return None


def _default_places() -> tuple[Path, Path]:
    return (cache_dir() / VERTEBRAL_MEMBER, SHARED_DATA_DIR / VERTEBRAL_MEMBER)


def fetch(url: str) -> bytes:
    """The bytes at ``url`` (http(s) or file://), at most :data:`MAX_DOWNLOAD_BYTES`.

    Raises :class:`DatasetError` when the download fails (no network, HTTP error,
    timeout), naming where the file was looked for and how to provide it.
    """
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            content = response.read(MAX_DOWNLOAD_BYTES + 1)
    except (OSError, ValueError) as err:  # URLError, HTTPError, TimeoutError are OSErrors
        reason = getattr(err, "reason", None) or err
        searched = ", ".join(str(place) for place in _default_places())
        raise DatasetError(
            f"vertebral data: {VERTEBRAL_MEMBER} is not in {searched} and downloading {url} "
            f"failed ({reason}); put the file in one of those places, or point "
            f"${VERTEBRAL_ENV} or the dataset's path at it"
        ) from None
    if len(content) > MAX_DOWNLOAD_BYTES:
        raise DatasetError(f"vertebral data: {url} is larger than {MAX_DOWNLOAD_BYTES} bytes")
    return content


def download_vertebral(url: str = VERTEBRAL_URL) -> Path:
    """Download the UCI archive, check its ``column_2C.dat`` and store it in the cache."""
    if not url.startswith(("https://", "http://", "file://")):
        raise DatasetError(f"vertebral data: url must be http(s) or file://, got {url!r}")
    archive = fetch(url)
    source = f"{url} (member {VERTEBRAL_MEMBER})"
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as bundle:
            members = [m for m in bundle.namelist() if Path(m).name == VERTEBRAL_MEMBER]
            if not members:
                raise DatasetError(f"vertebral data: {url} has no member {VERTEBRAL_MEMBER}")
            content = bundle.read(members[0])
    except zipfile.BadZipFile:
        raise DatasetError(f"vertebral data: {url} is not a zip archive") from None
    parse_vertebral(content, source)  # refuse to cache a wrong file
    target = cache_dir() / VERTEBRAL_MEMBER
    write_bytes_atomic(target, content)
    return target


def load_vertebral(
    path: str | os.PathLike[str] | None = None, url: str = VERTEBRAL_URL
) -> VertebralData:
    """Find (or download, see :func:`locate_vertebral`) and parse the Vertebral data."""
    found = locate_vertebral(path)
    if found is None:
        found = download_vertebral(url)
    return parse_vertebral(found.read_bytes(), str(found))


def _names(name: str, value: Sequence[str] | None, valid: tuple[str, ...], what: str) -> list[str]:
    chosen = list(value or valid)
    unknown = [v for v in chosen if v not in valid]
    if unknown or len(set(chosen)) != len(chosen):
        raise DatasetError(
            f"dataset {name!r}: {what} must be distinct names from {', '.join(valid)}; "
            f"got {chosen!r}"
        )
    return chosen


@dataclass(frozen=True)
class VertebralColumn(FixedDataset):
    """One (measurement, class) subset of the Vertebral Column data (a dataset plug-in).

    Options of its config entry: ``path`` (the file; else the search above),
    ``url`` (the archive to download), ``measurements`` and ``classes`` (all by
    default), ``rounded`` (default False: each value rounded to the nearest
    integer, half to even, with the bounds the rounded range: data for the mode,
    whose domain is the integers of the bounds, :mod:`mechanisms.core.domain`).
    ``n`` and ``replicates`` of the sweep do not apply: each subset is the data
    of its class, one replicate.
    """

    @classmethod
    def from_config(  # type: ignore[override]
        cls,
        *,
        name: str,
        n: int = 0,
        replicates: int = 1,
        path: str | None = None,
        url: str | None = None,
        measurements: Sequence[str] | None = None,
        classes: Sequence[str] | None = None,
        rounded: bool = False,
    ) -> list[VertebralColumn]:
        chosen = _names(name, measurements, VERTEBRAL_MEASUREMENTS, "measurements")
        labels = _names(name, classes, VERTEBRAL_CLASSES, "classes")
        data = load_vertebral(path, url or VERTEBRAL_URL)
        datasets = []
        if not isinstance(rounded, bool):
            raise DatasetError(f"dataset {name!r}: rounded must be true or false")
        column = (lambda *key: np.rint(data.column(*key))) if rounded else data.column
        for measurement in chosen:
            both = column(measurement)
            bounds = (float(both.min()), float(both.max()))
            for label in labels:
                values = column(measurement, label)
                subset = f"{measurement}/{label}"
                datasets.append(cls.of_values(name, subset, values, bounds, data.source))
        return datasets
