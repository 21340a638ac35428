"""Frozen records of what a ledger composed, from which its epsilon can be recomputed.

In the style of dp_accounting's ``DpEvent`` records (``GaussianDpEvent(noise_multiplier)``,
``SelfComposedDpEvent(event, count)``): a :class:`CostEvent` names the mechanism (its class, by import path),
every constructor argument (the noise parameters, the relation, delta_t, ...) and how many times it ran. It
holds no cost: :meth:`CostEvent.rebuild` constructs the mechanism again with the code of the day, so a ledger
replayed from its events (``Ledger.replay``) prices the release with the current accountant, never with a
number written down when it was built.

Only dataclass mechanisms (every aggregator and mechanism in this package) can be rebuilt; any other object
with ``.rdp`` and ``.delta_per_query`` still composes into a ledger, and its event says it cannot be replayed.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any

from pate.privacy import checks
from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = ["CostEvent"]


def _plain(value: Any) -> Any:
    """A constructor argument as frozen, JSON-ready data (an enum as its value, a sequence as a tuple)."""
    if isinstance(value, NeighboringRelation):
        return value.value
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"constructor argument {value!r} of type {type(value).__name__} cannot be recorded")


@dataclass(frozen=True)
class CostEvent:
    """``count`` runs of one mechanism, as ``Ledger.compose(mechanism, count)`` saw it.

    ``mechanism`` is ``"module:QualName"`` of the mechanism's class, or None when the object is not a dataclass
    (then the event records the name and count but cannot be replayed); ``parameters`` its constructor
    arguments as sorted (name, value) pairs; ``neighbors`` the relation it declared, if any.
    """

    name: str
    count: int
    neighbors: NeighboringRelation | None
    mechanism: str | None = None
    parameters: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "count", checks.non_negative_int("count", self.count))
        if self.neighbors is not None:
            object.__setattr__(self, "neighbors", check_relation(self.neighbors))

    @classmethod
    def of(cls, mechanism, count: int) -> CostEvent:
        """The event of composing ``mechanism`` ``count`` times."""
        name = str(getattr(mechanism, "name", type(mechanism).__name__))
        relation = getattr(mechanism, "neighbors", None)
        if not (dataclasses.is_dataclass(mechanism) and not isinstance(mechanism, type)):
            return cls(name=name, count=count, neighbors=relation)
        kind = type(mechanism)
        parameters = tuple(sorted((f.name, _plain(getattr(mechanism, f.name)))
                                  for f in dataclasses.fields(mechanism) if f.init))
        return cls(name=name, count=count, neighbors=relation, mechanism=f"{kind.__module__}:{kind.__qualname__}",
                   parameters=parameters)

    @property
    def replayable(self) -> bool:
        return self.mechanism is not None

    def rebuild(self):
        """The mechanism, constructed again from its recorded class and arguments with today's code."""
        if self.mechanism is None:
            raise ValueError(f"the cost event of {self.name!r} (count {self.count}) cannot be replayed: its mechanism "
                             f"was not a dataclass, so its constructor arguments were not recorded")
        module, _, qualname = self.mechanism.partition(":")
        try:
            kind: Any = importlib.import_module(module)
            for part in qualname.split("."):
                kind = getattr(kind, part)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"cannot replay the cost event of {self.name!r}: mechanism {self.mechanism!r} no longer "
                             f"exists ({err})") from err
        return kind(**dict(self.parameters))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count, "neighbors": _plain(self.neighbors),
                "mechanism": self.mechanism, "parameters": {k: v for k, v in self.parameters}}

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> CostEvent:
        if not isinstance(record, dict) or not {"name", "count", "neighbors"} <= set(record):
            raise ValueError(f"a cost event must be a dict with name, count and neighbors, got {record!r:.200}")
        parameters = record.get("parameters") or {}
        if not isinstance(parameters, dict):
            raise ValueError(f"cost event parameters must be a dict, got {parameters!r:.200}")
        return cls(name=str(record["name"]), count=record["count"], neighbors=record["neighbors"],
                   mechanism=record.get("mechanism"),
                   parameters=tuple(sorted((str(k), _plain(v)) for k, v in parameters.items())))
