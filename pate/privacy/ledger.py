"""The privacy ledger: composes per-query RDP costs and answers "what is epsilon at this delta?".

Composition (Zhu & Wang 2022, Lemma 16; Mironov 2017, Proposition 1): if M_i is delta_i-approximately
(alpha, eps_i(alpha))-RDP, their adaptive composition is (sum_i delta_i)-approximately
(alpha, sum_i eps_i(alpha))-RDP. The ledger keeps that sum on a fixed grid of orders, together with
delta_t = sum_i delta_i.

Conversion (Zhu & Wang 2022, Lemma 17): delta_t-approximate RDP means that, outside events of
probability <= delta_t, the conditional output distributions satisfy the RDP curve. Converting the
conditional pair with any valid RDP -> DP rule at delta' and adding the excluded mass gives
(eps, delta' + delta_t)-DP. Lemma 17 uses the classic rule; the argument is the same for the tight
rule of Canonne, Kamath & Steinke 2020, Proposition 12, so ``get_epsilon(delta)`` converts at
delta' = delta - delta_t with ``epsilon_from_rdp``.

Neighbouring relation: costs computed under different relations are not comparable, so a ledger
holds one relation, fixed by its constructor or by the first mechanism that declares one, and
refuses to mix.

Events: every ``compose`` is recorded as a frozen :class:`~pate.privacy.events.CostEvent`: the name of what
released, its relation, the count and the mathematics of one release (a ``DpEvent``: a Gaussian with its
sensitivity and sigma, a PTR step with its delta, ...), never a class path. The ledger prices each event with
the accountant (``pate.privacy.accountant.price``); ``Ledger.replay(events)`` prices saved events again with
today's accountant, so a saved release is priced by the code of the day rather than by the curve stored next to
it. A mechanism without a ``dp_event`` (any object with ``.rdp`` and ``.delta_per_query``) is recorded as its
curve on the ledger's orders (``RdpCurveEvent``).
"""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from pate.privacy import checks
from pate.privacy.conversion import epsilon_from_rdp
from pate.privacy.accountant import price
from pate.privacy.events import (
    CostEvent,
    DpEvent,
    RdpCurveEvent,
    ReplaceSampledGaussianEvent,
    children,
    data_dependent,
    dpa,
)
from pate.privacy.gdp import gaussian_mu, gdp_epsilon
from pate.privacy.pld import DEFAULT_INTERVAL, pld_epsilon
from pate.privacy.orders import DEFAULT_ORDERS
from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = [
    "ACCOUNTANTS",
    "ACCOUNTANT_TEXT",
    "LEDGER_ACCOUNTANTS",
    "Ledger",
    "PricedEpsilon",
    "check_accountant",
    "event_of",
]

# What a run's epsilon is priced by (``privacy.accountant``): the RDP bound alone, or the least of the valid
# epsilons (RDP, the exact Gaussian-DP profile, the PLD).
ACCOUNTANTS = ("tightest", "rdp")
# What ``Ledger.get_epsilon`` can be asked for: a run's two, or one of the other accountants alone.
LEDGER_ACCOUNTANTS = (*ACCOUNTANTS, "gdp", "pld")
# Why an accountant asked alone has no epsilon for a history.
_NO_FORM = {
    "gdp": "an event composed here is not a Gaussian mechanism (sampled, approximate, bounded-range or tabulated)",
    "pld": "an event composed here has no privacy loss distribution (bounded-range, approximate, report-noisy-max, "
    "zCDP or a tabulated curve)",
}
# How each accountant that can give the epsilon is named where an epsilon is printed
ACCOUNTANT_TEXT = {
    "rdp": "the RDP bound (tight conversion, Balle et al. 2020)",
    "gdp": "the exact Gaussian-DP profile (Dong, Roth & Su 2019)",
    "pld": f"the privacy loss distribution (dp-accounting, pessimistic at interval {DEFAULT_INTERVAL:g})",
    "chain": "group privacy: the per-record privacy profile chained over the group's records (pate.privacy.group; "
    "an upper bound, loose)",
}


@dataclass(frozen=True)
class PricedEpsilon:
    """A ledger's epsilon at one delta (``Ledger.get_epsilon``): its value, the accountant that gave it ("rdp",
    "gdp", "pld", or "chain" for a group priced by chaining), the RDP bound beside it with the order of its
    conversion (None for a chain, which has no one order), and the one line that says all of it with the relation,
    delta and what was composed."""

    epsilon: float
    accountant: str
    rdp: float
    order: float | None
    description: str


