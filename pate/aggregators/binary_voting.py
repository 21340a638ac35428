"""Binary voting, the multi-label form of PATE 2018's GNMax: each label is a two-class noisy max over its (yes, no)
counts. Two aggregators:

* ``BinaryVoting``: every label of every query released; priced data-independently (a Gaussian on the 2L counts,
  ``binary_vote_l2_sensitivity``: alpha L / sigma^2 per query under both relations, since the "no" count is
  T - yes with T the configured number of teachers).
  It also measures, as a diagnostic that is not itself private, the data-dependent bound the PATE literature
  reports (Papernot et al. 2018, Theorem 6 per label).
* ``DataDependentBinaryVoting``: the same votes, optionally screened per label first (Confident-GNMax, PATE 2018
  Algorithm 1, per label: a label whose larger count does not clear a noisy threshold is not released and reaches
  the student as missing), released as a whole only if a private test shows that the votes are far from any
  histogram whose data-dependent cost exceeds a proposed bound (generalized propose-test-release,
  ``pate.mechanisms.dd_release``). Its epsilon is that proposal's and the test's: a DP guarantee.

Per-label composition. One teacher may change all of a query's labels at once. The labels get independent noise,
so the joint law of a query's release is a product over labels, and the Renyi divergence of a product is the sum
of the factors' divergences (Mironov 2017, Proposition 1, non-adaptive case). For a pair of neighbouring vote sets,
each label's own (yes, T - yes) pair is a pair of neighbouring two-class histograms of PATE 2018's kind: one vote
moved between the two classes, under both relations (the mechanism's input is the yes-counts with T fixed, so a
removed yes-voter also adds one to the derived "no"; ``binary_vote_l2_sensitivity``), so each factor is bounded by that
label's bound, data-dependent or not, whatever happens to the other labels; summing the per-label bounds is valid
under both relations, and the data-independent sum is exactly the Gaussian on the 2L counts.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from dp_accounting import ComposedDpEvent, SelfComposedDpEvent

from pate.aggregators.base import AggregationResult, Aggregator, check_rng
from pate.aggregators.gaussian_pate import NoisyThresholdCost
from pate.mechanisms.binary_voting import binary_gnmax, screen_labels
from pate.mechanisms.dd_release import DistanceTest, binary_label_rdp, cost_table, costs_within, distance_to_budget
from pate.privacy import checks
from pate.privacy.accountant import PricedByEvent
from pate.privacy.calibration import calibrate, calibrate_noise
from pate.privacy.ledger import Ledger, check_accountant
from pate.privacy.events import DpEvent, RdpCurveEvent, gaussian_event
from pate.privacy.orders import DEFAULT_ORDERS
from pate.privacy.sensitivity import (
    NeighboringRelation,
    binary_vote_l2_sensitivity,
    check_relation,
    count_l2_sensitivity,
)
from pate.votes import check_vote_counts

__all__ = ["BinaryVoting", "DataDependentBinaryVoting"]


def _label_scale(sigma: float, neighbors) -> float:
    """The per-label data-independent curve alpha / scale^2 of binary GNMax: scale = sigma sqrt(2) / Delta, Delta the
    two-class histogram's L2 sensitivity (sqrt(2) under both relations), so scale = sigma."""
    return sigma * math.sqrt(2.0) / binary_vote_l2_sensitivity(1, neighbors)


def _data_dependent_event(
    counts: np.ndarray, num_teachers: int, sigma: float, scale: float, screen: tuple[float, float] | None, source: str
) -> RdpCurveEvent:
    """The raw data-dependent bound of a batch of yes-counts on the default orders, summed over its labels
    (per-label composition, module docstring; each distinct count is priced once), as a cost event marked
    data-dependent: a diagnostic, never a run's epsilon."""
    values, multiplicity = np.unique(counts, return_counts=True)
    per_value = binary_label_rdp(values, num_teachers - values, DEFAULT_ORDERS, sigma, scale, screen)
    return RdpCurveEvent(
        orders=tuple(DEFAULT_ORDERS), epsilons=tuple(multiplicity @ per_value), data_dependent_bound=True, source=source
    )


