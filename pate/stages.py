"""The numpy stages of the pipeline: data, partition, queries, aggregate, and the evaluation of released labels.

The teacher and student stages live in ``teachers/stages.py`` and ``student/stages.py`` (they need
Lightning); ``train.py`` wires all of them into the stage graph (DESIGN.md section 3).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pate.artifacts import Artifact, atomic_write_json
from pate.data import CelebAArrays, generate_synthetic_celeba, load_celeba, partition_teachers, split_public
from pate.privacy import Ledger
from pate.votes import PackedVotes

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------- data
def data_identity(data_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """What identifies the decoded dataset in stage keys: its source and resolution, not its location on disk
    for the synthetic set (it is fully determined by its generation parameters)."""
    ident = {"name": data_cfg["name"], "image_size": int(data_cfg["image_size"])}
    if data_cfg.get("synthetic") is not None:
        ident["synthetic"] = dict(data_cfg["synthetic"])
    else:
        ident["root"] = str(Path(data_cfg["root"]).expanduser().resolve())
    return ident


def load_data(data_cfg: Mapping[str, Any], tensor_cache_dir: Path, progress: bool = True) -> CelebAArrays:
    """Generate the synthetic set on first use (when ``data.synthetic`` is set), then read it -- or real
    CelebA at ``data.root`` -- through the one CelebA reader into the memory-mapped tensor cache."""
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
    )


# ------------------------------------------------------------------------------------------ partition
def check_partition_config(data: CelebAArrays, num_teachers: int, num_queries: int) -> None:
    """Fail before any training when the split sizes cannot satisfy the config."""
    n_train = len(data.indices("train"))
    if not 1 <= num_teachers <= n_train:
        raise ValueError(
            f"partition.num_teachers={num_teachers} but the private training split holds {n_train} records; "
            f"expected 1 <= num_teachers <= {n_train} (each teacher needs at least one record)"
        )
    n_test = len(data.indices("test"))
    if not 1 <= num_queries < n_test:
        raise ValueError(
            f"data.num_queries={num_queries} but the held-out (test) split holds {n_test} records; expected "
            f"1 <= num_queries < {n_test} so that some held-out records remain to evaluate the student"
        )


def build_partition(work: Path, data: CelebAArrays, num_teachers: int, seed: int) -> None:
    """Write ``partition.npz``: the teachers' disjoint parts of the private training split, concatenated,
    with offsets (part i is ``teacher_records[teacher_offsets[i]:teacher_offsets[i+1]]``)."""
    parts = partition_teachers(data.indices("train"), num_teachers, seed)
    offsets = np.cumsum([0] + [len(p) for p in parts])
    np.savez(work / "partition.npz", teacher_records=np.concatenate(parts), teacher_offsets=offsets)


def read_partition(art: Artifact) -> list[np.ndarray]:
    """The teacher parts of a partition artifact."""
    with np.load(art.file("partition.npz")) as z:
        records, offsets = z["teacher_records"], z["teacher_offsets"]
    return [records[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


def build_queries(work: Path, data: CelebAArrays, num_queries: int, seed: int) -> None:
    """Write ``queries.npz``: the public queries drawn from the held-out test split and the rest of that
    split, which evaluates the student. Its own stage, so that changing the queries keeps the teachers."""
    queries, evaluation = split_public(data.indices("test"), num_queries, seed)
    np.savez(work / "queries.npz", query_indices=queries, eval_indices=evaluation)


def read_queries(art: Artifact) -> tuple[np.ndarray, np.ndarray]:
    """(public query indices, evaluation indices) of a queries artifact."""
    with np.load(art.file("queries.npz")) as z:
        return z["query_indices"], z["eval_indices"]


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
    bisection over n finds the largest affordable count.
    """
    if budget_epsilon is None:
        return num_queries

    def cost(n: int) -> float:
        return Ledger().compose(aggregator, count=n).epsilon(delta)[0] if n else 0.0

    if cost(num_queries) <= budget_epsilon:
        return num_queries
    lo, hi = 0, num_queries  # cost(lo) <= budget < cost(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cost(mid) <= budget_epsilon else (lo, mid)
    return lo


def build_aggregate(work: Path, aggregator, votes: Mapping[str, np.ndarray], num_labels: int, asked: int,
                    seed: int, delta: float) -> None:
    """Release label sets for the first ``asked`` queries and account for them.

    Writes ``aggregate.npz`` (``labels`` bool [Q, L], ``answered`` bool [Q], ``k`` int [Q]),
    ``ledger.json`` (the composed RDP curve, saveable/loadable) and ``privacy.json`` (epsilon at ``delta``,
    the relation, the conversion order). Queries past ``asked`` are not shown to the aggregator at all.
    """
    rng = np.random.default_rng(seed)
    counts = votes["counts"]
    q = counts.shape[0]
    labels = np.zeros((q, num_labels), dtype=bool)
    answered = np.zeros(q, dtype=bool)
    k = np.zeros(q, dtype=np.int64)
    if asked:
        needs_bits = getattr(aggregator, "requires_teacher_votes", False)
        batch = PackedVotes(votes["bits"][:asked], num_labels) if needs_bits else counts[:asked]
        res = aggregator(batch, rng=rng)
        labels[:asked], answered[:asked] = res.labels, res.answered
        k[:asked] = np.where(res.answered, res.labels.sum(axis=1), 0)
    np.savez(work / "aggregate.npz", labels=labels, answered=answered, k=k)
    ledger = Ledger().compose(aggregator, count=asked)
    ledger.save(work / "ledger.json")
    eps, order = ledger.epsilon(delta) if asked else (0.0, float("nan"))
    atomic_write_json(work / "privacy.json", {
        "epsilon": eps, "epsilon_order": order, "delta": delta, "neighbors": aggregator.neighbors,
        "queries_asked": asked, "delta_t_total": ledger.delta_t, "description": ledger.describe(delta) if asked else
        f"no query asked: epsilon = 0 at delta = {delta:g} (neighbours: {aggregator.neighbors})",
    })


def build_reference_labels(work: Path, source: str, votes: Mapping[str, np.ndarray], truth: np.ndarray,
                           num_teachers: int) -> None:
    """Labels that cost no privacy budget because they are never released: the non-private teacher majority
    (label on iff more than half of the teachers vote it) or the true labels of the public queries. They
    give the report's reference lines; same artifact layout as ``build_aggregate``."""
    if source == "majority_vote":
        labels = votes["counts"] > num_teachers / 2
    elif source == "true_labels":
        labels = truth.astype(bool)
    else:
        raise ValueError(f"reference source={source!r}; expected 'majority_vote' or 'true_labels'")
    answered = np.ones(labels.shape[0], dtype=bool)
    np.savez(work / "aggregate.npz", labels=labels, answered=answered, k=labels.sum(axis=1))


def read_aggregate(art: Artifact) -> dict[str, Any]:
    with np.load(art.file("aggregate.npz")) as z:
        out: dict[str, Any] = {name: z[name] for name in z.files}
    if (art.path / "privacy.json").exists():
        out["privacy"] = json.loads(art.file("privacy.json").read_text())
    return out


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
    "data_identity", "load_data", "check_partition_config", "build_partition", "read_partition", "build_queries",
    "read_queries",
    "read_votes", "queries_within_budget", "build_aggregate", "build_reference_labels", "read_aggregate",
    "label_metrics", "majority_class_accuracy",
]
