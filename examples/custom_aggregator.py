"""A custom aggregator, written outside the package and run like the shipped ones (run from the repository:
``python examples/custom_aggregator.py``).

``MajorityRandomizedResponse`` releases, per label, the teachers' majority bit by randomized response. The bit may
flip when one teacher's vote changes (under either relation), so it is kept with probability e^eps / (1 + e^eps)
and flipped otherwise: eps-DP per label (Warner 1965; Dwork & Roth 2014, Section 3.2). A query releases L bits, so
its cost event is L-fold composition, ``SelfComposedDpEvent(PureDpEvent(eps), L)`` (dp-accounting's composition). It subclasses
``pate.privacy.PricedByEvent`` (which derives ``rdp`` and ``delta_per_query`` from that event) and
``pate.aggregators.Aggregator``, and keeps every default of the second (docs/add-an-aggregator.md).

Run as a script, it calibrates the class to a target epsilon over simulated votes (as examples/aggregate_votes.py
does for TauPATE), releases a label set per query, prices the release with the ledger and prints what the release
cost and how often a label is right: about e^eps / (1 + e^eps), since the majority is almost always right here.
The bit keeps nothing of the teachers' margin, so every label of every query pays alike, and at this budget it
labels about as well as a coin, where TauPATE (aggregate_votes.py) gets most labels right. Imported, it is the class
a run names by config alone, in tests/aggregators/conf/aggregator/majority_rr.yaml:

    python train.py debug=tiny hydra.searchpath=[file://tests/aggregators/conf] aggregator=majority_rr
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import SelfComposedDpEvent

from pate.aggregators.base import AggregationResult, Aggregator, check_rng
from pate.privacy import Ledger, PricedByEvent, PureDpEvent, check_relation, checks
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
    def dp_event(self) -> SelfComposedDpEvent:
        return SelfComposedDpEvent(PureDpEvent(self.epsilon), self.num_labels)

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


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    num_queries, num_labels, num_teachers = 200, 40, 400
    truth = rng.random((num_queries, num_labels)) < 0.25  # the labels the teachers mostly agree on
    votes = rng.random((num_queries, num_teachers, num_labels)) < np.where(truth, 0.8, 0.1)[:, None, :]  # [Q, T, L]

    aggregator = MajorityRandomizedResponse(num_labels, num_teachers, epsilon=1.0, neighbors="replace")
    aggregator, _ = aggregator.calibrated(target_epsilon=4.0, delta=1e-6, num_queries=num_queries)
    released = aggregator(votes.sum(axis=1), rng=np.random.default_rng())  # counts [Q, L]; secret noise

    priced = Ledger().compose(aggregator, count=num_queries).get_epsilon(delta=1e-6)
    accuracy = (released.labels == truth)[released.answered].mean()
    kept = math.exp(aggregator.epsilon) / (1 + math.exp(aggregator.epsilon))  # the majority is right here: accuracy
    error = 5 * math.sqrt(kept * (1 - kept) / truth.size)  # 5 standard errors of the mean over the labels
    matches = (
        "as randomized response predicts" if abs(accuracy - kept) <= error else "NOT as randomized response predicts"
    )
    print(f"{aggregator.name}: {released.answered.sum()}/{num_queries} queries answered, label accuracy {accuracy:.3f}")
    print(f"randomized response keeps each majority bit with probability {kept:.3f}: the accuracy is {matches}")
    print(f"a pate.aggregators.Aggregator: {isinstance(aggregator, Aggregator)}; one query costs {aggregator.dp_event}")
    print(f"privacy: {priced.description}; one neighbour: one teacher's vote replaced")
