"""Top Stable (TS): release a stable top-i set found by sparse vector (Carvalho et al. 2020, Algorithm 3).

Per histogram, with counts sorted h_(1) >= h_(2) >= ... (ties by the smaller index; only the top
kbar + 1 are read, the unknown-domain property):

1. eps1 = p1 eps, eps2 = (1 - p1) eps, c = 2 eps1 / eps2; delta_q = the largest value with
   kbar delta_max(delta_q) <= delta (``delta_max``, Lemma 3.1); T = ln(1/delta_q) / (eps2 / 2).
2. T_hat = T + Lap(1/eps1), once per histogram. For i = kbar, kbar - 1, ..., 1 test
   q_i + Lap(2/eps2) > T_hat (fresh noise per i), q_i = h_(i) - h_(i+1) - 1; stop at the first pass.
3. At a pass at i: if i > k, release k of the top i, by Top-k EM at total budget eps_EM (k peeling
   rounds at eps_EM / k each) or, with eps_EM = 0, uniformly at random; if i <= k release the top i.
   Either way the released set comes in a random order (the paper's "in a random order": the set is
   stable, the order within it is not, so releasing it by count would not be private). No pass: nothing.
4. Optional fill (not in the paper; the counterpart of StableTopK-fixed's fill): when fewer than k
   were released and ``fill_epsilon`` > 0, peel the k - i missing ones from the bins not yet released
   (all d bins are read) with ``gumbel_peel`` at per-pick epsilon fill_epsilon / k.

Why q_i = h_(i) - h_(i+1) - 1 is the distance to instability of f_i = {indices at positions 1..i}
under add/remove. One user added (removed) moves every count by 0 or +1 (-1), so the gap between an
index inside and one outside the top-i moves by at most 1 per user (``gap_sensitivity("add_remove")``).
After m users the gap is >= h_(i) - h_(i+1) - m, and f_i can only change once some outside index
reaches an inside count (a tie may be broken either way), i.e. f_i survives every m users with
h_(i) - h_(i+1) - m >= 1: the largest such m is h_(i) - h_(i+1) - 1 (Definition 2.6; the code writes
floor((gap - 1) / s) with s = 1 the gap sensitivity). In particular
q_i >= 1 (a gap of at least 2) means no neighbour changes f_i, and f_i(D) != f_i(D') forces q_i <= 0
on both sides. The "-1" is that strict inequality; a tie (gap 0) gives q_i = -1, which only makes a
pass less likely. q_i changes by at most 1 per user, the sensitivity the SVT noise is scaled for.

Privacy (add/remove, Theorem 3.2): (eps + eps_EM, delta)-DP. The tests are SVT with one positive answer
(Lyu, Su & Li 2017, Algorithm 1 with c = 1: eps1 + eps2 = eps, pure); releasing f_i after a pass costs
no epsilon where f_i(D) = f_i(D') and a probability of at most delta_max per unstable i otherwise
(Lemma 3.1 with eps_a = eps2 / 2, eps_b = eps1), kbar delta_max <= delta in all; Top-k EM adds eps_EM.
The fill adds fill_epsilon (k picks at most, each (fill_epsilon / k)-DP: basic composition).

Neighbours. ``neighbors`` sets the scale of the two pure-DP peelings (EM and fill), at
c / (budget / k) with c = ``count_selection_range(neighbors)``, so each costs its budget under that
relation. The SVT + stability part is analysed under add/remove only; under replace it is stated by
``replace_from_add_remove``: (2 eps, (1 + e^eps) delta). Per query: add_remove (eps + eps_EM + fill, delta),
replace (2 eps + eps_EM + fill, (1 + e^eps) delta); ``queries`` queries compose by
``advanced_composition``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pate.mechanisms.noise import sample_noise
from pate.mechanisms.topk.base import (
    DPStatement,
    StatementCost,
    TopKResult,
    check_histograms,
    check_k,
    check_max_k,
    check_max_k_fits,
    sorted_order,
)
from pate.mechanisms.topk.peeling import gumbel_peel
from pate.privacy import checks
from pate.privacy.composition import advanced_composition, replace_from_add_remove, solve_per_query
from pate.privacy.sensitivity import (
    NeighboringRelation,
    check_relation,
    count_selection_range,
    gap_sensitivity,
    stability_distance_sensitivity,
)

__all__ = ["TopStable", "delta_max", "query_delta"]

ANALYSED_RELATION = "add_remove"  # the relation of Carvalho et al.'s proofs; replace goes through group privacy
# The sensitivity of the SVT queries (distances to instability), derived in pate/privacy/sensitivity.py.
DISTANCE_SENSITIVITY = stability_distance_sensitivity(ANALYSED_RELATION)


def delta_max(delta_q: float, c: float) -> float:
    """Lemma 3.1's bound on Pr[Lap(1/eps_a) > ln(1/delta_q)/eps_a + Lap(1/eps_b)], c = eps_b / eps_a != 1:

        delta_max = (2 delta_q^c + delta_q - c (delta_q^c + 2 delta_q)) / (4 (1 - c)).

    Source: Carvalho et al. 2020, Lemma 3.1 (TS uses eps_a = eps2 / 2, eps_b = eps1, so c = 2 eps1 / eps2).
    Computed in the equivalent form (numerator = (2 - c)(delta_q^c - delta_q) + 3 (1 - c) delta_q)

        delta_max = delta_q (3/4 + (2 - c) expm1((c - 1) ln delta_q) / (4 (1 - c))),

    which has no cancellation for c near 1. Increasing in delta_q on (0, 1] for every c != 1, with
    delta_max(1) = 3/4.
    """
    delta_q = checks.open_unit("delta_q", delta_q)
    c = checks.positive("c", c)
    if c == 1.0:
        raise ValueError("c must differ from 1 (Lemma 3.1), got 1.0")
    return delta_q * (0.75 + (2.0 - c) * math.expm1((c - 1.0) * math.log(delta_q)) / (4.0 * (1.0 - c)))


def query_delta(delta: float, max_k: int, c: float) -> float:
    """delta_q of Algorithm 3, line 2: the largest delta_q with max_k delta_max(delta_q, c) <= delta.

    Found by ``solve_per_query`` (bisection on log delta_q, keeping the inequality true in floating point).
    """
    delta = checks.open_unit("delta", delta)
    max_k = checks.positive_int("max_k", max_k)
    return solve_per_query(delta, lambda value: max_k * delta_max(value, c), np.finfo(float).tiny, 1.0 - 1e-16)


@dataclass(frozen=True)
class TopStable(StatementCost):
    """TS(k, kbar, eps, p1, eps_EM, delta) plus an optional fill; ``epsilon`` is the SVT budget eps1 + eps2."""

    _theorems = "Carvalho et al. 2020, Theorem 3.2 (+ fill, basic composition); advanced composition"
    _replace_note = "replace = remove + add (group privacy) for the SVT part"

    k: int
    max_k: int
    epsilon: float
    delta: float
    p1: float = 0.37
    em_epsilon: float = 0.0
    fill_epsilon: float = 0.0
    neighbors: NeighboringRelation | str = "add_remove"
    delta_q: float = field(init=False, repr=False)

    def __post_init__(self):
        checks.set_fields(
            self,
            k=check_k(self.k),
            max_k=check_max_k(self.max_k, self.k),
            epsilon=checks.positive("epsilon", self.epsilon),
            delta=checks.open_unit("delta", self.delta),
            p1=checks.open_unit("p1", self.p1),
        )
        if math.isclose(self.c, 1.0, rel_tol=1e-9):  # 1/3 itself gives c = 1 - 2^-53 in floating point
            raise ValueError(f"p1 must differ from 1/3 (it makes c = 2 p1 / (1 - p1) = 1, Lemma 3.1), got {self.p1!r}")
        checks.set_fields(
            self,
            em_epsilon=checks.non_negative("em_epsilon", self.em_epsilon),
            fill_epsilon=checks.non_negative("fill_epsilon", self.fill_epsilon),
            neighbors=check_relation(self.neighbors),
            delta_q=query_delta(self.delta, self.max_k, self.c),
        )

    @classmethod
    def for_budget(
        cls,
        k: int,
        max_k: int,
        epsilon: float,
        delta: float,
        queries: int = 1,
        neighbors: str = "add_remove",
        fill_fraction: float = 0.0,
        p1: float = 0.37,
    ) -> "TopStable":
        """TS (eps_EM = 0) within (epsilon, delta)-DP over ``queries`` queries, by advanced composition.

        ``fill_fraction`` f in [0, 1) of each query's epsilon eps + fill goes to the fill
        (fill = f / (1 - f) eps). Split of delta: half to the queries' own delta terms, half to the
        composition slack. Per-query delta = delta / (2 queries) under add_remove and
        delta / (2 queries (1 + e^{epsilon/2})) under replace, where each query's delta term is
        (1 + e^eps) delta and eps <= epsilon / 2 (a query alone already costs 2 eps + fill). Then eps is
        the largest with ``spent(queries, delta) <= epsilon`` (``solve_per_query``).
        """
        epsilon = checks.positive("epsilon", epsilon)
        delta = checks.open_unit("delta", delta)
        queries = checks.positive_int("queries", queries)
        check_relation(neighbors)
        fill_fraction = checks.non_negative("fill_fraction", fill_fraction)
        if fill_fraction >= 1:
            raise ValueError(f"fill_fraction must lie in [0, 1), got {fill_fraction!r}")
        delta_factor = 1.0 if neighbors == ANALYSED_RELATION else 1.0 + math.exp(epsilon / 2.0)
        per_query_delta = delta / (2.0 * queries * delta_factor)
        fill_ratio = fill_fraction / (1.0 - fill_fraction)

        def build(svt_epsilon: float) -> "TopStable":
            return cls(k, max_k, svt_epsilon, per_query_delta, p1, 0.0, fill_ratio * svt_epsilon, neighbors)

        # Bracket. lo: queries at most 2 lo / (1 - f) each compose to <= epsilon / 2.
        # hi: a query alone costs >= 2 epsilon > epsilon, and composition never costs less than one query.
        lo = epsilon * (1.0 - fill_fraction) / (4.0 * queries)
        svt_epsilon = solve_per_query(epsilon, lambda value: build(value)._epsilon_at(queries, delta), lo, 2 * epsilon)
        return build(svt_epsilon)

    # ---------------------------------------------------------- parameters
    @property
    def epsilon1(self) -> float:
        """SVT threshold budget p1 eps."""
        return self.p1 * self.epsilon

    @property
    def epsilon2(self) -> float:
        """SVT query budget (1 - p1) eps."""
        return (1.0 - self.p1) * self.epsilon

    @property
    def c(self) -> float:
        """c = 2 eps1 / eps2 = eps_b / eps_a of Lemma 3.1."""
        return 2.0 * self.p1 / (1.0 - self.p1)

    @property
    def threshold(self) -> float:
        """T = ln(1/delta_q) / (eps2 / 2), in units of the distance to instability (sensitivity 1)."""
        return DISTANCE_SENSITIVITY * math.log(1.0 / self.delta_q) / (self.epsilon2 / 2.0)

    @property
    def name(self) -> str:
        return (
            f"TS(k={self.k}, kbar={self.max_k}, eps={self.epsilon:.4g}, p1={self.p1:g}, "
            f"eps_EM={self.em_epsilon:.3g}, fill={self.fill_epsilon:.3g}, delta={self.delta:.3g}, "
            f"neighbors={self.neighbors})"
        )

    # ---------------------------------------------------------- mechanism
    def __call__(self, histograms, rng: np.random.Generator) -> TopKResult:
        counts = check_histograms(histograms, k=self.k)
        num_queries, num_bins = counts.shape
        k = self.k
        kbar = self.max_k
        check_max_k_fits(kbar, num_bins)
        order, top = sorted_order(counts, depth=kbar + 1)
        stable = self._stable_size(top, rng)

        positions = np.arange(kbar)
        inside = positions < stable[:, None]
        use_em = self.em_epsilon > 0
        # Keys for the released positions: the counts (Top-k EM) where i > k and eps_EM > 0, else equal
        # keys, for which Gumbel peeling is a uniformly random ordered draw.
        keys = np.where(use_em & (stable > k)[:, None], top[:, :kbar], 0).astype(np.float64)
        scale = count_selection_range(self.neighbors) / (self.em_epsilon / k) if use_em else 1.0
        picked = gumbel_peel(np.where(inside, keys, -np.inf), np.minimum(stable, k), scale, rng)
        indices = np.full((num_queries, k), -1, dtype=np.int64)
        indices[:, : picked.shape[1]] = np.where(picked >= 0, np.take_along_axis(order, np.maximum(picked, 0), 1), -1)
        if self.fill_epsilon > 0:
            self._fill(counts, indices, rng)
        return TopKResult(indices)

    def _stable_size(self, top: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """i of the first pass, testing i = kbar, ..., 1 (0 where none passes): int64 [B]."""
        num_queries, kbar = top.shape[0], self.max_k
        # q_i, column i - 1: the most users after which the gap is still >= 1 (module docstring).
        distance = (top[:, :-1] - top[:, 1:] - 1) // gap_sensitivity(ANALYSED_RELATION)
        noisy_threshold = self.threshold + sample_noise(
            "laplace", DISTANCE_SENSITIVITY / self.epsilon1, num_queries, rng
        )
        query_scale = 2.0 * DISTANCE_SENSITIVITY / self.epsilon2
        noisy_distance = distance + sample_noise("laplace", query_scale, distance.shape, rng)
        passes_from_top = (noisy_distance > noisy_threshold[:, None])[:, ::-1]  # column j tests i = kbar - j
        return np.where(passes_from_top.any(axis=1), kbar - passes_from_top.argmax(axis=1), 0)

    def _fill(self, counts: np.ndarray, indices: np.ndarray, rng: np.random.Generator) -> None:
        """Peel the missing k - i slots of ``indices`` (in place) from the bins not yet released."""
        num_queries, k = indices.shape
        released = indices >= 0
        rows = np.nonzero(released)
        taken = np.zeros(counts.shape, dtype=bool)
        taken[rows[0], indices[rows]] = True
        returned = released.sum(axis=1)
        scale = count_selection_range(self.neighbors) / (self.fill_epsilon / k)
        filled = gumbel_peel(np.where(taken, -np.inf, counts.astype(np.float64)), k - returned, scale, rng)
        rows, columns = np.nonzero(filled >= 0)
        indices[rows, returned[rows] + columns] = filled[rows, columns]

    # ---------------------------------------------------------- privacy
    def per_query_statement(self) -> tuple[float, float]:
        """(epsilon, delta) of one query under ``neighbors`` (module docstring, Theorem 3.2 + fill)."""
        svt_epsilon, svt_delta = self.epsilon, self.delta
        if self.neighbors != ANALYSED_RELATION:
            svt_epsilon, svt_delta = replace_from_add_remove(svt_epsilon, svt_delta)
        return svt_epsilon + self.em_epsilon + self.fill_epsilon, svt_delta

    def dp_statement(self, queries: int, delta_slack: float) -> DPStatement:
        """``advanced_composition`` of ``queries`` per-query statements with slack ``delta_slack``."""
        epsilon, delta = advanced_composition(*self.per_query_statement(), queries, delta_slack)
        return DPStatement(epsilon, delta, self.neighbors, self.accounting)

    def _epsilon_at(self, queries: int, delta: float) -> float:
        queries = checks.positive_int("queries", queries)
        query_epsilon, query_delta_term = self.per_query_statement()
        slack = delta - queries * query_delta_term
        if slack < 0:
            return math.inf
        return advanced_composition(query_epsilon, query_delta_term, queries, slack)[0]
