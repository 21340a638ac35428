"""PATE as a method: teachers trained on disjoint parts of the private data vote on the public queries, and a
configured aggregator (``conf/aggregator``) releases a label set per query.

    partition -> teachers -> votes -> aggregate

The teachers are ridge heads on the public features (``teacher=heads``) or CNNs (the Lightning loop or the
batched engine); the aggregator's noise is calibrated to ``privacy.target_epsilon`` when it is set, and the
queries answered stop where ``privacy.budget_epsilon`` would be exceeded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pate.aggregate import queries_within_budget, release_ledger
from pate.artifacts import ArtifactStore, Stage
from pate.pipeline.checks import building, instantiate
from pate.pipeline.graph import aggregate_stage, partition_stage, plain, reference_stage
from pate.pipeline.methods.base import Method, Release, RunSettings, SharedStages, method_settings
from pate.pipeline.teachers import HeadTeachers, NetworkTeachers, teacher_component
from pate.privacy import DEFAULT_ORDERS
from pate.privacy.unit import privacy_unit
from pate.votes import read_votes

log = logging.getLogger("train")

__all__ = ["PATE", "aggregator_name", "prepare_aggregator"]


def aggregator_name(cfg: DictConfig) -> str:
    """The aggregator's config name (``conf/aggregator/<name>.yaml``; its class name outside Hydra)."""
    name = cfg.aggregator._target_.rsplit(".", 1)[-1]
    if HydraConfig.initialized():
        name = HydraConfig.get().runtime.choices.get("aggregator") or name
    return name


def prepare_aggregator(cfg: DictConfig, unit: str = "record"):
    """Instantiate the aggregator; calibrate its noise when ``privacy.target_epsilon`` is set; count the
    queries the budget allows, both by ``privacy.accountant``; the log lines name the run's privacy ``unit`` (as
    resolved, ``RunSettings.unit``). Returns (aggregator, noise multiplier or None, queries asked)."""
    aggregator = instantiate(cfg.aggregator, "aggregator")
    num_queries, delta = int(cfg.data.num_queries), float(cfg.privacy.delta)
    accountant = str(cfg.privacy.accountant)
    multiplier = None
    if cfg.privacy.target_epsilon is not None:
        # a data-dependent release proposes its bound from the target by its own public rules; the others scale
        # their noise until the data-independent epsilon meets it (pate.aggregators.Aggregator.calibrated)
        aggregator, multiplier = aggregator.calibrated(
            float(cfg.privacy.target_epsilon), delta, num_queries, accountant
        )
        log.info(
            "calibrated %s to epsilon=%g at delta=%g over %d queries by the %s accountant (neighbours: %s, one "
            "neighbour: %s): noise multiplier %.4f",
            aggregator.name,
            cfg.privacy.target_epsilon,
            delta,
            num_queries,
            accountant,
            aggregator.neighbors,
            privacy_unit(PATE.contributor, aggregator.neighbors, unit).text,
            multiplier,
        )
    aggregator.rdp(DEFAULT_ORDERS)  # one that cannot price itself yet (no proposal, no target) says why, here
    asked = queries_within_budget(aggregator, num_queries, cfg.privacy.budget_epsilon, delta, accountant)
    if asked < num_queries:
        log.warning(
            "privacy budget epsilon=%g at delta=%g (neighbours: %s, one neighbour: %s) allows %d of %d "
            "queries; the other %d stay unanswered",
            cfg.privacy.budget_epsilon,
            delta,
            aggregator.neighbors,
            privacy_unit(PATE.contributor, aggregator.neighbors, unit).text,
            asked,
            num_queries,
            num_queries - asked,
        )
    return aggregator, multiplier, asked


@dataclass(frozen=True)
class PATE(Method):
    """The PATE method (module docstring): the calibrated ``aggregator`` answering the first ``asked`` queries with
    its noise ``multiplier`` (None without a target), the teacher ensemble (``teacher.component``, built by
    ``teacher_component`` in pate/pipeline/teachers.py), the partition's ``num_teachers`` and ``partition_seed``,
    the aggregator's config ``name`` and ``settings`` (in reports and in the aggregate's key) and the run's
    settings. :meth:`from_config` decides them all before any data is read."""

    contributor: ClassVar[str] = "teacher"  # the aggregator sees teachers' votes: add_remove is teacher-level

    aggregator: Any
    multiplier: float | None
    asked: int
    teachers: HeadTeachers | NetworkTeachers
    num_teachers: int
    partition_seed: int
    name: str
    settings: dict[str, Any]
    run: RunSettings

    @classmethod
    def from_config(cls, cfg: DictConfig, run: RunSettings) -> PATE:
        """The aggregator built and calibrated (:func:`prepare_aggregator`), the teacher ensemble built with its
        settings (``teacher_component``), the partition's settings read: PATE's own node has no keys."""
        method_settings(cfg.method)  # PATE's own node has no keys: its settings are its groups
        with building("privacy"):
            aggregator, multiplier, asked = prepare_aggregator(cfg, run.unit)
        return cls(
            aggregator,
            multiplier,
            asked,
            teacher_component(cfg),
            int(cfg.partition.num_teachers),
            int(cfg.partition.seed),
            aggregator_name(cfg),
            plain(cfg.aggregator),
            run,
        )

    @property
    def reads_features(self) -> bool:
        """Whether the teachers read the public features (ridge heads) rather than the images."""
        return self.teachers.reads_features

    @property
    def records_per_teacher(self) -> tuple[int, str]:
        """(records each teacher's part must hold for the ensemble to fit, why), checked against the split before
        any decode."""
        return self.teachers.records_per_teacher

    def release(self, data, shared: SharedStages) -> Release:
        """partition -> teachers -> votes -> aggregate."""
        partition = partition_stage(data, self.num_teachers, self.partition_seed, self.run.unit)
        teachers, votes = self.teachers.stages(data, partition, shared.features, shared.queries)
        aggregate = aggregate_stage(
            self.aggregator, self.settings, self.asked, votes, self.run.noise, self.run.num_labels
        )
        return Release(
            aggregate,
            {"partition": partition, "teachers": teachers, "votes": votes, "aggregate": aggregate},
            cost=release_ledger(self.aggregator, self.asked),
        )

    def metrics(self, store: ArtifactStore, release: Release) -> dict[str, Any]:
        """The aggregator's name and noise, the calibration, the queries asked and the teachers' mean accuracy (a
        diagnostic not covered by epsilon)."""
        votes = read_votes(store.get(release.stages["votes"]))
        return {
            "method": self.run.named(self.name),
            "aggregator": self.aggregator.name,
            "target_epsilon": self.run.target_epsilon,
            "budget_epsilon": self.run.budget_epsilon,
            "noise": self.aggregator.noise_parameters(),
            "noise_multiplier": self.multiplier,
            "queries_asked": self.asked,
            # a diagnostic not covered by epsilon (pate.run_record.NOT_COVERED_BY_EPSILON lists it for every run)
            "teacher_accuracy": float(votes["teacher_accuracy"].mean()),
            "num_teachers": self.num_teachers,
        }

    def references(self, data, release: Release, shared: SharedStages) -> dict[str, Stage]:
        """The teachers' non-private majority vote."""
        return {"majority_vote": reference_stage("majority_vote", data, release.stages["votes"], shared.queries)}

    def train_shard(self, store: ArtifactStore, release: Release, data, shard: str) -> dict[str, Any]:
        """A cluster shard of the teachers (``teacher_shard=i/n``), by the teacher ensemble."""
        return self.teachers.train_shard(store, release.stages["teachers"], release.stages["partition"], data, shard)
