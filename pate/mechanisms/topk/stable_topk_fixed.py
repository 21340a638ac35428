"""StableTopK with a fixed k (Zhu & Wang 2022, Section 3.3, Algorithm 3, Theorem 12).

Per histogram h with counts sorted h_(1) >= h_(2) >= ... (ties by the smaller index):

1. choose khat in {1, ..., kbar} by the exponential mechanism on the regularised gaps
   u(j) = q_j - lambda |j - k|, q_j = h_(j) - h_(j+1), i.e. argmax_j u(j) + Gumbel(2 s / eps_select)
   (Algorithm 1 with r(j) = -lambda |j - k|; s = ``gap_sensitivity(neighbors)``; kbar <= d - 1 is the
   unknown-domain cut-off of Section 3.1, only the top kbar + 1 counts are read);
2. PTR-Gaussian on q_khat (Algorithm 4, ``pate.mechanisms.GapTest``): if it passes, the top-khat set is
   released as is;
3. reach exactly k with the exponential mechanism by peeling (``gumbel_peel``) with a zCDP budget
   rho_fill: if the test failed, pick k bins among all d; if khat < k, pick k - khat among the bins
   outside the released set; if khat > k, either drop the khat - k least (peeling on -h) or keep k
   (peeling on h) from the released set, whichever needs fewer picks, m = min(|k - khat|, k) (the
   paper's "noise scale sqrt(2 min{|k - khat|, k})").

Cost per query (RDP, composed by ``pate.privacy.Ledger``):

    eps(alpha) = exponential_mechanism_rdp(alpha, eps_select) + alpha s^2 / (2 sigma^2) + alpha rho_fill,
    delta_per_query = delta_t.

The first two terms are Algorithm 2's (Proposition 7; Lemma 18 / Corollary 19). The fill makes m
picks at bounded-range epsilon eps_pick = sqrt(8 rho_fill / m) each (one-shot Gumbel at scale
c / eps_pick, c = ``count_selection_range(neighbors)``), i.e. m eps_pick^2 / 8 = rho_fill-zCDP whatever m
is (Cesar & Rogers 2021, Lemma 17, and zCDP composition). m depends on khat and on the test's outcome,
both already released, so this is adaptive composition and alpha rho_fill bounds the fill for every m
(Theorem 12: "Algorithm 3 obeys delta_t-approximately rho-zCDP").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import ComposedDpEvent, ZCDpEvent

from pate.mechanisms.noise import sample_noise
from pate.mechanisms.ptr import GapTest
from pate.mechanisms.topk.base import (
    TopKResult,
    check_histograms,
    check_k,
    check_max_k,
    check_max_k_fits,
    sorted_order,
)
from pate.mechanisms.topk.peeling import gumbel_peel
from pate.privacy import checks
from pate.privacy.calibration import calibrate_noise
from pate.privacy.accountant import PricedByEvent
from pate.privacy.events import BoundedRangeEvent
from pate.privacy.ledger import Ledger
from pate.privacy.sensitivity import NeighboringRelation, check_relation, count_selection_range, gap_sensitivity

__all__ = ["StableTopKFixed"]


@dataclass(frozen=True)
class StableTopKFixed(PricedByEvent):
    """Algorithm 3 of Zhu & Wang 2022 (module docstring): exactly k indices per histogram.

    Arguments: ``k``; ``select_epsilon`` (bounded-range epsilon of the gap selection);
    ``test_sigma`` (PTR-Gaussian standard deviation); ``fill_rho`` (zCDP budget of the peeling fill);
    ``delta_t`` (the test's failure probability, its approximate-RDP delta); ``max_k`` (kbar; None means
    d - 1, the whole domain); ``regularization`` (lambda >= 0); ``neighbors``.
    """

    accounting = "RDP ledger (tight conversion; approximate RDP, delta_t per query)"

    k: int
    select_epsilon: float
    test_sigma: float
    fill_rho: float
    delta_t: float
    max_k: int | None = None
    regularization: float = 0.0
    neighbors: NeighboringRelation | str = "add_remove"

    def __post_init__(self):
        checks.set_fields(
            self,
            k=check_k(self.k),
            select_epsilon=checks.positive("select_epsilon", self.select_epsilon),
            test_sigma=checks.positive("test_sigma", self.test_sigma),
            fill_rho=checks.positive("fill_rho", self.fill_rho),
            delta_t=checks.open_unit("delta_t", self.delta_t),
        )
        if self.max_k is not None:
            checks.set_fields(self, max_k=check_max_k(self.max_k, self.k))
        checks.set_fields(
            self,
            regularization=checks.non_negative("regularization", self.regularization),
            neighbors=check_relation(self.neighbors),
        )

    # ------------------------------------------------------------- budget
    @classmethod
    def for_budget(
        cls,
        k: int,
        epsilon: float,
        delta: float,
        queries: int = 1,
        neighbors: str = "add_remove",
        max_k: int | None = None,
        regularization: float = 0.0,
        delta_t_fraction: float = 0.5,
        fill_fraction: float = 0.5,
    ) -> "StableTopKFixed":
        """The mechanism whose ``queries``-fold composition is (epsilon, delta)-DP by the ledger.

        Split (Zhu & Wang 2022, EXP1 and Section 3.3): ``delta_t_fraction`` of delta goes to the tests
        (delta_t = delta_t_fraction * delta / queries per query), the rest to the RDP conversion. Of the
        zCDP budget rho, ``fill_fraction`` goes to the fill and the rest is split evenly between the
        selection (eps_select = sqrt(8 rho_select)) and the test (sigma = s / sqrt(2 rho_test)); one common
        multiplier is then calibrated so that the ledger's epsilon meets the target.
        """
        delta = checks.open_unit("delta", delta)
        queries = checks.positive_int("queries", queries)
        delta_t_fraction = checks.open_unit("delta_t_fraction", delta_t_fraction)
        fill_fraction = checks.open_unit("fill_fraction", fill_fraction)
        rho_stable = (1.0 - fill_fraction) / 2.0  # per half of Algorithm 2, at rho = 1 before calibration
        start = cls(
            k=k,
            select_epsilon=math.sqrt(8.0 * rho_stable),
            test_sigma=gap_sensitivity(neighbors) / math.sqrt(2.0 * rho_stable),
            fill_rho=fill_fraction,
            delta_t=delta_t_fraction * delta / queries,
            max_k=max_k,
            regularization=regularization,
            neighbors=neighbors,
        )
        return calibrate_noise(start, epsilon, delta, queries)[0]

    def scale_noise(self, multiplier: float) -> "StableTopKFixed":
        """Every noise scale times ``multiplier``: eps_select / m, sigma * m, rho_fill / m^2."""
        multiplier = checks.positive("multiplier", multiplier)
        return dataclasses.replace(
            self,
            select_epsilon=self.select_epsilon / multiplier,
            test_sigma=self.test_sigma * multiplier,
            fill_rho=self.fill_rho / multiplier**2,
        )

    # --------------------------------------------------------------- cost
    @property
    def test(self) -> GapTest:
        return GapTest("gaussian", self.delta_t, sigma=self.test_sigma, neighbors=self.neighbors)

    @property
    def dp_event(self) -> ComposedDpEvent:
        """Selection (bounded range), test (delta_t-approximate Gaussian) and fill (rho_fill-zCDP), composed
        (module docstring)."""
        return ComposedDpEvent([BoundedRangeEvent(self.select_epsilon), self.test.dp_event, ZCDpEvent(self.fill_rho)])

    def spent(self, queries: int, delta: float) -> float:
        """Epsilon of ``queries`` adaptive queries at ``delta`` by the RDP ledger."""
        return Ledger(neighbors=self.neighbors).compose(self, queries).get_epsilon(delta, "rdp").epsilon

    def noise_parameters(self) -> dict[str, float]:
        return {"select_epsilon": self.select_epsilon, "test_sigma": self.test_sigma, "fill_rho": self.fill_rho}

    @property
    def name(self) -> str:
        return (
            f"StableTopK-fixed(k={self.k}, eps_select={self.select_epsilon:.4g}, sigma={self.test_sigma:.4g}, "
            f"rho_fill={self.fill_rho:.3g}, delta_t={self.delta_t:.3g}, kbar={self.max_k}, "
            f"lambda={self.regularization:g}, neighbors={self.neighbors})"
        )

    # ---------------------------------------------------------- mechanism
    def __call__(self, histograms, rng: np.random.Generator) -> TopKResult:
        counts = check_histograms(histograms, k=self.k)
        num_queries, num_bins = counts.shape
        k = self.k
        kbar = num_bins - 1 if self.max_k is None else self.max_k
        check_max_k_fits(kbar, num_bins)

        order, top = sorted_order(counts, depth=kbar + 1)
        gaps = top[:, :-1] - top[:, 1:]  # q_j for j = 1..kbar, column j - 1
        candidates = np.arange(1, kbar + 1)
        scores = gaps - self.regularization * np.abs(candidates - k)
        scores = scores + sample_noise(
            "gumbel", 2.0 * gap_sensitivity(self.neighbors) / self.select_epsilon, scores.shape, rng
        )
        khat = candidates[scores.argmax(axis=1)]
        passed = self.test.passes(np.take_along_axis(gaps, (khat - 1)[:, None], 1)[:, 0], rng)
        released = passed[:, None] & (np.arange(kbar + 1) < khat[:, None])  # [B, kbar+1] in sorted order

        selected = np.zeros(counts.shape, dtype=bool)
        np.put_along_axis(selected, order, released, axis=1)
        return TopKResult(self._fill(counts, selected, np.where(passed, khat, 0), rng))

    def _fill(self, counts: np.ndarray, selected: np.ndarray, khat: np.ndarray, rng) -> np.ndarray:
        """Peel to exactly k (module docstring, step 3); returns the k indices per row in increasing bin order."""
        k = self.k
        shortfall = khat < k
        keep = khat > 2 * k  # keeping k of khat takes fewer picks than dropping khat - k
        drop = (khat > k) & ~keep
        picks = np.select([shortfall, drop, keep], [k - khat, khat - k, np.full_like(khat, k)], 0)

        # Scores of the eligible bins: outside the released set when filling, inside it when trimming.
        sign = np.where(drop, -1.0, 1.0)[:, None]
        eligible = np.where(shortfall[:, None], ~selected, selected)
        scores = np.where(eligible, sign * counts, -np.inf)
        # Row-wise pick epsilon sqrt(8 rho_fill / m): fold the per-row scale into the scores, Gumbel(1).
        pick_epsilon = np.sqrt(8.0 * self.fill_rho / np.maximum(picks, 1))
        scores *= (pick_epsilon / count_selection_range(self.neighbors))[:, None]
        picked = gumbel_peel(scores, picks, 1.0, rng)

        chosen = np.zeros_like(selected)
        rows = np.nonzero(picked >= 0)
        chosen[rows[0], picked[rows]] = True
        final = np.where((shortfall | keep)[:, None], (selected & ~keep[:, None]) | chosen, selected & ~chosen)
        # Only the set is private (the order inside the PTR-released set is not): list it by bin index.
        # Every row holds exactly k bins, and nonzero walks rows in order and bins in increasing order.
        return np.nonzero(final)[1].reshape(final.shape[0], k)
