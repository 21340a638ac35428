"""Multi-label Gaussian PATE: every label count gets N(0, sigma^2); label on iff the noisy count exceeds T / 2.

The count vector has L2 sensitivity sqrt(L) under both relations (``count_l2_sensitivity``), so one query
is (alpha, alpha L / (2 sigma^2))-RDP (Gaussian mechanism, Mironov 2017, Proposition 7). This is the
"PATE" baseline of Zhu & Wang 2022's CelebA experiment, whose sensitivity grows with L "as each teacher
can vote for all attributes". Every query is answered.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from dp_accounting import GaussianDpEvent

from pate.aggregators.base import AggregationResult, Aggregator, check_rng
from pate.mechanisms.noisy_threshold import noisy_threshold
from pate.privacy import checks
from pate.privacy.accountant import PricedByEvent
from pate.privacy.events import gaussian_event
from pate.privacy.sensitivity import NeighboringRelation, check_relation, count_l2_sensitivity
from pate.votes import check_vote_counts

__all__ = ["GaussianPATE", "NoisyThresholdCost"]


class NoisyThresholdCost(PricedByEvent):
    """What every noisy-count-against-T/2 labeller shares (GaussianPATE, TauPATE, and BinaryVoting, whose noisy
    yes > noisy no is yes + noise > T/2): the threshold, and the Gaussian mechanism's cost on the labeller's own L2
    ``sensitivity``. Needs ``sigma``, ``num_teachers`` and ``sensitivity`` from the class."""

    def _check_common_fields(self) -> None:
        """Normalise num_labels, num_teachers and sigma and check the relation (frozen dataclass: once, here)."""
        checks.set_fields(
            self,
            num_labels=checks.positive_int("num_labels", self.num_labels),
            num_teachers=checks.positive_int("num_teachers", self.num_teachers),
            sigma=checks.positive("sigma", self.sigma),
            neighbors=check_relation(self.neighbors),
        )

    @property
    def threshold(self) -> float:
        """T / 2: the majority of the ensemble."""
        return self.num_teachers / 2.0

    @property
    def dp_event(self) -> GaussianDpEvent:
        """One query: the Gaussian mechanism on the labeller's L2 ``sensitivity``, priced alpha Delta^2 / (2 sigma^2)
        (Mironov 2017, Prop. 7)."""
        return gaussian_event(self.sigma, self.sensitivity)

    def noise_parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma}

    def scale_noise(self, multiplier: float):
        return dataclasses.replace(self, sigma=self.sigma * checks.positive("multiplier", multiplier))


@dataclass(frozen=True)
class GaussianPATE(NoisyThresholdCost, Aggregator):
    """GaussianPATE(num_labels, num_teachers, sigma, neighbors="replace").

    ``__call__(votes, rng)`` takes vote counts int ``[Q, L]`` (numpy, or a torch tensor converted with
    ``.cpu().numpy()``); every query is answered and ``k`` is the number of labels switched on.
    """

    num_labels: int
    num_teachers: int
    sigma: float
    neighbors: NeighboringRelation | str = "replace"

    def __post_init__(self):
        self._check_common_fields()

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of the count vector: sqrt(L)."""
        return count_l2_sensitivity(self.num_labels, self.neighbors)

    @property
    def name(self) -> str:
        return f"GaussianPATE(sigma={self.sigma:g}, neighbors={self.neighbors})"

    def __call__(self, votes, rng: np.random.Generator) -> AggregationResult:
        counts = check_vote_counts(votes, self.num_labels, self.num_teachers)
        check_rng(rng)
        labels = noisy_threshold(counts, self.sigma, self.threshold, rng)
        answered = np.ones(counts.shape[0], dtype=bool)
        return AggregationResult(labels=labels, answered=answered, k=np.count_nonzero(labels, axis=1))
