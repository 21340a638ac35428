"""Private-kNN as a method (Zhu, Yin, Feng & Wang, CVPR 2020): no teachers; every public query is labelled by its
k nearest private records, by cosine on the public features, among a fresh Poisson subsample of the private
training split, through Gaussian noise on the per-label counts and the threshold k / 2
(``pate.mechanisms.PrivateKNN``, whose docstring gives the privacy argument).

    features -> private_knn (the aggregate artifact: released labels, ledger.json) -> student

``sigma`` is calibrated to ``privacy.target_epsilon`` over the queries when it is set (like PATE's aggregators);
``privacy.budget_epsilon`` stops answering queries where it would be exceeded.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from pate.aggregate import UNANSWERED, queries_within_budget, write_release
from pate.artifacts import Artifact, ArtifactStore, Stage
from pate.data.partition import read_queries
from pate.features import read_features
from pate.mechanisms import PrivateKNN, subsampled_knn_votes
from pate.pipeline.checks import UserError, building
from pate.pipeline.graph import Dataset
from pate.pipeline.methods.base import Release, SharedStages, with_semi
from pate.pipeline.noise import noise_source
from pate.privacy import Ledger, calibrate_noise
from pate.privacy.unit import privacy_unit

log = logging.getLogger("train")

__all__ = ["PrivateKNNMethod"]


class PrivateKNNMethod:
    """``method=private_knn`` (module docstring). ``k``, ``sampling_rate`` and ``sigma`` are the config's keys."""

    contributor = "record"  # each record votes on its own: both relations are record-level

    def __init__(self, k: int = 200, sampling_rate: float = 0.1, sigma: float = 20.0):
        self.k, self.sampling_rate, self.sigma = k, sampling_rate, sigma
        self.mechanism, self.multiplier, self.asked = None, None, 0

    def check(self, cfg: DictConfig) -> None:
        with building("method"):
            mechanism = PrivateKNN(int(cfg.data.num_labels), self.k, self.sampling_rate, self.sigma,
                                   str(cfg.privacy.neighbors))
        num_queries, delta = int(cfg.data.num_queries), float(cfg.privacy.delta)
        with building("privacy"):
            if cfg.privacy.target_epsilon is not None:
                mechanism, self.multiplier = calibrate_noise(mechanism, float(cfg.privacy.target_epsilon), delta,
                                                             num_queries)
                log.info("calibrated %s to epsilon=%g at delta=%g over %d queries (neighbours: %s, one neighbour: %s)",
                         mechanism.name, cfg.privacy.target_epsilon, delta, num_queries, mechanism.neighbors,
                         privacy_unit(self.contributor, mechanism.neighbors).text)
            self.asked = queries_within_budget(mechanism, num_queries, cfg.privacy.budget_epsilon, delta)
        self.mechanism = mechanism

    def uses_features(self, cfg: DictConfig) -> bool:
        return True

    def release(self, cfg: DictConfig, data: Dataset, shared: SharedStages) -> Release:
        mechanism, asked, arrays, noise = self.mechanism, self.asked, data.arrays, noise_source(cfg)

        def build(work: Path, up: dict[str, Artifact]) -> None:
            """The Poisson subsample and the Gaussian noise both come from the run's noise source: the
            amplification by subsampling holds only while the subsample is secret too."""
            table, queries = read_features(up["features"]), read_queries(up["queries"]).queries
            private_rows = arrays.indices("train")
            counts = subsampled_knn_votes(table.take(private_rows), torch.from_numpy(arrays.labels[private_rows]),
                                          table.take(queries[:asked]), mechanism.k, mechanism.sampling_rate,
                                          noise.torch_generator())
            labels = np.zeros((len(queries), mechanism.num_labels), dtype=bool)
            labels[:asked] = mechanism.release(counts, noise.generator())
            answered = np.arange(len(queries)) < asked
            k = np.where(answered, labels.sum(axis=1), UNANSWERED)
            write_release(work, labels, answered, k, Ledger().compose(mechanism, count=asked))

        stage = Stage("aggregate", {"method": "private_knn", "mechanism": mechanism.name, "asked": asked,
                                    **noise.key(), "data": data.identity},
                      build, {"features": shared.features, "queries": shared.queries},
                      code=("pate.pipeline.methods.private_knn",))
        return Release(stage, {"aggregate": stage})

    def metrics(self, cfg: DictConfig, store: ArtifactStore, release: Release) -> dict[str, Any]:
        return {"method": with_semi("private_knn", cfg), "target_epsilon": cfg.privacy.target_epsilon,
                "budget_epsilon": cfg.privacy.budget_epsilon, "noise": self.mechanism.noise_parameters(),
                "noise_multiplier": self.multiplier, "queries_asked": self.asked,
                "mechanism": self.mechanism.name}

    def references(self, cfg: DictConfig, data: Dataset, release: Release, shared: SharedStages) -> dict[str, Stage]:
        return {}

    def train_shard(self, cfg: DictConfig, store: ArtifactStore, release: Release, data: Dataset) -> dict[str, Any]:
        raise UserError("teacher_shard: method=private_knn trains no teachers to shard")
