"""From a composed config to a checked plan of work units.

Names of entries are looked up in the config directories (:mod:`experiments.harness.conf_files`).
Dataset entries: :mod:`experiments.data.datasets`.

A mechanism entry (``conf/mechanism/<label>.yaml``)::

    label: smooth_laplace_public   # unique; the `mechanism` column of the results
    name: smooth_laplace           # registry name (mechanisms.get)
    options: {tuning: public}      # keyword options of the class

A mechanism defined outside the package is named by its class instead, with
``_target_: package.module.ClassName`` (Hydra's spelling; ``name`` may then be
omitted, and must equal the class's ``name`` if given): the class is imported,
checked to be a :class:`mechanisms.Mechanism` subclass and registered under its
``name`` if it is not already.  Whether it takes δ is the class's
``requires_delta`` (an entry's optional ``takes_delta`` must agree).  The plan
holds the classes themselves, and workers receive them by reference.  The
``plugins: [module, ...]`` key imports modules that call
:func:`mechanisms.register` themselves.

A statistic entry (``conf/statistic/<name>.yaml``) names a
:class:`mechanisms.statistics.Statistic` class with ``_target_`` and its
``options``; one entry may stand for several statistics (``quantiles.yaml``: one
per α).  Every mechanism is paired with every statistic, and must list the
statistic's ``kind`` in its class's ``statistics`` (a pairing it does not support
is refused); the statistic's options (``alpha``) are passed to it, so they must
not also be in the mechanism entry's options.

A work unit is (dataset, replicate, statistic, mechanism label); it computes every ε.
:meth:`Plan.numbers` is everything that determines the numbers (not n_jobs,
not results_dir); its hash guards a results directory against mixing configs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import import_module
from typing import Any

from omegaconf import DictConfig

import mechanisms
from experiments.data.datasets import Dataset, build_datasets
from experiments.harness.conf_files import CONF_DIR, ConfDirs, load_entry
from experiments.harness.config import (
    DELTA_INVERSE_N,
    ConfigError,
    check_delta,
    check_epsilons,
    check_integer,
    check_keys,
    check_sequence,
    check_unique,
    plain,
)
from experiments.harness.results import config_hash
from mechanisms.core.targets import import_class
from mechanisms.intervals.base import POPULATION_MEDIAN
from mechanisms.registry import for_statistic, supported_statistics
from mechanisms.statistics import MEDIAN, Statistic

FORMAT = 5
"""Version of the unit-file layout and seeding scheme; part of the config hash."""


@dataclass(frozen=True)
class MechanismEntry:
    """One mechanism of a sweep: results label, its class, registry name, options, δ use.

    Workers receive the class itself (pickled by reference: unpickling imports its
    module), so a plug-in needs no registration in them.
    """

    label: str
    cls: type[mechanisms.Mechanism]
    options: dict[str, Any] = field(default_factory=dict)
    target: str = ""
    """``package.module.ClassName`` of a ``_target_`` entry (empty for registry names)."""
    statistics: tuple[str, ...] = ()
    """The statistic kinds this entry runs on (the entry's ``statistics`` key; empty:
    every statistic of the sweep), so one sweep can hold mechanisms of several statistics."""

    def runs(self, statistic: Statistic) -> bool:
        """Whether the sweep pairs this entry with ``statistic``."""
        return not self.statistics or statistic.kind in self.statistics

    @property
    def name(self) -> str:
        """The class's registry name."""
        return self.cls.name

    @property
    def takes_delta(self) -> bool:
        return bool(self.cls.requires_delta)

    @property
    def module(self) -> str:
        """The module that defines the class (its distribution is recorded in run.json)."""
        return self.cls.__module__

    def configure(
        self, epsilon: float, delta: float | None, statistic: Statistic = MEDIAN
    ) -> mechanisms.Mechanism:
        """The mechanism at ``(epsilon, delta)`` with this entry's options, estimating
        ``statistic``."""
        options = {**self.options, **statistic.mechanism_options()}
        cls = for_statistic(self.cls, statistic.kind)
        if not cls.requires_epsilon:  # a non-private reference: the same at every ε
            return mechanisms.configure(cls, epsilon=None, delta=delta, **options)
        return mechanisms.configure(cls, epsilon=epsilon, delta=delta, **options)

    def describe(self) -> dict[str, Any]:
        """The fields that determine this entry's numbers (``target`` only when set)."""
        fields = {
            "label": self.label,
            "name": self.name,
            "options": self.options,
            "takes_delta": self.takes_delta,
        }
        if self.statistics:
            fields["statistics"] = list(self.statistics)
        return {**fields, "target": self.target} if self.target else fields


