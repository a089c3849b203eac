"""A sweep's config: its top-level keys, the checks of their values, and resolvers.

Every check raises :class:`ConfigError` with a one-line message naming the key.

``${duff_run_id:}`` is the name of a default results directory: the local time
to the second and the process id (``2026-11-23_09-41-07-12345``).  Two runs
started in the same second are different processes, so their directories
differ; the value is cached, so every reference in one config resolves to the
same name (Hydra's run dir and ``results_dir`` are one directory).
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from mechanisms.core import validation

log = logging.getLogger(__name__)
RUN_ID_RESOLVER = "duff_run_id"
DELTA_INVERSE_N = "1/n"
BACKENDS = ("loky", "dask")


def run_id() -> str:
    """``<local time to the second>-<process id>``."""
    return f"{datetime.now():%Y-%m-%d_%H-%M-%S}-{os.getpid()}"


def register_resolvers() -> None:
    """Register the project's resolvers (idempotent)."""
    if not OmegaConf.has_resolver(RUN_ID_RESOLVER):
        OmegaConf.register_new_resolver(RUN_ID_RESOLVER, run_id, use_cache=True)


CONFIG_KEYS = (
    "name",
    "seed",
    "n",
    "replicates",
    "trials",
    "epsilons",
    "delta",
    "datasets",
    "statistics",
    "mechanisms",
    "keep_estimates",
    "plugins",
    "n_jobs",
    "timeout",
    "retry_failed",
    "backend",
    "scheduler_address",
    "results_dir",
)
"""The top-level keys of a sweep's config (``conf/config.yaml``); any other is refused."""
_LIST_KEYS = {
    "mechanism": "mechanisms",
    "dataset": "datasets",
    "statistic": "statistics",
    "epsilon": "epsilons",
}


class ConfigError(ValueError):
    """A config that cannot be run (the message says which key and why)."""


def check_keys(config: Mapping[str, Any]) -> None:
    """Refuse top-level keys the harness does not read, in one line that says what to write.

    Hydra lets ``+mechanism=laplace_global`` or ``+epsilon=[5.0]`` add keys; a
    sweep that the user believes includes them must not run without them.
    """
    unknown = sorted(set(config) - {*CONFIG_KEYS, "hydra"})
    if not unknown:
        return
    key = unknown[0]
    if key in _LIST_KEYS:
        plural = _LIST_KEYS[key]
        hint = f"to choose {plural}, write {plural}=[...] (e.g. {plural}=[a,b])"
    else:
        close = difflib.get_close_matches(key, CONFIG_KEYS, n=1)
        hint = f"did you mean {close[0]}?" if close else f"valid keys: {', '.join(CONFIG_KEYS)}"
    raise ConfigError(
        f"unknown config key{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(map(repr, unknown))}: {hint}"
    )


def unknown_override(arguments: Sequence[str]) -> str | None:
    """The one-line refusal of a command-line override of a top-level key the harness does not
    know (``replicate=3``, ``epsilon=0.5``, ``mechanism=duff``), before Hydra answers it
    with a traceback-like message of its own; None when every override names a known key.

    Flags (``-m``, ``--config-dir DIR``) and Hydra's own keys (``hydra.…``, ``hydra/…``) are
    left to Hydra; ``+key=`` and ``~key`` reach :func:`check_keys`
    after composition, which gives the same message.
    """
    skip_next = False
    for argument in arguments:
        if skip_next or argument.startswith("-"):
            skip_next = argument in {
                "--config-dir",
                "-cd",
                "--config-path",
                "-cp",
                "--config-name",
                "-cn",
            }
            continue
        key = argument.partition("=")[0]
        if "=" not in argument or key.startswith(("+", "~", "hydra")) or key == "experiment":
            continue
        try:
            check_keys({key.partition(".")[0]: None})
        except ConfigError as err:
            return str(err)
    return None


def plain(value: object) -> Any:
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value


def check_sequence(value: object, key: str, *, nonempty: bool = False) -> list[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{key} must be a list, got {value!r}")
    if nonempty and not value:
        raise ConfigError(f"{key} must not be empty")
    return list(value)


def check_integer(value: object, key: str, *, minimum: int) -> int:
    """``value`` as an integer of at least ``minimum``
    (:func:`mechanisms.core.validation.check_integer`)."""
    try:
        return validation.check_integer(value, key, minimum=minimum)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def check_real(value: object, key: str, **limits: Any) -> float:
    """``value`` as a finite float within ``limits``
    (:func:`mechanisms.core.validation.check_real`)."""
    try:
        return validation.check_real(value, key, **limits)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def check_epsilons(value: object) -> tuple[float, ...]:
    items = check_sequence(value, "epsilons", nonempty=True)
    result = [check_real(item, "epsilons", minimum=0.0) for item in items]
    check_unique(result, "epsilons")
    return tuple(result)


def check_delta(value: object) -> str | float:
    if value == DELTA_INVERSE_N:
        return DELTA_INVERSE_N
    try:
        return validation.check_open_unit(value, "delta")
    except ValueError:
        raise ConfigError(f"delta must be '1/n' or a number in (0, 1), got {value!r}") from None


def check_unique(values: list[Any], key: str) -> None:
    seen, repeated = set(), []
    for value in values:
        if value in seen:
            repeated.append(value)
        seen.add(value)
    if repeated:
        raise ConfigError(f"{key}: duplicate entries {', '.join(map(str, repeated))}")


def check_backend(config: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(backend, scheduler_address)`` from the config (keys of the same names)."""
    backend, address = config.get("backend") or "loky", config.get("scheduler_address")
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "dask" and not (isinstance(address, str) and address):
        raise ConfigError(
            f"backend=dask needs scheduler_address (e.g. tcp://host:8786), got {address!r}"
        )
    return backend, address


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def worker_count(n_jobs: object) -> int:
    """Workers for joblib's ``n_jobs`` (−1: all cores, −2: all but one, …), capped at the cores."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:  # not a range
        raise ConfigError(f"n_jobs must be a non-zero integer (joblib's meaning), got {n_jobs!r}")
    cores = available_cores()
    wanted = n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)
    if wanted > cores:
        log.warning("n_jobs=%d but only %d cores are available: using %d", n_jobs, cores, cores)
    return min(wanted, cores)


def check_timeout(config: Mapping[str, Any]) -> float | None:
    value = config.get("timeout")
    if value is None:
        return None
    return check_real(value, "timeout (seconds, or null for none)", minimum=0.0, maximum=1e9)


def check_retry_failed(config: Mapping[str, Any]) -> bool:
    value = config.get("retry_failed", True)
    if not isinstance(value, bool):
        raise ConfigError(f"retry_failed must be true or false, got {value!r}")
    return value
