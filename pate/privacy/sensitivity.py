"""Sensitivities derived from the neighbouring relation -- the only place where that happens.

The unit of privacy is one training record. It lives in exactly one teacher's partition, so changing
it can change that teacher's whole vote vector v in {0, 1}^L (docs/architecture.md, section 1). With the vote
histogram h = sum over teachers of v (one count per label):

The relation is a :class:`NeighboringRelation`; every function here also accepts its string value.

* ``"replace"`` (the default): one teacher's vote is replaced, h' = h - v + v'. Every count moves by
  at most 1, in either direction, all at once: h' - h in {-1, 0, 1}^L.
* ``"add_remove"``: one teacher's vote is added or removed, h' = h +- v. Every count moves by at most 1,
  all in the same direction: h' - h in {0, 1}^L or in {-1, 0}^L. It exists to reproduce accounting
  from the literature (Zhu & Wang 2022 analyse this relation).

Every function below states the bound and sketches its proof; mechanisms take their sensitivities
from here and never hard-code them.
"""

from __future__ import annotations

import math
import numbers
from enum import Enum

import numpy as np

from pate.privacy import checks

__all__ = [
    "NeighboringRelation",
    "RELATIONS",
    "check_relation",
    "count_l2_sensitivity",
    "gap_sensitivity",
    "count_selection_range",
    "stability_distance_sensitivity",
    "clipped_vote_l2_sensitivity",
    "clipped_vote_l1_sensitivity",
    "knn_vote_l2_sensitivity",
    "clipped_gradient_sum_sensitivity",
]


class NeighboringRelation(str, Enum):
    """Which vote histograms are neighbours (the module docstring derives both). A ``str`` subclass whose
    value is what configs, metrics.json and the ledger's JSON write, so ``NeighboringRelation.REPLACE ==
    "replace"`` and it prints as ``replace``."""

    REPLACE = "replace"
    ADD_REMOVE = "add_remove"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:  # error messages and dataclass reprs read neighbors='replace', as configs spell it
        return repr(self.value)

    __format__ = str.__format__  # f"{relation}" -> "replace" on every Python version


RELATIONS = tuple(relation.value for relation in NeighboringRelation)
NORMS = ("l1", "l2")


def check_relation(neighbors) -> NeighboringRelation:
    """``neighbors`` (a :class:`NeighboringRelation` or its string value) as the enum; anything else raises
    ``ValueError`` naming it."""
    if isinstance(neighbors, str) and neighbors in RELATIONS:
        return NeighboringRelation(neighbors)
    raise ValueError(f"neighbors must be one of {RELATIONS}, got {neighbors!r}")


def _check_num_labels(num_labels) -> int:
    return checks.positive_int("num_labels", num_labels)


def _check_norm(norm) -> str:
    if not isinstance(norm, str) or norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    return norm


def _check_tau(tau, num_labels: int) -> float:
    is_real = isinstance(tau, numbers.Real) and not isinstance(tau, (bool, np.bool_))
    if not is_real or not 1 <= tau <= num_labels:
        raise ValueError(
            f"tau must be a number in [1, num_labels={num_labels}], got {tau!r}: tau caps the labels one "
            f"teacher's vote counts, so it lies between 1 and the data's number of labels"
        )
    return float(tau)


def count_l2_sensitivity(num_labels: int, neighbors: str) -> float:
    """L2 sensitivity of the count vector h in N^L: sqrt(L) under both relations.

    Proof sketch. replace: h' - h = v' - v with v, v' in {0, 1}^L, so every entry lies in {-1, 0, 1} and
    ||h' - h||_2 <= sqrt(L), attained by v = 0, v' = 1. add_remove: h' - h = +-v with v in {0, 1}^L,
    so ||h' - h||_2 = ||v||_2 <= sqrt(L), attained by v = 1 (a teacher voting for every label). A threshold at
    T / 2 that follows the ensemble's size (GaussianPATE) moves h - T / 2 by v - 1/2 instead, at most sqrt(L) / 2:
    sqrt(L) covers both readings.
    """
    num_labels = _check_num_labels(num_labels)
    check_relation(neighbors)
    return math.sqrt(num_labels)


