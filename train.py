"""Run the multi-label PATE pipeline: ``python train.py [group=option ...] [key=value ...]``.

    data -> features -> partition -> teachers -> votes -> aggregate -> student -> evaluate

(``features`` -- a frozen extractor fitted on public images only -- is built when ``teacher=heads`` or
``student=head`` reads it; CNN teachers and students read the images.)

Each stage is an artifact in the content-addressed cache (``pate.artifacts``) keyed by its own config and
its upstream keys: a run that changes only the aggregator, the noise, the target epsilon or the seed reuses
the trained teachers and their votes. Everything that can be checked without training -- the aggregator,
the models, the data root, split sizes, whether the target epsilon is reachable -- is checked first.
The run writes ``metrics.json`` into its Hydra run directory.
"""

from __future__ import annotations

import json
import logging
import platform
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from omegaconf import DictConfig, OmegaConf

from pate.artifacts import ArtifactStore, Stage, atomic_write_json, code_version
from pate.data import check_celeba_root
from pate.privacy import calibrate_noise
from pate.stages import (
    build_aggregate, build_partition, build_queries, build_reference_labels, check_partition_config, data_identity,
    label_metrics, load_data, majority_class_accuracy, queries_within_budget, read_aggregate, read_partition,
    read_queries, read_votes,
)
from pate.features import build_features, choose_fit_rows, read_features
from student.stages import build_head_student, build_student
from teachers.ensemble import train_teachers
from teachers.heads import check_heads_config
from teachers.stages import build_head_teachers, build_head_votes, build_teachers, build_votes

log = logging.getLogger("train")

REFERENCES = ("majority_vote", "true_labels")


def _plain(node) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def _instantiate(node: DictConfig, what: str):
    """``hydra.utils.instantiate`` with the config group named in the error."""
    try:
        return hydra.utils.instantiate(node)
    except InstantiationException as err:
        raise ValueError(f"cannot build the {what} from {_plain(node)}: {err}") from err


def method_name(cfg: DictConfig) -> str:
    """The aggregator's config name (``conf/aggregator/<name>.yaml``), or its class name outside Hydra."""
    if HydraConfig.initialized():
        return HydraConfig.get().runtime.choices.get("aggregator") or cfg.aggregator._target_.rsplit(".", 1)[-1]
    return cfg.aggregator._target_.rsplit(".", 1)[-1]


def prepare_aggregator(cfg: DictConfig):
    """Instantiate the aggregator; calibrate its noise when ``privacy.target_epsilon`` is set; count the
    queries the budget allows. Returns (aggregator, noise multiplier or None, queries asked)."""
    aggregator = _instantiate(cfg.aggregator, "aggregator (conf/aggregator)")
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
    return cfg.teacher.get("kind") == "heads" or cfg.student.get("kind") == "head"


def features_stage(cfg: DictConfig, extractor, ident: dict, data) -> Stage:
    """The public features: keyed by the data, the extractor's identity (settings, weights checksum) and the
    choice of its public fit images, so another extractor gives other features and retrains the teachers."""
    fit = cfg.features
    fit_rows = choose_fit_rows(data.indices(str(fit.fit_split)), fit.num_fit_images, int(fit.fit_seed))
    rows = np.concatenate([data.indices("train"), data.indices("test")])
    return Stage("features", {"data": ident, "extractor": extractor.identity(), "fit_split": str(fit.fit_split),
                              "num_fit_images": int(fit.num_fit_images), "fit_seed": int(fit.fit_seed)},
                 lambda work, _: build_features(work, extractor, data.images, fit_rows, rows, data.indices("train"),
                                                int(fit.fit_seed), progress=bool(cfg.get("progress", True))))


def teachers_stage(cfg: DictConfig, partition: Stage, features: Stage | None, data, parts, progress: bool) -> Stage:
    """The teacher ensemble: keyed by the teacher config and the partition (and, for heads, the features), not
    by anything downstream."""
    if cfg.teacher.get("kind") == "heads":
        return Stage("teachers", {"teacher": _plain(cfg.teacher)},
                     lambda work, up: build_head_teachers(work, cfg.teacher, read_features(up["features"]),
                                                          data.labels, parts, progress=progress),
                     {"partition": partition, "features": features})
    return Stage("teachers", {"teacher": _plain(cfg.teacher), "precision": str(cfg.trainer.precision)},
                 lambda work, _: build_teachers(work, cfg.teacher, cfg.trainer, data.images, data.labels, parts,
                                                progress=progress),
                 {"partition": partition})


