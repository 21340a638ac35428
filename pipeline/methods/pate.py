"""PATE as a method: teachers trained on disjoint parts of the private data vote on the public queries, and a
configured aggregator (``conf/aggregator``) releases a label set per query.

    partition -> teachers -> votes -> aggregate

The teachers are ridge heads on the public features (``teacher=heads``) or CNNs (the Lightning loop or the
batched engine); the aggregator's noise is calibrated to ``privacy.target_epsilon`` when it is set, and the
queries answered stop where ``privacy.budget_epsilon`` would be exceeded.
"""

from __future__ import annotations

import logging
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pate.aggregate import queries_within_budget
from pate.artifacts import ArtifactStore, Stage
from pate.data.partition import read_teacher_parts
from pate.privacy import calibrate_noise
from pate.votes import read_votes
from pipeline.checks import UserError, building
from pipeline.graph import aggregate_stage, partition_stage, reference_stage, teachers_stage, votes_stage
from pipeline.methods.base import Release, SharedStages
from teachers.ensemble import train_teachers
from teachers.heads import check_heads_config

log = logging.getLogger("train")

__all__ = ["PATE", "method_name", "prepare_aggregator"]

# metrics.json keys computed from the private teachers on evaluation images: diagnostics for the researcher,
# not outputs of the private release and not covered by its epsilon. A run that publishes results drops them.
NOT_COVERED_BY_EPSILON = ("teacher_accuracy",)


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
    with building("aggregator", cfg.aggregator):
        aggregator = hydra.utils.instantiate(cfg.aggregator)
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


class PATE:
    """The PATE method (module docstring). ``check`` builds and calibrates the aggregator once; the later steps
    use it."""

    def __init__(self):
        self.aggregator, self.multiplier, self.asked = None, None, 0

    def check(self, cfg: DictConfig) -> None:
        with building("privacy"):
            self.aggregator, self.multiplier, self.asked = prepare_aggregator(cfg)
        if cfg.teacher.kind == "heads":
            with building("teacher", cfg.teacher):
                check_heads_config(cfg.teacher)
            if cfg.get("teacher_shard"):
                raise UserError(f"teacher_shard is for CNN teachers (got teacher_shard={cfg.teacher_shard!r}); "
                                "teacher=heads fits all teachers in one process (seconds per hundred teachers): run "
                                "without it")

    def uses_features(self, cfg: DictConfig) -> bool:
        return cfg.teacher.kind == "heads"

    def release(self, cfg: DictConfig, data, shared: SharedStages) -> Release:
        partition = partition_stage(cfg, data)
        teachers = teachers_stage(cfg, data, partition, shared.features)
        votes = votes_stage(cfg, data, partition, teachers, shared.queries, shared.features)
        aggregate = aggregate_stage(cfg, self.aggregator, self.asked, votes)
        return Release(aggregate, {"partition": partition, "teachers": teachers, "votes": votes,
                                   "aggregate": aggregate})

    def metrics(self, cfg: DictConfig, store: ArtifactStore, release: Release) -> dict[str, Any]:
        votes = read_votes(store.get(release.stages["votes"]))
        return {
            "method": method_name(cfg),
            "aggregator": self.aggregator.name,
            "target_epsilon": cfg.privacy.target_epsilon,
            "budget_epsilon": cfg.privacy.budget_epsilon,
            "noise": self.aggregator.noise_parameters(),
            "noise_multiplier": self.multiplier,
            "queries_asked": self.asked,
            "teacher_accuracy": float(votes["teacher_accuracy"].mean()),
            "not_covered_by_epsilon": {
                "keys": list(NOT_COVERED_BY_EPSILON),
                "why": "computed from the private teachers on evaluation images, a diagnostic outside the private "
                       "release; drop these keys before publishing a run",
            },
            "num_teachers": int(cfg.partition.num_teachers),
        }

    def references(self, cfg: DictConfig, data, release: Release, shared: SharedStages) -> dict[str, Stage]:
        """The teachers' non-private majority vote."""
        return {"majority_vote": reference_stage("majority_vote", data, release.stages["votes"], shared.queries)}

    def train_shard(self, cfg: DictConfig, store: ArtifactStore, release: Release, data) -> dict[str, Any]:
        """Train one shard of the teachers into the teachers stage's resumable build directory and stop.

        A cluster array job runs ``teacher_shard=0/n ... n-1/n`` in parallel (the cache directory on a shared
        file system); the next ordinary run finds every teacher there, skips their training and seals the
        artifact. Teachers are saved atomically one by one, so shards never see each other's partial files.
        """
        teachers = release.stages["teachers"]
        parts = read_teacher_parts(store.get(release.stages["partition"]))
        ids = parse_shard(cfg.teacher_shard, len(parts))
        if store.path(teachers).exists():
            log.info("teachers %s already complete; nothing to train for shard %s", teachers.key, cfg.teacher_shard)
        else:
            work = store.work_path(teachers)
            work.mkdir(parents=True, exist_ok=True)
            train_teachers(cfg.teacher, cfg.trainer, data.arrays.images, data.arrays.labels, parts, work,
                           teacher_ids=list(ids), progress=bool(cfg.progress))
        return {"teacher_shard": str(cfg.teacher_shard), "teachers": teachers.key, "trained": len(ids)}


def parse_shard(shard: str, num_teachers: int) -> range:
    """``"i/n"`` -> the teacher ids of shard i of n (every n-th teacher from i)."""
    try:
        index, count = (int(x) for x in str(shard).split("/"))
    except ValueError:
        index, count = -1, 0
    if not (count >= 1 and 0 <= index < count):
        raise ValueError(f"teacher_shard={shard!r}; expected 'i/n' with 0 <= i < n, e.g. teacher_shard=3/16")
    return range(index, num_teachers, count)
