"""PATE as a method: teachers trained on disjoint parts of the private data vote on the public queries, and a
configured aggregator (``conf/aggregator``) releases a label set per query.

    partition -> teachers -> votes -> aggregate

The teachers are ridge heads on the public features (``teacher=heads``) or CNNs (the Lightning loop or the
batched engine); the aggregator's noise is calibrated to ``privacy.target_epsilon`` when it is set, and the
queries answered stop where ``privacy.budget_epsilon`` would be exceeded.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pate.aggregate import queries_within_budget
from pate.artifacts import ArtifactStore, Stage
from pate.pipeline.checks import building, instantiate
from pate.pipeline.graph import aggregate_stage, partition_stage, reference_stage
from pate.pipeline.methods.base import Release, SharedStages, with_semi
from pate.privacy import DEFAULT_ORDERS, calibrate_noise
from pate.privacy.unit import privacy_unit
from pate.votes import read_votes

log = logging.getLogger("train")

__all__ = ["PATE", "method_name", "prepare_aggregator"]


def method_name(cfg: DictConfig) -> str:
    """The aggregator's config name (``conf/aggregator/<name>.yaml``, its class name outside Hydra), with
    ``+<student.semi.method>`` when the student learns from the unlabeled pool too: a report over both students
    shows them as separate methods."""
    name = cfg.aggregator._target_.rsplit(".", 1)[-1]
    if HydraConfig.initialized():
        name = HydraConfig.get().runtime.choices.get("aggregator") or name
    return with_semi(name, cfg)


def prepare_aggregator(cfg: DictConfig):
    """Instantiate the aggregator; calibrate its noise when ``privacy.target_epsilon`` is set; count the
    queries the budget allows. Returns (aggregator, noise multiplier or None, queries asked)."""
    aggregator = instantiate(cfg.aggregator, "aggregator")
    num_queries, delta = int(cfg.data.num_queries), float(cfg.privacy.delta)
    multiplier = None
    if cfg.privacy.target_epsilon is not None:
        # a data-dependent release proposes its bound from the target by its own public rules; the others scale
        # their noise until the data-independent epsilon meets it
        calibrate = getattr(aggregator, "calibrated", None) or functools.partial(calibrate_noise, aggregator)
        aggregator, multiplier = calibrate(float(cfg.privacy.target_epsilon), delta, num_queries)
        log.info("calibrated %s to epsilon=%g at delta=%g over %d queries (neighbours: %s, one neighbour: %s): noise "
                 "multiplier %.4f", aggregator.name, cfg.privacy.target_epsilon, delta, num_queries,
                 aggregator.neighbors, privacy_unit(PATE.contributor, aggregator.neighbors).text, multiplier)
    aggregator.rdp(DEFAULT_ORDERS)  # one that cannot price itself yet (no proposal, no target) says why, here
    asked = queries_within_budget(aggregator, num_queries, cfg.privacy.budget_epsilon, delta)
    if asked < num_queries:
        log.warning("privacy budget epsilon=%g at delta=%g (neighbours: %s, one neighbour: %s) allows %d of %d "
                    "queries; the other %d stay unanswered", cfg.privacy.budget_epsilon, delta, aggregator.neighbors,
                    privacy_unit(PATE.contributor, aggregator.neighbors).text, asked, num_queries,
                    num_queries - asked)
    return aggregator, multiplier, asked


class PATE:
    """The PATE method (module docstring). ``check`` builds and calibrates the aggregator and builds the teacher
    ensemble (``teacher.component``, pate/pipeline/teachers.py) once; the later steps use them."""

    contributor = "teacher"  # the aggregator sees teachers' votes: add_remove is teacher-level (pate.privacy.unit)

    def __init__(self):
        self.aggregator, self.multiplier, self.asked, self.teachers = None, None, 0, None

    def check(self, cfg: DictConfig) -> None:
        with building("privacy"):
            self.aggregator, self.multiplier, self.asked = prepare_aggregator(cfg)
        self.teachers = instantiate(cfg.teacher.component, "teacher.component")
        self.teachers.check(cfg)

    def uses_features(self, cfg: DictConfig) -> bool:
        return self.teachers.reads_features

    @property
    def records_per_teacher(self) -> tuple[int, str]:
        """(records each teacher's part must hold for the ensemble to fit, why), checked against the split before
        any decode."""
        return self.teachers.records_per_teacher

    def release(self, cfg: DictConfig, data, shared: SharedStages) -> Release:
        partition = partition_stage(cfg, data)
        teachers, votes = self.teachers.stages(cfg, data, partition, shared.features, shared.queries)
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
            # a diagnostic not covered by epsilon (pate.run_record.NOT_COVERED_BY_EPSILON lists it for every run)
            "teacher_accuracy": float(votes["teacher_accuracy"].mean()),
            "num_teachers": int(cfg.partition.num_teachers),
        }

    def references(self, cfg: DictConfig, data, release: Release, shared: SharedStages) -> dict[str, Stage]:
        """The teachers' non-private majority vote."""
        return {"majority_vote": reference_stage("majority_vote", data, release.stages["votes"], shared.queries)}

    def train_shard(self, cfg: DictConfig, store: ArtifactStore, release: Release, data) -> dict[str, Any]:
        """A cluster shard of the teachers (``teacher_shard=i/n``), by the teacher ensemble."""
        return self.teachers.train_shard(cfg, store, release.stages["teachers"], release.stages["partition"], data)