def parse_shard(shard: str, num_teachers: int) -> range:
    """``"i/n"`` -> the teacher ids of shard i of n (every n-th teacher from i)."""
    try:
        index, count = (int(x) for x in str(shard).split("/"))
    except ValueError:
        index, count = -1, 0
    if not (count >= 1 and 0 <= index < count):
        raise ValueError(f"teacher_shard={shard!r}; expected 'i/n' with 0 <= i < n, e.g. teacher_shard=3/16")
    return range(index, num_teachers, count)


def train_teacher_shard(cfg: DictConfig, store: ArtifactStore, teachers: Stage, data, parts, progress: bool):
    """Train one shard of the teachers into the teachers stage's resumable build directory and stop.

    A cluster array job runs ``teacher_shard=0/n ... n-1/n`` in parallel (the cache directory on a shared
    file system); the next ordinary run finds every teacher there, skips their training and seals the
    artifact. Teachers are saved atomically one by one, so shards never see each other's partial files.
    """
    ids = parse_shard(cfg.teacher_shard, len(parts))
    if store.path(teachers).exists():
        log.info("teachers %s already complete; nothing to train for shard %s", teachers.key, cfg.teacher_shard)
    else:
        work = store.work_path(teachers)
        work.mkdir(parents=True, exist_ok=True)
        train_teachers(cfg.teacher, cfg.trainer, data.images, data.labels, parts, work, teacher_ids=list(ids),
                       progress=progress)
    return {"teacher_shard": str(cfg.teacher_shard), "teachers": teachers.key, "trained": len(ids)}


