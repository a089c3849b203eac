"""Datasets of the benchmark: synthetic generators and the UCI Vertebral Column loader.

A dataset here is a *recipe*: it holds its public bounds ``[lower, upper]`` and
produces replicate ``r`` on demand, inside the work unit that needs it (no sweep
holds all datasets in memory).

* Synthetic (Duff paper, section 6.1): ``n`` i.i.d. draws from N(0, 1) with
  bounds [−10, 10], U(0, 1) or Beta(0.5, 0.5) with bounds [0, 1]; replicate
  ``r`` is drawn from :func:`experiments.seeding.data_rng` keyed on (dataset
  name, r) only, so every mechanism and ε sees the same data.
* Vertebral (section 6.2): one fixed dataset per (measurement, class) of the
  UCI Vertebral Column data (``column_2C.dat``: 310 patients, 210 ``AB`` then
  100 ``NO``); bounds are the measurement's range over both classes combined.

The paper computes the median before truncating the data to [a, b]; the
mechanisms here clip inside ``release`` and report the median of the bounded
data.  For the paper's bounds no synthetic point is clipped in practice (and no
vertebral point ever is), so the two agree.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import urllib.request
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from experiments.results import write_bytes_atomic
from experiments.seeding import data_rng

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# numpy.random.Generator methods a synthetic dataset may draw from (continuous laws).
DISTRIBUTIONS = (
    "beta",
    "exponential",
    "gamma",
    "gumbel",
    "laplace",
    "logistic",
    "lognormal",
    "normal",
    "standard_cauchy",
    "standard_t",
    "uniform",
)

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
FIELDS = {
    "synthetic": {"name", "kind", "distribution", "params", "bounds"},
    "vertebral": {"name", "kind", "path", "url", "measurements", "classes"},
}
SHARED_DATA_DIR = PROJECT_ROOT.parent / "shared" / "data"
MAX_DOWNLOAD_BYTES = 20_000_000


class DatasetError(ValueError):
    """A dataset entry or data file that cannot be used (the message says why)."""


# ------------------------------------------------------------------------ datasets


@dataclass(frozen=True)
class Dataset(ABC):
    """Common part of every dataset: identity, public bounds, replicate count, origin."""

    name: str
    subset: str
    lower: float
    upper: float
    replicates: int
    source: str = ""

    @property
    def id(self) -> str:
        """Stable identifier, e.g. ``"normal"`` or ``"vertebral/pelvic_tilt/AB"``."""
        return f"{self.name}/{self.subset}" if self.subset else self.name

    @property
    def bounds(self) -> tuple[float, float]:
        return (self.lower, self.upper)

    @property
    @abstractmethod
    def size(self) -> int:
        """Number of points in every replicate."""

    @abstractmethod
    def data(self, seed: int, replicate: int) -> np.ndarray:
        """Replicate ``replicate`` of this dataset (a fresh 1-D float array)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Everything that determines this dataset's numbers (hashed into the config)."""


@dataclass(frozen=True)
class SyntheticDataset(Dataset):
    """``n`` i.i.d. draws of ``Generator.<distribution>(**params)`` per replicate."""

    distribution: str = "normal"
    params: tuple[tuple[str, float], ...] = ()
    n: int = 1000

    @property
    def size(self) -> int:
        return self.n

    def data(self, seed: int, replicate: int) -> np.ndarray:
        check_replicate(replicate, self.replicates)
        draw = getattr(data_rng(seed, self.id, replicate), self.distribution)
        return np.asarray(draw(size=self.n, **dict(self.params)), dtype=np.float64)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "synthetic",
            "distribution": self.distribution,
            "params": dict(self.params),
            "n": self.n,
            "replicates": self.replicates,
            "bounds": [self.lower, self.upper],
        }


@dataclass(frozen=True)
class FixedDataset(Dataset):
    """A dataset given by its values (one replicate): a real data subset."""

    values: np.ndarray = field(default_factory=lambda: np.empty(0), compare=False)
    digest: str = ""

    @property
    def size(self) -> int:
        return int(self.values.size)

    def data(self, seed: int, replicate: int) -> np.ndarray:
        check_replicate(replicate, self.replicates)
        return self.values.copy()

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "fixed",
            "size": int(self.values.size),
            "sha256": self.digest,
            "bounds": [self.lower, self.upper],
        }


