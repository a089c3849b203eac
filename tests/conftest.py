"""Shared fixtures of the tests; the harness's test mechanisms are in :mod:`harness_mechanisms`.

Test files import helpers by module name (``harness_mechanisms``, ``hostile_plugins``,
``results_helpers``, ``recorded_values``): ``tests/`` is on the path (``pythonpath`` in
pyproject.toml).  The names below are re-exported for ``from conftest import ...``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from harness_mechanisms import (
    CONF_DIR,
    GAUSSIAN,
    LAPLACE,
    LAPLACE_WIDE,
    PROJECT_ROOT,
    TESTS_DIR,
    ClippedNoiseRelease,
    HarnessGaussian,
    HarnessLaplace,
    plugin_env,
    start_cli,
    tiny_overrides,
)
from omegaconf import DictConfig, OmegaConf

__all__ = [
    "CONF_DIR",
    "GAUSSIAN",
    "LAPLACE",
    "LAPLACE_WIDE",
    "PROJECT_ROOT",
    "TESTS_DIR",
    "ClippedNoiseRelease",
    "HarnessGaussian",
    "HarnessLaplace",
    "compose_config",
    "plugin_env",
    "start_cli",
    "tiny_overrides",
]


@pytest.fixture
def compose_config() -> Callable[..., DictConfig]:
    """Compose the project's config with overrides; mechanisms given as Python mappings."""

    from hydra import compose, initialize_config_dir

    def make(overrides: list[str], mechanisms: list[Any] | None = None) -> DictConfig:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=overrides)
        if mechanisms is not None:
            cfg.mechanisms = OmegaConf.create(mechanisms)
        return cfg

    return make
