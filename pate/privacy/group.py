"""Group privacy: what a record-level release costs a person who holds n records, all changed at once.

DESIGN.md, section 2: a per-record epsilon on data that name people says, beside it, what it implies for the
largest person. A record-level release's cost events describe one neighbouring step; n records changed are n such
steps. Where the event's mathematics scales exactly with the sensitivity, the group's event is the event of n
times the sensitivity, priced by the ledger's tightest accountant as any other:

* ``GaussianDpEvent(m)`` (noise multiplier m = sigma / D): n steps move the released vector by at most n D (the
  triangle inequality along the n steps), and the Gaussian mechanism of sensitivity n D is ``GaussianDpEvent(m /
  n)``, exactly (the worst case puts the n moves in one direction). For PATE a record lives in one teacher, so n
  records change at most n teachers' votes: n times one vote replaced.
* ``LaplaceDpEvent(m)``: the Laplace mechanism of L1 sensitivity n D, ``LaplaceDpEvent(m / n)``.
* ``PureDpEvent(eps)``: ``PureDpEvent(n eps)`` (group privacy of pure DP: Dwork & Roth 2014, Theorem 2.2).
* compositions, part by part.

Every other event -- a Poisson-sampled Gaussian (whose n records are sampled one by one: a mixture, not a scaled
Gaussian), report-noisy-max and propose-test-release, tabulated or data-dependent curves -- has no exact conversion
here: :func:`group_event` answers None and no group epsilon is printed, rather than a loose one.
"""

from __future__ import annotations

import attr

from pate.privacy.checks import positive_int
from pate.privacy.events import DpEvent, PureDpEvent, dpa
from pate.privacy.ledger import Ledger

__all__ = ["group_event", "group_ledger"]


def group_event(event: DpEvent, size: int) -> DpEvent | None:
    """The cost event of ``size`` neighbouring steps of ``event`` at once (module docstring), or None where there is
    no exact conversion here."""
    size = positive_int("size", size)
    if isinstance(event, dpa.GaussianDpEvent):
        return dpa.GaussianDpEvent(event.noise_multiplier / size)
    if isinstance(event, dpa.LaplaceDpEvent):
        return dpa.LaplaceDpEvent(event.noise_multiplier / size)
    if isinstance(event, PureDpEvent):
        return attr.evolve(event, epsilon=event.epsilon * size)
    if isinstance(event, dpa.SelfComposedDpEvent):
        inner = group_event(event.event, size)
        return None if inner is None else dpa.SelfComposedDpEvent(inner, event.count)
    if isinstance(event, dpa.ComposedDpEvent):
        parts = [group_event(part, size) for part in event.events]
        return None if any(part is None for part in parts) else dpa.ComposedDpEvent(parts)
    return None


def group_ledger(ledger: Ledger, size: int) -> Ledger | None:
    """A ledger of every event of ``ledger`` for a group of ``size`` records (:func:`group_event`), under the same
    relation and orders; None where any event has no exact conversion."""
    grouped = Ledger(orders=ledger.orders, neighbors=ledger.neighbors)
    for entry in ledger.history:
        event = group_event(entry.event, size)
        if event is None:
            return None
        grouped.compose_event(event, count=entry.count, name=f"{entry.name}, {size} records at once")
    return grouped
