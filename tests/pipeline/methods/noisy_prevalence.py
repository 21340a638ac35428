"""A toy method added from outside the pipeline, through config alone (docs: "add a method"):

the private training split's L label counts and its number of records, as one vector of L + 1 counts, get Gaussian
noise once, and every public query is labelled with the labels whose noisy count exceeds half the noisy number of
records (post-processing). One record moves each of the L + 1 counts by at most 1, so the vector has L2 sensitivity
sqrt(L + 1) under both relations (``count_l2_sensitivity``). One release, one cost event: a Gaussian with its
sensitivity and sigma.

    python train.py method._target_=tests.pipeline.methods.noisy_prevalence.NoisyPrevalence +method.sigma=20
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pate.aggregate import write_release
from pate.artifacts import Stage
from pate.pipeline.checks import UserError, building
from pate.pipeline.methods import Release, SharedStages
from pate.pipeline.noise import noise_source
from pate.privacy import GaussianEvent, Ledger, count_l2_sensitivity
from pate.privacy.checks import positive


class NoisyPrevalence:
    """Gaussian noise on the private label counts, one label set for every query."""

    contributor = "record"  # one record moves the counts: both relations are record-level

    def __init__(self, sigma: float = 10.0):
        self.sigma = sigma

    def check(self, cfg) -> None:
        with building("method.sigma"):
            self.sigma = positive("sigma", self.sigma)

    def uses_features(self, cfg) -> bool:
        return False

    def release(self, cfg, data, shared: SharedStages) -> Release:
        arrays, noise, sigma = data.arrays, noise_source(cfg), self.sigma
        relation, num_queries = str(cfg.privacy.neighbors), int(cfg.data.num_queries)

        def build(work: Path, up) -> None:
            private = arrays.labels[arrays.indices("train")].astype(np.float64)
            num_labels = private.shape[1]
            counts = np.append(private.sum(axis=0), private.shape[0])  # the L label counts and the record count
            noisy = counts + noise.generator().normal(0.0, sigma, num_labels + 1)
            labels = np.tile(noisy[:-1] > noisy[-1] / 2, (num_queries, 1))
            event = GaussianEvent(sigma, count_l2_sensitivity(num_labels + 1, relation))
            ledger = Ledger().compose_event(event, count=1, name=f"NoisyPrevalence(sigma={sigma:g})",
                                            neighbors=relation)
            write_release(work, labels, np.ones(num_queries, bool), labels.sum(axis=1), ledger)

        labels = Stage("aggregate", {"method": "noisy_prevalence", "sigma": sigma, "neighbors": relation,
                                     **noise.key(), "queries": num_queries, "data": data.identity},
                       build, {"queries": shared.queries}, code=("tests.pipeline.methods.noisy_prevalence",))
        return Release(labels, {"aggregate": labels})

    def metrics(self, cfg, store, release: Release) -> dict:
        return {"method": "noisy_prevalence", "noise": {"sigma": self.sigma}}

    def references(self, cfg, data, release: Release, shared: SharedStages) -> dict:
        return {}

    def train_shard(self, cfg, store, release: Release, data) -> dict:
        raise UserError("teacher_shard: the noisy_prevalence method trains nothing to shard")
