"""PATE-tau: each teacher's vote vector is scaled down to at most tau votes' worth, then Gaussian PATE.

Clipping (the tau-approximation of Zhu & Wang 2022, Section 5: a teacher's contributions are capped at
tau): a teacher voting for n labels, v in {0, 1}^L, enters the counts as w v with

* ``norm="l1"``: ||w v||_1 <= tau,        w = min(1, tau / n);
* ``norm="l2"``: ||w v||_2 <= sqrt(tau),  w = min(1, sqrt(tau / n))   (||v||_2 = sqrt(n) for bits).

w <= 1, so entries stay in [0, 1], and a teacher within the budget is untouched. The released statistic,
the clipped counts less T / 2, has L2 sensitivity ``clipped_threshold_l2_sensitivity(L, tau, norm, neighbors)``
(min(sqrt(2 tau), sqrt(L)) under replace; max(sqrt(tau), sqrt(L) / 2) under add_remove, where the threshold
moves with the ensemble's size), and one query is (alpha, alpha Delta^2 / (2 sigma^2))-RDP (Gaussian
mechanism, Mironov 2017, Proposition 7).

Threshold: label i is on iff its clipped count plus N(0, sigma^2) exceeds T / 2, as in GaussianPATE.
Why not another scale: after clipping every teacher still contributes at most 1 to a label, so T / 2
keeps its meaning "more than half of the ensemble voting for the label with full weight", and
PATE-tau coincides with GaussianPATE (same noise draws) on every query where no teacher exceeds tau.
A threshold rescaled by the clipping actually applied (e.g. half the clipped mass) would depend on
the private votes and need a privacy cost of its own; T / 2 is public.

The per-teacher votes are required: counts [Q, L] do not say which teacher voted for what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pate.aggregators.base import AggregationResult, Aggregator, check_rng
from pate.aggregators.gaussian_pate import NoisyThresholdCost
from pate.mechanisms.noisy_threshold import noisy_threshold
from pate.privacy import checks
from pate.privacy.sensitivity import NeighboringRelation, clipped_threshold_l2_sensitivity
from pate.votes import PackedVotes, as_numpy, check_vote_bits

__all__ = ["TauPATE", "clipped_counts"]

# Unpack at most this many votes (Q * T * L) at a time, to bound temporary memory (16 MiB of bools).
_CHUNK_VOTES = 1 << 24


def clip_weights(positives: np.ndarray, tau: float, norm: str) -> np.ndarray:
    """Per-teacher scale w: min(1, tau / n) (l1) or min(1, sqrt(tau / n)) (l2) for n positive votes; 1 for n = 0."""
    ratio = np.minimum(1.0, tau / np.maximum(positives, 1))
    return ratio if norm == "l1" else np.sqrt(ratio)


def clipped_counts(votes, tau: float, norm: str) -> np.ndarray:
    """float64 ``[Q, L]``: sum over teachers of w_t v_t, from bool ``[Q, T, L]`` bits or a ``PackedVotes``.

    Processed in chunks of queries (no per-query loop) so that packed votes are unpacked a slice at a
    time; packed votes are counted per teacher with a popcount of their bytes (``np.bitwise_count``,
    numpy >= 2.0). The weighted sum is an einsum in float64, exact to rounding.
    """
    num_queries, num_teachers, num_labels = votes.shape
    out = np.empty((num_queries, num_labels), dtype=np.float64)
    step = max(1, _CHUNK_VOTES // max(1, num_teachers * num_labels))
    for start in range(0, num_queries, step):
        chunk = slice(start, start + step)
        if isinstance(votes, PackedVotes):
            packed = votes.bits[chunk]
            positives = np.bitwise_count(packed).sum(axis=-1, dtype=np.int32)
            bits = np.unpackbits(packed, axis=-1, count=num_labels).view(np.bool_)
        else:
            bits = votes[chunk]
            positives = bits.sum(axis=-1, dtype=np.int32)
        np.einsum("qt,qtl->ql", clip_weights(positives, tau, norm), bits, out=out[chunk])
    return out


@dataclass(frozen=True)
class TauPATE(NoisyThresholdCost, Aggregator):
    """TauPATE(num_labels, num_teachers, sigma, tau, norm="l1", neighbors="replace").

    ``tau`` in [1, L]; ``norm`` in {"l1", "l2"}. ``__call__(votes, rng)`` takes per-teacher votes: bool
    (or 0/1) ``[Q, T, L]`` (numpy, or a torch tensor converted with ``.cpu().numpy()``) or a
    ``PackedVotes``; vote counts raise ``ValueError``. Every query is answered; ``k`` is the number of
    labels switched on.
    """

    num_labels: int
    num_teachers: int
    sigma: float
    tau: float
    norm: str = "l1"
    neighbors: NeighboringRelation | str = "replace"
    # The vote stage hands this aggregator the packed per-teacher votes instead of the counts.
    requires_teacher_votes: ClassVar[bool] = True

    def __post_init__(self):
        self._check_common_fields()
        # Checks tau in [1, L] and norm, naming them.
        clipped_threshold_l2_sensitivity(self.num_labels, self.tau, self.norm, self.neighbors)
        checks.set_fields(self, tau=float(self.tau))

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of the clipped counts less T / 2 (``clipped_threshold_l2_sensitivity``). The threshold
        stays T / 2 (see the module docstring for why the clipping does not rescale it)."""
        return clipped_threshold_l2_sensitivity(self.num_labels, self.tau, self.norm, self.neighbors)

    @property
    def name(self) -> str:
        return f"TauPATE(sigma={self.sigma:g}, tau={self.tau:g}, norm={self.norm}, neighbors={self.neighbors})"

    def _check_votes(self, votes):
        expected = (self.num_teachers, self.num_labels)
        if isinstance(votes, PackedVotes):
            if votes.shape[1:] != expected:
                raise ValueError(
                    f"votes must be per-teacher votes [queries, num_teachers={expected[0]}, num_labels={expected[1]}], "
                    f"got PackedVotes of shape {votes.shape}"
                )
            return votes
        array = as_numpy(votes, "votes")
        if array.ndim == 2:
            raise ValueError(
                f"votes of shape {array.shape} look like vote counts [queries, labels]: TauPATE clips each teacher's "
                f"vote vector, so it needs the per-teacher votes [queries, num_teachers, num_labels] (bool bits or "
                f"PackedVotes)"
            )
        if array.ndim != 3 or array.shape[1:] != expected:
            raise ValueError(
                f"votes must be per-teacher votes [queries, num_teachers={expected[0]}, num_labels={expected[1]}], "
                f"got shape {array.shape}"
            )
        return check_vote_bits(array, "votes")

    def __call__(self, votes, rng: np.random.Generator) -> AggregationResult:
        votes = self._check_votes(votes)
        check_rng(rng)
        counts = clipped_counts(votes, self.tau, self.norm)
        labels = noisy_threshold(counts, self.sigma, self.threshold, rng)
        answered = np.ones(counts.shape[0], dtype=bool)
        return AggregationResult(labels=labels, answered=answered, k=np.count_nonzero(labels, axis=1))
