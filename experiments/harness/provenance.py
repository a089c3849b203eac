"""Provenance of a run: the versions of the packages behind the numbers, and the git state."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("numpy", "scipy", "hydra-core", "omegaconf", "joblib", "pandas", "tqdm", "duff-bench")
"""Packages whose version ``run.json`` always records (``null`` when not installed)."""

PEER_PACKAGES = ("opendp", "diffprivlib", "scikit-learn")
"""Peer libraries (extra ``peers``) whose version ``run.json`` records when installed."""


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``scikit_learn`` is ``scikit-learn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def package_versions(modules: Iterable[str] = ()) -> dict[str, str | None]:
    """Installed versions of the packages that determine or produce the numbers.

    :data:`PACKAGES` always (``None`` when absent); the :data:`PEER_PACKAGES` and
    the distributions that provide ``modules`` (the modules the plan's mechanisms
    come from: a plug-in installed as a package) only when installed.  A module
    that no installed distribution provides (a file on ``sys.path``) adds nothing.
    """
    versions = {name: _version(name) for name in PACKAGES}
    optional = list(PEER_PACKAGES)
    tops = sorted({module.partition(".")[0] for module in modules if module})
    if tops:
        providers = metadata.packages_distributions()
        optional += [name for top in tops for name in providers.get(top, ())]
    seen = {_canonical(name) for name in versions}
    for name in optional:
        if _canonical(name) in seen:
            continue
        seen.add(_canonical(name))
        version = _version(name)
        if version is not None:
            versions[name] = version
    return versions


def git_state(root: Path) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the repository at ``root``."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "--verify", "--quiet", "HEAD")
    status = git("status", "--porcelain")
    return {
        "commit": commit.strip() if commit else None,
        "dirty": None if status is None else bool(status.strip()),
    }
