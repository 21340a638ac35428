"""A toy aggregator added from outside the package, through config alone (docs: "add an aggregator"): per label,
randomized response on the teachers' majority vote.

The majority bit of a label may flip when one teacher's vote changes (under either relation), so each label's bit
is released by randomized response: kept with probability e^eps / (1 + e^eps), flipped otherwise, which is
eps-DP per label (Warner 1965; Dwork & Roth 2014, Section 3.2). A query releases L bits: L-fold composition, one
cost event ``SelfComposedEvent(PureDpEvent(eps), L)``.

    python train.py debug=tiny hydra.searchpath=[file://tests/aggregators/conf] aggregator=majority_rr
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from pate.aggregators.base import AggregationResult, Aggregator, check_rng
from pate.privacy import PricedByEvent, PureDpEvent, SelfComposedEvent, check_relation, checks
from pate.votes import check_vote_counts


@dataclass(frozen=True)
class MajorityRandomizedResponse(PricedByEvent, Aggregator):
    num_labels: int
    num_teachers: int
    epsilon: float
    neighbors: str = "replace"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", checks.positive("epsilon", self.epsilon))
        object.__setattr__(self, "neighbors", check_relation(self.neighbors))

    @property
    def dp_event(self) -> SelfComposedEvent:
        return SelfComposedEvent(PureDpEvent(self.epsilon), self.num_labels)

    @property
    def name(self) -> str:
        return f"MajorityRR(eps={self.epsilon:g}, neighbors={self.neighbors})"

    def noise_parameters(self) -> dict[str, float]:
        return {"epsilon": self.epsilon}

    def scale_noise(self, multiplier: float) -> "MajorityRandomizedResponse":
        return dataclasses.replace(self, epsilon=self.epsilon / checks.positive("multiplier", multiplier))

    def __call__(self, votes, rng: np.random.Generator) -> AggregationResult:
        counts = check_vote_counts(votes, self.num_labels, self.num_teachers)
        flip = check_rng(rng).random(counts.shape) < 1.0 / (1.0 + math.exp(self.epsilon))
        labels = (counts > self.num_teachers / 2) ^ flip
        return AggregationResult(labels=labels, answered=np.ones(len(counts), bool), k=labels.sum(axis=1))
