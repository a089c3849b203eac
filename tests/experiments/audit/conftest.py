"""Fixtures of the audit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mechanisms.core import registration

HERE = Path(__file__).resolve().parent


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted-bug plug-ins of this folder (no_cdf_plugins, vector_plugins) importable,
    and kept out of the real registry."""
    monkeypatch.syspath_prepend(str(HERE))
    registration.load()
    monkeypatch.setattr(registration, "_REGISTRY", dict(registration._REGISTRY))
