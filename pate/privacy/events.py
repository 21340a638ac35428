"""Cost events: frozen records of the mathematics of a release, priced by ``pate.privacy.accountant``.

In the style of dp_accounting's ``dp_event.py``: an event says what was released in terms of the
mathematics alone (a Gaussian with its L2 sensitivity and sigma, an exponential mechanism with its
bounded-range epsilon, a propose-test-release step with its delta, a Poisson-subsampled Gaussian over
many steps, a data-dependent RDP curve, ...), never which class of this project produced it. Saved
ledgers therefore stay readable when code moves, and every epsilon is recomputed from the events by the
accountant of the day (a fix to a curve changes a cached run's epsilon).

Sensitivities inside an event are numbers: the mechanism derived them from its neighbouring relation
(``pate.privacy.sensitivity``) when it released, and the ledger record beside the event
(:class:`CostEvent`) names that relation.

Every event is a frozen dataclass registered under a short type name; ``to_dict`` / ``event_from_dict``
round-trip it through JSON (``{"type": name, field: value, ...}``, nested events as nested dicts).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from pate.privacy import checks
from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = [
    "ApproximateEvent",
    "BoundedRangeEvent",
    "ComposedEvent",
    "CostEvent",
    "DpEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "PoissonSampledGaussianEvent",
    "PureDpEvent",
    "RdpAtOrderEvent",
    "RdpCurveEvent",
    "ReportNoisyMaxEvent",
    "SelfComposedEvent",
    "TightestOfEvent",
    "ZcdpEvent",
    "event_from_dict",
]

_TYPES: dict[str, type["DpEvent"]] = {}


def _register(type_name: str):
    """Class decorator: a frozen dataclass event, known to ``event_from_dict`` as ``type_name``."""

    def wrap(cls):
        cls = dataclass(frozen=True)(cls)
        cls.type_name = type_name
        _TYPES[type_name] = cls
        return cls

    return wrap


class DpEvent:
    """Base of the event records. ``children`` are the events it is made of (none for a basic mechanism)."""

    type_name: ClassVar[str]

    @property
    def children(self) -> tuple["DpEvent", ...]:
        return ()

    @property
    def data_dependent(self) -> bool:
        """True if any part of the event is a data-dependent bound (not by itself a DP guarantee)."""
        return any(child.data_dependent for child in self.children)

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": self.type_name}
        for field in dataclasses.fields(self):
            record[field.name] = _to_plain(getattr(self, field.name))
        return record


def _to_plain(value: Any) -> Any:
    if isinstance(value, DpEvent):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_to_plain(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # "inf": strict JSON has no infinity
    return value


def event_from_dict(record: Any) -> DpEvent:
    """The event a ``DpEvent.to_dict`` record describes; ``ValueError`` naming an unknown type or a bad field."""
    if not isinstance(record, dict) or "type" not in record:
        raise ValueError(f"a cost event must be a dict with a 'type', got {record!r:.200}")
    cls = _TYPES.get(record["type"])
    if cls is None:
        raise ValueError(f"unknown cost event type {record['type']!r}; known: {sorted(_TYPES)}")
    names = {field.name for field in dataclasses.fields(cls)}
    # a field added later with a default (the Poisson event's relation) may be absent from older ledgers
    required = {field.name for field in dataclasses.fields(cls) if field.default is dataclasses.MISSING}
    given = set(record) - {"type"}
    if not required <= given <= names:
        raise ValueError(f"a {record['type']!r} event needs the fields {sorted(names)}, got {sorted(given)}")
    return cls(**{name: _from_plain(record[name]) for name in given})


def _from_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return event_from_dict(value)
    if isinstance(value, list):
        return tuple(_from_plain(item) for item in value)
    if value in ("inf", "-inf"):
        return float(value)
    return value


# --------------------------------------------------------------------------------------- basic mechanisms
@_register("gaussian")
class GaussianEvent(DpEvent):
    """Gaussian noise N(0, sigma^2 I) added to a query of L2 sensitivity ``sensitivity`` (Mironov 2017, Prop. 7)."""

    sigma: float
    sensitivity: float

    def __post_init__(self):
        checks.set_fields(
            self,
            sigma=checks.positive("sigma", self.sigma),
            sensitivity=checks.positive("sensitivity", self.sensitivity),
        )


@_register("laplace")
class LaplaceEvent(DpEvent):
    """Laplace noise of scale ``scale`` added to a query of L1 sensitivity ``sensitivity`` (Mironov 2017, Prop. 6)."""

    scale: float
    sensitivity: float

    def __post_init__(self):
        checks.set_fields(
            self,
            scale=checks.positive("scale", self.scale),
            sensitivity=checks.positive("sensitivity", self.sensitivity),
        )


@_register("pure_dp")
class PureDpEvent(DpEvent):
    """Any epsilon-DP release (Bun & Steinke 2016, Prop. 3.3 gives its tightest RDP curve)."""

    epsilon: float

    def __post_init__(self):
        checks.set_fields(self, epsilon=checks.positive("epsilon", self.epsilon))


@_register("bounded_range")
class BoundedRangeEvent(DpEvent):
    """An epsilon-bounded-range release: the exponential mechanism, one-shot Gumbel (Durfee & Rogers 2019, Def. 4.2)."""

    epsilon: float

    def __post_init__(self):
        checks.set_fields(self, epsilon=checks.positive("epsilon", self.epsilon))


@_register("zcdp")
class ZcdpEvent(DpEvent):
    """A rho-zCDP release (Bun & Steinke 2016, Def. 1.1): (alpha, alpha rho)-RDP at every order."""

    rho: float

    def __post_init__(self):
        checks.set_fields(self, rho=checks.non_negative("rho", self.rho))


@_register("poisson_sampled_gaussian")
class PoissonSampledGaussianEvent(DpEvent):
    """``steps`` runs of the sampled Gaussian mechanism: each record enters a step's sum independently with
    probability ``sampling_rate``, the sum of contributions clipped to L2 norm C gets N(0, (noise_multiplier C)^2)
    noise (DP-SGD; Abadi et al. 2016, Mironov, Talwar & Zhang 2019). Its curve is stated for neighbours that
    add or remove one record (``neighbors="add_remove"``) or replace one (``"replace"``: the dominating pair's
    divergence and a joint-convexity bound, ``poisson_sampled_gaussian_replace_rdp``); the ledger refuses an event whose
    relation is not its own. The relation is part of the mathematics here: sampling does not turn a replaced
    record into one added and one removed."""

    sampling_rate: float
    noise_multiplier: float
    steps: int
    neighbors: str = "add_remove"

    def __post_init__(self):
        if self.neighbors not in ("add_remove", "replace"):
            raise ValueError(f"neighbors={self.neighbors!r}; expected 'add_remove' or 'replace'")
        checks.set_fields(
            self,
            neighbors=str(self.neighbors),
            sampling_rate=checks.sampling_rate("sampling_rate", self.sampling_rate),
            noise_multiplier=checks.positive("noise_multiplier", self.noise_multiplier),
            steps=checks.non_negative_int("steps", self.steps),
        )


@_register("rdp_curve")
class RdpCurveEvent(DpEvent):
    """A release described by its RDP curve alone, tabulated on ``orders``: ``delta``-approximately
    (alpha, epsilons[i])-RDP at alpha = orders[i]. ``data_dependent`` marks a bound that holds for the data at
    hand only (PATE 2018's smooth-sensitivity analysis): not by itself a DP guarantee until it is released
    privately. ``source`` says where the curve comes from (a mechanism's name, a theorem)."""

    orders: tuple[float, ...]
    epsilons: tuple[float, ...]
    delta: float = 0.0
    data_dependent_bound: bool = False
    source: str = ""

    def __post_init__(self):
        orders = checks.orders_array(list(self.orders), name="orders")
        if orders.ndim != 1:
            raise ValueError(f"orders must be a 1-D sequence, got shape {orders.shape}")
        curve = checks.rdp_array([float(value) for value in self.epsilons], orders, name="epsilons")
        checks.set_fields(
            self,
            orders=tuple(float(order) for order in orders),
            epsilons=tuple(float(value) for value in curve),
            delta=checks.non_negative("delta", self.delta),
        )

    @property
    def data_dependent(self) -> bool:
        return bool(self.data_dependent_bound)


@_register("rdp_at_order")
class RdpAtOrderEvent(DpEvent):
    """A release known to be (``order``, ``epsilon``)-RDP at one order (a bound proposed and privately tested,
    ``pate.mechanisms.dd_release``). Renyi divergence is non-decreasing in its order (van Erven & Harremoes 2014,
    "Renyi divergence and Kullback-Leibler divergence", Theorem 3), so the same epsilon holds at every order below;
    above it nothing is known (+inf)."""

    order: float
    epsilon: float

    def __post_init__(self):
        order = checks.orders_array([self.order], name="order")
        checks.set_fields(self, order=float(order[0]), epsilon=checks.non_negative("epsilon", self.epsilon))


# ------------------------------------------------------------------------------------------- combinators
@_register("report_noisy_max")
class ReportNoisyMaxEvent(DpEvent):
    """The argmax over ``num_candidates`` scores, each with i.i.d. noise whose scalar release is ``scalar``
    (Zhu & Wang 2022, Theorem 8: the scalar event at twice the score sensitivity, plus log(m) / (alpha - 1))."""

    scalar: DpEvent
    num_candidates: int

    def __post_init__(self):
        _check_event("scalar", self.scalar)
        checks.set_fields(self, num_candidates=checks.positive_int("num_candidates", self.num_candidates))

    @property
    def children(self):
        return (self.scalar,)


@_register("tightest_of")
class TightestOfEvent(DpEvent):
    """One release with several valid RDP bounds: the pointwise minimum holds (each bound holds at every order).
    Only pure (delta = 0) bounds: approximate ones may exclude different events at different orders."""

    bounds: tuple[DpEvent, ...]

    def __post_init__(self):
        checks.set_fields(self, bounds=tuple(self.bounds))
        if not self.bounds:
            raise ValueError("bounds must hold at least one event")
        for index, bound in enumerate(self.bounds):
            _check_event(f"bounds[{index}]", bound)

    @property
    def children(self):
        return self.bounds


@_register("approximate")
class ApproximateEvent(DpEvent):
    """``event``'s curve, holding outside an event of probability at most ``delta``: delta-approximate RDP
    (propose-test-release; Zhu & Wang 2022, Definition 15 and Lemma 18)."""

    event: DpEvent
    delta: float

    def __post_init__(self):
        _check_event("event", self.event)
        checks.set_fields(self, delta=checks.open_unit("delta", self.delta))

    @property
    def children(self):
        return (self.event,)


@_register("composed")
class ComposedEvent(DpEvent):
    """The adaptive composition of ``events``, in order (Mironov 2017, Prop. 1; Zhu & Wang 2022, Lemma 16)."""

    events: tuple[DpEvent, ...]

    def __post_init__(self):
        checks.set_fields(self, events=tuple(self.events))
        for index, event in enumerate(self.events):
            _check_event(f"events[{index}]", event)

    @property
    def children(self):
        return self.events


@_register("self_composed")
class SelfComposedEvent(DpEvent):
    """``count`` adaptive runs of ``event``."""

    event: DpEvent
    count: int

    def __post_init__(self):
        _check_event("event", self.event)
        checks.set_fields(self, count=checks.non_negative_int("count", self.count))

    @property
    def children(self):
        return (self.event,)


def _check_event(name: str, value) -> None:
    if not isinstance(value, DpEvent):
        raise ValueError(f"{name} must be a cost event (pate.privacy.events), got {value!r:.200}")


# ------------------------------------------------------------------------------------------ ledger record
@dataclass(frozen=True)
class CostEvent:
    """One ``Ledger.compose``: ``count`` runs of ``event``, released by ``name`` under ``neighbors``."""

    name: str
    count: int
    neighbors: NeighboringRelation | None
    event: DpEvent

    def __post_init__(self):
        checks.set_fields(self, count=checks.non_negative_int("count", self.count))
        if self.neighbors is not None:
            checks.set_fields(self, neighbors=check_relation(self.neighbors))
        _check_event("event", self.event)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "count": self.count,
            "neighbors": None if self.neighbors is None else self.neighbors.value,
            "event": self.event.to_dict(),
        }

    @classmethod
    def from_dict(cls, record: Any) -> CostEvent:
        if not isinstance(record, dict) or set(record) != {"name", "count", "neighbors", "event"}:
            raise ValueError(
                f"a ledger record must be a dict with name, count, neighbors and event, got {record!r:.200}"
            )
        return cls(
            name=str(record["name"]),
            count=record["count"],
            neighbors=record["neighbors"],
            event=event_from_dict(record["event"]),
        )