@dataclass(frozen=True)
class BinaryVoting(NoisyThresholdCost, Aggregator):
    """BinaryVoting(num_labels, num_teachers, sigma, neighbors="replace"): per label, yes + N(0, sigma^2) >
    no + N(0, sigma^2). Every query answered; ``details["data_dependent"]`` holds the raw data-dependent bound of
    the batch (not itself private). Its cost, noise parameters and scaling are the noisy threshold's
    (``NoisyThresholdCost``) on the 2L counts' sensitivity."""

    num_labels: int
    num_teachers: int
    sigma: float
    neighbors: NeighboringRelation | str = "replace"

    def __post_init__(self):
        self._check_common_fields()

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of the 2L counts (yes, T - yes): sqrt(2L) under both relations."""
        return binary_vote_l2_sensitivity(self.num_labels, self.neighbors)

    @property
    def name(self) -> str:
        return f"BinaryVoting(sigma={self.sigma:g}, neighbors={self.neighbors})"

    def data_dependent_event(self, votes) -> RdpCurveEvent:
        """The raw data-dependent bound of a batch of vote counts [Q, L] (PATE 2018, Theorem 6 with Proposition 7's q,
        per label, summed): not itself private."""
        counts = check_vote_counts(votes, self.num_labels, self.num_teachers)
        return _data_dependent_event(
            counts,
            self.num_teachers,
            self.sigma,
            _label_scale(self.sigma, self.neighbors),
            None,
            "binary GNMax, PATE 2018 Theorem 6 per label",
        )

    def __call__(self, votes, rng: np.random.Generator) -> AggregationResult:
        counts = check_vote_counts(votes, self.num_labels, self.num_teachers)
        check_rng(rng)
        labels = binary_gnmax(counts, self.num_teachers, self.sigma, rng)
        return AggregationResult(
            labels=labels,
            answered=np.ones(counts.shape[0], dtype=bool),
            k=np.count_nonzero(labels, axis=1),
            details={
                "data_dependent": self.data_dependent_event(counts),
                "data_independent": SelfComposedDpEvent(self.dp_event, counts.shape[0]),
            },
        )


@dataclass(frozen=True)
class DataDependentBinaryVoting(PricedByEvent, Aggregator):
    """Binary voting released under a tested data-dependent bound (module docstring; ``pate.mechanisms.dd_release``).

    ``sigma``: GNMax's noise per count. ``screen_sigma`` and ``screen_threshold`` (a fraction of T in (1/2, 1]):
    the per-label screen, max(yes, no) + N(0, screen_sigma^2) >= screen_threshold T; ``screen_sigma=None`` releases
    every label (no screen). ``order``: the RDP order lambda of the proposal, fixed a priori. ``rdp_budget``: the
    proposal B at lambda (None until ``calibrated`` sets it from a target epsilon). ``test_sigma``, ``test_delta``:
    the test's noise on the distance and its false-pass probability. ``noise_ratio``: with a target epsilon, sigma
    is this fraction of the noise that ``BinaryVoting`` needs for that target data-independently (the screen's
    noise keeps its configured ratio to sigma): a public rule fixed before looking at any vote.

    Every (query, label) is either released or not; the run's cost is one release: ``dp_event`` (count 1).
    """

    num_labels: int
    num_teachers: int
    sigma: float
    order: float
    test_sigma: float
    test_delta: float
    rdp_budget: float | None = None
    screen_sigma: float | None = None
    screen_threshold: float = 0.7
    noise_ratio: float = 0.5
    test_share: float = 0.1
    neighbors: NeighboringRelation | str = "replace"
    priced_per_query: ClassVar[bool] = False  # one release for the whole batch (pate.aggregate.release_ledger)

    def __post_init__(self):
        checks.set_fields(
            self,
            num_labels=checks.positive_int("num_labels", self.num_labels),
            num_teachers=checks.positive_int("num_teachers", self.num_teachers),
            sigma=checks.positive("sigma", self.sigma),
            order=float(checks.orders_array([self.order], name="order")[0]),
            test_sigma=checks.positive("test_sigma", self.test_sigma),
            test_delta=checks.open_unit("test_delta", self.test_delta),
        )
        if self.rdp_budget is not None:
            checks.set_fields(self, rdp_budget=checks.non_negative("rdp_budget", self.rdp_budget))
        if self.screen_sigma is not None:
            checks.set_fields(self, screen_sigma=checks.positive("screen_sigma", self.screen_sigma))
        threshold = self.screen_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.5 < threshold <= 1:
            raise ValueError(f"screen_threshold={threshold!r}; expected a fraction of the teachers in (0.5, 1]")
        checks.set_fields(
            self,
            screen_threshold=float(threshold),
            noise_ratio=checks.positive("noise_ratio", self.noise_ratio),
        )
        if not 0 < checks.positive("test_share", self.test_share) < 1:
            raise ValueError(f"test_share={self.test_share!r}; expected a fraction in (0, 1)")
        checks.set_fields(self, neighbors=check_relation(self.neighbors))

    # ------------------------------------------------------------------ facts
    @property
    def screen(self) -> tuple[float, float] | None:
        """(screen_sigma, threshold in votes), or None without a screen."""
        return None if self.screen_sigma is None else (self.screen_sigma, self.screen_threshold * self.num_teachers)

    @property
    def test(self) -> DistanceTest:
        if self.rdp_budget is None:
            raise ValueError(
                f"{self.name} has no proposal yet: set rdp_budget or calibrate it to a target epsilon "
                f"(privacy.target_epsilon)"
            )
        return DistanceTest(sigma=self.test_sigma, delta=self.test_delta, order=self.order, budget=self.rdp_budget)

    @property
    def dp_event(self) -> ComposedDpEvent:
        """The whole batch's release: the test's Gaussian and the proposal, test_delta-approximate."""
        return self.test.dp_event

    @property
    def delta_per_query(self) -> float:
        """test_delta, the release's approximate-RDP delta (known before the proposal is)."""
        return self.test_delta

    @property
    def data_independent(self) -> BinaryVoting:
        """The same votes released without a test: binary voting at this sigma."""
        return BinaryVoting(self.num_labels, self.num_teachers, self.sigma, self.neighbors)

    def data_independent_event(self, num_queries: int) -> DpEvent:
        """The same labels priced without the data: per query the screen (a Gaussian on the L larger counts, each of
        which moves by <= 1: ``count_l2_sensitivity``) and GNMax on the 2L counts (``BinaryVoting``'s event), over
        ``num_queries`` queries."""
        gnmax = self.data_independent.dp_event
        per_query = (
            gnmax
            if self.screen is None
            else ComposedDpEvent(
                [gaussian_event(self.screen_sigma, count_l2_sensitivity(self.num_labels, self.neighbors)), gnmax]
            )
        )
        return SelfComposedDpEvent(per_query, num_queries)

    @property
    def name(self) -> str:
        screen = "" if self.screen is None else f", screen_sigma={self.screen_sigma:g} at {self.screen_threshold:g}T"
        budget = "unset" if self.rdp_budget is None else f"{self.rdp_budget:.4g}"
        return (
            f"DataDependentBinaryVoting(sigma={self.sigma:g}{screen}, proposal {budget} at order {self.order:g}, "
            f"neighbors={self.neighbors})"
        )

    def noise_parameters(self) -> dict[str, float]:
        parameters = {
            "sigma": self.sigma,
            "order": self.order,
            "rdp_budget": self.rdp_budget,
            "test_sigma": self.test_sigma,
            "test_delta": self.test_delta,
        }
        return parameters if self.screen is None else {**parameters, "screen_sigma": self.screen_sigma}

    def scale_noise(self, multiplier: float) -> "DataDependentBinaryVoting":
        """sigma and screen_sigma times ``multiplier`` (the proposal and the test unchanged)."""
        multiplier = checks.positive("multiplier", multiplier)
        screen = None if self.screen_sigma is None else self.screen_sigma * multiplier
        return dataclasses.replace(self, sigma=self.sigma * multiplier, screen_sigma=screen)

    def calibrated(
        self, target_epsilon: float, delta: float, num_queries: int, accountant: str = "tightest"
    ) -> tuple["DataDependentBinaryVoting", float]:
        """The proposal for a target (epsilon, delta), fixed by public rules before any vote is seen, by RDP
        whatever ``accountant`` (checked) says: the release's approximate RDP (propose-test-release) has no tighter
        accountant here, and its rules below are stated in RDP orders:

        * the noise: sigma = noise_ratio x the sigma ``BinaryVoting`` needs for the target over ``num_queries``
          queries data-independently (the screen's noise keeps its configured ratio to sigma);
        * the order lambda: the order at which that data-independent calibration converts (``Ledger.get_epsilon(delta, "rdp").order``);
        * the test: its Gaussian costs ``test_share`` of the RDP left at lambda after the conversion's
          log(1/delta) / (lambda - 1) (classic conversion, Mironov 2017, Prop. 3);
        * the proposal B: the largest bound whose release, test included, meets the target (tight conversion).

        Returns (aggregator, the noise multiplier applied to sigma). ``ValueError`` naming the target when no
        proposal can meet it."""
        check_accountant(accountant)
        calibrated_reference, data_independent = calibrate_noise(
            self.data_independent, target_epsilon, delta, num_queries
        )
        order = (
            Ledger(neighbors=self.neighbors)
            .compose(calibrated_reference, count=num_queries)
            .get_epsilon(delta, "rdp")
            .order
        )
        left = target_epsilon - math.log(1.0 / delta) / (order - 1.0)
        if left <= 0:
            raise ValueError(
                f"target_epsilon={target_epsilon!r} at delta={delta!r} leaves no RDP budget at order "
                f"{order:g} for a data-dependent proposal"
            )
        multiplier = self.noise_ratio * data_independent
        proposal = dataclasses.replace(
            self.scale_noise(multiplier), order=order, test_sigma=math.sqrt(order / (2.0 * self.test_share * left))
        )
        inverse_budget = calibrate(
            lambda m: dataclasses.replace(proposal, rdp_budget=1.0 / m).dp_event,
            target_epsilon,
            delta,
            1,
            neighbors=self.neighbors,
        )
        return dataclasses.replace(proposal, rdp_budget=1.0 / inverse_budget), multiplier

    # ------------------------------------------------------------ mechanism
    def __call__(self, votes, rng: np.random.Generator) -> AggregationResult:
        counts = check_vote_counts(votes, self.num_labels, self.num_teachers)
        check_rng(rng)
        test = self.test
        t = self.num_teachers
        screened = (
            np.ones(counts.shape, dtype=bool)
            if self.screen is None
            else screen_labels(counts, t, self.screen_sigma, self.screen[1], rng)
        )
        labels = binary_gnmax(counts, t, self.sigma, rng)
        scale = _label_scale(self.sigma, self.neighbors)
        table = cost_table(t + test.max_distance + 1, self.order, self.sigma, scale, self.screen)
        within = costs_within(table, counts, t - counts, test.max_distance)
        distance = distance_to_budget(within, test.budget)
        passed = test.passes(distance, rng)
        released = screened & passed
        answered = released.any(axis=1)
        raw = _data_dependent_event(
            counts, t, self.sigma, scale, self.screen, "binary GNMax and its screen, PATE 2018 Theorem 6 per label"
        )
        return AggregationResult(
            labels=labels & released,
            answered=answered,
            k=np.where(answered, np.count_nonzero(labels & released, axis=1), -1),
            released=released,
            details={
                "data_dependent": raw,
                "data_independent": self.data_independent_event(counts.shape[0]),
                "test": {
                    "passed": passed,
                    "order": self.order,
                    "rdp_budget": test.budget,
                    "threshold": test.threshold,
                    "not_itself_private": {
                        "distance": distance,
                        "rdp_at_order": float(within[0]),
                        "rdp_within_one_step": float(within[1]),
                    },
                },
            },
        )
