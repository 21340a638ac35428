"""Peeling: k private top-1 selections, each on the bins not yet chosen.

* ``gumbel_peel``: exponential-mechanism peeling in one shot. Adding i.i.d. Gumbel(b) noise to every
  score and returning the m largest is equal in distribution to m rounds of the exponential mechanism
  with Pr[i] proportional to exp(score_i / b), each on the bins left (Durfee & Rogers 2019, Lemma 4.2).
* ``EMPeeling`` (EM-CDP): that one-shot Gumbel top-k on the counts, the per-pick epsilon set from a
  total (epsilon, delta) through zCDP composition (Durfee & Rogers 2019, Section 4; Zhu & Wang 2022,
  EXP2 "EM-CDP").
* ``PNFPeeling``: k rounds of permute-and-flip, i.e. report-noisy-max with Exponential noise (Ding, Kifer
  et al. 2021, "The Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential
  Noise"), fresh noise every round; pure DP (Gillenwater et al. 2022's "PNF-peel").

Scale of the noise. Selecting bin i with probability proportional to exp(eta h_i) is
(c eta)-bounded-range with c = ``count_selection_range(neighbors)`` (1 add_remove, 2 replace), so a pick
with bounded-range parameter eps uses eta = eps / c, i.e. Gumbel(c / eps). Report-noisy-max with
Exponential(c / eps) noise (one permute-and-flip round) is eps-DP by the argument of Dwork & Roth 2014,
Claim 3.9: fix every noise but bin i's; i wins iff its noise exceeds t = max_{j != i}(h_j + Z_j) - h_i,
and on a neighbour t' <= t + c (add_remove moves all counts the same way by <= 1, replace by <= 1 each
way, so the difference moves by <= c); the Exponential(b) survival function obeys
S(t + c) >= exp(-c / b) S(t) for every t (memoryless for t >= 0, S = 1 below 0), so
Pr'[i] >= exp(-eps) Pr[i], and symmetrically. Peeling on the bins left is the same on a public domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import SelfComposedDpEvent

from pate.mechanisms.noise import sample_noise
from pate.mechanisms.topk.base import PureEpsilonCost, TopKResult, check_histograms, check_k
from pate.privacy import checks
from pate.privacy.composition import zcdp_rho_for
from pate.privacy.events import BoundedRangeEvent, PureDpEvent
from pate.privacy.sensitivity import NeighboringRelation, check_relation, count_selection_range

__all__ = ["EMPeeling", "PNFPeeling", "em_cdp_pick_epsilon", "gumbel_peel"]

_CHUNK_BINS = 1 << 20


def gumbel_peel(scores: np.ndarray, picks: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Exponential-mechanism peeling of ``picks[b]`` items from row b of ``scores``, in one shot.

    ``scores`` float64 ``[B, n]`` (-inf marks an item that may not be picked), ``picks`` int ``[B]``
    (each <= the number of finite scores in its row), ``scale`` the Gumbel scale b (the exponential
    mechanism with Pr[i] proportional to exp(score_i / b)). Returns int64 ``[B, max(picks)]``: the picked
    columns in the order peeling would pick them, -1 beyond a row's ``picks``.

    Source: Durfee & Rogers 2019, Lemma 4.2 (one-shot Gumbel top-m = m rounds of the exponential
    mechanism on the remaining items).
    """
    scale = checks.positive("scale", scale)
    picks = np.asarray(picks, dtype=np.int64)
    width = int(picks.max(initial=0))
    if width == 0:
        return np.full((scores.shape[0], 0), -1, dtype=np.int64)
    available = np.isfinite(scores).sum(axis=1)
    if np.any(picks < 0) or np.any(picks > available):
        raise ValueError(f"picks must lie in [0, the number of allowed items per row], got {picks.tolist()[:10]}")
    noisy = sample_noise("gumbel", scale, scores.shape, rng)
    noisy += scores
    if width < scores.shape[1]:
        top = np.argpartition(-noisy, width - 1, axis=1)[:, :width]
    else:
        top = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    top = np.take_along_axis(top, np.argsort(-np.take_along_axis(noisy, top, 1), axis=1, kind="stable"), 1)
    return np.where(np.arange(width) < picks[:, None], top, -1)


def em_cdp_pick_epsilon(epsilon: float, delta: float, picks: int) -> float:
    """Per-pick bounded-range epsilon of EM-CDP: picks exponential mechanisms within (epsilon, delta)-DP.

    Each eps_0-bounded-range pick is eps_0^2 / 8-zCDP (Cesar & Rogers 2021, Lemma 17); ``picks`` of them
    compose to rho = picks eps_0^2 / 8 (Bun & Steinke 2016, Lemma 2.3), and rho-zCDP is
    (rho + 2 sqrt(rho log(1/delta)), delta)-DP: eps_0 = sqrt(8 rho / picks) with
    rho = ``zcdp_rho_for(epsilon, delta)`` = (sqrt(epsilon + log(1/delta)) - sqrt(log(1/delta)))^2. Each pick
    is also eps_0-DP, and basic composition (Dwork & Roth 2014, Theorem 3.16) allows eps_0 = epsilon / picks;
    the larger of the two is within budget (Gillenwater et al. 2022, dp_topk's ``em_epsilon_cdp``):

        eps_0 = max(epsilon / picks, sqrt(8 rho / picks)).

    Basic composition wins for few picks (at picks = 1, eps_0 = epsilon). ``picks`` counts every pick of every
    query (k per query times the number of queries). ``spent`` charges the smaller of the two bounds.
    """
    picks = checks.positive_int("picks", picks)
    return max(checks.positive("epsilon", epsilon) / picks, math.sqrt(8.0 * zcdp_rho_for(epsilon, delta) / picks))