def check_accountant(accountant: str, name: str = "accountant", allowed: tuple[str, ...] = ACCOUNTANTS) -> str:
    """``accountant`` if it is one of ``allowed``; ``ValueError`` naming ``name`` and the value otherwise."""
    if accountant not in allowed:
        raise ValueError(f"{name}={accountant!r}; expected one of {allowed}")
    return accountant


# 4: the history's standard events are dp-accounting's DpEvents; 3 (the project's own event records) is read too
_STATE_FORMAT = 4
_READ_FORMATS = (3, 4)
_OLD_FORMATS = {
    1: "it predates replayable cost events",
    2: "its cost events name mechanism classes instead of describing the mathematics",
}


def _read_only(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64)  # always a fresh copy
    array.setflags(write=False)
    return array


class Ledger:
    """Running RDP curve of everything released so far, Opacus / dp-accounting style.

    >>> ledger = Ledger(neighbors="replace")
    >>> ledger.compose(mechanism, count=600)            # doctest: +SKIP
    >>> ledger.get_epsilon(delta=1e-6).epsilon           # doctest: +SKIP

    ``mechanism`` is any object with ``.rdp(orders) -> array`` (the per-query curve on the ledger's
    orders) and ``.delta_per_query`` (float >= 0, its approximate-RDP delta); optionally
    ``.neighbors`` (its relation) and ``.name`` (for the history; the class name otherwise).

    ``group_size``: the records one neighbour changes at once. 1 (the default): the events' own neighbouring step.
    n > 1: a public cap on one person's records, for a release whose steps change one record: ``get_epsilon`` then
    prices n steps at once by group privacy (``pate.privacy.group.group_epsilon``), so its epsilon covers any one
    person of at most n records. The curve and the history stay per step.
    """

    def __init__(self, orders=DEFAULT_ORDERS, neighbors: str | None = None, group_size: int = 1):
        orders = checks.orders_array(orders)
        if orders.ndim != 1:
            raise ValueError(f"orders must be a 1-D array, got shape {orders.shape}")
        self._orders = _read_only(orders)
        self._neighbors = None if neighbors is None else check_relation(neighbors)
        self._group_size = checks.positive_int("group_size", group_size)
        self._rdp = np.zeros_like(self._orders)
        self._delta_t = 0.0
        self._history: list[CostEvent] = []

    # ------------------------------------------------------------------ state
    @property
    def orders(self) -> np.ndarray:
        """The RDP orders (a read-only copy)."""
        return _read_only(self._orders)

    @property
    def rdp(self) -> np.ndarray:
        """The composed RDP curve on ``orders`` (a read-only copy)."""
        return _read_only(self._rdp)

    @property
    def delta_t(self) -> float:
        """Accumulated approximate-RDP delta: sum of count * delta_per_query."""
        return self._delta_t

    @property
    def neighbors(self) -> NeighboringRelation | None:
        """The ledger's neighbouring relation (None until a constructor argument or mechanism fixes it)."""
        return self._neighbors

    @property
    def group_size(self) -> int:
        """The records one neighbour changes at once (the class docstring): 1, or a group priced by group privacy."""
        return self._group_size

    @property
    def history(self) -> tuple[CostEvent, ...]:
        """Every ``compose`` call, in order, as frozen cost events (copies: a composition's list inside one is the
        caller's to change, never the ledger's)."""
        return tuple(CostEvent(entry.name, entry.count, entry.neighbors, entry.event) for entry in self._history)

    @property
    def data_dependent(self) -> bool:
        """True if a data-dependent bound was composed: then its epsilon is not by itself a DP guarantee."""
        return any(data_dependent(entry.event) for entry in self._history)

    @classmethod
    def replay(
        cls,
        events: Iterable[CostEvent],
        orders=DEFAULT_ORDERS,
        neighbors: NeighboringRelation | str | None = None,
        group_size: int = 1,
    ) -> Ledger:
        """A new ledger that prices every recorded event again with today's accountant, in order."""
        ledger = cls(orders=orders, neighbors=neighbors, group_size=group_size)
        for entry in events:
            ledger.compose_event(entry.event, count=entry.count, name=entry.name, neighbors=entry.neighbors)
        return ledger

    # ------------------------------------------------------------ composition
    def compose(self, mechanism, count: int = 1) -> "Ledger":
        """Add ``count`` runs of ``mechanism``: its ``dp_event`` when it has one, else its curve
        ``mechanism.rdp(orders)`` and ``delta_per_query``, recorded as an ``RdpCurveEvent``.

        ``mechanism`` may also be a ``DpEvent`` itself. Its ``.neighbors`` (if any) fixes or must match the
        ledger's relation; its ``.name`` (or class name) names it in the history. See :meth:`compose_event`.
        Returns the ledger, so calls chain.
        """
        # getattr: any object with .rdp and .delta_per_query composes (the public contract), so .neighbors is optional
        return self.compose_event(
            event_of(mechanism, self._orders),
            count=count,
            name=_name_of(mechanism),
            neighbors=getattr(mechanism, "neighbors", None),
        )

    def compose_event(
        self,
        event: DpEvent,
        count: int = 1,
        name: str | None = None,
        neighbors: NeighboringRelation | str | None = None,
    ) -> "Ledger":
        """Add ``count`` runs of ``event``, priced by the accountant on the ledger's orders.

        Everything is checked before the ledger changes: count (integer >= 0), the relation (a ledger never
        mixes relations; a Poisson-subsampled Gaussian composes only under the relation it is priced for), the curve
        (shape of ``orders``, no NaN, >= 0; +inf allowed) and the delta (finite, >= 0).
        """
        relation = None if neighbors is None else check_relation(neighbors)
        # the record holds its own checked copy of the event: that copy is priced and kept, the caller's stays theirs
        entry = CostEvent(name=name or type(event).__name__, count=count, neighbors=relation, event=event)
        name, count, event = entry.name, entry.count, entry.event
        if relation is not None and self._neighbors is not None and relation != self._neighbors:
            raise ValueError(
                f"cannot compose {name} with neighbors={relation!r} into a ledger whose neighbors="
                f"{self._neighbors!r}: costs under different relations do not compose"
            )
        _check_relation_supported(event, relation or self._neighbors, name)
        priced = price(event, self._orders)
        curve = checks.rdp_array(priced.curve, self._orders, name=f"the RDP curve of {name}")
        delta_per_run = checks.non_negative(f"the delta of {name}", priced.delta)
        # every check has passed: the ledger changes only now (count == 0 must not turn inf into 0 * inf = NaN)
        if count > 0:
            self._rdp = self._rdp + count * curve
            self._delta_t += count * delta_per_run
        if relation is not None:
            self._neighbors = relation
        self._history.append(entry)
        return self

    # ------------------------------------------------------------- conversion
    def _conditional_delta(self, delta: float) -> float:
        delta = checks.open_unit("delta", delta)
        if delta <= self._delta_t:
            raise ValueError(
                f"delta={delta!r} must exceed the accumulated approximate-RDP delta_t={self._delta_t!r} "
                f"of this ledger (Zhu & Wang 2022, Lemma 17 spends delta_t out of delta)"
            )
        return delta - self._delta_t

    def get_epsilon(self, delta: float, accountant: str = "tightest") -> PricedEpsilon:
        """The epsilon at ``delta``, with the accountant that gave it and the RDP bound beside it.

        ``accountant`` (one of ``LEDGER_ACCOUNTANTS``):

        - ``"rdp"``: the RDP bound, converted tightly (Canonne, Kamath & Steinke 2020, Prop. 12) at
          delta - delta_t (Zhu & Wang 2022, Lemma 17), at the best order of the ledger's grid.
        - ``"gdp"``: exact where every composed event is a Gaussian mechanism (or a composition of them): the
          composition is mu-GDP with mu = sqrt(sum count (D / sigma)^2), whose profile is known in closed form
          (Dong, Roth & Su 2019, Cor. 2.13; ``pate.privacy.gdp``).
        - ``"pld"``: the privacy loss distributions of the composed events (dp-accounting, pessimistic
          discretisation at ``DEFAULT_INTERVAL``): an upper bound on the true epsilon.
        - ``"tightest"``: the least of those that exist for the history. The GDP epsilon is exact where it exists,
          so the PLD, an upper bound on the same profile, is not computed then. A data-dependent history is priced
          by RDP only (its curve is tabulated and has no other form).

        ``"gdp"`` or ``"pld"`` asked of a history without that form is a ``ValueError`` naming what is missing.

        A ledger of ``group_size`` n > 1 answers for n records at once (``pate.privacy.group.group_epsilon``).
        """
        check_accountant(accountant, allowed=LEDGER_ACCOUNTANTS)
        if self._group_size > 1:
            from pate.privacy.group import group_epsilon  # group prices a per-step Ledger: imported here, not above

            return group_epsilon(self, delta, accountant)
        rdp, order = epsilon_from_rdp(self._orders, self._rdp, self._conditional_delta(delta))
        candidates = {"rdp": rdp}
        if accountant in ("gdp", "tightest"):
            candidates["gdp"] = self._gdp_epsilon(delta)
        if accountant == "pld" or (accountant == "tightest" and candidates["gdp"] is None):
            candidates["pld"] = pld_epsilon(self._events(), delta)
        if accountant != "tightest":
            if candidates[accountant] is None:
                raise ValueError(f"accountant={accountant!r}: {_NO_FORM[accountant]}; ask 'rdp' or 'tightest'")
            candidates = {accountant: candidates[accountant]}
        by = min((name for name, eps in candidates.items() if eps is not None), key=candidates.get)
        return PricedEpsilon(candidates[by], by, rdp, order, self._description(candidates[by], by, delta, rdp, order))

    def epsilon(self, delta: float) -> tuple[float, float | None]:
        """The public contract's form (../shared/DESIGN.md, section 5: ``eps, order = ledger.epsilon(delta=1e-6)``):
        the tightest valid epsilon at ``delta`` (:meth:`get_epsilon`'s default) and the order of its RDP conversion
        where the RDP bound gave it, None where the exact Gaussian-DP profile or the PLD did."""
        priced = self.get_epsilon(delta)
        return priced.epsilon, priced.order if priced.accountant == "rdp" else None

    def _events(self) -> list[tuple[DpEvent, int]]:
        """(event, count) of every composition, in order: what the closed-form and PLD accountants price."""
        return [(entry.event, entry.count) for entry in self._history]

    def _gdp_epsilon(self, delta: float) -> float | None:
        """The exact Gaussian-DP epsilon of the history, or None when an event has no Gaussian form."""
        mu = gaussian_mu(self._events())
        if mu is None:
            return None
        return gdp_epsilon(mu, delta) if mu > 0 else 0.0

    def _description(self, eps: float, by: str, delta: float, rdp: float, order: float) -> str:
        """The printed line: epsilon, delta, the relation, the accountant (and the RDP bound beside another one),
        delta_t, what was composed and the data-dependent caveat."""
        how = (
            f"tight RDP conversion at order {order:.4g}"
            if by == "rdp"
            else f"by {ACCOUNTANT_TEXT[by]}; the RDP bound is {rdp:.4g}, at order {order:.4g}"
        )
        composed = self.composed()
        delta_t = f"; delta_t = {self._delta_t:.3g} of it from approximate RDP" if self._delta_t > 0 else ""
        caveat = (
            "; DATA-DEPENDENT: a bound for this data only, not by itself a DP guarantee" if self.data_dependent else ""
        )
        return (
            f"epsilon = {eps:.4g} at delta = {delta:.3g} (neighbours: {self._neighbors or 'unspecified'}; "
            f"{how}{delta_t}; {composed}{caveat})"
        )

    def composed(self) -> str:
        """What was composed, for a line: "600 queries of GaussianPATE(...)", or "nothing composed"."""
        totals = Counter()
        for entry in self._history:
            totals[entry.name] += entry.count
        return (
            ", ".join(f"{count} {'release' if count == 1 else 'queries'} of {name}" for name, count in totals.items())
            or "nothing composed"
        )

    def __repr__(self) -> str:
        queries = sum(entry.count for entry in self._history)
        return (
            f"Ledger(neighbors={self._neighbors!r}, orders={self._orders.size}, queries={queries}, "
            f"delta_t={self._delta_t!r}{f', group_size={self._group_size}' if self._group_size > 1 else ''})"
        )

    # --------------------------------------------------------------- persist
    def state_dict(self) -> dict:
        """Plain-Python state (lists, floats, strings); ``load_state_dict`` restores it exactly."""
        return {
            "format": _STATE_FORMAT,
            "orders": self._orders.tolist(),
            "rdp": self._rdp.tolist(),
            "delta_t": self._delta_t,
            "neighbors": None if self._neighbors is None else self._neighbors.value,
            "history": [event.to_dict() for event in self._history],
            **({"group_size": self._group_size} if self._group_size > 1 else {}),  # a per-step ledger's file as before
        }

    def load_state_dict(self, state: dict) -> None:
        """Replace this ledger's state (orders included) by ``state``, validated first."""
        if isinstance(state, dict) and state.get("format") in _OLD_FORMATS:
            raise ValueError(
                f"ledger format {state['format']} cannot be priced by this version "
                f"({_OLD_FORMATS[state['format']]}): rebuild the artifact that wrote it"
            )
        if not isinstance(state, dict) or state.get("format") not in _READ_FORMATS:
            raise ValueError(f"state must be a Ledger state dict with format in {_READ_FORMATS}, got {state!r:.200}")
        orders = checks.orders_array(state["orders"], name="state['orders']")
        if orders.ndim != 1:
            raise ValueError(f"state['orders'] must be 1-D, got shape {orders.shape}")
        rdp = checks.rdp_array([float(value) for value in state["rdp"]], orders, name="state['rdp']")
        delta_t = checks.non_negative("state['delta_t']", state["delta_t"])
        neighbors = None if state["neighbors"] is None else check_relation(state["neighbors"])
        group_size = checks.positive_int("state['group_size']", state.get("group_size", 1))
        history = [CostEvent.from_dict(record) for record in state["history"]]
        for entry in history:  # a saved sampled step under another relation than the ledger's is refused, as composing
            _check_relation_supported(entry.event, entry.neighbors or neighbors, entry.name)
        self._orders, self._rdp, self._delta_t = _read_only(orders), np.array(rdp), delta_t
        self._neighbors, self._history, self._group_size = neighbors, history, group_size

    def save(self, path) -> None:
        """Write the state as JSON atomically (temporary file in the same folder, then os.replace).

        Infinite RDP entries are written as the string "inf" so the file stays strict JSON.
        """
        state = self.state_dict()
        state["rdp"] = [value if np.isfinite(value) else "inf" for value in state["rdp"]]
        path = os.fspath(path)
        # mode 0666 less the umask, as for any new file (tempfile's 0600 would hide a shared cache from its group)
        tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".ledger-{secrets.token_hex(6)}.tmp")
        handle = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "w")
        try:
            with handle:
                json.dump(state, handle, allow_nan=False, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path) -> "Ledger":
        """Read a ledger written by ``save``."""
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
        ledger = cls()
        ledger.load_state_dict(state)
        return ledger


