"""What every multi-label aggregator returns and promises (the aggregator protocol).

An aggregator is an immutable configured object (constructor arguments = keys of its
``conf/aggregator/*.yaml``) with

* ``__call__(votes, rng) -> AggregationResult`` for a batch of Q queries and one numpy Generator;
* ``rdp(orders)`` (per-query RDP curve), ``delta_per_query``, ``neighbors``, ``name``: what
  ``pate.privacy.Ledger.compose`` reads;
* ``scale_noise(multiplier)``: the same aggregator with every noise scale multiplied by ``multiplier``
  (pure-DP epsilons divided by it), for ``pate.privacy.calibrate_noise``;
* ``noise_parameters()``: its noise settings by constructor name;
* ``requires_teacher_votes``: True if it needs the per-teacher votes (``pate.votes.PackedVotes``)
  rather than the vote counts ``[Q, L]``;
* ``priced_per_query``: True if its cost event is one query's (a release of Q queries costs Q of them); False if it
  prices one release of the whole batch (``pate.aggregate.release_ledger``);
* ``calibrated(target_epsilon, delta, num_queries)``: the same aggregator with its noise set for the target, and the
  noise multiplier, for ``privacy.target_epsilon``.

Every shipped aggregator subclasses ``Aggregator`` and so inherits the defaults of the last three (vote counts, per
query, ``pate.privacy.calibrate_noise``); the pipeline reads them as plain attributes.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from pate.privacy import calibrate_noise
from pate.privacy.sensitivity import NeighboringRelation

__all__ = ["AggregationResult", "Aggregator", "check_rng"]


@dataclass(frozen=True, eq=False)
class AggregationResult:
    """Released labels of a batch of Q queries.

    labels   bool ``[Q, L]``: the released label sets, all False where a query is unanswered.
    answered bool ``[Q]``: False where the mechanism declined to answer (StableTopK's test failed).
    k        int ``[Q]``: size of the released set where answered, -1 where unanswered (so an answered
             empty set, k = 0, stays distinguishable from no answer).
    released bool ``[Q, L]`` or None: which labels of each query were released (a confident selection releases
             some labels of a query and not others; the student sees the others as missing). None: every label
             of an answered query.
    details  what the aggregator measured on the way that a run reports beside the labels (a data-dependent
             analysis: its raw bound and its test); empty for most.
    """

    labels: np.ndarray
    answered: np.ndarray
    k: np.ndarray
    released: np.ndarray | None = field(default=None, kw_only=True)
    details: dict = field(default_factory=dict, kw_only=True)

    @property
    def answered_fraction(self) -> float:
        """Fraction of queries answered (nan for an empty batch)."""
        return float(self.answered.mean()) if self.answered.size else float("nan")


@runtime_checkable
class Aggregator(Protocol):
    """Structural type of the aggregators (see the module docstring), and their base class: a subclass inherits the
    defaults below and overrides what differs."""

    num_labels: int
    num_teachers: int
    neighbors: NeighboringRelation | str
    requires_teacher_votes: ClassVar[bool] = False  # the vote counts [Q, L] suffice
    priced_per_query: ClassVar[bool] = True  # dp_event is one query's cost

    # abstract: a subclass that misses one of these fails at construction rather than answering None
    @abstractmethod
    def __call__(self, votes, rng: np.random.Generator) -> AggregationResult: ...

    @abstractmethod
    def rdp(self, orders) -> np.ndarray: ...

    @property
    @abstractmethod
    def delta_per_query(self) -> float: ...

    @property
    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def scale_noise(self, multiplier: float) -> "Aggregator": ...

    @abstractmethod
    def noise_parameters(self) -> dict[str, float]: ...

    def calibrated(
        self, target_epsilon: float, delta: float, num_queries: int, accountant: str = "tightest"
    ) -> tuple["Aggregator", float]:
        """The aggregator whose noise meets ``target_epsilon`` at ``delta`` over ``num_queries`` queries by
        ``accountant`` (``pate.privacy.ACCOUNTANTS``), and the noise multiplier: by default the generic search over
        ``scale_noise`` (``pate.privacy.calibrate_noise``). A release priced as one batch overrides it with its own
        public rules (``DataDependentBinaryVoting``)."""
        return calibrate_noise(self, target_epsilon, delta, num_queries, accountant=accountant)


def check_rng(rng) -> np.random.Generator:
    """``rng`` if it is a ``numpy.random.Generator`` (seeded by the caller); ``ValueError`` naming it otherwise."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), got {rng!r}")
    return rng
