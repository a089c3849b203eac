"""What every benchmark script records about the machine, and how it writes its JSON result."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


def host() -> dict[str, Any]:
    """The platform and core count of this machine (timings mean nothing without them)."""
    return {"platform": platform.platform(), "cpu_count": os.cpu_count()}


def write_report(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` as indented JSON to ``path`` (parents created) and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")
