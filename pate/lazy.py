"""Names a package imports on first use (PEP 562), so that a heavy import (torch, Lightning, torchvision) stays out
of the code paths that do not need it: the command line's ``--help`` and config checks, a run of ridge heads, and
reading a kept head."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package``: each name of ``homes`` (name -> the module that defines it) is
    imported from its module when first asked for; any other name is an ``AttributeError`` naming the package."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    return __getattr__


__all__ = ["lazy_names"]
