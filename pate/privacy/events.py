"""Cost events: the mathematics of a release, as dp-accounting's ``DpEvent`` s, priced by ``pate.privacy.accountant``.

An event says what was released in terms of the mathematics alone, never which class of this project produced it,
so saved ledgers stay readable when code moves and every epsilon is recomputed from the events by the accountant of
the day. The standard mechanisms are dp-accounting's own events:

* ``GaussianDpEvent(m)``: Gaussian noise of standard deviation m D on a query of L2 sensitivity D
  (:func:`gaussian_event` builds it from sigma and D: m = sigma / D).
* ``LaplaceDpEvent(m)``: Laplace noise of scale m D on a query of L1 sensitivity D (:func:`laplace_event`).
* ``ZCDpEvent(rho, xi)``: a (xi, rho)-zCDP release.
* ``PoissonSampledDpEvent(q, GaussianDpEvent(m))``: one step of the sampled Gaussian mechanism under neighbours that
  add or remove one record (the relation dp-accounting's RDP accountant prices it under).
* ``ComposedDpEvent`` and ``SelfComposedDpEvent``: adaptive composition.

The project's own events subclass ``dp_accounting.DpEvent`` (attrs classes, as dp-accounting's are): pure-DP and
bounded-range releases, the sampled Gaussian under neighbours that replace one record, tabulated and data-dependent
RDP curves, an RDP bound at one order, report-noisy-max, the tightest of several bounds and approximate RDP
(propose-test-release).

Sensitivities inside an event are numbers: the mechanism derived them from its neighbouring relation
(``pate.privacy.sensitivity``) when it released, and the ledger record beside the event (:class:`CostEvent`) names
that relation.

:func:`event_to_dict` / :func:`event_from_dict` round-trip an event through JSON (``{"type": name, field: value,
...}``, nested events as nested dicts). Ledgers written before the standard events were dp-accounting's (format 3)
are read too: their Gaussian, Laplace, zCDP, composed and Poisson-sampled records become the events above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import attr
from dp_accounting import dp_event as dpa
from dp_accounting.dp_event import DpEvent

from pate.privacy import checks
from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = [
    "ApproximateEvent",
    "BoundedRangeEvent",
    "CostEvent",
    "DpEvent",
    "PureDpEvent",
    "RdpAtOrderEvent",
    "RdpCurveEvent",
    "ReplaceSampledGaussianEvent",
    "ReportNoisyMaxEvent",
    "TightestOfEvent",
    "check_event",
    "children",
    "data_dependent",
    "event_from_dict",
    "event_to_dict",
    "gaussian_event",
    "owned_copy",
    "laplace_event",
    "sampled_gaussian_steps",
]

_TYPES: dict[str, type[DpEvent]] = {
    f"dp_accounting.{cls.__name__}": cls
    for cls in (
        dpa.GaussianDpEvent,
        dpa.LaplaceDpEvent,
        dpa.ZCDpEvent,
        dpa.PoissonSampledDpEvent,
        dpa.ComposedDpEvent,
        dpa.SelfComposedDpEvent,
    )
}


def _project_event(type_name: str):
    """Class decorator: a frozen attrs ``DpEvent`` of this project, known to ``event_from_dict`` as ``type_name``."""

    def wrap(cls):
        cls = attr.s(frozen=True, slots=True, auto_attribs=True)(cls)
        _TYPES[type_name] = cls
        return cls

    return wrap


def _type_name(event: DpEvent) -> str:
    for name, cls in _TYPES.items():
        if type(event) is cls:
            return name
    raise ValueError(f"no record format for cost events of type {type(event).__name__}; known: {sorted(_TYPES)}")


# --------------------------------------------------------------------------------------- standard mechanisms
def gaussian_event(sigma: float, sensitivity: float) -> dpa.GaussianDpEvent:
    """N(0, sigma^2 I) added to a query of L2 sensitivity ``sensitivity``: dp-accounting's Gaussian event of noise
    multiplier sigma / sensitivity (Mironov 2017, Prop. 7: alpha sensitivity^2 / (2 sigma^2))."""
    return dpa.GaussianDpEvent(checks.positive("sigma", sigma) / checks.positive("sensitivity", sensitivity))


def laplace_event(scale: float, sensitivity: float) -> dpa.LaplaceDpEvent:
    """Laplace noise of scale ``scale`` added to a query of L1 sensitivity ``sensitivity``: dp-accounting's Laplace
    event of noise multiplier scale / sensitivity (Mironov 2017, Prop. 6)."""
    return dpa.LaplaceDpEvent(checks.positive("scale", scale) / checks.positive("sensitivity", sensitivity))


def sampled_gaussian_steps(
    sampling_rate: float, noise_multiplier: float, steps: int, neighbors: str = "add_remove"
) -> dpa.SelfComposedDpEvent:
    """``steps`` runs of the sampled Gaussian mechanism (DP-SGD; Abadi et al. 2016, Mironov, Talwar & Zhang 2019):
    each record enters a step's sum independently with probability ``sampling_rate``, the sum of contributions
    clipped to L2 norm C gets N(0, (noise_multiplier C)^2) noise. One step is dp-accounting's
    ``PoissonSampledDpEvent`` of a Gaussian under ``neighbors="add_remove"``, :class:`ReplaceSampledGaussianEvent`
    under ``"replace"``: sampling does not turn a replaced record into one added and one removed, so the relation is
    part of the mathematics here and the ledger refuses a step under another relation than its own."""
    relation = check_relation(neighbors)
    rate = checks.sampling_rate("sampling_rate", sampling_rate)
    multiplier = checks.positive("noise_multiplier", noise_multiplier)
    step = (
        ReplaceSampledGaussianEvent(rate, multiplier)
        if relation == NeighboringRelation.REPLACE
        else dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(multiplier))
    )
    return dpa.SelfComposedDpEvent(step, checks.non_negative_int("steps", steps))


def check_event(name: str, event: Any) -> DpEvent:
    """``event`` if it is a cost event whose every part is valid; ``ValueError`` naming ``name`` and the part
    otherwise. dp-accounting's events do not check their fields, so a ledger checks them here."""
    if not isinstance(event, DpEvent):
        raise ValueError(f"{name} must be a dp_accounting DpEvent, got {event!r:.200}")
    if isinstance(event, (dpa.GaussianDpEvent, dpa.LaplaceDpEvent)):
        checks.positive(f"{name}.noise_multiplier", event.noise_multiplier)
    elif isinstance(event, dpa.ZCDpEvent):
        checks.non_negative(f"{name}.rho", event.rho)
        checks.non_negative(f"{name}.xi", event.xi)
    elif isinstance(event, dpa.PoissonSampledDpEvent):
        checks.sampling_rate(f"{name}.sampling_probability", event.sampling_probability)
        if not isinstance(event.event, dpa.GaussianDpEvent):
            raise ValueError(f"{name}: only a Poisson-sampled Gaussian is priced, got {event.event!r:.200}")
    elif isinstance(event, dpa.SelfComposedDpEvent):
        checks.non_negative_int(f"{name}.count", event.count)
    elif isinstance(event, dpa.ComposedDpEvent) and not isinstance(event.events, list):
        raise ValueError(f"{name}.events must be a list, as dp-accounting's ComposedDpEvent takes it")
    for index, child in enumerate(children(event)):
        check_event(f"{name}.{index}", child)
    return event


