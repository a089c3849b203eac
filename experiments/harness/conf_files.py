"""Config directories: where the names of datasets, statistics and mechanisms are found.

A config names its datasets and mechanisms (``datasets=[normal,uniform]``,
``mechanisms=[duff,smooth_laplace_public]``).  Each name is the stem of a YAML file of
the group directory ``dataset`` or ``mechanism`` of a config directory (the
package's ``conf/``, after any the user adds with ``--config-dir``); an entry
may also be written inline as a mapping with the same fields.  An unknown name
is an error listing the valid ones.
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
    valid = ", ".join(group_names(conf_dir, group)) or "(none)"
    places = ", ".join(str(d / group) for d in _dirs(conf_dir))
    raise ConfigError(
        f"{group}s: unknown {group} {ref!r}; valid names: {valid} (the YAML files of {places})"
    )


def load_entry(conf_dir: ConfDirs, group: str, ref: object) -> dict[str, Any]:
    """The entry ``ref`` of ``group``: a YAML stem of ``<conf_dir>/group`` or an inline mapping.

    Entries loaded from a file get ``name`` (datasets, statistics) or ``label`` (mechanisms)
    from the file stem when absent, and must agree with it when present.
    """
    key = "label" if group == "mechanism" else "name"
    if isinstance(ref, Mapping):
        entry = dict(ref)
        if not isinstance(entry.get(key), str):
            raise ConfigError(f"{group}s: an inline {group} entry needs a {key!r}; got {entry!r}")
    elif isinstance(ref, str):
        path = _entry_file(conf_dir, group, ref)
        entry = plain(OmegaConf.load(path))
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: expected a mapping, got {type(entry).__name__}")
        if entry.setdefault(key, ref) != ref:
            raise ConfigError(f"{path}: {key} {entry[key]!r} must equal the file name {ref!r}")
    else:
        raise ConfigError(f"{group}s: entries must be names or mappings, got {ref!r}")
    if not _NAME.match(entry[key]):
        raise ConfigError(
            f"{group}s: {key} {entry[key]!r} must be letters, digits and _ . + - only"
        )
    return entry
