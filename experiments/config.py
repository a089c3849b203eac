"""OmegaConf resolvers of the project's Hydra configs.

``${duff_run_id:}`` is the name of a default results directory: the local time
to the second and the process id (``2026-11-23_09-41-07-12345``).  Two runs
started in the same second are different processes, so their directories
differ; the value is cached, so every reference in one config resolves to the
same name (Hydra's run dir and ``results_dir`` are one directory).
"""

from __future__ import annotations

import os
from datetime import datetime

from omegaconf import OmegaConf

RUN_ID_RESOLVER = "duff_run_id"


def run_id() -> str:
    """``<local time to the second>-<process id>``."""
    return f"{datetime.now():%Y-%m-%d_%H-%M-%S}-{os.getpid()}"


def register_resolvers() -> None:
    """Register the project's resolvers (idempotent)."""
    if not OmegaConf.has_resolver(RUN_ID_RESOLVER):
        OmegaConf.register_new_resolver(RUN_ID_RESOLVER, run_id, use_cache=True)