# ------------------------------------------------------------------------------------------ this project's
@_project_event("pure_dp")
class PureDpEvent(DpEvent):
    """Any epsilon-DP release (Bun & Steinke 2016, Prop. 3.3 gives its tightest RDP curve)."""

    epsilon: float

    def __attrs_post_init__(self):
        checks.set_fields(self, epsilon=checks.positive("epsilon", self.epsilon))


@_project_event("bounded_range")
class BoundedRangeEvent(DpEvent):
    """An epsilon-bounded-range release: the exponential mechanism, one-shot Gumbel (Durfee & Rogers 2019, Def. 4.2)."""

    epsilon: float

    def __attrs_post_init__(self):
        checks.set_fields(self, epsilon=checks.positive("epsilon", self.epsilon))


@_project_event("replace_sampled_gaussian")
class ReplaceSampledGaussianEvent(DpEvent):
    """One step of the sampled Gaussian mechanism (rate ``sampling_probability``, noise ``noise_multiplier`` C on a sum
    clipped to C) under neighbours that replace one record: the dominating pair of dp-accounting's PLD for
    ``REPLACE_ONE`` and a joint-convexity bound on its RDP curve (``poisson_sampled_gaussian_replace_rdp``)."""

    sampling_probability: float
    noise_multiplier: float

    def __attrs_post_init__(self):
        checks.set_fields(
            self,
            sampling_probability=checks.sampling_rate("sampling_probability", self.sampling_probability),
            noise_multiplier=checks.positive("noise_multiplier", self.noise_multiplier),
        )


