"""Datasets of the benchmark: the :class:`Dataset` interface and the synthetic generators.

A dataset is a *recipe*: it holds its public bounds ``[lower, upper]`` and
produces replicate ``r`` on demand, inside the work unit that needs it (no sweep
holds all datasets in memory).  A config entry (``conf/dataset/<name>.yaml``)
names the class that builds it and its options, the way a mechanism entry does::

    _target_: experiments.data.datasets.SyntheticDataset
    options: {distribution: normal, params: {loc: 0.0, scale: 1.0}, bounds: [-10.0, 10.0]}

The class's :meth:`Dataset.from_config` turns ``(name, n, replicates, **options)``
into one or more datasets.  Built-ins, written on that same path:

* :class:`SyntheticDataset` (Duff paper, section 6.1): ``n`` i.i.d. draws from a
  ``numpy.random.Generator`` law per replicate — N(0, 1) on [−10, 10], U(0, 1)
  and Beta(0.5, 0.5) on [0, 1]; replicate ``r`` is drawn from
  :func:`experiments.base.seeding.data_rng` keyed on (dataset id, r) only, so every
  mechanism and ε sees the same data;
* :class:`experiments.data.vertebral.VertebralColumn` (section 6.2): one fixed dataset
  per (measurement, class) of the UCI Vertebral Column data.

A dataset defined outside the package is a frozen-dataclass subclass of
:class:`Dataset` with a ``data`` method (and ``n`` as a field if it takes the
sweep's ``n``); ``examples/plugin/contaminated.py`` is a complete one.

The paper computes the median before truncating the data to [a, b]; the
mechanisms here clip inside ``release`` and the harness's T(S) is the median of
the bounded data.  For the paper's bounds no synthetic point is clipped in
practice (and no vertebral point ever is), so the two agree.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from experiments.base.seeding import data_rng
from mechanisms.core import validation
from mechanisms.core.targets import import_class
from mechanisms.core.validation import check_integer
from mechanisms.statistics import MEDIAN, Statistic

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
ENTRY_FIELDS = {"name", "_target_", "options"}
_IDENTITY = ("name", "subset", "lower", "upper", "replicates", "source")


class DatasetError(ValueError):
    """A dataset entry or data file that cannot be used (the message says why)."""


@dataclass(frozen=True)
class Dataset(ABC):
    """A dataset of the sweep: identity, public bounds, replicate count, origin.

    Subclasses implement :meth:`data` and, unless they have an ``n`` field,
    :attr:`size`; :meth:`describe` (what determines the numbers, hashed into the
    config) defaults to the class and its fields.
    """

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
    def size(self) -> int:
        """Number of points in every replicate (the ``n`` field, when there is one)."""
        return int(getattr(self, "n"))  # noqa: B009 — subclasses without n override this

    @abstractmethod
    def data(self, seed: int, replicate: int) -> np.ndarray:
        """Replicate ``replicate`` of this dataset (a fresh 1-D float array)."""

    def population_median(self) -> float | None:
        """The median of the law the replicates are drawn from, bounded to ``[lower, upper]``
        (the target of a confidence interval for the population median); None for data
        that are not draws from a known law (real data)."""
        return None

    def population_value(self, statistic: Statistic, bounding: str = "clip") -> float | None:
        """θ, the population parameter that ``statistic``'s T(S) estimates on this dataset's
        data bounded by ``bounding`` (``clip`` or ``drop``, as the harness bounds them):
        :meth:`mechanisms.statistics.Statistic.population_value` of the law the replicates
        are drawn from.  None here: data that are not draws from a known law (real data, a
        fixed sample of a population whose law nobody knows) have no θ to measure against."""
        return None

    def rng(self, seed: int, replicate: int) -> np.random.Generator:
        """The generator of replicate ``replicate`` (keyed on the dataset's id, see seeding)."""
        check_replicate(replicate, self.replicates)
        return data_rng(seed, self.id, replicate)

    def describe(self) -> dict[str, Any]:
        """Everything that determines this dataset's numbers (hashed into the config)."""
        own = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in _IDENTITY
        }
        cls = type(self)
        return {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "replicates": self.replicates,
            "bounds": json_bounds(self.lower, self.upper),
            **own,
        }

    @classmethod
    def from_config(
        cls, *, name: str, n: int, replicates: int, bounds: object = None, **options: Any
    ) -> list[Dataset]:
        """The datasets of one config entry: by default one, ``cls(**options)`` with the
        entry's ``name``, ``bounds`` and ``replicates``, and ``n`` if the class has that field."""
        lower, upper = check_bounds(name, bounds)
        fields = {f.name for f in dataclasses.fields(cls)}
        extra = {"n": n} if "n" in fields else {}
        source = f"{cls.__module__}.{cls.__qualname__}"
        try:
            return [cls(name, "", lower, upper, replicates, source, **extra, **options)]
        except TypeError as err:
            raise DatasetError(f"dataset {name!r}: bad options {options!r} ({err})") from None