@dataclass(frozen=True)
class Unit:
    """One work unit: every ε of one mechanism estimating one statistic on one dataset
    replicate."""

    dataset: Dataset
    replicate: int
    statistic: Statistic
    mechanism: MechanismEntry


@dataclass(frozen=True)
class Settings:
    """What every work unit of a sweep shares (small: sent with each unit)."""

    seed: int
    trials: int
    epsilons: tuple[float, ...]
    delta: str | float
    keep_estimates: bool
    cells: int = 1
    """The sweep's number of cells (units × ε): the statistical checks of a release's claims
    share :data:`experiments.harness.metrics.CLAIM_ALPHA` over them (not part of the numbers:
    it follows from the rest of the plan)."""

    def delta_for(self, n: int) -> float:
        """δ given to δ > 0 mechanisms on a dataset of ``n`` points (1/n: Duff paper, §6)."""
        delta = 1.0 / n if self.delta == DELTA_INVERSE_N else float(self.delta)
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1); got {delta!r} for n = {n}")
        return delta


@dataclass(frozen=True)
class Plan:
    """A checked sweep: what to run, with which seeds, and its config hash."""

    settings: Settings
    datasets: tuple[Dataset, ...]
    statistics: tuple[Statistic, ...]
    mechanisms: tuple[MechanismEntry, ...]

    def units(self) -> list[Unit]:
        """All work units, dataset-major (the row order of ``summary.csv``)."""
        return [
            Unit(dataset, replicate, statistic, mechanism)
            for dataset in self.datasets
            for replicate in range(dataset.replicates)
            for statistic in self.statistics
            for mechanism in self.mechanisms
            if mechanism.runs(statistic)
        ]

    def numbers(self) -> dict[str, Any]:
        """Everything that determines the numbers, as canonical JSON-ready data."""
        s = self.settings
        return {
            "format": FORMAT,
            "seed": s.seed,
            "trials": s.trials,
            "epsilons": list(s.epsilons),
            "delta": s.delta,
            "keep_estimates": s.keep_estimates,
            "datasets": [{"id": d.id, **d.describe()} for d in self.datasets],
            "statistics": [{"id": s.id, **s.describe()} for s in self.statistics],
            "mechanisms": [m.describe() for m in self.mechanisms],
        }

    @property
    def config_hash(self) -> str:
        return config_hash(self.numbers())


# ------------------------------------------------------------------ config → plan