def binary_vote_l2_sensitivity(num_labels: int, neighbors: str) -> float:
    """L2 sensitivity of the L per-label (yes, no) pairs of binary voting, stacked into one vector of 2L counts, as
    the mechanism computes them: sqrt(2 L) under both relations.

    The mechanism's input is the yes-count vector y in {0..T}^L with T the CONFIGURED number of teachers, and it
    derives each "no" count as T - y_l (``pate.mechanisms.binary_voting.binary_gnmax``). A relation is applied to
    that input, never to a model in which "no" counts the teachers present.

    Proof sketch. replace: one teacher's vote replaced moves each y_l by d_l in {-1, 0, 1}. add_remove: one
    teacher's vote added or removed moves each y_l by d_l in {0, 1} (or {-1, 0}), and T stays the configured
    constant, so the no-count T - y_l moves by -d_l. Under both, each label's pair moves by (d_l, -d_l), of L2
    norm sqrt(2) |d_l|, and every label may move at once: ||.||_2 <= sqrt(2 L), attained by a teacher voting yes
    on every label removed (add_remove) or its vote replaced by all-no (replace). Per label (L = 1) this is PATE
    2018's GNMax neighbour "one vote moved between the two classes" (Papernot et al. 2018, Proposition 8:
    alpha / sigma^2). The add_remove price alpha / (2 sigma^2) of one vote added to a single class would need the
    no-count to be the number of teachers present who voted no, which the mechanism does not compute (yes = 36
    against 35 of T = 40 at sigma = 1 has an exact order-16 Renyi divergence of 15.8, not 8).
    """
    num_labels = _check_num_labels(num_labels)
    check_relation(neighbors)
    return math.sqrt(2.0 * num_labels)


def gap_sensitivity(neighbors: str) -> float:
    """Sensitivity of a gap h_(j) - h_(j+1) of the counts sorted in decreasing order: 2 (replace), 1 (add_remove).

    Proof sketch. Order statistics are monotone and 1-Lipschitz in the max-norm: if h <= h' entrywise
    then h_(j) <= h'_(j) for every j, and |h_(j) - h'_(j)| <= ||h - h'||_inf.
    add_remove: h' = h + v with v in {0, 1}^L (or the reverse), so h <= h' <= h + 1 entrywise and
    every order statistic moves by an amount in [0, 1], all in the same direction; the difference of
    two such moves lies in [-1, 1]. replace: ||h' - h||_inf <= 1, so each order statistic moves by an
    amount in [-1, 1] independently of the other, and the gap moves by at most 2; h = (1, 1),
    h' = (2, 0) (one teacher's vote (0, 1) replaced by (1, 0)) attains 2. This matches Zhu & Wang 2022,
    proof of Proposition 7, for add_remove.
    """
    return {"replace": 2.0, "add_remove": 1.0}[check_relation(neighbors)]


def stability_distance_sensitivity(neighbors: str) -> float:
    """Sensitivity of a distance to instability d = floor((g - 1) / s), g a gap of the sorted counts and
    s = ``gap_sensitivity(neighbors)``: 1 under both relations (Carvalho et al. 2020, Lemma 3.2, for add_remove).

    Proof sketch. Between neighbours the gap moves to g' in [g - s, g + s] (``gap_sensitivity``), so
    (g' - 1) / s lies within 1 of (g - 1) / s, and the floors of two reals at distance <= 1 differ by at most 1.
    The bound is attained: g = s + 1 (d = 1) and g' = 1 (d' = 0). The top-k-stable mechanism's SVT queries are
    such distances, so their Laplace noise is scaled for this sensitivity.
    """
    check_relation(neighbors)
    return 1.0


