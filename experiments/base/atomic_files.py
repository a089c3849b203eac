"""Files written atomically: a temporary file in the same directory, fsync, then ``os.replace``,
so a reader never sees half a file and an interrupted write leaves only a ``.*.tmp`` behind.

:class:`BackgroundSync` does the same for a process that writes many small files between
computations (a worker's unit files), with the fsync and the rename on a background
thread: the wait for the disk (about a millisecond per file) overlaps the next computation."""

from __future__ import annotations

import io
import json
import os
import secrets
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

Writer = Callable[[Path, bytes], None]
"""Writes ``content`` to ``path`` atomically: :func:`write_bytes_atomic` or
:meth:`BackgroundSync.write_bytes`."""


def _temporary(path: Path, content: bytes) -> tuple[Path, IO[bytes]]:
    """A new temporary file beside ``path`` holding ``content`` (flushed, still open)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    handle = open(tmp, "xb")  # noqa: SIM115 (kept open for the fsync); honours the umask
    try:
        handle.write(content)
        handle.flush()
    except BaseException:
        handle.close()
        tmp.unlink(missing_ok=True)
        raise
    return tmp, handle


def _sync_and_replace(tmp: Path, handle: IO[bytes], path: Path) -> None:
    """fsync the open temporary file ``tmp``, close it and move it to ``path``."""
    try:
        with handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` via a temporary file, fsync and ``os.replace``."""
    _sync_and_replace(*_temporary(path, content), path)


class BackgroundSync:
    """Atomic writes (as :func:`write_bytes_atomic`) whose fsync and rename run on one
    background thread, in the order written: a file appears complete, and after every
    file written before it.  Leaving the context waits for every write and raises the
    first error of any."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsync")
        self._writes: list[Future[None]] = []

    def write_bytes(self, path: Path, content: bytes) -> None:
        """Write ``content`` to a temporary file now; fsync it and move it to ``path`` soon."""
        tmp, handle = _temporary(path, content)
        self._writes.append(self._thread.submit(_sync_and_replace, tmp, handle, path))

    def __enter__(self) -> BackgroundSync:
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.shutdown(wait=True)
        for write in self._writes:
            write.result()  # the first error, if any


def write_text_atomic(path: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, value: Any) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically."""
    write_text_atomic(path, json.dumps(value, indent=2, sort_keys=False) + "\n")


def write_npz_atomic(
    path: Path, arrays: Mapping[str, np.ndarray], write: Writer = write_bytes_atomic
) -> None:
    """Write ``arrays`` as an (uncompressed) ``.npz`` to ``path`` atomically (with ``write``)."""
    buffer = io.BytesIO()
    np.savez(buffer, **cast(dict[str, Any], arrays))
    write(path, buffer.getvalue())