@dataclass(frozen=True)
class SyntheticDataset(Dataset):
    """``n`` i.i.d. draws of ``Generator.<distribution>(**params)`` per replicate."""

    distribution: str = "normal"
    params: tuple[tuple[str, float], ...] = ()
    n: int = 1000

    def data(self, seed: int, replicate: int) -> np.ndarray:
        draw = getattr(self.rng(seed, replicate), self.distribution)
        return np.asarray(draw(size=self.n, **dict(self.params)), dtype=np.float64)

    def population_median(self) -> float:
        """The law's median (:func:`law_median`), clipped to the bounds: clipping is monotone,
        so it maps a median of ``X`` to a median of ``clip(X, a, b)``."""
        return min(max(law_median(self.distribution, self.params), self.lower), self.upper)

    def population_value(self, statistic: Statistic, bounding: str = "clip") -> float | None:
        """θ of :func:`scipy_law` (:func:`law_parameter`).  A subclass whose data are not the
        draws themselves (rounded ones) has a θ only for the median (its
        :meth:`population_median`), and data bounded by dropping the points outside
        ``[a, b]`` only where the law puts at most :data:`DROP_TOLERANCE` outside (then
        dropping and clipping change θ by about as much); None otherwise."""
        if type(self).data is not SyntheticDataset.data:
            return self.population_median() if statistic == MEDIAN else None
        if bounding == "drop" and outside_mass(self.distribution, self.params, *self.bounds) > (
            DROP_TOLERANCE
        ):
            return None
        return law_parameter(self.distribution, self.params, statistic, self.lower, self.upper)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "synthetic",
            "distribution": self.distribution,
            "params": dict(self.params),
            "n": self.n,
            "replicates": self.replicates,
            "bounds": json_bounds(self.lower, self.upper),
        }

    @classmethod
    def from_config(  # type: ignore[override]
        cls,
        *,
        name: str,
        n: int,
        replicates: int,
        bounds: object = None,
        distribution: str = "normal",
        params: Mapping[str, float] | None = None,
        sizes: object = None,
    ) -> list[Dataset]:
        """One dataset of the sweep's ``n`` points, or one per entry of ``sizes`` (a list of
        sample sizes; subset ``"n=<size>"``), all drawn from ``distribution(**params)``."""
        if distribution not in DISTRIBUTIONS:
            raise DatasetError(
                f"dataset {name!r}: distribution must be one of {', '.join(DISTRIBUTIONS)}; "
                f"got {distribution!r}"
            )
        params = params or {}
        if not isinstance(params, Mapping):
            raise DatasetError(f"dataset {name!r}: params must be a mapping, got {params!r}")
        lower, upper = check_bounds(name, bounds)
        try:
            items = tuple(sorted((str(k), float(v)) for k, v in params.items()))
            getattr(np.random.default_rng(0), distribution)(size=1, **dict(items))
        except (TypeError, ValueError) as err:
            raise DatasetError(f"dataset {name!r}: bad params {dict(params)!r} ({err})") from None
        source = f"numpy.random.Generator.{distribution}"
        if sizes is None:
            return [cls(name, "", lower, upper, replicates, source, distribution, items, n)]
        if not isinstance(sizes, list | tuple) or not sizes:
            raise DatasetError(f"dataset {name!r}: sizes must be a non-empty list, got {sizes!r}")
        try:
            counts = [check_integer(size, "sizes", minimum=1) for size in sizes]
        except ValueError as err:
            raise DatasetError(f"dataset {name!r}: {err}") from None
        return [
            cls(name, f"n={size}", lower, upper, replicates, source, distribution, items, size)
            for size in counts
        ]


def scipy_law(distribution: str, params: Mapping[str, float]) -> Any:
    """The frozen ``scipy.stats`` law of ``numpy.random.Generator.<distribution>(**params)``
    (numpy's parameter names and defaults, mapped to scipy's)."""
    p = dict(params)
    loc, scale = p.get("loc", 0.0), p.get("scale", 1.0)
    laws = {
        "beta": lambda: stats.beta(p["a"], p["b"]),
        "exponential": lambda: stats.expon(scale=scale),
        "gamma": lambda: stats.gamma(p["shape"], scale=scale),
        "gumbel": lambda: stats.gumbel_r(loc, scale),
        "laplace": lambda: stats.laplace(loc, scale),
        "logistic": lambda: stats.logistic(loc, scale),
        "lognormal": lambda: stats.lognorm(p.get("sigma", 1.0), scale=math.exp(p.get("mean", 0.0))),
        "normal": lambda: stats.norm(loc, scale),
        "standard_cauchy": lambda: stats.cauchy(),
        "standard_t": lambda: stats.t(p["df"]),
        "uniform": lambda: stats.uniform(p.get("low", 0.0), p.get("high", 1.0) - p.get("low", 0.0)),
    }
    return laws[distribution]()