def build_plan(cfg: Mapping[str, Any] | DictConfig, conf_dir: ConfDirs = CONF_DIR) -> Plan:
    """Check ``cfg`` and resolve its dataset and mechanism names into a :class:`Plan`."""
    config = plain(cfg)
    check_keys(config)
    for module in check_sequence(config.get("plugins") or [], "plugins"):
        try:
            import_module(str(module))
        except ImportError as err:
            raise ConfigError(f"plugins: cannot import {module!r}: {err}") from None
    seed = check_integer(config.get("seed"), "seed", minimum=0)
    trials = check_integer(config.get("trials"), "trials", minimum=1)
    n = check_integer(config.get("n"), "n", minimum=1)
    replicates = check_integer(config.get("replicates"), "replicates", minimum=1)
    epsilons = check_epsilons(config.get("epsilons"))
    delta = check_delta(config.get("delta", DELTA_INVERSE_N))
    keep = config.get("keep_estimates", False)
    if not isinstance(keep, bool):
        raise ConfigError(f"keep_estimates must be true or false, got {keep!r}")

    datasets: list[Dataset] = []
    for ref in check_sequence(config.get("datasets"), "datasets", nonempty=True):
        entry = load_entry(conf_dir, "dataset", ref)
        datasets += build_datasets(entry, n=n, replicates=replicates)
    check_unique([d.id for d in datasets], "datasets")
    statistics: list[Statistic] = []
    for ref in check_sequence(config.get("statistics", ["median"]), "statistics", nonempty=True):
        statistics += build_statistics(load_entry(conf_dir, "statistic", ref))
    check_unique([s.id for s in statistics], "statistics")
    entries = [
        mechanism_entry(load_entry(conf_dir, "mechanism", ref))
        for ref in check_sequence(config.get("mechanisms"), "mechanisms", nonempty=True)
    ]
    check_unique([m.label for m in entries], "mechanisms (labels)")
    settings = Settings(seed, trials, epsilons, delta, keep)
    deltas: set[float | None] = {None}
    if any(m.takes_delta for m in entries):
        deltas = set()
        for dataset in datasets:
            try:
                deltas.add(settings.delta_for(dataset.size))
            except ValueError as err:
                raise ConfigError(f"delta: {err} (dataset {dataset.id})") from None
    if keep and any(statistic.interval for statistic in statistics):
        raise ConfigError(
            "keep_estimates: estimates.npz holds point estimates; a sweep of confidence "
            "intervals (statistic median_interval) cannot keep them"
        )
    if keep and any(statistic.vector for statistic in statistics):
        raise ConfigError(
            "keep_estimates: estimates.npz holds one estimate per trial; a sweep of m quantiles "
            "at once (statistic kind quantiles) cannot keep them, set keep_estimates=false"
        )
    for mechanism in entries:
        paired = [statistic for statistic in statistics if mechanism.runs(statistic)]
        if not paired:
            raise ConfigError(
                f"mechanism {mechanism.label!r} runs on statistics of kind "
                f"{', '.join(mechanism.statistics)}, and the sweep has none"
            )
        if any(statistic.interval for statistic in paired):
            _check_interval_targets(mechanism, datasets)
        _check_infinite_bounds(mechanism, paired, datasets)
        for statistic in paired:
            _check_supports(mechanism, statistic)
            _check_constructible(
                mechanism, statistic, epsilons, deltas if mechanism.takes_delta else {None}
            )
    plan = Plan(settings, tuple(datasets), tuple(statistics), tuple(entries))
    return replace(plan, settings=replace(settings, cells=len(plan.units()) * len(epsilons)))


def build_statistics(entry: Mapping[str, Any]) -> list[Statistic]:
    """The statistics of one ``conf/statistic`` entry (``name``, ``_target_``, ``options``)."""
    name = entry["name"]
    unknown = sorted(set(entry) - {"name", "_target_", "options"})
    if unknown:
        raise ConfigError(f"statistic {name!r}: unknown fields {', '.join(unknown)}")
    options = entry.get("options") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"statistic {name!r}: options must be a mapping, got {options!r}")
    try:
        cls: type[Statistic] = import_class(entry.get("_target_"), Statistic)
        statistics = cls.from_config(**options)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"statistic {name!r}: {err}") from None
    if not statistics or not all(isinstance(s, Statistic) for s in statistics):
        raise ConfigError(f"statistic {name!r}: {cls.__qualname__}.from_config gave none")
    return statistics


def _check_supports(entry: MechanismEntry, statistic: Statistic) -> None:
    """Refuse a pairing the mechanism's class does not declare, or options set twice."""
    supported = sorted(supported_statistics(entry.cls))
    if statistic.kind not in supported:
        raise ConfigError(
            f"mechanism {entry.label!r} cannot estimate statistic {statistic.id!r}: its class "
            f"{entry.cls.__qualname__} supports {', '.join(supported) or 'nothing'}"
        )
    twice = sorted(set(statistic.mechanism_options()) & set(entry.options))
    if twice:
        raise ConfigError(
            f"mechanism {entry.label!r}: options {', '.join(twice)} are set by the statistic "
            f"{statistic.id!r}; remove them from the mechanism entry"
        )


def _check_infinite_bounds(
    entry: MechanismEntry, statistics: Sequence[Statistic], datasets: Sequence[Dataset]
) -> None:
    """Refuse a mechanism that needs finite bounds on a dataset whose bounds are infinite
    (``bounds: [0, .inf]``): its every release would refuse them."""
    unbounded = [d.id for d in datasets if not all(map(math.isfinite, d.bounds))]
    if not unbounded:
        return
    for statistic in statistics:
        if not for_statistic(entry.cls, statistic.kind).accepts_infinite_bounds:
            raise ConfigError(
                f"mechanism {entry.label!r} needs finite bounds, and datasets "
                f"{', '.join(unbounded[:3])} have an infinite one; run it on bounded datasets "
                "(mechanisms without bounds: unbounded_quantile, range_finder_duff)"
            )