def run(cfg: DictConfig, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Run every stage (reusing cached artifacts) and write ``metrics.json`` into ``output_dir``."""
    output_dir = Path(output_dir if output_dir is not None else cfg.paths.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    progress = bool(cfg.get("progress", True))

    # ---- everything that can fail without training fails here
    aggregator, multiplier, asked = prepare_aggregator(cfg)
    if cfg.teacher.get("kind") == "heads":
        check_heads_config(cfg.teacher)
        if cfg.get("teacher_shard"):
            raise ValueError(f"teacher_shard is for CNN teachers (got teacher_shard={cfg.teacher_shard!r}); teacher=heads "
                             "fits all teachers in one process (seconds per hundred teachers): run without it")
    else:
        _instantiate(cfg.teacher.model, "teacher model (conf/teacher)")
    if cfg.student.get("kind") != "head":
        _instantiate(cfg.student.model, "student model (conf/student)")
    extractor = _instantiate(cfg.features.extractor, "feature extractor (conf/features)") if uses_features(cfg) \
        else None
    if cfg.data.get("synthetic") is None:
        check_celeba_root(cfg.data.root)
    cache = Path(cfg.paths.cache_dir)
    data = load_data(cfg.data, cache / "tensors", progress=progress)
    num_teachers, num_queries = int(cfg.partition.num_teachers), int(cfg.data.num_queries)
    check_partition_config(data, num_teachers, num_queries)
    delta, seed, num_labels = float(cfg.privacy.delta), int(cfg.seed), int(cfg.data.num_labels)

    # ---- the stage graph; nothing below is built until store.get asks for it
    store = ArtifactStore(cache)
    ident = data_identity(_plain(cfg.data))
    partition = Stage("partition", {"data": ident, "num_teachers": num_teachers, "seed": int(cfg.partition.seed)},
                      lambda work, _: build_partition(work, data, num_teachers, int(cfg.partition.seed)))
    queries = Stage("queries", {"data": ident, "num_queries": num_queries, "seed": int(cfg.data.query_seed)},
                    lambda work, _: build_queries(work, data, num_queries, int(cfg.data.query_seed)))
    features = features_stage(cfg, extractor, ident, data) if extractor is not None else None
    parts = read_partition(store.get(partition))
    if cfg.get("teacher_shard"):
        return train_teacher_shard(cfg, store, teachers_stage(cfg, partition, features, data, parts, progress), data,
                                   parts, progress)
    query_indices, eval_indices = read_queries(store.get(queries))
    teachers = teachers_stage(cfg, partition, features, data, parts, progress)
    if cfg.teacher.get("kind") == "heads":
        votes_stage = Stage("votes", {"format": 1, "accuracy_images": int(cfg.teacher.accuracy_images)},
                            lambda work, up: build_head_votes(work, up["teachers"].path, cfg.teacher,
                                                              read_features(up["features"]), parts, data.labels,
                                                              query_indices, eval_indices, progress=progress),
                            {"teachers": teachers, "queries": queries, "features": features})
    else:
        votes_stage = Stage("votes", {"format": 1},
                            lambda work, up: build_votes(work, up["teachers"].path, num_teachers, cfg.teacher,
                                                         cfg.trainer, data.images, data.labels, query_indices,
                                                         eval_indices, progress=progress),
                            {"teachers": teachers, "queries": queries})
    votes = read_votes(store.get(votes_stage))
    truth = data.labels[query_indices]

    def labelled(source: str) -> Stage:
        if source == "private":
            config = {"aggregator": cfg.aggregator._target_, "noise": aggregator.noise_parameters(),
                      "settings": _plain(cfg.aggregator), "asked": asked, "seed": seed, "delta": delta}
            return Stage("aggregate", config,
                         lambda work, _: build_aggregate(work, aggregator, votes, num_labels, asked, seed, delta),
                         {"votes": votes_stage})
        # the true labels depend on the queries only; the majority vote on the teachers' votes
        upstream = {"queries": queries} if source == "true_labels" else {"votes": votes_stage}
        return Stage("aggregate", {"reference": source},
                     lambda work, _: build_reference_labels(work, source, votes, truth, num_teachers), upstream)

    def student_of(labels_stage: Stage) -> dict[str, Any]:
        released = read_aggregate(store.get(labels_stage))
        if cfg.student.get("kind") == "head":
            stage = Stage("student", {"student": _plain(cfg.student), "seed": seed},
                          lambda work, up: build_head_student(work, cfg.student, read_features(up["features"]),
                                                              query_indices, released["labels"], released["answered"],
                                                              eval_indices, data.labels[eval_indices]),
                          {"labels": labels_stage, "features": features})
        else:
            stage = Stage("student", {"student": _plain(cfg.student), "precision": str(cfg.trainer.precision),
                                      "seed": seed},
                          lambda work, _: build_student(work, cfg.student, cfg.trainer, data.images, data.labels,
                                                        query_indices, released["labels"], released["answered"],
                                                        eval_indices, seed, work / "logs", progress=progress),
                          {"labels": labels_stage})
        student = json.loads(store.get(stage).file("student.json").read_text())
        return {"released": released, "student": student, "keys": {"aggregate": labels_stage.key,
                                                                   "student": stage.key}}

    main = student_of(labelled("private"))
    released, privacy = main["released"], main["released"]["privacy"]
    answered = released["answered"]
    metrics: dict[str, Any] = {
        "method": method_name(cfg),
        "aggregator": aggregator.name,
        "private": True,
        "neighbors": privacy["neighbors"],
        "delta": delta,
        "epsilon": privacy["epsilon"],
        "epsilon_order": privacy["epsilon_order"],
        "privacy": privacy["description"],
        "target_epsilon": cfg.privacy.target_epsilon,
        "budget_epsilon": cfg.privacy.budget_epsilon,
        "noise": aggregator.noise_parameters(),
        "noise_multiplier": multiplier,
        "seed": seed,
        "queries": num_queries,
        "queries_asked": asked,
        "answered": int(answered.sum()),
        "answered_fraction": float(answered.mean()),
        "mean_k": float(released["k"][answered].mean()) if answered.any() else None,
        **label_metrics(released["labels"], answered, truth),
        "student_accuracy": main["student"]["student_accuracy"],
        "student_f1": main["student"]["student_f1"],
        "student_train_size": main["student"]["student_train_size"],
        "teacher_accuracy": float(np.mean(votes["teacher_accuracy"])),
        "majority_class_accuracy": majority_class_accuracy(data.labels[eval_indices]),
        "num_teachers": num_teachers,
        "num_labels": num_labels,
        "data": str(cfg.data.name),
        "reference": None,
        "versions": {**code_version(), "torch": torch.__version__, "python": platform.python_version()},
        "artifacts": {"partition": partition.key, "queries": queries.key, "teachers": teachers.key,
                      "votes": votes_stage.key, **main["keys"],
                      **({"features": features.key} if features is not None else {})},
    }
    if cfg.get("references", False):
        # the floor every student must clear: it needs no teacher and no training
        metrics["reference"] = {"majority_class": {"student_accuracy": metrics["majority_class_accuracy"]}}
        for source in REFERENCES:
            ref = student_of(labelled(source))
            metrics["reference"][source] = {
                **label_metrics(ref["released"]["labels"], ref["released"]["answered"], truth),
                "student_accuracy": ref["student"]["student_accuracy"],
                "student_f1": ref["student"]["student_f1"],
            }
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
        f"teachers          mean accuracy {pct(m['teacher_accuracy'])} ({m['num_teachers']} teachers)",
        f"student           accuracy {pct(m['student_accuracy'])}, macro F1 {pct(m['student_f1'])} "
        f"(trained on {m['student_train_size']} released label sets)",
        f"baseline          majority class accuracy {pct(m['majority_class_accuracy'])}",
    ]
    return "results\n  " + "\n  ".join(lines)


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    metrics = run(cfg)
    return metrics.get("student_accuracy")  # the objective for Hydra sweepers that optimise


if __name__ == "__main__":
    main()
