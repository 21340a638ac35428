"""A toy method added from outside the pipeline, through config alone (docs: "add a method"):

the private training split's L label counts and its number of records, as one vector of L + 1 counts, get Gaussian
noise once, and every public query is labelled with the labels whose noisy count exceeds half the noisy number of
records (post-processing). One record moves each of the L + 1 counts by at most 1, so the vector has L2 sensitivity
sqrt(L + 1) under both relations (``count_l2_sensitivity``). One release, one cost event: a Gaussian with its
sensitivity and sigma.

    python train.py method._target_=tests.pipeline.methods.noisy_prevalence.NoisyPrevalence +method.sigma=20
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from pate.aggregate import write_release
from pate.artifacts import Stage
from pate.pipeline.checks import building
from pate.pipeline.methods import Method, Release, RunSettings, SharedStages, method_settings
from pate.privacy import Ledger, count_l2_sensitivity, gaussian_event
from pate.privacy.checks import positive


@dataclass(frozen=True)
class NoisyPrevalence(Method):
    """Gaussian noise on the private label counts, one label set for every query."""

    contributor: ClassVar[str] = "record"  # one record moves the counts: both relations are record-level
    reads_features: ClassVar[bool] = False

    sigma: float
    run: RunSettings

    @classmethod
    def from_config(cls, cfg, run: RunSettings) -> NoisyPrevalence:
        settings = method_settings(cfg.method, sigma=10.0)
        with building("method"):
            return cls(positive("sigma", settings["sigma"]), run)

    def release(self, data, shared: SharedStages) -> Release:
        arrays, noise, sigma = data.arrays, self.run.noise, self.sigma
        relation, num_queries, num_labels = self.run.neighbors, self.run.num_queries, self.run.num_labels
        # what the release costs, known before anything is drawn (Release.cost: the data's privacy budget records it)
        event = gaussian_event(sigma, count_l2_sensitivity(num_labels + 1, relation))
        ledger = Ledger().compose_event(event, count=1, name=f"NoisyPrevalence(sigma={sigma:g})", neighbors=relation)

        def build(work: Path, up) -> None:
            private = arrays.labels[arrays.indices("train")].astype(np.float64)
            counts = np.append(private.sum(axis=0), private.shape[0])  # the L label counts and the record count
            noisy = counts + noise.generator().normal(0.0, sigma, num_labels + 1)
            labels = np.tile(noisy[:-1] > noisy[-1] / 2, (num_queries, 1))
            write_release(work, labels, np.ones(num_queries, bool), labels.sum(axis=1), ledger)

        labels = Stage(
            "aggregate",
            {
                "method": "noisy_prevalence",
                "sigma": sigma,
                "neighbors": relation,
                **noise.key(),
                "queries": num_queries,
                "data": data.identity,
            },
            build,
            {"queries": shared.queries},
            code=("tests.pipeline.methods.noisy_prevalence",),
        )
        return Release(labels, {"aggregate": labels}, cost=ledger)

    def metrics(self, store, release: Release) -> dict:
        return {"method": "noisy_prevalence", "noise": {"sigma": self.sigma}}