@_project_event("rdp_curve")
class RdpCurveEvent(DpEvent):
    """A release described by its RDP curve alone, tabulated on ``orders``: ``delta``-approximately
    (alpha, epsilons[i])-RDP at alpha = orders[i]. ``data_dependent_bound`` marks a bound that holds for the data at
    hand only (PATE 2018's smooth-sensitivity analysis): not by itself a DP guarantee until it is released
    privately. ``source`` says where the curve comes from (a mechanism's name, a theorem)."""

    orders: tuple[float, ...]
    epsilons: tuple[float, ...]
    delta: float = 0.0
    data_dependent_bound: bool = False
    source: str = ""

    def __attrs_post_init__(self):
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


@_project_event("rdp_at_order")
class RdpAtOrderEvent(DpEvent):
    """A release known to be (``order``, ``epsilon``)-RDP at one order (a bound proposed and privately tested,
    ``pate.mechanisms.dd_release``). Renyi divergence is non-decreasing in its order (van Erven & Harremoes 2014,
    "Renyi divergence and Kullback-Leibler divergence", Theorem 3), so the same epsilon holds at every order below;
    above it nothing is known (+inf)."""

    order: float
    epsilon: float

    def __attrs_post_init__(self):
        order = checks.orders_array([self.order], name="order")
        checks.set_fields(self, order=float(order[0]), epsilon=checks.non_negative("epsilon", self.epsilon))


@_project_event("report_noisy_max")
class ReportNoisyMaxEvent(DpEvent):
    """The argmax over ``num_candidates`` scores, each with i.i.d. noise whose scalar release is ``scalar``
    (Zhu & Wang 2022, Theorem 8: the scalar event at twice the score sensitivity, plus log(m) / (alpha - 1))."""

    scalar: DpEvent
    num_candidates: int

    def __attrs_post_init__(self):
        check_event("scalar", self.scalar)
        checks.set_fields(self, num_candidates=checks.positive_int("num_candidates", self.num_candidates))


@_project_event("tightest_of")
class TightestOfEvent(DpEvent):
    """One release with several valid RDP bounds: the pointwise minimum holds (each bound holds at every order).
    Only pure (delta = 0) bounds: approximate ones may exclude different events at different orders."""

    bounds: tuple[DpEvent, ...]

    def __attrs_post_init__(self):
        checks.set_fields(self, bounds=tuple(self.bounds))
        if not self.bounds:
            raise ValueError("bounds must hold at least one event")
        for index, bound in enumerate(self.bounds):
            check_event(f"bounds[{index}]", bound)


@_project_event("approximate")
class ApproximateEvent(DpEvent):
    """``event``'s curve, holding outside an event of probability at most ``delta``: delta-approximate RDP
    (propose-test-release; Zhu & Wang 2022, Definition 15 and Lemma 18)."""

    event: DpEvent
    delta: float

    def __attrs_post_init__(self):
        check_event("event", self.event)
        checks.set_fields(self, delta=checks.open_unit("delta", self.delta))


# ------------------------------------------------------------------------------------------------ structure
def children(event: DpEvent) -> tuple[DpEvent, ...]:
    """The events ``event`` is made of (none for a basic mechanism)."""
    if isinstance(event, (dpa.ComposedDpEvent, TightestOfEvent)):
        return tuple(event.events if isinstance(event, dpa.ComposedDpEvent) else event.bounds)
    if isinstance(event, (dpa.SelfComposedDpEvent, dpa.PoissonSampledDpEvent, ApproximateEvent)):
        return (event.event,)
    if isinstance(event, ReportNoisyMaxEvent):
        return (event.scalar,)
    return ()


def owned_copy(event: Any) -> Any:
    """A new ``event`` built again from its fields, every part of it too (this project's events checked again as
    they are built): dp-accounting's composition holds the caller's list, and a caller's event object may be
    changed after a ledger priced it (a subclass that allows assignment, or ``object.__setattr__``), which would
    change what a ledger's history prices. Anything that is not an event is returned as it is, for
    :func:`check_event` to refuse."""
    if not isinstance(event, DpEvent):
        return event
    if isinstance(event, dpa.ComposedDpEvent):
        return attr.evolve(event, events=[owned_copy(part) for part in _event_list("events", event.events)])
    if isinstance(event, TightestOfEvent):
        return attr.evolve(event, bounds=tuple(owned_copy(bound) for bound in event.bounds))
    if isinstance(event, ReportNoisyMaxEvent):
        return attr.evolve(event, scalar=owned_copy(event.scalar))
    if isinstance(event, (dpa.SelfComposedDpEvent, dpa.PoissonSampledDpEvent, ApproximateEvent)):
        return attr.evolve(event, event=owned_copy(event.event))
    return attr.evolve(event)


