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
Gaussian), report-noisy-max and propose-test-release, tabulated curves -- has no exact conversion here:
:func:`group_event` answers None. Such a release is priced for the group by :func:`chained_group_epsilon`, group
privacy of approximate DP along the n steps: a release that is (eps, delta(eps))-DP for one record is

    (n eps, delta(eps) (1 + e^eps + ... + e^((n - 1) eps)))-DP for n records

(apply P[M(D_i) in S] <= e^eps P[M(D_(i+1)) in S] + delta along D_0, ..., D_n, each a neighbouring step; Vadhan
2017, "The Complexity of Differential Privacy", Lemma 2.2, states the weaker n e^((n-1) eps) delta). delta(eps) is
the release's privacy profile, the least of its RDP bound and its PLD, and eps is searched for the smallest n eps
that meets the group's delta. Valid for any release, it is far looser than an exact conversion: it is the fallback,
and its line says which was used. A data-dependent history is no DP guarantee, so it has no group epsilon at all.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import attr
import numpy as np

from pate.privacy.checks import open_unit, positive_int
from pate.privacy.conversion import log_deltas_from_rdp
from pate.privacy.events import DpEvent, PureDpEvent, dpa
from pate.privacy.ledger import Ledger, PricedEpsilon, check_accountant
from pate.privacy.pld import pld_profile

__all__ = ["ChainedEpsilon", "chained_group_epsilon", "group_epsilon", "group_event", "group_ledger", "log_delta_text"]

# the group epsilons searched (n eps), geometric: each 12% above the last, then refined 100-fold between the first
# one that meets delta and the one before it
_GROUP_EPSILONS = np.geomspace(1e-4, 1e6, 201)
_REFINE = 101


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


@dataclass(frozen=True)
class ChainedEpsilon:
    """A group's epsilon by :func:`chained_group_epsilon`: ``epsilon`` = n ``record_epsilon`` at the group's delta,
    from the release's (``record_epsilon``, e^``log_record_delta``)-DP per record (the log: that delta can be below
    the smallest float)."""

    epsilon: float
    record_epsilon: float
    log_record_delta: float


def chained_group_epsilon(
    ledger: Ledger, size: int, delta: float, accountant: str = "tightest"
) -> ChainedEpsilon | None:
    """The least n eps on a fine grid for which ``ledger``'s release, (eps, delta(eps))-DP per record, is (n eps,
    ``delta``)-DP for ``size`` records (module docstring); None for a data-dependent history, or where no eps up to
    1e6 / n meets ``delta`` (n delta_t >= delta, say). Every eps kept is one that meets it, so the answer is valid
    whether or not the group's delta falls with eps between grid points. delta(eps) is the RDP bound's with
    ``accountant="rdp"``, the least of it and the PLD's with ``"tightest"``; the release is priced from its events
    (``Ledger.replay``), not from a curve stored beside them."""
    size = positive_int("size", size)
    log_target = math.log(open_unit("delta", delta))
    check_accountant(accountant)
    if ledger.data_dependent:
        return None
    ledger = Ledger.replay(ledger.history, orders=ledger.orders, neighbors=ledger.neighbors)
    profile = _log_record_delta(ledger, with_pld=accountant == "tightest")
    coarse = _GROUP_EPSILONS / size
    meets, log_record = _meets(profile, size, coarse, log_target)
    if not meets.any():
        return None
    first = int(np.argmax(meets))
    if first > 0:  # between the last eps that misses delta and the first that meets it
        coarse = np.linspace(coarse[first - 1], coarse[first], _REFINE)
        meets, log_record = _meets(profile, size, coarse, log_target)
        first = int(np.argmax(meets))  # the last one meets delta: argmax finds one that does
    return ChainedEpsilon(size * float(coarse[first]), float(coarse[first]), float(log_record[first]))