def fixed_dataset(
    name: str, subset: str, values: np.ndarray, bounds: tuple[float, float], source: str
) -> FixedDataset:
    """A :class:`FixedDataset` whose digest is the SHA-256 of its float64 values."""
    array = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    digest = hashlib.sha256(array.tobytes()).hexdigest()
    return FixedDataset(name, subset, bounds[0], bounds[1], 1, source, values=array, digest=digest)


def check_replicate(replicate: int, replicates: int) -> None:
    """Raise ``ValueError`` unless ``0 <= replicate < replicates``."""
    if not 0 <= replicate < replicates:
        raise ValueError(f"replicate must be in [0, {replicates}), got {replicate!r}")


def build_datasets(entry: Mapping[str, Any], *, n: int, replicates: int) -> list[Dataset]:
    """The datasets described by one ``conf/dataset`` entry.

    ``kind: synthetic`` gives one dataset of size ``n`` with ``replicates``
    replicates; ``kind: vertebral`` gives one fixed dataset per selected
    (measurement, class).
    """
    name, kind = entry.get("name"), entry.get("kind")
    if kind not in FIELDS:
        raise DatasetError(
            f"dataset {name!r}: kind must be 'synthetic' or 'vertebral', got {kind!r}"
        )
    unknown = sorted(set(entry) - FIELDS[kind])
    if unknown:
        raise DatasetError(f"dataset {name!r}: unknown fields {', '.join(unknown)}")
    if kind == "synthetic":
        return [synthetic_dataset(entry, n=n, replicates=replicates)]
    return vertebral_datasets(entry)


def synthetic_dataset(entry: Mapping[str, Any], *, n: int, replicates: int) -> SyntheticDataset:
    """A :class:`SyntheticDataset` from its config entry (checked)."""
    name = entry["name"]
    distribution = entry.get("distribution")
    if distribution not in DISTRIBUTIONS:
        raise DatasetError(
            f"dataset {name!r}: distribution must be one of {', '.join(DISTRIBUTIONS)}; "
            f"got {distribution!r}"
        )
    params = entry.get("params") or {}
    if not isinstance(params, Mapping):
        raise DatasetError(f"dataset {name!r}: params must be a mapping, got {params!r}")
    lower, upper = _bounds(name, entry.get("bounds"))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DatasetError(f"n must be a positive integer, got {n!r}")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise DatasetError(f"replicates must be a positive integer, got {replicates!r}")
    try:
        items = tuple(sorted((str(k), float(v)) for k, v in params.items()))
        getattr(np.random.default_rng(0), distribution)(size=1, **dict(items))
    except (TypeError, ValueError) as err:
        raise DatasetError(f"dataset {name!r}: bad params {dict(params)!r} ({err})") from None
    source = f"numpy.random.Generator.{distribution}"
    return SyntheticDataset(
        name, "", lower, upper, replicates, source, distribution=distribution, params=items, n=n
    )


def _bounds(name: str, bounds: object) -> tuple[float, float]:
    try:
        lower, upper = (float(v) for v in bounds)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise DatasetError(
            f"dataset {name!r}: bounds must be [lower, upper], got {bounds!r}"
        ) from None
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise DatasetError(f"dataset {name!r}: bounds must be finite with lower < upper")
    return lower, upper


# ---------------------------------------------------------------------- vertebral


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


def vertebral_datasets(entry: Mapping[str, Any]) -> list[FixedDataset]:
    """One fixed dataset per selected (measurement, class), bounds from both classes."""
    name = entry["name"]
    measurements = list(entry.get("measurements") or VERTEBRAL_MEASUREMENTS)
    classes = list(entry.get("classes") or VERTEBRAL_CLASSES)
    for value, valid, what in (
        (measurements, VERTEBRAL_MEASUREMENTS, "measurements"),
        (classes, VERTEBRAL_CLASSES, "classes"),
    ):
        unknown = [v for v in value if v not in valid]
        if unknown or len(set(value)) != len(value):
            raise DatasetError(
                f"dataset {name!r}: {what} must be distinct names from {', '.join(valid)}; "
                f"got {value!r}"
            )
    data = load_vertebral(entry.get("path"), entry.get("url") or VERTEBRAL_URL)
    datasets = []
    for measurement in measurements:
        both = data.column(measurement)
        bounds = (float(both.min()), float(both.max()))
        for label in classes:
            values = data.column(measurement, label)
            subset = f"{measurement}/{label}"
            datasets.append(fixed_dataset(name, subset, values, bounds, data.source))
    return datasets
