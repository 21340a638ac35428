"""Multi-label labellers built from the mechanisms: StableTopK (Zhu & Wang 2022), GaussianPATE, TauPATE, and binary
voting (PATE 2018's GNMax per label), data-independent or released under a tested data-dependent bound.

All follow the protocol of ``pate.aggregators.base``: immutable, ``agg(votes, rng) -> AggregationResult``,
``agg.rdp(orders)``, ``agg.delta_per_query``, ``agg.neighbors``, ``agg.name``, ``agg.scale_noise(m)``,
``agg.noise_parameters()``; and all subclass its ``Aggregator``, whose defaults of ``agg.requires_teacher_votes``,
``agg.priced_per_query`` and ``agg.calibrated(target_epsilon, delta, num_queries)`` they keep or override.

``PackedVotes`` (from ``pate.votes``) is the per-teacher votes that an aggregator with ``requires_teacher_votes``
(TauPATE) takes: the teachers' bits [Q, T, L] packed along L.
"""

from pate.aggregators.base import AggregationResult, Aggregator
from pate.aggregators.binary_voting import BinaryVoting, DataDependentBinaryVoting
from pate.aggregators.gaussian_pate import GaussianPATE
from pate.aggregators.stable_topk import StableTopK, StableTopKResult
from pate.aggregators.tau_pate import TauPATE
from pate.votes import PackedVotes

__all__ = [
    "AggregationResult",
    "Aggregator",
    "BinaryVoting",
    "DataDependentBinaryVoting",
    "GaussianPATE",
    "PackedVotes",
    "StableTopK",
    "StableTopKResult",
    "TauPATE",
]
