"""The aggregate artifact: the labels an aggregator released for the public queries, and the cost events that
price them (``ledger.json``); the reference labels (never released) share its layout.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from dp_accounting import SelfComposedDpEvent

from pate.artifacts import Artifact, atomic_write_json
from pate.privacy import ACCOUNTANT_TEXT, Ledger
from pate.votes import PackedVotes

log = logging.getLogger(__name__)

LEDGER_FILE = "ledger.json"
# the same release priced otherwise, beside the ledger: diagnostics, never the run's epsilon
DIAGNOSTIC_LEDGERS = {
    "data_dependent": "ledger_data_dependent.json",
    "data_independent": "ledger_data_independent.json",
}
DETAILS_FILE = "details.json"
UNANSWERED = -1  # the k of an unanswered query, in aggregate.npz as in AggregationResult

__all__ = [
    "DIAGNOSTIC_LEDGERS",
    "LEDGER_FILE",
    "UNANSWERED",
    "build_aggregate",
    "release_ledger",
    "build_majority_labels",
    "build_true_labels",
    "queries_within_budget",
    "read_aggregate",
    "replay_privacy",
    "write_reference",
    "write_release",
]


def queries_within_budget(
    aggregator, num_queries: int, budget_epsilon: float | None, delta: float, accountant: str = "tightest"
) -> int:
    """How many queries, answered in order, keep the ledger's epsilon (at ``delta``, by ``accountant``:
    ``Ledger.get_epsilon``) within the budget.

    Every query asked is paid for whether or not it is answered (the selection and the test both look at
    the votes), so the cost of n queries is n times the per-query curve; epsilon is monotone in n, so a
    bisection over n finds the largest affordable count. A budget that is not a positive number, or that
    cannot pay for one query, raises ``ValueError`` naming ``privacy.budget_epsilon``: a run that could answer
    nothing is refused before any data is read or any teacher trained.
    """
    if budget_epsilon is None:
        return num_queries
    if isinstance(budget_epsilon, bool) or not isinstance(budget_epsilon, (int, float)) or not budget_epsilon > 0:
        raise ValueError(f"privacy.budget_epsilon={budget_epsilon!r}; expected a number > 0 (or null: no budget)")

    if not aggregator.priced_per_query:
        raise ValueError(
            f"privacy.budget_epsilon={budget_epsilon!r}: {aggregator.name} is priced as one release of the "
            f"whole batch (its epsilon is its proposal's, whatever the number of queries); set "
            f"privacy.target_epsilon instead and leave privacy.budget_epsilon null"
        )

    def cost(n: int) -> float:
        return release_ledger(aggregator, n).get_epsilon(delta, accountant).epsilon if n else 0.0

    one = cost(1)  # priced once: a PLD costs up to seconds
    if one > budget_epsilon:
        raise ValueError(
            f"privacy.budget_epsilon={budget_epsilon:g} cannot pay for one query: one query of "
            f"{aggregator.name} costs epsilon {one:.4g} at delta={delta:g} by the {accountant} "
            f"accountant (neighbours: "
            f"{aggregator.neighbors}); raise the budget or the noise (privacy.target_epsilon)"
        )
    if cost(num_queries) <= budget_epsilon:
        return num_queries
    lo, hi = 1, num_queries  # cost(lo) <= budget < cost(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cost(mid) <= budget_epsilon else (lo, mid)
    return lo


def release_ledger(aggregator, asked: int) -> Ledger:
    """The cost events of ``aggregator`` answering ``asked`` queries: ``asked`` runs of its per-query event, or one
    release of the whole batch for an aggregator with ``priced_per_query = False`` (a data-dependent release whose
    proposal covers every query at once)."""
    return Ledger().compose(aggregator, count=asked if aggregator.priced_per_query else int(asked > 0))


def build_aggregate(
    work: Path, aggregator, votes: Mapping[str, np.ndarray], num_labels: int, asked: int, rng: np.random.Generator
) -> None:
    """Release label sets for the first ``asked`` queries, with every random number drawn from ``rng`` (the
    run's noise source decides whether it is seeded or secret: pate/pipeline/noise.py), and record what they cost.

    Writes ``aggregate.npz`` (``labels`` bool [Q, L], ``answered`` bool [Q], ``k`` int [Q]: the released set's
    size, -1 where unanswered, as in ``AggregationResult``; ``released`` bool [Q, L] when the aggregator releases
    some labels of a query and not others) and ``ledger.json`` (the cost events: the mathematics of one query, the
    relation and ``asked``; ``release_ledger``). No epsilon is stored: :func:`replay_privacy` prices the events with
    the current accountant whenever the artifact is read. An aggregator that measures its release otherwise too
    (``details["data_dependent"]``, ``details["data_independent"]``: cost events) gets those priced beside it as
    diagnostics (``DIAGNOSTIC_LEDGERS``), and its other details in ``details.json``. Queries past ``asked`` are not
    shown to the aggregator at all.
    """
    counts = votes["counts"]
    q = counts.shape[0]
    labels = np.zeros((q, num_labels), dtype=bool)
    answered = np.zeros(q, dtype=bool)
    k = np.full(q, UNANSWERED, dtype=np.int64)
    released, diagnostics, details = None, {}, {}
    if asked:
        batch = PackedVotes(votes["bits"][:asked], num_labels) if aggregator.requires_teacher_votes else counts[:asked]
        res = aggregator(batch, rng=rng)
        labels[:asked], answered[:asked] = res.labels, res.answered
        k[:asked] = res.k
        if res.released is not None:
            released = np.zeros((q, num_labels), dtype=bool)
            released[:asked] = res.released
        details = dict(res.details)
        for name in DIAGNOSTIC_LEDGERS:
            if name in details:
                event, count = details.pop(name), 1
                if isinstance(event, SelfComposedDpEvent):  # recorded as its queries, so the line counts them
                    event, count = event.event, event.count
                diagnostics[name] = Ledger().compose_event(
                    event, count=count, name=aggregator.name, neighbors=aggregator.neighbors
                )
    write_release(work, labels, answered, k, release_ledger(aggregator, asked), released, diagnostics, details)


def write_release(
    work: Path,
    labels: np.ndarray,
    answered: np.ndarray,
    k: np.ndarray,
    ledger: Ledger,
    released: np.ndarray | None = None,
    diagnostics: Mapping[str, Ledger] | None = None,
    details: Mapping[str, Any] | None = None,
) -> None:
    """The aggregate artifact's format, for every method: ``aggregate.npz`` (``labels`` bool [Q, L], ``answered``
    bool [Q], ``k`` int [Q], -1 where unanswered, and optionally ``released`` bool [Q, L]: the labels released, the
    others missing) and ``ledger.json``, the cost events of everything the method released (epsilon is replayed
    from them, never stored); optionally ``diagnostics`` (``DIAGNOSTIC_LEDGERS`` name -> ledger) and ``details``
    (JSON)."""
    labels, answered, k = np.asarray(labels, dtype=bool), np.asarray(answered, dtype=bool), np.asarray(k, np.int64)
    if labels.ndim != 2 or answered.shape != (labels.shape[0],) or k.shape != answered.shape:
        raise ValueError(
            f"a release needs labels [Q, L], answered [Q] and k [Q], got shapes {labels.shape}, "
            f"{answered.shape}, {k.shape}"
        )
    if labels[~answered].any() or np.any(k[~answered] != UNANSWERED):
        raise ValueError("an unanswered query must release no label and k = -1")
    arrays = {"labels": labels, "answered": answered, "k": k}
    if released is not None:
        released = np.asarray(released, dtype=bool)
        if released.shape != labels.shape or labels[~released].any() or np.any(released.any(axis=1) != answered):
            raise ValueError(
                "released [Q, L] must mark every released label, and a query is answered iff it releases a label"
            )
        arrays["released"] = released
    np.savez(work / "aggregate.npz", **arrays)
    ledger.save(work / LEDGER_FILE)
    for name, diagnostic in (diagnostics or {}).items():
        diagnostic.save(work / DIAGNOSTIC_LEDGERS[name])
    if details:
        atomic_write_json(work / DETAILS_FILE, details)


def replay_privacy(art: Artifact, delta: float, accountant: str = "tightest") -> dict[str, Any]:
    """The privacy of an aggregate artifact, recomputed now: its ledger's cost events priced again by the
    current accountants (``Ledger.replay``) at ``delta``. ``epsilon`` is by ``accountant`` (``Ledger.get_epsilon``:
    ``"tightest"``, the least valid epsilon, or ``"rdp"``), ``epsilon_accountant`` names the one that gave it
    ("rdp", "gdp" or "pld"), and ``epsilon_rdp`` (with ``epsilon_order``) is the RDP bound beside it. Never read
    back from the artifact."""
    recorded = Ledger.load(art.file(LEDGER_FILE))
    ledger = Ledger.replay(recorded.history, orders=recorded.orders, group_size=recorded.group_size)
    if ledger.data_dependent:
        # `epsilon` is always a DP guarantee: a raw data-dependent bound is a diagnostic until it is released
        # privately, and a method that records one must also record (and report) that release.
        raise ValueError(
            f"{art.file(LEDGER_FILE)} composes a data-dependent RDP bound, which is not by itself a DP "
            f"guarantee: it cannot be reported as the run's epsilon"
        )
    asked = sum(event.count for event in ledger.history)
    relation = ledger.neighbors
    if not np.allclose(ledger.rdp, recorded.rdp, rtol=1e-12, atol=0):
        log.warning(
            "the accountant's code changed since %s was built: its cost events now price at a different "
            "RDP curve; reporting the replay with today's code",
            art.path,
        )
    if asked:
        priced = ledger.get_epsilon(delta, accountant)
        eps, by, rdp, order, description = (
            priced.epsilon,
            priced.accountant,
            priced.rdp,
            priced.order,
            priced.description,
        )
    else:
        rdp, order, eps, by = 0.0, float("nan"), 0.0, "rdp"
        description = f"no query asked: epsilon = 0 at delta = {delta:g} (neighbours: {relation})"
    result = {
        "epsilon": eps,
        "epsilon_accountant": by,
        "epsilon_rdp": rdp,
        "epsilon_order": order,
        "delta": delta,
        "neighbors": relation,
        "queries_asked": asked,
        "delta_t_total": ledger.delta_t,
        "description": description,
        "accounting": f"replayed from {len(ledger.history)} cost event(s) in {LEDGER_FILE} with the current "
        f"accountants ({accountant}: {ACCOUNTANT_TEXT[by]})",
    }
    for name, file in DIAGNOSTIC_LEDGERS.items():
        if art.has(file):
            diagnostic = Ledger.replay(Ledger.load(art.file(file)).history, neighbors=relation)
            priced = diagnostic.get_epsilon(delta, "rdp")
            result[f"epsilon_{name}"], result[f"privacy_{name}"] = priced.epsilon, priced.description
    if art.has(DETAILS_FILE):
        result["details"] = json.loads(art.file(DETAILS_FILE).read_text())
    return result


def build_majority_labels(work: Path, votes: Mapping[str, np.ndarray]) -> None:
    """The teachers' non-private majority (label on iff more than half of the T teachers vote it), never
    released: the report's reference line for what noise costs. Same layout as ``build_aggregate``; no ledger,
    since nothing is released."""
    num_teachers = votes["bits"].shape[1]
    write_reference(work, votes["counts"] > num_teachers / 2)


def build_true_labels(work: Path, truth: np.ndarray) -> None:
    """The true labels of the public queries (the student's ceiling), as a reference aggregate."""
    write_reference(work, np.asarray(truth).astype(bool))


def write_reference(work: Path, labels: np.ndarray) -> None:
    """Reference labels bool [Q, L], every query answered, in the aggregate's layout and without a ledger: labels
    never released (a noise-free limit, the majority vote, the true labels)."""
    np.savez(work / "aggregate.npz", labels=labels, answered=np.ones(labels.shape[0], dtype=bool), k=labels.sum(axis=1))


def read_aggregate(art: Artifact) -> dict[str, np.ndarray]:
    """``labels``, ``answered``, ``k`` and ``released`` (bool [Q, L]: every label of an answered query unless the
    aggregator released some labels only) of an aggregate (private or reference) artifact."""
    with np.load(art.file("aggregate.npz")) as z:
        arrays = {name: z[name] for name in z.files}
    if "released" not in arrays:
        arrays["released"] = np.repeat(arrays["answered"][:, None], arrays["labels"].shape[1], axis=1)
    return arrays