def _name_of(mechanism) -> str:
    # getattr: .name is optional for what Ledger.compose accepts (any object with .rdp and .delta_per_query)
    return str(getattr(mechanism, "name", type(mechanism).__name__))


def event_of(mechanism, orders) -> DpEvent:
    """The cost event of one run of ``mechanism``: itself if it is a ``DpEvent``, its ``dp_event`` if it has one,
    else its curve ``mechanism.rdp(orders)`` and ``delta_per_query`` as an ``RdpCurveEvent`` on ``orders`` (checked
    first, naming the mechanism)."""
    if isinstance(mechanism, DpEvent):
        return mechanism
    # getattr: .dp_event is optional for what Ledger.compose accepts (any object with .rdp and .delta_per_query)
    event = getattr(mechanism, "dp_event", None)
    if event is not None:
        return event
    orders, name = checks.orders_array(orders), _name_of(mechanism)
    curve = checks.rdp_array(mechanism.rdp(orders), orders, name=f"{name}.rdp(orders)")
    delta_per_query = checks.non_negative(f"{name}.delta_per_query", mechanism.delta_per_query)
    return RdpCurveEvent(orders=tuple(orders), epsilons=tuple(curve), delta=delta_per_query, source=name)


def _check_relation_supported(event: DpEvent, relation: NeighboringRelation | None, name: str) -> None:
    """A Poisson-subsampled Gaussian is priced under one relation (its curve differs between add / remove,
    dp-accounting's ``PoissonSampledDpEvent``, and replace, ``ReplaceSampledGaussianEvent``); it composes only into
    a ledger of that relation, which must be stated."""
    pending = [event]
    while pending:
        part = pending.pop()
        own = (
            "add_remove"
            if isinstance(part, dpa.PoissonSampledDpEvent)
            else "replace"
            if isinstance(part, ReplaceSampledGaussianEvent)
            else None
        )
        if own is not None and relation != own:
            raise ValueError(
                f"{name}: a Poisson-subsampled Gaussian priced for neighbors={own!r} cannot "
                f"compose into a ledger with neighbors={relation!r}"
            )
        pending.extend(children(part))
