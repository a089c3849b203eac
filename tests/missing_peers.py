"""What the peers say when their libraries are missing, seen from a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from harness_mechanisms import PROJECT_ROOT


def import_errors_without(libraries: Sequence[str], body: str) -> list[str]:
    """Run ``body`` (which may use ``mechanisms`` and ``report(call)``) in a fresh interpreter
    where ``libraries`` cannot be imported; return the message of each ImportError that a
    ``report(call)`` caught, in order."""
    blocked = ", ".join(f"{library}=None" for library in libraries)
    code = (
        "import sys\n"
        f"sys.modules.update({blocked})\n"
        "import mechanisms\n"
        "def report(call):\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as err:\n"
        "        print(err)\n"
        f"{body}"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def names_the_extra(message: str, package: str) -> bool:
    """Whether an ImportError's ``message`` names ``package`` and the extra 'peers'."""
    return f"needs the optional package {package!r}, part of the extra 'peers'" in message
