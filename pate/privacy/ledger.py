"""The privacy ledger: composes per-query RDP costs and answers "what is epsilon at this delta?".

Composition (Zhu & Wang 2022, Lemma 16; Mironov 2017, Proposition 1): if M_i is delta_i-approximately
(alpha, eps_i(alpha))-RDP, their adaptive composition is (sum_i delta_i)-approximately
(alpha, sum_i eps_i(alpha))-RDP. The ledger keeps that sum on a fixed grid of orders, together with
delta_t = sum_i delta_i.

Conversion (Zhu & Wang 2022, Lemma 17): delta_t-approximate RDP means that, outside events of
probability <= delta_t, the conditional output distributions satisfy the RDP curve. Converting the
conditional pair with any valid RDP -> DP rule at delta' and adding the excluded mass gives
(eps, delta' + delta_t)-DP. Lemma 17 uses the classic rule; the argument is the same for the tight
rule of Canonne, Kamath & Steinke 2020, Proposition 12, so ``epsilon(delta)`` converts at
delta' = delta - delta_t with ``epsilon_from_rdp``.

Neighbouring relation: costs computed under different relations are not comparable, so a ledger
holds one relation, fixed by its constructor or by the first mechanism that declares one, and
refuses to mix.

Replay: every ``compose`` is also recorded as a frozen :class:`~pate.privacy.events.CostEvent` (the
mechanism's class and constructor arguments, and the count). ``Ledger.replay(events)`` rebuilds each
mechanism with the current code and composes it again, so a saved release is priced by today's accountant
rather than by the curve stored next to it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable

import numpy as np

from pate.privacy import checks
from pate.privacy.conversion import delta_from_rdp, epsilon_from_rdp, epsilon_from_rdp_classic
from pate.privacy.events import CostEvent
from pate.privacy.orders import DEFAULT_ORDERS
from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = ["Ledger"]

_STATE_FORMAT = 2  # 2: the history is a list of replayable cost events


def _read_only(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64)  # always a fresh copy
    array.setflags(write=False)
    return array


class Ledger:
    """Running RDP curve of everything released so far, Opacus / dp-accounting style.

    >>> ledger = Ledger(neighbors="replace")
    >>> ledger.compose(mechanism, count=600)            # doctest: +SKIP
    >>> eps, order = ledger.epsilon(delta=1e-6)          # doctest: +SKIP

    ``mechanism`` is any object with ``.rdp(orders) -> array`` (the per-query curve on the ledger's
    orders) and ``.delta_per_query`` (float >= 0, its approximate-RDP delta); optionally
    ``.neighbors`` (its relation) and ``.name`` (for the history; the class name otherwise).
    """

    def __init__(self, orders=DEFAULT_ORDERS, neighbors: str | None = None):
        orders = checks.orders_array(orders)
        if orders.ndim != 1:
            raise ValueError(f"orders must be a 1-D array, got shape {orders.shape}")
        self._orders = _read_only(orders)
        self._neighbors = None if neighbors is None else check_relation(neighbors)
        self._rdp = np.zeros_like(self._orders)
        self._delta_t = 0.0
        self._history: list[CostEvent] = []

    # ------------------------------------------------------------------ state
    @property
    def orders(self) -> np.ndarray:
        """The RDP orders (read-only)."""
        return self._orders

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
    def history(self) -> tuple[CostEvent, ...]:
        """Every ``compose`` call, in order, as frozen cost events."""
        return tuple(self._history)

    @classmethod
    def replay(cls, events: Iterable[CostEvent], orders=DEFAULT_ORDERS,
               neighbors: NeighboringRelation | str | None = None) -> Ledger:
        """A new ledger that composes every event's mechanism, rebuilt with the current code
        (:meth:`CostEvent.rebuild`), ``count`` times, in order. Raises ``ValueError`` naming an event that
        cannot be rebuilt."""
        ledger = cls(orders=orders, neighbors=neighbors)
        for event in events:
            ledger.compose(event.rebuild(), count=event.count)
        return ledger

    # ------------------------------------------------------------ composition
    def compose(self, mechanism, count: int = 1) -> "Ledger":
        """Add ``count`` * mechanism.rdp(orders) to the curve and ``count`` * delta_per_query to delta_t.

        Everything is checked before the ledger changes: count (integer >= 0), the curve (shape of
        ``orders``, no NaN, >= 0; +inf allowed), delta_per_query (finite, >= 0) and the relation
        (a ledger never mixes relations). Returns the ledger, so calls chain.
        """
        count = checks.non_negative_int("count", count)
        name = str(getattr(mechanism, "name", type(mechanism).__name__))
        relation = getattr(mechanism, "neighbors", None)
        if relation is not None:
            relation = check_relation(relation)
            if self._neighbors is not None and relation != self._neighbors:
                raise ValueError(
                    f"cannot compose {name} with neighbors={relation!r} into a ledger whose neighbors="
                    f"{self._neighbors!r}: costs under different relations do not compose"
                )
        curve = checks.rdp_array(mechanism.rdp(self._orders), self._orders, name=f"{name}.rdp(orders)")
        delta_per_query = checks.non_negative(f"{name}.delta_per_query", mechanism.delta_per_query)

        if count > 0:  # count == 0 must not turn an infinite entry into 0 * inf = NaN
            self._rdp = self._rdp + count * curve
            self._delta_t += count * delta_per_query
        if relation is not None:
            self._neighbors = relation
        self._history.append(CostEvent.of(mechanism, count))
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

    def epsilon(self, delta: float) -> tuple[float, float]:
        """(epsilon, order) at ``delta``: tight conversion (``epsilon_from_rdp``) at delta - delta_t."""
        return epsilon_from_rdp(self._orders, self._rdp, self._conditional_delta(delta))

    def get_epsilon(self, delta: float) -> float:
        """Opacus-style alias: epsilon at ``delta`` only."""
        return self.epsilon(delta)[0]

    def epsilon_classic(self, delta: float) -> tuple[float, float]:
        """(epsilon, order) at ``delta`` with the classic conversion (Mironov 2017, Prop. 3), for comparison."""
        return epsilon_from_rdp_classic(self._orders, self._rdp, self._conditional_delta(delta))

    def delta(self, epsilon: float) -> float:
        """Smallest delta with (epsilon, delta)-DP: ``delta_from_rdp`` + delta_t, capped at 1."""
        return min(1.0, delta_from_rdp(self._orders, self._rdp, epsilon)[0] + self._delta_t)

    def describe(self, delta: float) -> str:
        """One line saying epsilon, delta, the relation, the conversion and what was composed."""
        eps, order = self.epsilon(delta)
        totals = Counter()
        for entry in self._history:
            totals[entry.name] += entry.count
        composed = ", ".join(f"{count} queries of {name}" for name, count in totals.items()) or "nothing composed"
        delta_t = f"; delta_t = {self._delta_t:.3g} of it from approximate RDP" if self._delta_t > 0 else ""
        return (
            f"epsilon = {eps:.4g} at delta = {delta:.3g} (neighbours: {self._neighbors or 'unspecified'}; "
            f"tight RDP conversion at order {order:.4g}{delta_t}; {composed})"
        )

    def __repr__(self) -> str:
        queries = sum(entry.count for entry in self._history)
        return (
            f"Ledger(neighbors={self._neighbors!r}, orders={self._orders.size}, queries={queries}, "
            f"delta_t={self._delta_t!r})"
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
        }

    def load_state_dict(self, state: dict) -> None:
        """Replace this ledger's state (orders included) by ``state``, validated first."""
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"state must be a Ledger state dict with format {_STATE_FORMAT} (format 1 predates "
                             f"replayable cost events: rebuild the artifact that wrote it), got {state!r:.200}")
        orders = checks.orders_array(state["orders"], name="state['orders']")
        if orders.ndim != 1:
            raise ValueError(f"state['orders'] must be 1-D, got shape {orders.shape}")
        rdp = checks.rdp_array([float(value) for value in state["rdp"]], orders, name="state['rdp']")
        delta_t = checks.non_negative("state['delta_t']", state["delta_t"])
        neighbors = None if state["neighbors"] is None else check_relation(state["neighbors"])
        history = [CostEvent.from_dict(record) for record in state["history"]]
        self._orders, self._rdp, self._delta_t = _read_only(orders), np.array(rdp), delta_t
        self._neighbors, self._history = neighbors, history

    def save(self, path) -> None:
        """Write the state as JSON atomically (temporary file in the same folder, then os.replace).

        Infinite RDP entries are written as the string "inf" so the file stays strict JSON.
        """
        state = self.state_dict()
        state["rdp"] = [value if np.isfinite(value) else "inf" for value in state["rdp"]]
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        handle = tempfile.NamedTemporaryFile("w", dir=folder, prefix=".ledger-", suffix=".tmp", delete=False)
        try:
            with handle:
                json.dump(state, handle, allow_nan=False, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(handle.name, path)
        except BaseException:
            os.unlink(handle.name)
            raise

    @classmethod
    def load(cls, path) -> "Ledger":
        """Read a ledger written by ``save``."""
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
        ledger = cls()
        ledger.load_state_dict(state)
        return ledger