def count_selection_range(neighbors: str) -> float:
    """Range constant c of selecting a bin with probability proportional to exp(eta h_i): 1 (add_remove), 2 (replace).

    The mechanism (the exponential mechanism on the counts, or Gumbel(1/eta) noise and argmax; also each
    step of peeling on a public sub-domain) is (c eta)-bounded-range, hence (c eta)-DP and
    (c eta)^2/8-zCDP (``pate.privacy.curves.exponential_mechanism_rdp``).

    Proof sketch. Bounded range (Durfee & Rogers 2019, Definition 4.2) bounds
    sup_i log(p_i / p'_i) - inf_j log(p_j / p'_j) = eta sup_{i,j} ((h_i - h'_i) - (h_j - h'_j)) (the
    normalisers cancel). add_remove: all h_i - h'_i lie in [0, 1] (or all in [-1, 0]), so the range is
    at most eta: the counts are a monotone quality score (ibid., Lemma 4.3). replace: each difference
    lies in [-1, 1] independently, so the range is at most 2 eta, attained by one count up and another
    down. Equivalently: Delta = 1 under both relations, and Lemma 4.3's factor 2 is saved only for
    monotone scores.
    """
    return {"replace": 2.0, "add_remove": 1.0}[check_relation(neighbors)]


def clipped_vote_l2_sensitivity(num_labels: int, tau: float, norm: str, neighbors: str) -> float:
    """L2 sensitivity of the sum of tau-clipped vote vectors (PATE-tau).

    Each teacher's vote v in {0, 1}^L is scaled down (never up) so that ||v||_1 <= tau (``norm="l1"``)
    or ||v||_2 <= sqrt(tau) (``norm="l2"``); the entries stay in [0, 1]. tau must lie in [1, L].

    * add_remove: sqrt(tau).
    * replace: min(sqrt(2 tau), sqrt(L)).

    Proof sketch. Under both norms ||v||_2 <= sqrt(tau): for "l1", ||v||_2^2 <= ||v||_inf ||v||_1 <= tau
    because the entries lie in [0, 1]; for "l2" it is the constraint itself. add_remove: the sum
    changes by +-v, so by at most sqrt(tau). replace: it changes by v' - v with v, v' >= 0 entrywise,
    so ||v' - v||_2^2 = ||v||^2 + ||v'||^2 - 2 <v, v'> <= 2 tau; and the entries of v' - v lie in
    [-1, 1], so also ||v' - v||_2 <= sqrt(L). Both are attained up to integrality (disjoint supports of
    size tau; or v = 0, v' = 1 when tau = L).
    """
    num_labels = _check_num_labels(num_labels)
    tau = _check_tau(tau, num_labels)
    _check_norm(norm)
    if check_relation(neighbors) == "add_remove":
        return math.sqrt(tau)
    return min(math.sqrt(2.0 * tau), math.sqrt(num_labels))


def clipped_threshold_l2_sensitivity(num_labels: int, tau: float, norm: str, neighbors: str) -> float:
    """L2 sensitivity of PATE-tau's released statistic: the sum of tau-clipped vote vectors less T / 2, T the
    number of teachers (labels are on where it plus noise exceeds 0).

    * replace: min(sqrt(2 tau), sqrt(L)), the sum's (``clipped_vote_l2_sensitivity``): T is unchanged.
    * add_remove: max(sqrt(tau), sqrt(L) / 2).

    Proof sketch. add_remove: the ensemble has T or T + 1 teachers, and the threshold follows it (the
    aggregator is built for the ensemble it is given), so a teacher added moves each entry by w v_l - 1/2, with
    w v_l in [0, 1]: by at most 1/2 each, sqrt(L) / 2 in all, attained by an added teacher voting for nothing. An
    ensemble read at a fixed T with one teacher's row zeroed moves the sum alone, by at most sqrt(tau). The
    price is the larger of the two: the sum's sqrt(tau) alone would miss the threshold's move, whose divergence
    reaches 6 times the one sqrt(tau) prices with L = 40, tau = 1 (the default L = 40, tau = 10 has
    sqrt(tau) = sqrt(L) / 2).
    """
    base = clipped_vote_l2_sensitivity(num_labels, tau, norm, neighbors)
    if check_relation(neighbors) == "add_remove":
        return max(base, math.sqrt(_check_num_labels(num_labels)) / 2.0)
    return base


