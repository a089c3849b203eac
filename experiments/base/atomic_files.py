"""Files written atomically: a temporary file in the same directory, fsync, then ``os.replace``,
so a reader never sees half a file and an interrupted write leaves only a ``.*.tmp`` behind."""

from __future__ import annotations

import io
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    pass


def write_bytes_atomic(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` via a temporary file and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as handle:  # honours the umask, unlike mkstemp
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, value: Any) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically."""
    write_text_atomic(path, json.dumps(value, indent=2, sort_keys=False) + "\n")


def write_npz_atomic(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` as an (uncompressed) ``.npz`` to ``path`` atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, **cast(dict[str, Any], arrays))
    write_bytes_atomic(path, buffer.getvalue())
