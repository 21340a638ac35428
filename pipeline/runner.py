"""One run of the pipeline: check everything that can fail before training, build (or reuse) the stage graph's
artifacts, evaluate, and write ``metrics.json``."""

from __future__ import annotations

import json
import logging
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pate.artifacts import ArtifactStore, Stage, atomic_write_json, code_version
from pate.data import check_celeba_root
from pate.privacy import calibrate_noise
from pate.stages import (
    check_partition_config, data_identity, label_metrics, load_data, majority_class_accuracy, queries_within_budget,
    read_aggregate, read_queries, read_teacher_parts, read_votes, replay_privacy,
)
from pipeline.checks import UserError, building, check_config
from pipeline.stages import (
    REFERENCES, Dataset, aggregate_stage, features_stage, partition_stage, plain, queries_stage, reference_stage,
    student_stage, teachers_stage, views_stage, votes_stage,
)
from teachers.ensemble import train_teachers
from student.semi import SemiSupervision
from teachers.heads import check_heads_config
from training.recipe import Recipe
from training.trainer import check_trainer_config, device_of

log = logging.getLogger("train")

# metrics.json keys computed from the private teachers on evaluation images: diagnostics for the researcher,
# not outputs of the private release and not covered by its epsilon. A run that publishes results drops them.
NOT_COVERED_BY_EPSILON = ("teacher_accuracy",)


def instantiate(node: DictConfig, group: str):
    """``hydra.utils.instantiate``; an error is a one-line :class:`UserError` under the key ``group``."""
    with building(group, node):
        return hydra.utils.instantiate(node)


def method_name(cfg: DictConfig) -> str:
    """The aggregator's config name (``conf/aggregator/<name>.yaml``, its class name outside Hydra), with
    ``+<student.semi.method>`` when the student learns from the unlabeled pool too: a report over both students
    shows them as separate methods."""
    name = cfg.aggregator._target_.rsplit(".", 1)[-1]
    if HydraConfig.initialized():
        name = HydraConfig.get().runtime.choices.get("aggregator") or name
    semi = cfg.student.get("semi")
    return name if semi is None or semi.method == "supervised" else f"{name}+{semi.method}"


def prepare_aggregator(cfg: DictConfig):
    """Instantiate the aggregator; calibrate its noise when ``privacy.target_epsilon`` is set; count the
    queries the budget allows. Returns (aggregator, noise multiplier or None, queries asked)."""
    aggregator = instantiate(cfg.aggregator, "aggregator")
    num_queries, delta = int(cfg.data.num_queries), float(cfg.privacy.delta)
    multiplier = None
    if cfg.privacy.target_epsilon is not None:
        aggregator, multiplier = calibrate_noise(aggregator, float(cfg.privacy.target_epsilon), delta, num_queries)
        log.info("calibrated %s to epsilon=%g at delta=%g over %d queries (neighbours: %s): noise multiplier %.4f",
                 aggregator.name, cfg.privacy.target_epsilon, delta, num_queries, aggregator.neighbors, multiplier)
    asked = queries_within_budget(aggregator, num_queries, cfg.privacy.budget_epsilon, delta)
    if asked < num_queries:
        log.warning("privacy budget epsilon=%g at delta=%g (neighbours: %s) allows %d of %d queries; the other %d "
                    "stay unanswered", cfg.privacy.budget_epsilon, delta, aggregator.neighbors, asked, num_queries,
                    num_queries - asked)
    return aggregator, multiplier, asked


def uses_features(cfg: DictConfig) -> bool:
    """Whether the teachers or the student read the public features (``teacher=heads``, ``student=head``)."""
    return cfg.teacher.kind == "heads" or cfg.student.kind == "head"


@dataclass(frozen=True)
class Graph:
    """The stages of one run (nothing is built until ``ArtifactStore.get`` asks)."""

    partition: Stage
    queries: Stage
    features: Stage | None
    teachers: Stage
    votes: Stage
    aggregate: Stage
    views: Stage | None = None  # strong views of the pool for the head student's consistency method

    def keys(self) -> dict[str, str]:
        return {name: stage.key for name, stage in vars(self).items() if stage is not None}


