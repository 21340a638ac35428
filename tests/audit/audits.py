"""The audit drivers: exact Renyi divergences, exact (epsilon, delta), and Monte Carlo lower bounds on epsilon, each
over every neighbouring pair of a set of inputs, compared with what the mechanism's ledger claims.

``claimed`` is the object whose price is claimed: the mechanism itself, or (for the power tests) a weakened claim
for the same mechanism. The law or the samples always come from the real mechanism.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

import numpy as np

from pate.privacy import Ledger
from tests.audit.divergence import aligned, epsilon_lower_bound, hockey_stick_epsilon, renyi_divergence

__all__ = [
    "AuditResult",
    "CONFIDENCE",
    "ORDERS",
    "claimed_epsilon",
    "exact_dp_audit",
    "exact_rdp_audit",
    "monte_carlo_audit",
]

ORDERS = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
RELATIVE_TOLERANCE = 1e-5  # exact laws: rounding, and the integration's error below 1e-7 (test_yardsticks.py)
CONFIDENCE = 0.999  # Monte Carlo: two-sided Clopper-Pearson at 99.9%, on samples not used to pick the event
SEARCH_CONFIDENCE = 0.9


@dataclass(frozen=True)
class AuditResult:
    """The worst pair found: measured divergence (or epsilon lower bound) against the claim, and where."""

    kind: str  # "renyi" (exact, worst over orders), "epsilon" (exact at delta) or "epsilon lower bound"
    measured: float
    claimed: float
    where: str

    @property
    def ratio(self) -> float:
        return self.measured / self.claimed if self.claimed > 0 else (0.0 if self.measured <= 0 else np.inf)

    @property
    def holds(self) -> bool:
        return self.ratio <= 1.0 + RELATIVE_TOLERANCE

    def __str__(self) -> str:
        return (
            f"{self.kind}: measured {self.measured:.6g} vs claimed {self.claimed:.6g} "
            f"(ratio {self.ratio:.4f}) at {self.where}"
        )


def claimed_epsilon(claimed, delta: float) -> float:
    """The claim's epsilon of one query at ``delta``: its own ``spent`` where it has one (top-k mechanisms,
    statements), else the ledger's ``Ledger().compose(claimed, count=1).get_epsilon(delta, "rdp")``."""
    if hasattr(claimed, "spent"):
        return float(claimed.spent(1, delta))
    return float(Ledger().compose(claimed, count=1).get_epsilon(delta, "rdp").epsilon)


def _pairs(inputs: Iterable, neighbours: Callable) -> Iterable[tuple]:
    for x in inputs:
        for y in neighbours(x):
            yield x, y


def _key(x) -> Hashable:
    return tuple(np.asarray(x).ravel().tolist()) if isinstance(x, np.ndarray) else x


# Laws computed in this process, by (law, input): a law is the real mechanism's and does not depend on the claim,
# so the power tests, which audit the same mechanisms against weakened claims, reuse them.
_LAWS: dict = {}


def _law_key(law: Callable) -> Hashable:
    """A partial of a law function over a (frozen, hashable) mechanism is keyed by its content; anything else by
    its identity (kept in the key, so that the identity is not reused)."""
    if isinstance(law, functools.partial):
        key = (law.func, law.args, tuple(sorted(law.keywords.items(), key=lambda item: item[0])))
        try:
            hash(key)
            return key
        except TypeError:
            pass
    return id(law), law


def _cached(law: Callable) -> Callable:
    """``law`` memoised in ``_LAWS``."""
    prefix = _law_key(law)

    def law_of(x):
        key = (prefix, _key(x))
        if key not in _LAWS:
            _LAWS[key] = law(x)
        return _LAWS[key]

    return law_of


def exact_rdp_audit(law: Callable, inputs: Iterable, neighbours: Callable, claimed, orders=ORDERS) -> AuditResult:
    """max over neighbouring pairs (x, x'), both directions, and orders of D_alpha(P_x || P_x') /
    claimed.rdp(alpha)."""
    curve = np.asarray(claimed.rdp(orders), np.float64)
    law_of = _cached(law)
    worst = AuditResult("renyi", 0.0, float(curve[0]), "no pair")
    for x, y in _pairs(inputs, neighbours):
        for first, second in ((x, y), (y, x)):
            divergence = renyi_divergence(*aligned(law_of(first), law_of(second)), orders)
            index = int(np.argmax(divergence / curve))
            if divergence[index] / curve[index] > worst.ratio:
                worst = AuditResult(
                    "renyi",
                    float(divergence[index]),
                    float(curve[index]),
                    f"order {orders[index]:g}, {_key(first)} vs {_key(second)}",
                )
    return worst