class _Peeling(PureEpsilonCost):
    """Shared facts of the peeling mechanisms: k picks of ``pick_epsilon`` each, at scale c / pick_epsilon."""

    _epsilon_field = "pick_epsilon"

    @classmethod
    def for_budget(
        cls,
        k: int,
        epsilon: float,
        delta: float,
        queries: int = 1,
        neighbors: str = "add_remove",
        accountant: str | None = None,
    ):
        """The mechanism within (epsilon, delta)-DP over ``queries`` queries (k x queries picks).

        ``accountant`` None or the class's closed form -- EM-CDP: "zcdp", pick_epsilon =
        ``em_cdp_pick_epsilon``; PNF-peel: "pure", pick_epsilon = epsilon / (k queries), so the run is even
        (epsilon, 0)-DP -- as the papers calibrate them; "rdp": the largest pick_epsilon the RDP ledger
        allows (its tight conversion of the same curves gives more).
        """
        k, queries = check_k(k), checks.positive_int("queries", queries)
        pick_epsilon = cls._closed_form_pick_epsilon(epsilon, delta, k * queries)
        start = cls(k=k, pick_epsilon=pick_epsilon, neighbors=neighbors)
        return start._calibrated(accountant or cls._closed_form, cls._closed_form, epsilon, delta, queries)

    @property
    def pure_epsilon(self) -> float:
        """k x pick_epsilon: each pick is pick_epsilon-DP, basic composition over the k picks."""
        return self.k * self.pick_epsilon

    @property
    def noise_scale(self) -> float:
        """c / pick_epsilon: the scale at which one pick is pick_epsilon-DP (module docstring)."""
        return count_selection_range(self.neighbors) / self.pick_epsilon

    def __post_init__(self):
        checks.set_fields(
            self,
            k=check_k(self.k),
            pick_epsilon=checks.positive("pick_epsilon", self.pick_epsilon),
            neighbors=check_relation(self.neighbors),
        )


@dataclass(frozen=True)
class EMPeeling(_Peeling):
    """EM-CDP: k exponential-mechanism picks at bounded-range epsilon ``pick_epsilon`` each, via one-shot Gumbel.

    Cost per query: k x ``exponential_mechanism_rdp(pick_epsilon)`` (each pick is pick_epsilon-BR). The
    papers calibrate EM-CDP by zCDP composition in closed form: ``EMPeeling.for_budget``.
    """

    k: int
    pick_epsilon: float
    neighbors: NeighboringRelation | str = "add_remove"

    _closed_form = "zcdp"
    _closed_form_pick_epsilon = staticmethod(em_cdp_pick_epsilon)

    @property
    def name(self) -> str:
        return f"EM-CDP(k={self.k}, pick_eps={self.pick_epsilon:.4g}, neighbors={self.neighbors})"

    @property
    def dp_event(self) -> SelfComposedDpEvent:
        """k picks, each pick_epsilon-bounded-range."""
        return SelfComposedDpEvent(BoundedRangeEvent(self.pick_epsilon), self.k)

    def __call__(self, histograms, rng: np.random.Generator) -> TopKResult:
        counts = check_histograms(histograms, k=self.k)
        picks = np.full(counts.shape[0], self.k, dtype=np.int64)
        return TopKResult(gumbel_peel(counts.astype(np.float64), picks, self.noise_scale, rng))


@dataclass(frozen=True)
class PNFPeeling(_Peeling):
    """PNF-peel: k rounds of permute-and-flip (Exponential noise, argmax), each on the bins left.

    Each round is pick_epsilon-DP (pure; not bounded-range), so the cost per query is
    k x ``pure_dp_rdp(pick_epsilon)``; ``for_budget`` gives the papers' pure-DP calibration
    pick_epsilon = epsilon / (k queries) (basic composition). Work: k rounds of d fresh exponentials,
    vectorised over the batch (O(k d) per histogram; the rounds are sequential by definition).
    """

    k: int
    pick_epsilon: float
    neighbors: NeighboringRelation | str = "add_remove"

    _closed_form = "pure"

    @staticmethod
    def _closed_form_pick_epsilon(epsilon: float, delta: float, picks: int) -> float:
        """epsilon / picks: basic composition of pure DP (delta is not needed)."""
        return checks.positive("epsilon", epsilon) / picks

    @property
    def name(self) -> str:
        return f"PNF-peel(k={self.k}, pick_eps={self.pick_epsilon:.4g}, neighbors={self.neighbors})"

    @property
    def dp_event(self) -> SelfComposedDpEvent:
        """k rounds, each pick_epsilon-DP."""
        return SelfComposedDpEvent(PureDpEvent(self.pick_epsilon), self.k)

    def __call__(self, histograms, rng: np.random.Generator) -> TopKResult:
        counts = check_histograms(histograms, k=self.k)
        indices = np.empty((counts.shape[0], self.k), dtype=np.int64)
        # Rows in chunks of ~1M bins: every round rewrites the chunk's scores, which then stay in cache.
        chunk = max(1, _CHUNK_BINS // counts.shape[1])
        for start in range(0, counts.shape[0], chunk):
            scores = counts[start : start + chunk].astype(np.float64)
            rows = np.arange(scores.shape[0])
            for position in range(self.k):
                noisy = sample_noise("exponential", self.noise_scale, scores.shape, rng)
                noisy += scores
                chosen = noisy.argmax(axis=1)
                indices[start + rows, position] = chosen
                scores[rows, chosen] = -np.inf  # peeled: never chosen again
        return TopKResult(indices)