def prepare(cfg: DictConfig) -> tuple[Graph, Dataset, Any, float | None, int]:
    """Everything that can fail without training fails here, as a one-line :class:`UserError` naming the key or
    the file: the plain keys (``check_config``), the aggregator and its calibration, the models, the trainer,
    the extractor, the data and the split sizes. Returns (graph, dataset, aggregator, multiplier, asked)."""
    check_config(cfg)
    with building("privacy"):
        aggregator, multiplier, asked = prepare_aggregator(cfg)
    if cfg.teacher.kind == "heads":
        with building("teacher", cfg.teacher):
            check_heads_config(cfg.teacher)
        if cfg.get("teacher_shard"):
            raise UserError(f"teacher_shard is for CNN teachers (got teacher_shard={cfg.teacher_shard!r}); "
                            "teacher=heads fits all teachers in one process (seconds per hundred teachers): run "
                            "without it")
    networks = [group for group in ("teacher", "student") if cfg[group].kind not in ("head", "heads")]
    for group in networks:
        with building(group, cfg[group]):
            recipe = Recipe.from_config(cfg[group], group)
        with building(f"{group}.model", cfg[group].model):
            recipe.make_net()  # a bad depth or width fails here, not after the data is decoded
    if networks:
        with building(None):
            check_trainer_config(cfg.trainer)
    with building("student.semi"):
        semi = SemiSupervision.from_config(cfg.student)
    extractor = instantiate(cfg.features.extractor, "features.extractor") if uses_features(cfg) else None
    if extractor is not None:
        with building(None):
            extractor.to(device_of(cfg.trainer))  # features on trainer.accelerator's device
    with building(None):  # the data code names the file or the key itself
        if cfg.data.get("synthetic") is None:
            check_celeba_root(cfg.data.root)
        arrays = load_data(cfg.data, Path(cfg.paths.cache_dir) / "tensors", progress=bool(cfg.progress),
                           check_splits=lambda split: check_partition_config(
                               split, int(cfg.partition.num_teachers), int(cfg.data.num_queries),
                               float(cfg.data.pool_fraction)))
    data = Dataset(arrays, data_identity(plain(cfg.data), arrays))
    partition, queries = partition_stage(cfg, data), queries_stage(cfg, data)
    features = features_stage(cfg, data, extractor) if extractor is not None else None
    teachers = teachers_stage(cfg, data, partition, features)
    votes = votes_stage(cfg, data, partition, teachers, queries, features)
    views = views_stage(cfg, data, extractor, features, queries) \
        if cfg.student.kind == "head" and semi.method == "consistency" else None
    graph = Graph(partition, queries, features, teachers, votes, aggregate_stage(cfg, aggregator, asked, votes),
                  views)
    return graph, data, aggregator, multiplier, asked


def parse_shard(shard: str, num_teachers: int) -> range:
    """``"i/n"`` -> the teacher ids of shard i of n (every n-th teacher from i)."""
    try:
        index, count = (int(x) for x in str(shard).split("/"))
    except ValueError:
        index, count = -1, 0
    if not (count >= 1 and 0 <= index < count):
        raise ValueError(f"teacher_shard={shard!r}; expected 'i/n' with 0 <= i < n, e.g. teacher_shard=3/16")
    return range(index, num_teachers, count)


def train_teacher_shard(cfg: DictConfig, store: ArtifactStore, graph: Graph, data: Dataset) -> dict[str, Any]:
    """Train one shard of the teachers into the teachers stage's resumable build directory and stop.

    A cluster array job runs ``teacher_shard=0/n ... n-1/n`` in parallel (the cache directory on a shared
    file system); the next ordinary run finds every teacher there, skips their training and seals the
    artifact. Teachers are saved atomically one by one, so shards never see each other's partial files.
    """
    parts = read_teacher_parts(store.get(graph.partition))
    ids = parse_shard(cfg.teacher_shard, len(parts))
    if store.path(graph.teachers).exists():
        log.info("teachers %s already complete; nothing to train for shard %s", graph.teachers.key, cfg.teacher_shard)
    else:
        work = store.work_path(graph.teachers)
        work.mkdir(parents=True, exist_ok=True)
        train_teachers(cfg.teacher, cfg.trainer, data.arrays.images, data.arrays.labels, parts, work,
                       teacher_ids=list(ids), progress=bool(cfg.progress))
    return {"teacher_shard": str(cfg.teacher_shard), "teachers": graph.teachers.key, "trained": len(ids)}


def student_result(cfg: DictConfig, store: ArtifactStore, graph: Graph, data: Dataset, labels: Stage
                   ) -> dict[str, Any]:
    """The released (or reference) labels of ``labels`` with their quality on the public queries, and the student
    trained on them."""
    student = student_stage(cfg, data, labels, graph.queries, graph.features, graph.views)
    released = read_aggregate(store.get(labels))
    query_indices = read_queries(store.get(graph.queries)).queries
    scores = json.loads(store.get(student).file("student.json").read_text())
    return {"released": released, "student": scores, "student_key": student.key,
            **label_metrics(released["labels"], released["answered"], data.arrays.labels[query_indices])}


