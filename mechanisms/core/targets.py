"""Classes named in configs by ``_target_: package.module.ClassName`` (Hydra's spelling)."""

from __future__ import annotations

import inspect
from importlib import import_module
from typing import Any


def import_class(target: object, base: type[Any]) -> type[Any]:
    """Import the class ``package.module.ClassName`` and check it is a concrete ``base``.

    Raises ``ValueError`` naming ``target`` if it is not such a string, cannot be
    imported, is not a subclass of ``base`` or leaves abstract methods unimplemented.
    """
    if not isinstance(target, str) or "." not in target:
        raise ValueError(f"_target_ must be 'package.module.ClassName', got {target!r}")
    module_name, _, class_name = target.rpartition(".")
    try:
        cls = getattr(import_module(module_name), class_name)
    except ImportError as err:
        raise ValueError(f"_target_ {target!r}: cannot import {module_name!r}: {err}") from None
    except AttributeError:
        raise ValueError(f"_target_ {target!r}: {module_name!r} has no {class_name!r}") from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ValueError(f"_target_ {target!r} is not a subclass of {base.__qualname__}")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise ValueError(f"_target_ {target!r} does not implement {missing}")
    return cls