@lru_cache(maxsize=64)
def law_median(distribution: str, params: tuple[tuple[str, float], ...]) -> float:
    """The median of :func:`scipy_law` (cached: building a scipy law costs ~1 ms, and every
    interval cell of a sweep asks for it)."""
    return float(scipy_law(distribution, dict(params)).median())


DROP_TOLERANCE = 1e-12
"""Law mass outside ``[a, b]`` below which θ of the data with those points dropped is taken
to be θ of the clipped data."""


@lru_cache(maxsize=256)
def law_parameter(
    distribution: str,
    params: tuple[tuple[str, float], ...],
    statistic: Statistic,
    lower: float,
    upper: float,
) -> float | None:
    """``statistic.population_value`` of :func:`scipy_law` clipped to ``[lower, upper]``
    (cached: every cell of a unit asks for it)."""
    return statistic.population_value(scipy_law(distribution, dict(params)), lower, upper)


def outside_mass(
    distribution: str, params: tuple[tuple[str, float], ...], lower: float, upper: float
) -> float:
    """``P(X < lower) + P(X > upper)`` under :func:`scipy_law`."""
    law = scipy_law(distribution, dict(params))
    return float(law.cdf(lower)) + float(law.sf(upper))


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
            "bounds": json_bounds(self.lower, self.upper),
        }

    @classmethod
    def of_values(
        cls, name: str, subset: str, values: np.ndarray, bounds: tuple[float, float], source: str
    ) -> Any:
        """A fixed dataset whose digest is the SHA-256 of its float64 values."""
        array = np.array(values, dtype=np.float64)
        array.setflags(write=False)
        digest = hashlib.sha256(array.tobytes()).hexdigest()
        return cls(name, subset, bounds[0], bounds[1], 1, source, values=array, digest=digest)


def json_bounds(lower: float, upper: float) -> list[float | str]:
    """``[lower, upper]`` for the config's JSON: an infinite bound as the string ``"inf"`` or
    ``"-inf"`` (JSON has no infinity; finite bounds are the floats, as always)."""
    return [value if math.isfinite(value) else str(value) for value in (lower, upper)]


def check_replicate(replicate: int, replicates: int) -> None:
    """Raise ``ValueError`` unless ``0 <= replicate < replicates``."""
    if not 0 <= replicate < replicates:
        raise ValueError(f"replicate must be in [0, {replicates}), got {replicate!r}")


def check_bounds(name: str, bounds: object) -> tuple[float, float]:
    """``bounds`` as floats ``(lower, upper)`` with ``lower < upper``
    (:func:`mechanisms.core.validation.check_bounds`); either may be infinite (``.inf`` in
    YAML), for the mechanisms that need no bounds: the plan refuses the others on such a
    dataset."""
    try:
        return validation.check_bounds(bounds, infinite=True)
    except ValueError as err:
        raise DatasetError(f"dataset {name!r}: {err}") from None


def build_datasets(entry: Mapping[str, Any], *, n: int, replicates: int) -> list[Dataset]:
    """The datasets described by one ``conf/dataset`` entry (``name``, ``_target_``,
    ``options``): ``<_target_ class>.from_config(name=…, n=…, replicates=…, **options)``."""
    name = str(entry.get("name"))
    unknown = sorted(set(entry) - ENTRY_FIELDS)
    if unknown:
        raise DatasetError(f"dataset {name!r}: unknown fields {', '.join(unknown)}")
    for key, value in (("n", n), ("replicates", replicates)):
        try:
            check_integer(value, key, minimum=1)
        except ValueError as err:
            raise DatasetError(str(err)) from None
    options = entry.get("options") or {}
    if not isinstance(options, Mapping):
        raise DatasetError(f"dataset {name!r}: options must be a mapping, got {options!r}")
    try:
        cls: type[Dataset] = import_class(entry.get("_target_"), Dataset)
    except ValueError as err:
        raise DatasetError(f"dataset {name!r}: {err}") from None
    datasets = cls.from_config(name=name, n=n, replicates=replicates, **options)
    if not datasets or not all(isinstance(d, Dataset) for d in datasets):
        raise DatasetError(f"dataset {name!r}: {cls.__qualname__}.from_config gave no datasets")
    return list(datasets)