def _check_interval_targets(entry: MechanismEntry, datasets: Sequence[Dataset]) -> None:
    """Refuse an interval method whose coverage target is the population median on a dataset
    that has none (real data): its coverage could not be measured."""
    if getattr(entry.cls, "target", None) != POPULATION_MEDIAN:
        return
    unknown = [dataset.id for dataset in datasets if dataset.population_median() is None]
    if unknown:
        raise ConfigError(
            f"mechanism {entry.label!r}: its intervals are for the population median, which "
            f"datasets {', '.join(unknown[:3])} do not have (not draws from a known law)"
        )


def _check_constructible(
    entry: MechanismEntry,
    statistic: Statistic,
    epsilons: tuple[float, ...],
    deltas: set[float | None],
) -> None:
    """Fail early when ``entry`` cannot be made at any (ε, δ) of the sweep (e.g. a typo in
    its options).  Failing at only some ε is a result, recorded in those rows' status."""
    error: Exception | None = None
    for epsilon in epsilons:
        for delta in sorted(deltas, key=lambda d: -1.0 if d is None else d):
            try:
                entry.configure(epsilon, delta, statistic)
                return
            except (TypeError, ValueError) as err:
                error = err
    estimating = "" if statistic == MEDIAN else f" (estimating {statistic.id})"
    raise ConfigError(
        f"mechanism {entry.label!r}: {entry.name!r} with options {entry.options} cannot be "
        f"made at any epsilon of the sweep{estimating}: {type(error).__name__}: {error}"
    )


def load_target(target: str) -> type[mechanisms.Mechanism]:
    """Import the mechanism class ``package.module.ClassName`` and make sure it is registered.

    Raises ``ValueError`` naming ``target`` if it cannot be imported, is not a
    :class:`mechanisms.Mechanism` subclass, or its ``name`` is taken by another class.
    """
    if not isinstance(target, str) or "." not in target:
        raise ValueError(f"_target_ must be 'package.module.ClassName', got {target!r}")
    return mechanisms.resolve(target)  # registers it; ValueError on a name clash


def mechanism_entry(entry: Mapping[str, Any]) -> MechanismEntry:
    """Check a mechanism entry against the registry (name, δ use) and build it."""
    label = entry["label"]
    fields = {"label", "name", "_target_", "options", "takes_delta", "statistics"}
    unknown = sorted(set(entry) - fields)
    if unknown:
        raise ConfigError(f"mechanism {label!r}: unknown fields {', '.join(unknown)}")
    target = entry.get("_target_", "")
    if not isinstance(target, str):
        raise ConfigError(f"mechanism {label!r}: _target_ must be a string, got {target!r}")
    name = entry.get("name")
    if target:
        try:
            target_name = load_target(target).name
        except ValueError as err:
            raise ConfigError(f"mechanism {label!r}: {err}") from None
        if name is not None and name != target_name:
            raise ConfigError(
                f"mechanism {label!r}: name {name!r} differs from the name {target_name!r} "
                f"of its _target_ {target!r}"
            )
        name = target_name
    if not isinstance(name, str):
        raise ConfigError(
            f"mechanism {label!r}: name (the registry name) or _target_ (a class) is required"
        )
    options = entry.get("options") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"mechanism {label!r}: options must be a mapping, got {options!r}")
    try:
        cls = mechanisms.get(name)
    except (ValueError, ImportError) as err:  # ImportError: a peer's extra is missing
        raise ConfigError(f"mechanism {label!r}: {err}") from None
    takes_delta = entry.get("takes_delta", cls.requires_delta)  # the class's, unless stated
    if takes_delta is not bool(cls.requires_delta):
        raise ConfigError(
            f"mechanism {label!r}: takes_delta is {takes_delta!r} but {name!r} has "
            f"requires_delta = {cls.requires_delta}"
        )
    kinds = entry.get("statistics") or []
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise ConfigError(f"mechanism {label!r}: statistics must be a list of kinds, got {kinds!r}")
    return MechanismEntry(label, cls, dict(options), target, tuple(kinds))


# ----------------------------------------------------------------------- checks
