"""Discovery of everything that releases private outputs, so that a new class is audited without a list to edit:

* priced mechanisms and aggregators: every dataclass defined in a module of ``pate.aggregators`` or
  ``pate.mechanisms`` that carries a cost (``dp_event`` or ``dp_statement``) and releases something
  (``__call__``, ``release`` or ``passes``);
* methods: every concrete subclass of ``Method`` in ``pate.pipeline.methods``;
* the aggregator configs: the ``_target_`` of every ``conf/aggregator/*.yaml``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import yaml

import pate.aggregators
import pate.mechanisms
import pate.pipeline.methods

__all__ = ["aggregator_classes", "configured_aggregators", "method_classes", "priced_classes"]

CONF = Path(__file__).resolve().parents[2] / "conf" / "aggregator"


def _classes(package) -> list[type]:
    """Classes defined (not imported) in the modules of ``package`` and its subpackages."""
    found = {}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[name] for name in sorted(found)]


def priced_classes() -> list[type]:
    """Every priced, releasing dataclass of ``pate.aggregators`` and ``pate.mechanisms`` (module docstring)."""
    return [
        cls
        for package in (pate.aggregators, pate.mechanisms)
        for cls in _classes(package)
        if dataclasses.is_dataclass(cls)
        and (hasattr(cls, "dp_event") or hasattr(cls, "dp_statement"))
        and any(_defines(cls, name) for name in ("__call__", "release", "passes"))
    ]


def _defines(cls: type, name: str) -> bool:
    """Whether ``cls`` or a base other than ``object`` defines ``name`` (every class is callable: that is its
    constructor, not a release)."""
    return any(name in vars(base) for base in cls.__mro__ if base is not object)


def aggregator_classes() -> list[type]:
    """The multi-label aggregators: priced classes of ``pate.aggregators`` taking vote counts or votes."""
    return [cls for cls in priced_classes() if cls.__module__.startswith("pate.aggregators.")]


def method_classes() -> list[type]:
    """Every concrete method of ``pate.pipeline.methods``: a subclass of ``Method`` (the protocol's base) that
    implements all of it (the base itself, abstract, left out)."""
    return [
        cls
        for cls in _classes(pate.pipeline.methods)
        if issubclass(cls, pate.pipeline.methods.Method) and not inspect.isabstract(cls)
    ]


def configured_aggregators() -> set[str]:
    """The ``_target_`` of every aggregator config."""
    return {yaml.safe_load(path.read_text())["_target_"] for path in sorted(CONF.glob("*.yaml"))}