def clipped_vote_l1_sensitivity(num_labels: int, tau: float, norm: str, neighbors: str) -> float:
    """L1 sensitivity of the sum of tau-clipped vote vectors (PATE-tau), same clipping as above.

    * ``norm="l1"`` (||v||_1 <= tau): add_remove tau; replace min(2 tau, L).
    * ``norm="l2"`` (||v||_2 <= sqrt(tau)): add_remove sqrt(L tau); replace min(sqrt(2 L tau), L).

    Proof sketch. "l1": add_remove changes the sum by +-v, ||v||_1 <= tau. replace changes it by
    v' - v: ||v' - v||_1 <= ||v||_1 + ||v'||_1 <= 2 tau, and <= L since the entries lie in [-1, 1].
    "l2": by Cauchy-Schwarz ||x||_1 <= sqrt(L) ||x||_2, and the L2 bounds of
    ``clipped_vote_l2_sensitivity`` give sqrt(L tau) (add_remove; <= L because tau <= L) and
    sqrt(L) min(sqrt(2 tau), sqrt(L)) = min(sqrt(2 L tau), L) (replace). The add_remove bound is
    attained by the all-ones vote scaled to norm sqrt(tau), whose entries sqrt(tau / L) sum to
    sqrt(L tau).
    """
    num_labels = _check_num_labels(num_labels)
    tau = _check_tau(tau, num_labels)
    norm = _check_norm(norm)
    relation = check_relation(neighbors)
    if norm == "l1":
        return tau if relation == "add_remove" else min(2.0 * tau, float(num_labels))
    if relation == "add_remove":
        return math.sqrt(num_labels * tau)
    return min(math.sqrt(2.0 * num_labels * tau), float(num_labels))


def knn_vote_l2_sensitivity(num_labels: int, neighbors: str) -> float:
    """L2 sensitivity of Private-kNN's vote vector for one query, given the rest of the Poisson sample: sqrt(L)
    under both relations, for the neighbours of one training RECORD (Private-kNN has no teachers).

    The vote vector is h = sum of the label vectors y in {0, 1}^L of the k records nearest to the query among the
    sampled ones (Zhu, Yin, Feng & Wang, "Private-kNN", CVPR 2020, Algorithm 1). Proof sketch. add_remove: a
    sampled record x that enters the k nearest pushes out at most one record z, so h' - h = y_x - y_z (or y_x
    when fewer than k were sampled): every entry in {-1, 0, 1}, ||h' - h||_2 <= sqrt(L). replace: x is swapped for
    x'; conditioned on the other sampled records each of x, x' is in the sample together with the same coin, and
    the k-nearest set differs from the one without them by at most one record in, one out, so h(with x) - h(without)
    and h(with x') - h(without) each have L2 norm <= sqrt(L) -- the two contributions of a replaced record in the
    subsampled-Gaussian analysis (``poisson_sampled_gaussian_replace_rdp``).
    """
    num_labels = _check_num_labels(num_labels)
    check_relation(neighbors)
    return math.sqrt(num_labels)


def clipped_gradient_sum_sensitivity(clip_norm: float, neighbors: str) -> float:
    """The norm bound C of one record's contribution to DP-SGD's sum of per-example gradients clipped to L2 norm C,
    under both relations: the Poisson-sampled Gaussian's curves are stated per contribution (Mironov, Talwar &
    Zhang 2019 for add_remove: the sum moves by one contribution of norm <= C; replace: by the difference of two
    contributions, each of norm <= C, whose worst case ``poisson_sampled_gaussian_replace_rdp`` prices). So the
    noise multiplier of the event is the noise standard deviation over C, under either relation.
    """
    check_relation(neighbors)
    return checks.positive("clip_norm", clip_norm)
