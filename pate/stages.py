"""The numpy stages of the pipeline: data, partition, queries, aggregate, and the evaluation of released labels.

The teacher and student stages live in ``teachers/stages.py`` and ``student/stages.py`` (they need
Lightning); ``pipeline/stages.py`` wires all of them into the stage graph (docs/architecture.md, section 2).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pate.artifacts import Artifact
from pate.data import (
    SPLITS, CelebAArrays, PublicSplit, generate_synthetic_celeba, load_celeba, partition_teachers, pool_size,
    split_public,
)
from pate.privacy import Ledger
from pate.votes import PackedVotes

log = logging.getLogger(__name__)

LEDGER_FILE = "ledger.json"
UNANSWERED = -1  # the k of an unanswered query, in aggregate.npz as in AggregationResult


# ----------------------------------------------------------------------------------------------- data
def data_identity(data_cfg: Mapping[str, Any], data: CelebAArrays) -> dict[str, Any]:
    """What identifies the decoded dataset in stage keys: its name, resolution and content fingerprint
    (``CelebAArrays.fingerprint``: labels, splits, file names and images) -- never its location on disk, so
    moving a dataset keeps the cache and editing it in place does not."""
    if not data.fingerprint:
        raise ValueError("the dataset has no content fingerprint; read it with load_data (pate.data.load_celeba)")
    return {"name": str(data_cfg["name"]), "image_size": int(data_cfg["image_size"]), "content": data.fingerprint}


def load_data(data_cfg: Mapping[str, Any], tensor_cache_dir: Path, progress: bool = True,
              check_splits: Callable[[np.ndarray], None] | None = None) -> CelebAArrays:
    """Generate the synthetic set on first use (when ``data.synthetic`` is set), then read it -- or real
    CelebA at ``data.root`` -- through the one CelebA reader into the memory-mapped tensor cache.
    ``check_splits(split codes)`` runs after the text files are read, before any image is decoded."""
    root = Path(data_cfg["root"]).expanduser()
    syn = data_cfg.get("synthetic")
    if syn is not None:
        generate_synthetic_celeba(
            root,
            num_images=int(syn["num_images"]),
            image_size=int(syn["image_size"]),
            split_fractions=tuple(syn["split_fractions"]),
            seed=int(syn["seed"]),
            num_workers=int(data_cfg.get("num_workers", 0)),
            progress=progress,
        )
    return load_celeba(
        root,
        image_size=int(data_cfg["image_size"]),
        cache_dir=tensor_cache_dir,
        num_workers=int(data_cfg.get("num_workers", 0)),
        progress=progress,
        check_splits=check_splits,
    )


# ------------------------------------------------------------------------------------------ partition
def check_partition_config(split: np.ndarray, num_teachers: int, num_queries: int, pool_fraction: float) -> None:
    """Fail before any decode or training when the split sizes (``split``: CelebA's split code per image, as
    read from list_eval_partition.txt) cannot satisfy the config."""
    sizes = {name: int(np.count_nonzero(np.asarray(split) == code)) for name, code in SPLITS.items()}
    for name in ("train", "test"):
        if sizes[name] == 0:
            raise ValueError(f"the {name} split is empty: no row of list_eval_partition.txt has code "
                             f"{SPLITS[name]} ({name}); the pipeline needs private training records and "
                             f"held-out public records")
    n_train = sizes["train"]
    if not 1 <= num_teachers <= n_train:
        raise ValueError(
            f"partition.num_teachers={num_teachers} but the private training split holds {n_train} records; "
            f"expected 1 <= num_teachers <= {n_train} (each teacher needs at least one record)"
        )
    n_test = sizes["test"]
    pool = pool_size(n_test, pool_fraction)
    if not 1 <= num_queries <= pool < n_test:
        raise ValueError(
            f"data.num_queries={num_queries} with data.pool_fraction={pool_fraction} of the held-out (test) split's "
            f"{n_test} records (a public pool of {pool}); expected 1 <= num_queries <= pool size < {n_test}, so "
            f"that the queries fit in the pool and some held-out records remain to evaluate the student"
        )


def build_partition(work: Path, data: CelebAArrays, num_teachers: int, seed: int) -> None:
    """Write ``partition.npz``: the teachers' disjoint parts of the private training split, concatenated,
    with offsets (part i is ``teacher_records[teacher_offsets[i]:teacher_offsets[i+1]]``)."""
    parts = partition_teachers(data.indices("train"), num_teachers, seed)
    offsets = np.cumsum([0] + [len(p) for p in parts])
    np.savez(work / "partition.npz", teacher_records=np.concatenate(parts), teacher_offsets=offsets)


def read_teacher_parts(art: Artifact) -> list[np.ndarray]:
    """The teachers' parts (private training rows, one array per teacher) of a partition artifact."""
    with np.load(art.file("partition.npz")) as z:
        records, offsets = z["teacher_records"], z["teacher_offsets"]
    return [records[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


def build_queries(work: Path, data: CelebAArrays, pool_fraction: float, num_queries: int, seed: int) -> None:
    """Write ``queries.npz``: the held-out test split cut into the student's public pool (``pool_indices``,
    ``pool_fraction`` of it), the public queries in it (``query_indices``) and the evaluation records
    (``eval_indices``, the rest). Its own stage, so that changing the queries keeps the teachers."""
    heldout = data.indices("test")
    split = split_public(heldout, pool_size(len(heldout), pool_fraction), num_queries, seed)
    np.savez(work / "queries.npz", query_indices=split.queries, pool_indices=split.pool,
             eval_indices=split.evaluation)


def read_queries(art: Artifact) -> PublicSplit:
    """The public pool, queries and evaluation records of a queries artifact."""
    with np.load(art.file("queries.npz")) as z:
        return PublicSplit(pool=z["pool_indices"], queries=z["query_indices"], evaluation=z["eval_indices"])


# ---------------------------------------------------------------------------------------------- votes
def read_votes(art: Artifact) -> dict[str, np.ndarray]:
    """The vote artifact: ``counts`` int32 [Q, L], ``bits`` packed uint8 [Q, T, ceil(L/8)],
    ``query_indices`` [Q], ``teacher_accuracy`` [T]."""
    with np.load(art.file("votes.npz")) as z:
        return {name: z[name] for name in z.files}


# ------------------------------------------------------------------------------------------ aggregate
def queries_within_budget(aggregator, num_queries: int, budget_epsilon: float | None, delta: float) -> int:
    """How many queries, answered in order, keep the ledger's epsilon (at ``delta``) within the budget.

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

    def cost(n: int) -> float:
        return Ledger().compose(aggregator, count=n).epsilon(delta)[0] if n else 0.0

    if cost(1) > budget_epsilon:
        raise ValueError(f"privacy.budget_epsilon={budget_epsilon:g} cannot pay for one query: one query of "
                         f"{aggregator.name} costs epsilon {cost(1):.4g} at delta={delta:g} (neighbours: "
                         f"{aggregator.neighbors}); raise the budget or the noise (privacy.target_epsilon)")
    if cost(num_queries) <= budget_epsilon:
        return num_queries
    lo, hi = 1, num_queries  # cost(lo) <= budget < cost(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cost(mid) <= budget_epsilon else (lo, mid)
    return lo


def build_aggregate(work: Path, aggregator, votes: Mapping[str, np.ndarray], num_labels: int, asked: int,
                    seed: int) -> None:
    """Release label sets for the first ``asked`` queries and record what they cost.

    Writes ``aggregate.npz`` (``labels`` bool [Q, L], ``answered`` bool [Q], ``k`` int [Q]: the released set's
    size, -1 where unanswered, as in ``AggregationResult``) and ``ledger.json`` (the cost events: the
    mathematics of one query, the relation and ``asked``). No epsilon is stored: :func:`replay_privacy` prices the
    events with the current accountant whenever the artifact is read. Queries past ``asked`` are not shown to
    the aggregator at all.
    """
    rng = np.random.default_rng(seed)
    counts = votes["counts"]
    q = counts.shape[0]
    labels = np.zeros((q, num_labels), dtype=bool)
    answered = np.zeros(q, dtype=bool)
    k = np.full(q, UNANSWERED, dtype=np.int64)
    if asked:
        needs_bits = getattr(aggregator, "requires_teacher_votes", False)
        batch = PackedVotes(votes["bits"][:asked], num_labels) if needs_bits else counts[:asked]
        res = aggregator(batch, rng=rng)
        labels[:asked], answered[:asked] = res.labels, res.answered
        k[:asked] = res.k
    np.savez(work / "aggregate.npz", labels=labels, answered=answered, k=k)
    Ledger().compose(aggregator, count=asked).save(work / LEDGER_FILE)


def replay_privacy(art: Artifact, delta: float) -> dict[str, Any]:
    """The privacy of an aggregate artifact, recomputed now: its ledger's cost events priced again by the
    current accountant (``Ledger.replay``), converted at ``delta``. Never read back from the artifact."""
    recorded = Ledger.load(art.file(LEDGER_FILE))
    ledger = Ledger.replay(recorded.history, orders=recorded.orders)
    asked = sum(event.count for event in ledger.history)
    relation = ledger.neighbors
    if not np.allclose(ledger.rdp, recorded.rdp, rtol=1e-12, atol=0):
        log.warning("the accountant's code changed since %s was built: its cost events now price at a different "
                    "RDP curve; reporting the replay with today's code", art.path)
    if asked:
        eps, order = ledger.epsilon(delta)
        description = ledger.describe(delta)
    else:
        eps, order = 0.0, float("nan")
        description = f"no query asked: epsilon = 0 at delta = {delta:g} (neighbours: {relation})"
    return {"epsilon": eps, "epsilon_order": order, "delta": delta, "neighbors": relation, "queries_asked": asked,
            "delta_t_total": ledger.delta_t, "description": description,
            "accounting": f"replayed from {len(ledger.history)} cost event(s) in {LEDGER_FILE} with the current "
                          f"accountant"}


def build_majority_labels(work: Path, votes: Mapping[str, np.ndarray]) -> None:
    """The teachers' non-private majority (label on iff more than half of the T teachers vote it), never
    released: the report's reference line for what noise costs. Same layout as ``build_aggregate``; no ledger,
    since nothing is released."""
    num_teachers = votes["bits"].shape[1]
    _write_reference(work, votes["counts"] > num_teachers / 2)


def build_true_labels(work: Path, truth: np.ndarray) -> None:
    """The true labels of the public queries (the student's ceiling), as a reference aggregate."""
    _write_reference(work, np.asarray(truth).astype(bool))


def _write_reference(work: Path, labels: np.ndarray) -> None:
    np.savez(work / "aggregate.npz", labels=labels, answered=np.ones(labels.shape[0], dtype=bool),
             k=labels.sum(axis=1))


def read_aggregate(art: Artifact) -> dict[str, np.ndarray]:
    """``labels``, ``answered`` and ``k`` of an aggregate (private or reference) artifact."""
    with np.load(art.file("aggregate.npz")) as z:
        return {name: z[name] for name in z.files}


# ------------------------------------------------------------------------------------------- evaluate
def label_metrics(released: np.ndarray, answered: np.ndarray, truth: np.ndarray) -> dict[str, float | None]:
    """Quality of the released label sets against the truth of the public queries, over answered queries.

    ``label_f1`` is the micro-averaged F1 over all (query, label) pairs, ``label_accuracy`` the fraction of
    correct (query, label) pairs. Both are None when no query was answered.
    """
    if not answered.any():
        return {"label_f1": None, "label_accuracy": None}
    pred, true = released[answered].astype(bool), truth[answered].astype(bool)
    tp = np.sum(pred & true)
    denom = pred.sum() + true.sum()
    return {
        "label_f1": float(2 * tp / denom) if denom else 1.0,
        "label_accuracy": float(np.mean(pred == true)),
    }


def majority_class_accuracy(eval_labels: np.ndarray) -> float:
    """Mean per-attribute accuracy of the best constant predictor on the evaluation split (each attribute's
    majority value there): the floor any useful student must clear. Computed on held-out labels so that
    reporting it reveals nothing about the private training split."""
    majority = eval_labels.mean(axis=0) > 0.5
    return float(np.mean(eval_labels.astype(bool) == majority))


__all__ = [
    "data_identity", "load_data", "check_partition_config", "build_partition", "read_teacher_parts", "build_queries",
    "read_queries", "read_votes", "queries_within_budget", "build_aggregate", "build_majority_labels",
    "build_true_labels", "read_aggregate",
    "replay_privacy",
    "label_metrics", "majority_class_accuracy",
]