def evaluate(cfg: DictConfig, store: ArtifactStore, graph: Graph, data: Dataset, aggregator, multiplier, asked
             ) -> dict[str, Any]:
    """The run's metrics: the privacy of the release (replayed from its cost events), the released labels'
    quality, the student's, the diagnostics and, with ``references=true``, the reference students."""
    delta = float(cfg.privacy.delta)
    main = student_result(cfg, store, graph, data, graph.aggregate)
    privacy = replay_privacy(store.get(graph.aggregate), delta)
    votes = read_votes(store.get(graph.votes))
    eval_indices = read_queries(store.get(graph.queries)).evaluation
    answered = main["released"]["answered"]
    metrics: dict[str, Any] = {
        "method": method_name(cfg),
        "aggregator": aggregator.name,
        "private": True,
        "neighbors": str(privacy["neighbors"]),
        "delta": delta,
        "epsilon": privacy["epsilon"],
        "epsilon_order": privacy["epsilon_order"],
        "privacy": privacy["description"],
        "privacy_accounting": privacy["accounting"],
        "target_epsilon": cfg.privacy.target_epsilon,
        "budget_epsilon": cfg.privacy.budget_epsilon,
        "noise": aggregator.noise_parameters(),
        "noise_multiplier": multiplier,
        "seed": int(cfg.seed),
        "queries": int(cfg.data.num_queries),
        "queries_asked": asked,
        "answered": int(answered.sum()),
        "answered_fraction": float(answered.mean()),
        "mean_k": float(main["released"]["k"][answered].mean()) if answered.any() else None,
        "label_f1": main["label_f1"],
        "label_accuracy": main["label_accuracy"],
        "student_accuracy": main["student"]["student_accuracy"],
        "student_f1": main["student"]["student_f1"],
        "student_train_size": main["student"]["student_train_size"],
        "student_semi": str(cfg.student.semi.method) if cfg.student.get("semi") is not None else "supervised",
        "student_unlabeled_size": main["student"].get("student_unlabeled_size", 0),
        "teacher_accuracy": float(votes["teacher_accuracy"].mean()),
        "not_covered_by_epsilon": {
            "keys": list(NOT_COVERED_BY_EPSILON),
            "why": "computed from the private teachers on evaluation images, a diagnostic outside the private "
                   "release; drop these keys before publishing a run",
        },
        "majority_class_accuracy": majority_class_accuracy(data.arrays.labels[eval_indices]),
        "num_teachers": int(cfg.partition.num_teachers),
        "num_labels": int(cfg.data.num_labels),
        "data": str(cfg.data.name),
        "reference": None,
        "versions": {**code_version(), "torch": torch.__version__, "python": platform.python_version()},
        "artifacts": {**graph.keys(), "student": main["student_key"]},
    }
    if cfg.get("references", False):
        # the floor every student must clear: it needs no teacher and no training
        metrics["reference"] = {"majority_class": {"student_accuracy": metrics["majority_class_accuracy"]}}
        for source in REFERENCES:
            ref = student_result(cfg, store, graph, data, reference_stage(source, data, graph.votes, graph.queries))
            metrics["reference"][source] = {"label_f1": ref["label_f1"], "label_accuracy": ref["label_accuracy"],
                                            "student_accuracy": ref["student"]["student_accuracy"],
                                            "student_f1": ref["student"]["student_f1"]}
    return metrics


def run(cfg: DictConfig, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Run every stage (reusing cached artifacts) and write ``metrics.json`` into ``output_dir``."""
    output_dir = Path(output_dir if output_dir is not None else cfg.paths.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    graph, data, aggregator, multiplier, asked = prepare(cfg)
    store = ArtifactStore(Path(cfg.paths.cache_dir))
    if cfg.get("teacher_shard"):
        return train_teacher_shard(cfg, store, graph, data)
    metrics = evaluate(cfg, store, graph, data, aggregator, multiplier, asked)
    atomic_write_json(output_dir / "metrics.json", metrics)
    log.info(summary(metrics))
    log.info("metrics written to %s", output_dir / "metrics.json")
    return metrics


def summary(m: dict[str, Any]) -> str:
    """A short human-readable account of a run (what the default run prints at its end)."""
    def pct(x):
        return "n/a" if x is None else f"{100 * x:.1f}%"

    lines = [
        f"aggregator        {m['aggregator']}",
        f"privacy           {m['privacy']}",
        f"answered          {m['answered']}/{m['queries']} queries ({pct(m['answered_fraction'])}), "
        f"mean k = {m['mean_k'] if m['mean_k'] is None else round(m['mean_k'], 2)}",
        f"released labels   F1 {pct(m['label_f1'])}, accuracy {pct(m['label_accuracy'])}",
        f"teachers          mean accuracy {pct(m['teacher_accuracy'])} ({m['num_teachers']} teachers; a "
        f"diagnostic, not covered by epsilon)",
        f"student           accuracy {pct(m['student_accuracy'])}, macro F1 {pct(m['student_f1'])} "
        f"(trained on {m['student_train_size']} released label sets"
        + (f" and {m['student_unlabeled_size']} unlabeled pool images, {m['student_semi']})"
           if m["student_unlabeled_size"] else ")"),
        f"baseline          majority class accuracy {pct(m['majority_class_accuracy'])}",
    ]
    return "results\n  " + "\n  ".join(lines)


__all__ = ["Graph", "evaluate", "instantiate", "prepare", "prepare_aggregator", "run", "summary", "uses_features"]
