"""Releasing labels under a data-dependent RDP bound, as a DP guarantee: generalized propose-test-release.

A data-dependent bound (Papernot et al. 2018, Theorem 6; ``pate.privacy.data_dependent``) holds for the private
votes at hand and their neighbours, so its value is private, and a run whose epsilon is that value is not DP.
PATE 2018 publishes a noisy version of it (smooth sensitivity); that is a private *estimate* of a data-dependent
quantity, still not a worst-case guarantee. Generalized PTR (Redberg, Zhu & Wang 2023, "Generalized PTR:
User-Friendly Recipes for Data-Adaptive Algorithms with Differential Privacy", AISTATS; Dwork & Lei 2009 for the
original) turns it into one: propose a bound B at an order lambda before looking, test privately that the votes
are far from any histogram whose bound exceeds B, release only then.

The pieces, for a batch of labels with (yes, no) counts:

* ``cost_table``: c(yes, no), the data-dependent RDP at lambda of one label's release (binary GNMax, optionally
  screened: ``pate.privacy.data_dependent.screened_rdp``) for every (yes, no) in a box around the data.
* ``distance_to_budget``: k(D) = min{ d >= 0 : U(D, d + 1) > B }, where U(D, d) = sum over labels of the largest c
  within d steps (each count within d of its own: every histogram d teachers away lies in that box, under replace
  and add_remove alike). k has sensitivity 1: the box of radius d around a neighbour lies in the box of radius
  d + 1 around D, so U(D', d) <= U(D, d + 1) and k(D') >= k(D) - 1, and symmetrically.
* ``DistanceTest``: pass iff min(k, d_cap) + N(0, sigma^2) > sigma z(delta) (z the standard normal's upper
  delta-quantile); the cap keeps the sensitivity 1 and bounds the work.

Why the release is DP. Let F~(D) be the largest data-dependent RDP at lambda between D and any neighbour, in either
direction; F~(D) <= U(D, 1) (the bound at every neighbour lies in the radius-1 box). Take neighbours D, D'. If
U(D, 1) <= B or U(D', 1) <= B, the labels' release is (lambda, B)-RDP on that pair in both directions, and the test is
a Gaussian mechanism of sensitivity 1 composed with it. Otherwise k(D) = k(D') = 0 and the test passes with
probability exactly delta on both: outside an event of probability delta both outputs are "nothing released" and
the pair is as close as the test's noisy value. So the whole is delta-approximately RDP (Zhu & Wang 2022,
Definition 15) with curve gaussian(alpha) + B for alpha <= lambda: ``dp_event`` says exactly that, and the ledger
converts it with Lemma 17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import maximum_filter
from scipy.special import ndtri
from dp_accounting import ComposedDpEvent

from pate.privacy import checks
from pate.privacy.accountant import PricedByEvent
from pate.privacy.data_dependent import (
    data_dependent_rdp,
    gnmax_log_q,
    screened_rdp,
    threshold_data_dependent_rdp,
    threshold_log_fail,
    threshold_log_pass,
)
from pate.privacy.events import ApproximateEvent, RdpAtOrderEvent, gaussian_event

__all__ = ["DistanceTest", "binary_label_rdp", "cost_table", "costs_within", "distance_to_budget"]


def binary_label_rdp(yes, no, orders, sigma: float, scale: float, screen: tuple[float, float] | None) -> np.ndarray:
    """Data-dependent RDP of one label's release at each of ``orders`` (1-D), for (``yes``, ``no``) counts of any
    matching shape: binary GNMax with noise ``sigma`` on each count and data-independent curve alpha / scale^2
    (``pate.privacy.data_dependent``); with ``screen`` = (sigma_screen, threshold), first a noisy threshold on
    max(yes, no), the GNMax result released only on a pass (``screened_rdp``). Shape: yes.shape + (len(orders),)."""
    yes, no = np.broadcast_arrays(np.asarray(yes, np.float64), np.asarray(no, np.float64))
    orders = checks.orders_array(orders)
    release = data_dependent_rdp(gnmax_log_q(np.stack([yes, no], axis=-1), sigma), orders, scale)
    if screen is None:
        return release
    screen_sigma, threshold = screen
    larger = np.maximum(yes, no)
    log_pass = threshold_log_pass(larger, threshold, screen_sigma)
    log_low = threshold_log_pass(larger - 1.0, threshold, screen_sigma)
    screen_rdp = threshold_data_dependent_rdp(
        log_pass, screen_sigma, orders, log_fail=threshold_log_fail(larger, threshold, screen_sigma)
    )
    return screened_rdp(screen_rdp, log_pass[..., None], log_low[..., None], release, orders)


def cost_table(size: int, order: float, sigma: float, scale: float, screen: tuple[float, float] | None) -> np.ndarray:
    """c[yes, no] = ``binary_label_rdp`` at ``order`` for 0 <= yes, no < ``size``: float64 [size, size]."""
    size = checks.positive_int("size", size)
    counts = np.arange(size, dtype=np.float64)
    return binary_label_rdp(counts[:, None], counts[None, :], [order], sigma, scale, screen)[..., 0]


def costs_within(table: np.ndarray, yes: np.ndarray, no: np.ndarray, max_distance: int) -> np.ndarray:
    """U(D, d) for d = 0..``max_distance``: the sum over the labels (``yes``, ``no`` integer arrays) of the largest
    ``table`` entry within d of each count (a box of radius d, built by d 3x3 maximum filters). float64
    [max_distance + 1]. The table must extend ``max_distance`` beyond every count (checked)."""
    yes, no = np.asarray(yes, np.int64).ravel(), np.asarray(no, np.int64).ravel()
    if yes.size and (min(yes.min(), no.min()) < 0 or max(yes.max(), no.max()) + max_distance >= table.shape[0]):
        raise ValueError(
            f"the cost table of size {table.shape[0]} must extend max_distance={max_distance} beyond every "
            f"count (largest {max(yes.max(), no.max())}); counts must be >= 0"
        )
    sums, current = [], table
    for distance in range(max_distance + 1):
        if distance:
            current = maximum_filter(current, size=3, mode="nearest")
        sums.append(float(current[yes, no].sum()))
    return np.array(sums)


def distance_to_budget(within: np.ndarray, budget: float) -> int:
    """min{ d >= 0 : U(D, d + 1) > budget } from ``within`` = U(D, 0..d_max) (``costs_within``), capped at
    d_max - 1 when no such d is in range. The cap keeps the sensitivity 1 (a minimum with a constant)."""
    over = np.flatnonzero(np.asarray(within)[1:] > budget)
    return int(over[0]) if over.size else len(within) - 2


@dataclass(frozen=True)
class DistanceTest(PricedByEvent):
    """The private test of a proposed data-dependent bound (module docstring): ``passes(distance, rng)``.

    ``sigma``: the Gaussian noise on the distance (sensitivity 1); ``delta``: the probability of passing at distance
    0, so the threshold is sigma z(delta); ``order`` and ``budget``: the proposal B at lambda.
    """

    sigma: float
    delta: float
    order: float
    budget: float

    def __post_init__(self):
        checks.set_fields(
            self,
            sigma=checks.positive("sigma", self.sigma),
            delta=checks.open_unit("delta", self.delta),
            order=float(checks.orders_array([self.order], name="order")[0]),
            budget=checks.non_negative("budget", self.budget),
        )

    @property
    def threshold(self) -> float:
        """sigma z(delta): Pr[N(0, sigma^2) > threshold] = delta."""
        return float(self.sigma * -ndtri(self.delta))

    @property
    def max_distance(self) -> int:
        """d_cap + 1, the largest U(D, d) needed: past threshold + 5 sigma a larger distance passes with
        probability > 1 - 3e-7 anyway."""
        return int(math.ceil(self.threshold + 5.0 * self.sigma)) + 1

    def passes(self, distance: int, rng: np.random.Generator) -> bool:
        """min(k, d_cap) + N(0, sigma^2) > threshold."""
        capped = min(int(distance), self.max_distance - 1)
        return bool(capped + rng.normal(0.0, self.sigma) > self.threshold)

    @property
    def dp_event(self) -> ComposedDpEvent:
        """The test's Gaussian (sensitivity 1) and, delta-approximately, the proposal B at lambda (module docstring)."""
        return ComposedDpEvent(
            [gaussian_event(self.sigma, 1.0), ApproximateEvent(RdpAtOrderEvent(self.order, self.budget), self.delta)]
        )
