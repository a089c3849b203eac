"""Config directories: where the names of datasets, statistics and mechanisms are found.

A config names its datasets and mechanisms (``datasets=[normal,uniform]``,
``mechanisms=[duff,smooth_laplace_public]``).  Each name is the stem of a YAML file of
the group directory ``dataset`` or ``mechanism`` of a config directory (the
package's ``conf/``, after any the user adds with ``--config-dir``); an entry
may also be written inline as a mapping with the same fields.  An unknown name
is an error listing the valid ones.

An entry (a file or an inline mapping) may be another entry of its group with
some keys changed: ``extends: NAME`` takes the entry ``NAME`` and merges the
other keys over it (mappings such as ``options`` key by key, anything else
replaced), e.g. ``{label: duff, extends: duff, statistics: [median, mean]}`` or
``vertebral_rounded.yaml``.  The name or label is never inherited: a file's is
its stem, an inline entry states its own.  A mechanism's label names its
numbers, so an entry with the label of the one it extends may not change what
the mechanism is (``name``, ``_target_``, ``options``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from experiments.harness.config import ConfigError, plain


def _conf_dir() -> Path:
    installed = Path(__file__).resolve().parents[1] / "conf"  # a wheel ships conf/ here
    return installed if installed.is_dir() else Path(__file__).resolve().parents[2] / "conf"


CONF_DIR = _conf_dir()
"""The project's Hydra configs: ``conf/`` of the repository, ``experiments/conf`` installed."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")

ConfDirs = Path | Sequence[Path]
"""One config directory, or several searched in order (a user's before the package's)."""


def _dirs(conf_dir: ConfDirs) -> list[Path]:
    return [conf_dir] if isinstance(conf_dir, Path) else list(conf_dir)


def group_names(conf_dir: ConfDirs, group: str) -> list[str]:
    """Names (YAML stems) available in config group ``group``."""
    return sorted({p.stem for d in _dirs(conf_dir) for p in (d / group).glob("*.yaml")})


def _entry_file(conf_dir: ConfDirs, group: str, ref: str) -> Path:
    """The first ``<dir>/<group>/<ref>.yaml`` of the config directories."""
    for directory in _dirs(conf_dir):
        if (directory / group / f"{ref}.yaml").is_file():
            return directory / group / f"{ref}.yaml"
    entries = _entries_of_class(conf_dir, ref) if group == "mechanism" else []
    if entries:
        raise ConfigError(
            f"mechanisms: {ref!r} is a mechanism class without an entry of that name; its "
            f"entries: {', '.join(entries)} (or {{label: {ref}, name: {ref}}} for the class's "
            "defaults)"
        )
    valid = ", ".join(group_names(conf_dir, group)) or "(none)"
    places = ", ".join(str(d / group) for d in _dirs(conf_dir))
    raise ConfigError(
        f"{group}s: unknown {group} {ref!r}; valid names: {valid} (the YAML files of {places})"
    )


def _entries_of_class(conf_dir: ConfDirs, name: str) -> list[str]:
    """The mechanism entries (YAML stems) whose ``name`` is the registered class ``name``."""
    found = []
    for stem in group_names(conf_dir, "mechanism"):
        try:
            entry = load_entry(conf_dir, "mechanism", stem)
        except ConfigError:
            continue
        if entry.get("name") == name:
            found.append(stem)
    return found


def load_entry(
    conf_dir: ConfDirs, group: str, ref: object, _extending: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The entry ``ref`` of ``group``: a YAML stem of ``<conf_dir>/group`` or an inline mapping.

    Entries loaded from a file get ``name`` (datasets, statistics) or ``label`` (mechanisms)
    from the file stem when absent, and must agree with it when present.  ``extends``: see
    the module docstring.
    """
    key = "label" if group == "mechanism" else "name"
    if isinstance(ref, Mapping):
        entry = dict(ref)
        if not isinstance(entry.get(key), str):
            raise ConfigError(f"{group}s: an inline {group} entry needs a {key!r}; got {entry!r}")
        entry = _extended(conf_dir, group, entry, key, _extending)
    elif isinstance(ref, str):
        path = _entry_file(conf_dir, group, ref)
        entry = plain(OmegaConf.load(path))
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: expected a mapping, got {type(entry).__name__}")
        entry = _extended(conf_dir, group, entry, key, (*_extending, ref))
        if entry.setdefault(key, ref) != ref:
            raise ConfigError(f"{path}: {key} {entry[key]!r} must equal the file name {ref!r}")
    else:
        raise ConfigError(f"{group}s: entries must be names or mappings, got {ref!r}")
    if not _NAME.match(entry[key]):
        raise ConfigError(
            f"{group}s: {key} {entry[key]!r} must be letters, digits and _ . + - only"
        )
    return entry


def _extended(
    conf_dir: ConfDirs, group: str, entry: dict[str, Any], key: str, extending: tuple[str, ...]
) -> dict[str, Any]:
    """``entry`` merged over the entry its ``extends`` names, whose name or label it does
    not inherit (``entry`` itself without ``extends``)."""
    if "extends" not in entry:
        return entry
    base_ref = entry.pop("extends")
    if not isinstance(base_ref, str):
        raise ConfigError(f"{group}s: extends must name a {group} file, got {base_ref!r}")
    if base_ref in extending:
        chain = " -> ".join([*extending, base_ref])
        raise ConfigError(f"{group}s: entries extend each other in a cycle: {chain}")
    base = load_entry(conf_dir, group, base_ref, extending)
    base_key = base.pop(key)
    if group == "mechanism" and entry.get(key) == base_key:
        changed = sorted(k for k in ("name", "_target_", "options") if k in entry)
        if any(_merged(base, {k: entry[k]}) != base for k in changed):
            raise ConfigError(
                f"mechanisms: {base_key!r} extending {base_ref!r} changes "
                f"{', '.join(changed)}: give it a label of its own (the label names its numbers)"
            )
    return _merged(base, entry)


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged over ``base``: mappings key by key, any other value replaced."""
    merged = dict(base)
    for name, value in over.items():
        below = merged.get(name)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[name] = _merged(below, value)
        else:
            merged[name] = value
    return merged