def group_epsilon(ledger: Ledger, delta: float, accountant: str = "tightest") -> PricedEpsilon:
    """The epsilon of ``ledger``'s release for a group of its ``group_size`` n records (``Ledger.get_epsilon`` of a
    group ledger): the exact conversion where every event has one (:func:`group_ledger`, priced by ``accountant``),
    else :func:`chained_group_epsilon`, whose ``rdp`` beside it is the chain of the RDP bound alone ("rdp" asks for
    that one; "gdp" and "pld" alone are refused: a chain is of the profile, not of one accountant); infinite where
    no per-record epsilon of the chain's grid meets ``delta`` (too little noise). ``ValueError`` where none can (n
    delta_t >= delta) or the history is data-dependent, neither of which is a guarantee."""
    size, delta = ledger.group_size, open_unit("delta", delta)
    per_step = Ledger.replay(ledger.history, orders=ledger.orders, neighbors=ledger.neighbors)
    at_once = f"{size} records at once, by group privacy"
    exact = group_ledger(per_step, size)
    if exact is not None:
        priced = exact.get_epsilon(delta, accountant)
        return dataclasses.replace(priced, description=f"{priced.description[:-1]}; {at_once}, exact)")
    if accountant not in ("tightest", "rdp"):
        raise ValueError(
            f"accountant={accountant!r}: a group of {size} records whose events have no exact group conversion is "
            f"priced by chaining the per-record privacy profile; ask 'rdp' or 'tightest'"
        )
    if per_step.data_dependent or size * per_step.delta_t >= delta:
        why = (
            "its history is data-dependent" if per_step.data_dependent else f"n delta_t = {size * per_step.delta_t:.3g}"
        )
        raise ValueError(
            f"no per-record epsilon chained over {size} records meets delta={delta!r} ({why}): the group has no "
            f"epsilon at this delta"
        )
    chained = chained_group_epsilon(per_step, size, delta, accountant)
    by_rdp = chained if accountant == "rdp" else chained_group_epsilon(per_step, size, delta, "rdp")
    if chained is None:  # too little noise for any per-record epsilon of the grid: infinite, so calibration adds noise
        description = (
            f"epsilon = inf at delta = {delta:.3g} (neighbours: {per_step.neighbors or 'unspecified'}; {at_once}: no "
            f"per-record epsilon up to {_GROUP_EPSILONS[-1] / size:.3g} chained over {size} steps meets delta; "
            f"{per_step.composed()})"
        )
        return PricedEpsilon(math.inf, "chain", math.inf, None, description)
    record = (
        f"({chained.record_epsilon:.4g}, {log_delta_text(chained.log_record_delta)})-DP per record"
        f"{' (RDP bound and PLD)' if accountant == 'tightest' else ' (RDP bound)'}"
    )
    description = (
        f"epsilon = {chained.epsilon:.4g} at delta = {delta:.3g} (neighbours: {per_step.neighbors or 'unspecified'}; "
        f"{at_once}: the release's {record} chained over {size} steps, an upper bound, loose; the chain of the RDP "
        f"bound alone gives {by_rdp.epsilon if by_rdp else math.inf:.4g}; {per_step.composed()})"
    )
    return PricedEpsilon(chained.epsilon, "chain", by_rdp.epsilon if by_rdp else math.inf, None, description)


def log_delta_text(log_value: float) -> str:
    """A delta given by its log (``ChainedEpsilon.log_record_delta``): e^log_value as a number, or as 10^x where it
    is below the smallest float (0 for log 0)."""
    if log_value == -math.inf:
        return "0"
    return f"{math.exp(log_value):.3g}" if log_value > -700 else f"10^{log_value / math.log(10):.1f}"


def _meets(profile, size: int, epsilons: np.ndarray, log_target: float) -> tuple[np.ndarray, np.ndarray]:
    """Where the group's delta of each per-record eps is at most the target, and the release's log delta(eps)
    (``profile(epsilons)``)."""
    log_record = profile(epsilons)
    return log_record + _log_geometric_sum(size, epsilons) <= log_target, log_record


def _log_geometric_sum(size: int, epsilons: np.ndarray) -> np.ndarray:
    """log (1 + e^eps + ... + e^((n - 1) eps)) = log((e^(n eps) - 1) / (e^eps - 1)), each log(e^x - 1) written as x
    + log(1 - e^(-x)) so that nothing overflows at large eps; at eps = 0 the sum is n."""
    with np.errstate(divide="ignore", invalid="ignore"):  # eps = 0: the limit log n is taken below
        log_sum = (size - 1) * epsilons + np.log(-np.expm1(-size * epsilons)) - np.log(-np.expm1(-epsilons))
    return np.where(epsilons > 0, log_sum, math.log(size))


def _log_record_delta(ledger: Ledger, with_pld: bool) -> Callable[[np.ndarray], np.ndarray]:
    """log delta(eps) of ``ledger``'s release per record, as a function of eps: its RDP bound (with the
    approximate-RDP delta_t added, Zhu & Wang 2022, Lemma 17), or, ``with_pld``, the least of it and its PLD where it
    has one (``pate.privacy.pld``, built once for every eps asked): each is a bound at every eps, so their least is
    one."""
    pld = pld_profile([(entry.event, entry.count) for entry in ledger.history]) if with_pld else None

    def log_delta(epsilons: np.ndarray) -> np.ndarray:
        log_rdp = np.logaddexp(log_deltas_from_rdp(ledger.orders, ledger.rdp, epsilons), _log(ledger.delta_t))
        if pld is None:
            return log_rdp
        with np.errstate(divide="ignore"):  # a delta of 0: log 0 = -inf
            return np.minimum(log_rdp, np.log(pld(epsilons)))

    return log_delta


def _log(value: float) -> float:
    return math.log(value) if value > 0 else -math.inf
