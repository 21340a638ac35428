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
  rather than the vote counts ``[Q, L]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

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
    """Structural type of the aggregators (see the module docstring)."""

    num_labels: int
    num_teachers: int
    neighbors: NeighboringRelation | str
    requires_teacher_votes: bool

    def __call__(self, votes, rng: np.random.Generator) -> AggregationResult: ...

    def rdp(self, orders) -> np.ndarray: ...

    @property
    def delta_per_query(self) -> float: ...

    @property
    def name(self) -> str: ...

    def scale_noise(self, multiplier: float) -> "Aggregator": ...

    def noise_parameters(self) -> dict[str, float]: ...


def check_rng(rng) -> np.random.Generator:
    """``rng`` if it is a ``numpy.random.Generator`` (seeded by the caller); ``ValueError`` naming it otherwise."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), got {rng!r}")
    return rng
