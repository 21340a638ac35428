"""Private-kNN (Zhu, Yin, Feng & Wang, "Private-kNN: Practical Differential Privacy for Computer Vision", CVPR
2020, Algorithm 1, in its multi-label form): every public query is labelled by the k records nearest to it, by
cosine similarity of the public features, among a fresh Poisson subsample of the private records; the per-label
vote counts get Gaussian noise and a label is released where the noisy count exceeds k / 2. No teacher is trained.

Cost of one query: the Poisson-sampled Gaussian with sampling rate gamma and noise multiplier
sigma / ``knn_vote_l2_sensitivity`` (sqrt(L)), under the run's relation (``pate.privacy.sampled_gaussian_steps``): the
vote vector is not a sum of per-record terms, but conditioned on the rest of the sample one record moves it by a
vector of L2 norm <= sqrt(L) (pate/privacy/sensitivity.py), and the mixture over the rest keeps the bound
because (P, Q) -> integral P^alpha Q^(1 - alpha) is jointly convex for alpha > 1 (the subsampled-Gaussian
argument of Mironov, Talwar & Zhang 2019, Section 3). Q queries compose: Q steps, each with its own subsample.

The rate priced is the rate the sampler realises (``pate.mechanisms.poisson.realised_sampling_rate``, at most
2^-53 above gamma), the sampler DP-SGD's batches use too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import torch
from dp_accounting import SelfComposedDpEvent

from pate.mechanisms.noisy_threshold import noisy_threshold
from pate.mechanisms.poisson import poisson_subsample, realised_sampling_rate
from pate.privacy import PricedByEvent, check_relation, knn_vote_l2_sensitivity, sampled_gaussian_steps
from pate.privacy import checks
from pate.privacy.checks import positive, positive_int

__all__ = [
    "PrivateKNN",
    "SIMILARITY_BITS",
    "exact_similarities",
    "grid_directions",
    "nearest_mask",
    "nearest_row_of_each_person",
    "subsampled_knn_votes",
]

SIMILARITY_BITS = 24  # a unit-norm feature vector is rounded to multiples of 2^-24 per coordinate
_BLOCK_ROWS = 8192  # rows turned to float64 at a time (memory: 8,192 x D x 8 bytes)


def grid_directions(features: torch.Tensor) -> torch.Tensor:
    """float32 [R, D]: each row scaled to unit L2 norm (in float64) and rounded to a multiple of 2^-24, stored times
    2^24, so as integers of magnitude <= 2^24 (exact in float32). Row by row in blocks: a row's result depends on
    that row alone."""
    # contiguous: a column-major block would be summed along another path than a lone row, so a row's norm could
    # differ in its last bit with N
    return torch.cat(
        [
            torch.round(
                torch.nn.functional.normalize(features[start : start + _BLOCK_ROWS].double().contiguous(), dim=1)
                * 2.0**SIMILARITY_BITS
            ).float()
            for start in range(0, features.shape[0], _BLOCK_ROWS)
        ]
    )


def exact_similarities(queries: torch.Tensor, private: torch.Tensor) -> torch.Tensor:
    """float64 [Q, N]: the dot products of ``grid_directions`` rows (times 2^48: the grid vectors' cosine similarity
    up to their norms' rounding), computed exactly, so each is a function of its query and record alone.

    Exact because every term and partial sum is an integer of magnitude below 2^53: with |q_i|, |r_i| <= 2^24
    rounded from unit vectors x, y, sum |q_i r_i| <= 2^48 sum |x_i y_i| + 2^23 (sum |x_i| + sum |y_i|) + D / 4
    <= 2^48 + 2^24 sqrt(D) + D / 4 (Cauchy-Schwarz), below 2^53 for any D up to 2^48. A float32 product would be
    rounded, and how it is rounded depends on the matrix routine's blocking, which depends on N: one record added
    could change other records' similarities in their last bit (a single-query chunk, MKL's matrix-vector path), and
    with them the k nearest, moving the votes by 2 sqrt(L) where the accounting prices sqrt(L)."""
    queries = queries.double()
    return torch.cat(
        [
            queries @ private[start : start + _BLOCK_ROWS].double().T
            for start in range(0, private.shape[0], _BLOCK_ROWS)
        ],
        dim=1,
    )


def subsampled_knn_votes(
    private: torch.Tensor,
    labels: torch.Tensor,
    queries: torch.Tensor,
    k: int,
    sampling_rate: float,
    generator: torch.Generator,
    chunk: int = 64,
    person: np.ndarray | None = None,
) -> np.ndarray:
    """int64 [Q, L]: per query, the label counts of its k nearest records (cosine similarity) among a Poisson
    subsample of the rows of ``private`` (each row kept independently with probability
    ``realised_sampling_rate(sampling_rate)``, ``poisson_subsample``; a new subsample per query). Fewer than k
    sampled records vote with as many as were sampled.

    With ``person`` (one identifier per row), the subsample is of people and each sampled person votes once, with
    the labels of their record nearest the query (ties: the lowest row): one coin per person and query, and the k
    nearest people by that record's similarity (ties: the lowest identifier). One person's change -- any of their
    rows, all of them, the person added or removed -- then moves at most one of the k votes, the bound one record
    moves them by in the record form, and the sampling rate is over people.

    ``private`` [N, D] and ``queries`` [Q, D] are features (any scale: rows are normalised here), ``labels``
    [N, L] in {0, 1}. Vectorised over ``chunk`` queries at a time: one [chunk, N] similarity block.

    Ties in similarity are broken by record index, the lower index first, deterministically (``nearest_mask``):
    ``torch.topk`` documents no tie-breaking rule, and it may differ between devices and versions. The sensitivity
    argument (``knn_vote_l2_sensitivity``: a record entering the k nearest pushes out at most one other) needs "the
    k nearest" to be a function of the sample, i.e. a total order on the records; (similarity, -index) is one that
    no other record's presence changes, since each similarity is computed exactly from its query and record alone
    (``exact_similarities`` of the ``grid_directions``).
    """
    for name, rows in (("private", private), ("queries", queries)):
        finite = torch.isfinite(rows).all(dim=1)
        if not bool(finite.all()):  # a nan similarity would sit above every finite one in topk
            raise ValueError(f"{name}: expected finite features; row {int((~finite).nonzero()[0])} holds nan or inf")
    private, queries = grid_directions(private), grid_directions(queries)
    labels = labels.to(torch.float32)
    codes = None if person is None else torch.from_numpy(np.unique(np.asarray(person), return_inverse=True)[1])
    voters = private.shape[0] if codes is None else int(codes.max()) + 1
    k = min(k, voters)
    votes = []
    for start in range(0, queries.shape[0], chunk):
        similarity = exact_similarities(queries[start : start + chunk], private)
        chosen_rows = None if codes is None else nearest_row_of_each_person(similarity, codes, voters)
        if chosen_rows is not None:
            similarity = similarity.gather(1, chosen_rows)  # [chunk, people]: each person's nearest record
        sampled = poisson_subsample(tuple(similarity.shape), sampling_rate, generator)
        nearest = nearest_mask(similarity.masked_fill(~sampled, -torch.inf), k).to(torch.float32)
        if chosen_rows is not None:  # each chosen person's vote goes to their nearest record's labels
            nearest = torch.zeros(nearest.shape[0], private.shape[0]).scatter_(1, chosen_rows, nearest)
        votes.append(nearest @ labels)
    return torch.cat(votes).round().to(torch.int64).numpy()


def nearest_row_of_each_person(similarity: torch.Tensor, codes: torch.Tensor, num_people: int) -> torch.Tensor:
    """int64 [Q, P]: for each query (row of ``similarity`` [Q, N]) and person (``codes`` [N], each row's person in
    0..P-1), the row of that person's largest similarity, the lowest such row on a tie: a function of that person's
    rows alone."""
    index = codes.expand(similarity.shape[0], -1)
    best = torch.full((similarity.shape[0], num_people), -torch.inf, dtype=similarity.dtype)
    best = best.scatter_reduce(1, index, similarity, "amax")
    rows = torch.arange(similarity.shape[1]).expand_as(similarity)
    at_best = torch.where(similarity == best.gather(1, index), rows, similarity.shape[1])
    first = torch.full((similarity.shape[0], num_people), similarity.shape[1], dtype=torch.int64)
    return first.scatter_reduce(1, index, at_best, "amin")


def nearest_mask(similarity: torch.Tensor, k: int) -> torch.Tensor:
    """bool [Q, N]: per row, the k records of largest finite similarity, ties at the k-th value broken by index
    (the lowest first); fewer than k where fewer are finite (-inf marks a record not sampled, which never votes).

    Every record above the k-th largest value is in; of those equal to it, the lowest-indexed fill the remaining
    places (a cumulative count along the row, taken only when some row has more tied records than places). O(N)
    per row like ``topk``, which only supplies the k-th value, where a stable sort would cost O(N log N).
    """
    kth = similarity.topk(k, dim=1).values[:, -1:]
    above = similarity > kth
    tied = (similarity == kth) & torch.isfinite(kth)
    places = k - above.sum(dim=1, keepdim=True)
    if bool((tied.sum(dim=1, keepdim=True) > places).any()):
        tied &= tied.cumsum(dim=1) <= places
    return above | tied


@dataclass(frozen=True)
class PrivateKNN(PricedByEvent):
    """One Private-kNN query (module docstring): ``k`` neighbours among a Poisson subsample of rate
    ``sampling_rate``, Gaussian noise ``sigma`` on the L vote counts, threshold k / 2. Its ``dp_event`` is one
    query's cost; ``Ledger.compose(mechanism, count=Q)`` composes Q of them, each with its own subsample."""

    num_labels: int
    k: int
    sampling_rate: float
    sigma: float
    neighbors: str = "replace"
    # what pate.aggregate.queries_within_budget reads of an aggregator (pate.aggregators.Aggregator, a layer above
    # this one): Q queries cost Q runs of dp_event, each with its own subsample
    priced_per_query: ClassVar[bool] = True

    def __post_init__(self):
        checks.set_fields(
            self,
            num_labels=positive_int("num_labels", self.num_labels),
            k=positive_int("k", self.k),
            sampling_rate=checks.sampling_rate("sampling_rate", self.sampling_rate),
            sigma=positive("sigma", self.sigma),
            neighbors=str(check_relation(self.neighbors)),
        )

    @property
    def name(self) -> str:
        return (
            f"PrivateKNN(k={self.k}, sampling_rate={self.sampling_rate:g}, sigma={self.sigma:g}, "
            f"neighbors={self.neighbors})"
        )

    @property
    def dp_event(self) -> SelfComposedDpEvent:
        """One query: a Poisson-sampled Gaussian step with multiplier sigma / sqrt(L) under the relation, at the
        sampling rate the sampler realises (``realised_sampling_rate``, at most 2^-53 above ``sampling_rate``)."""
        multiplier = self.sigma / knn_vote_l2_sensitivity(self.num_labels, self.neighbors)
        return sampled_gaussian_steps(realised_sampling_rate(self.sampling_rate), multiplier, 1, self.neighbors)

    def noise_parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma}

    def scale_noise(self, multiplier: float) -> "PrivateKNN":
        """The same mechanism with sigma x ``multiplier`` (``calibrate_noise``)."""
        return replace(self, sigma=self.sigma * positive("multiplier", multiplier))

    def release(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """bool [Q, L]: counts + N(0, sigma^2) > k / 2, independently per entry."""
        counts = np.asarray(counts)
        if counts.ndim != 2 or counts.shape[1] != self.num_labels:
            raise ValueError(f"counts must have shape [Q, {self.num_labels}], got {counts.shape}")
        return noisy_threshold(counts.astype(np.float64), self.sigma, self.k / 2.0, rng)