def _event_list(name: str, value: Any) -> list:
    """A composition's events as a new list; ``ValueError`` naming ``name`` for anything but a list or tuple."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list of cost events, got {value!r:.200}")
    return list(value)


def data_dependent(event: DpEvent) -> bool:
    """True if any part of ``event`` is a data-dependent bound (not by itself a DP guarantee)."""
    if isinstance(event, RdpCurveEvent) and event.data_dependent_bound:
        return True
    return any(data_dependent(child) for child in children(event))


# ------------------------------------------------------------------------------------------------- records
def event_to_dict(event: DpEvent) -> dict[str, Any]:
    """The JSON record of ``event``: its type name and its fields, nested events as nested records."""
    record: dict[str, Any] = {"type": _type_name(event)}
    for field in attr.fields(type(event)):
        record[field.name] = _to_plain(getattr(event, field.name))
    return record


def _to_plain(value: Any) -> Any:
    if isinstance(value, DpEvent):
        return event_to_dict(value)
    if isinstance(value, (tuple, list)):
        return [_to_plain(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # "inf": strict JSON has no infinity
    return value


def event_from_dict(record: Any) -> DpEvent:
    """The event a :func:`event_to_dict` record (or a format-3 record) describes; ``ValueError`` naming an unknown
    type or a bad field."""
    if not isinstance(record, dict) or "type" not in record:
        raise ValueError(f"a cost event must be a dict with a 'type', got {record!r:.200}")
    if record["type"] in _FORMAT_3:
        return _FORMAT_3[record["type"]](_fields(record, *_FORMAT_3_FIELDS[record["type"]]))
    cls = _TYPES.get(record["type"])
    if cls is None:
        raise ValueError(f"unknown cost event type {record['type']!r}; known: {sorted(_TYPES)}")
    names = [field.name for field in attr.fields(cls)]
    required = [field.name for field in attr.fields(cls) if field.default is attr.NOTHING]
    values = _fields(record, required, [name for name in names if name not in required])
    if cls is dpa.ComposedDpEvent:
        values["events"] = _event_list(f"{record['type']}.events", values["events"])  # dp-accounting's is a list
    return check_event(record["type"], cls(**values))


def _fields(record: dict, required, optional=()) -> dict[str, Any]:
    given = set(record) - {"type"}
    if not set(required) <= given <= set(required) | set(optional):
        raise ValueError(
            f"a {record['type']!r} event needs the fields {sorted(required)} (optional {sorted(optional)}), "
            f"got {sorted(given)}"
        )
    return {name: _from_plain(record[name]) for name in given}


def _from_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return event_from_dict(value)
    if isinstance(value, list):
        return tuple(_from_plain(item) for item in value)
    if value in ("inf", "-inf"):
        return float(value)
    return value


# Format 3 (before the standard events were dp-accounting's): the record's type -> its fields and the event today.
_FORMAT_3_FIELDS = {
    "gaussian": (["sigma", "sensitivity"], []),
    "laplace": (["scale", "sensitivity"], []),
    "zcdp": (["rho"], []),
    "composed": (["events"], []),
    "self_composed": (["event", "count"], []),
    "poisson_sampled_gaussian": (["sampling_rate", "noise_multiplier", "steps"], ["neighbors"]),
}
_FORMAT_3 = {
    "gaussian": lambda v: gaussian_event(v["sigma"], v["sensitivity"]),
    "laplace": lambda v: laplace_event(v["scale"], v["sensitivity"]),
    "zcdp": lambda v: check_event("zcdp", dpa.ZCDpEvent(v["rho"])),
    "composed": lambda v: check_event("composed", dpa.ComposedDpEvent(_event_list("composed.events", v["events"]))),
    "self_composed": lambda v: check_event("self_composed", dpa.SelfComposedDpEvent(v["event"], v["count"])),
    "poisson_sampled_gaussian": lambda v: sampled_gaussian_steps(
        v["sampling_rate"], v["noise_multiplier"], v["steps"], v.get("neighbors", "add_remove")
    ),
}


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
        # its own copy, checked once read: what a ledger prices and keeps is this copy, whatever the caller's becomes
        checks.set_fields(self, event=check_event(f"the cost event of {self.name}", owned_copy(self.event)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "count": self.count,
            "neighbors": None if self.neighbors is None else self.neighbors.value,
            "event": event_to_dict(self.event),
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