def exact_dp_audit(law: Callable, inputs: Iterable, neighbours: Callable, claimed, delta: float) -> AuditResult:
    """max over neighbouring pairs, both directions, of the exact epsilon at ``delta`` (hockey stick) against the
    claim's epsilon at the same delta."""
    claim = claimed_epsilon(claimed, delta)
    law_of = _cached(law)
    worst = AuditResult("epsilon", 0.0, claim, "no pair")
    for x, y in _pairs(inputs, neighbours):
        for first, second in ((x, y), (y, x)):
            epsilon = hockey_stick_epsilon(*aligned(law_of(first), law_of(second)), delta)
            if epsilon > worst.measured:
                worst = AuditResult("epsilon", epsilon, claim, f"delta {delta:g}, {_key(first)} vs {_key(second)}")
    return worst


def _output_counts(run: Callable, x, trials: int, rng: np.random.Generator) -> dict:
    """How often each output came out of ``trials`` runs of the mechanism on x (``run(x, trials, rng)`` returns
    one row of integers per run: the output's encoding)."""
    rows, counts = np.unique(np.asarray(run(x, trials, rng)), axis=0, return_counts=True)
    return {tuple(row.tolist()): int(count) for row, count in zip(rows, counts)}


# Monte Carlo measurements in this process, by the sampled mechanism and the search: the samples come from the real
# mechanism and do not depend on the claim, so the power tests (weakened claims) are judged on the same draws.
_MEASURED: dict = {}


def monte_carlo_audit(
    run: Callable,
    inputs: list,
    neighbours: Callable,
    claimed,
    delta: float,
    search_trials: int,
    confirm_trials: int,
    seed: int = 0,
    key: Hashable | None = None,
) -> AuditResult:
    """An epsilon lower bound at ``delta`` against the claim's epsilon at the same delta.

    Search: ``search_trials`` runs on every input; over every ordered neighbouring pair and every single output
    o, the bound of ``epsilon_lower_bound`` at ``SEARCH_CONFIDENCE`` on those runs picks the worst (pair, event)
    (a bound, not the raw ratio, so that an event seen a handful of times is not picked by chance). Confirm:
    ``confirm_trials`` fresh runs on that pair (a fresh seed, so the choice does not bias the bound), and the
    Clopper-Pearson bound of ``epsilon_lower_bound`` at ``CONFIDENCE``. ``key`` (hashable) names what ``run``
    samples, with the relation: given, the measurement is drawn once per process and judged against each claim."""
    if key is None:
        bound, where = _measure(run, inputs, neighbours, delta, search_trials, confirm_trials, seed)
    else:
        memo = (key, tuple(_key(x) for x in inputs), delta, search_trials, confirm_trials, seed)
        if memo not in _MEASURED:
            _MEASURED[memo] = _measure(run, inputs, neighbours, delta, search_trials, confirm_trials, seed)
        bound, where = _MEASURED[memo]
    return AuditResult("epsilon lower bound", bound, claimed_epsilon(claimed, delta), where)


def _measure(
    run: Callable, inputs: list, neighbours: Callable, delta: float, search_trials: int, confirm_trials: int, seed: int
) -> tuple[float, str]:
    """The search and the confirmation of :func:`monte_carlo_audit`: (the epsilon lower bound, where it was found)."""
    rng = np.random.default_rng(seed)
    counts = {_key(x): _output_counts(run, x, search_trials, rng) for x in inputs}
    best, choice = -np.inf, None
    for x, y in _pairs(inputs, neighbours):
        p, q = counts[_key(x)], counts.get(_key(y))
        if q is None:
            q = counts[_key(y)] = _output_counts(run, y, search_trials, rng)
        for output, hits in p.items():
            score = epsilon_lower_bound(hits, q.get(output, 0), search_trials, delta, SEARCH_CONFIDENCE)
            if score > best:
                best, choice = score, (x, y, output)
    x, y, output = choice
    fresh = np.random.default_rng(seed + 1)
    hits_x = _output_counts(run, x, confirm_trials, fresh).get(output, 0)
    hits_y = _output_counts(run, y, confirm_trials, fresh).get(output, 0)
    bound = epsilon_lower_bound(hits_x, hits_y, confirm_trials, delta, CONFIDENCE)
    return bound, f"delta {delta:g}, output {output}, {_key(x)} vs {_key(y)}, {hits_x} vs {hits_y} of {confirm_trials}"
