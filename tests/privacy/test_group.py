"""Group privacy of a record-level release (``pate.privacy.group``): n records changed at once, priced exactly
where the event scales with its sensitivity, and by chaining the release's privacy profile elsewhere."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom, norm

from pate.aggregators import GaussianPATE, TauPATE
from pate.mechanisms import PrivateKNN
from pate.privacy import Ledger, PureDpEvent, gaussian_event, sampled_gaussian_steps
from pate.privacy.events import ApproximateEvent, RdpAtOrderEvent, RdpCurveEvent, dpa
from pate.privacy.group import chained_group_epsilon, group_event, group_ledger
from pate.privacy.orders import DEFAULT_ORDERS

DELTA = 1e-6


@pytest.mark.parametrize(
    "make",
    [
        lambda sigma: TauPATE(40, 400, sigma, 10, "l1", "replace"),
        lambda sigma: GaussianPATE(40, 400, sigma, "replace"),
    ],
    ids=["TauPATE", "GaussianPATE"],
)
@pytest.mark.parametrize("size", [1, 2, 20])
def test_n_teachers_replaced_cost_what_the_same_aggregator_costs_at_a_nth_of_its_noise(make, size):
    """n records in n teachers move the votes by n times one teacher's sensitivity: the group's price is the
    aggregator's own at sigma / n, to the last digit of the tightest accountant."""
    release = Ledger().compose(make(60.0), count=600)
    grouped = group_ledger(release, size)
    direct = Ledger().compose(make(60.0 / size), count=600)
    assert grouped.get_epsilon(DELTA).epsilon == pytest.approx(direct.get_epsilon(DELTA).epsilon, rel=1e-12)
    if size > 1:
        assert grouped.get_epsilon(DELTA).epsilon > release.get_epsilon(DELTA).epsilon


def test_pure_dp_of_a_group_is_n_times_epsilon_and_laplace_scales_its_sensitivity():
    assert group_event(PureDpEvent(0.3), 5).epsilon == pytest.approx(1.5)
    assert group_event(dpa.LaplaceDpEvent(4.0), 4).noise_multiplier == pytest.approx(1.0)
    composed = group_event(dpa.ComposedDpEvent([gaussian_event(10.0, 2.0), PureDpEvent(0.1)]), 2)
    assert composed.events[0].noise_multiplier == pytest.approx(2.5) and composed.events[1].epsilon == pytest.approx(
        0.2
    )


def test_a_sampled_gaussian_has_no_exact_group_conversion():
    """n records of one person, each sampled on its own, are a mixture, not a scaled Gaussian: no exact event."""
    assert group_event(sampled_gaussian_steps(0.01, 1.0, 100, "replace"), 3) is None
    assert group_ledger(Ledger().compose(PrivateKNN(40, 20, 0.1, 20.0, "replace"), count=10), 3) is None
    assert group_ledger(Ledger().compose(GaussianPATE(40, 400, 60.0, "replace"), count=5), 1) is not None
    with pytest.raises(ValueError, match="size"):
        group_event(gaussian_event(1.0, 1.0), 0)
    assert math.isfinite(
        group_ledger(Ledger().compose(GaussianPATE(40, 400, 60.0, "replace"), 5), 3).get_epsilon(DELTA).epsilon
    )


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_a_chain_of_one_step_is_the_release_own_epsilon(relation):
    """n = 1: the chain is the release itself, so its epsilon is the ledger's own, within the search's grid (0.12%
    between refined points)."""
    release = Ledger(neighbors=relation).compose_event(sampled_gaussian_steps(0.02, 1.2, 20, relation))
    own = release.get_epsilon(DELTA).epsilon
    chained = chained_group_epsilon(release, 1, DELTA)
    assert own * (1 - 1e-4) <= chained.epsilon <= own * 1.002 and chained.record_epsilon == chained.epsilon


def test_a_chain_of_pure_dp_is_at_most_n_epsilon():
    """Randomized response's PLD gives delta(eps0) = 0: n steps of eps0-DP are (n eps0, 0)-DP, the closed form."""
    chained = chained_group_epsilon(Ledger().compose_event(PureDpEvent(0.3)), 5, DELTA)
    assert 1.0 < chained.epsilon <= 1.5 * 1.002


def _group_hockey_stick(size: int, rate: float, sigma: float):
    """The exact delta(epsilon) of one Poisson-sampled Gaussian step for ``size`` records added at once, from the
    mechanism's law: each record enters the sum with probability ``rate`` and moves it by at most one clip (1), all
    in one direction in the worst case, so the sum is N(K, sigma^2), K ~ Binomial(size, rate), against N(0,
    sigma^2); both orders, integrated on a fine grid. Returned as a function of epsilon."""
    x = np.linspace(-40 * sigma, size + 40 * sigma, 200_001)
    weights = binom.pmf(np.arange(size + 1), size, rate)
    with_group = sum(w * norm.pdf(x, k, sigma) for k, w in enumerate(weights))
    without = norm.pdf(x, 0, sigma)
    step = x[1] - x[0]

    def delta(epsilon: float) -> float:
        forward = np.maximum(with_group - math.exp(epsilon) * without, 0).sum() * step
        backward = np.maximum(without - math.exp(epsilon) * with_group, 0).sum() * step
        return max(forward, backward)

    return delta


@pytest.mark.parametrize("size, looseness", [(1, 1.001), (2, 1.3), (5, 4.0), (20, 30.0)])
def test_a_chained_group_epsilon_holds_for_the_exact_law_of_a_sampled_step(size, looseness):
    """The chain's (epsilon, delta) for one sampled Gaussian step under add_remove holds for the exact law of n
    records added at once (a binomial mixture of shifted Gaussians), and how loose it is: 1.2 times the exact
    epsilon for 2 records, 3.7 for 5, 28 for 20 (measured; the bounds below hold those with a margin)."""
    rate, sigma, delta = 0.05, 1.0, 1e-5
    release = Ledger(neighbors="add_remove").compose_event(sampled_gaussian_steps(rate, sigma, 1, "add_remove"))
    chained = chained_group_epsilon(release, size, delta).epsilon
    exact_delta = _group_hockey_stick(size, rate, sigma)
    assert exact_delta(chained) <= delta
    exact = brentq(lambda eps: exact_delta(eps) - delta, 1e-6, chained, xtol=1e-6)
    assert exact <= chained <= looseness * exact


def test_a_chain_refuses_data_dependent_releases_and_bad_arguments():
    bound = RdpCurveEvent(tuple(DEFAULT_ORDERS), tuple(0.01 * DEFAULT_ORDERS), data_dependent_bound=True)
    assert chained_group_epsilon(Ledger().compose_event(bound), 3, DELTA) is None
    release = Ledger(neighbors="replace").compose_event(sampled_gaussian_steps(0.02, 1.2, 10, "replace"))
    with pytest.raises(ValueError, match="size"):
        chained_group_epsilon(release, 0, DELTA)
    with pytest.raises(ValueError, match="delta"):
        chained_group_epsilon(release, 2, 1.5)


def test_a_chain_that_no_epsilon_meets_is_none():
    """n delta_t >= delta: no per-record epsilon chained over n steps meets delta."""
    assert chained_group_epsilon(approximate_release(), 1, 1e-5) is not None
    assert chained_group_epsilon(approximate_release(), 20, 1e-5) is None


def approximate_release() -> Ledger:
    """100 Gaussian votes with a PTR-style test each: delta_t = 1e-6 of approximate RDP (not data-dependent)."""
    step = dpa.ComposedDpEvent([gaussian_event(40.0, 1.0), ApproximateEvent(RdpAtOrderEvent(8.0, 0.05), 1e-8)])
    return Ledger(neighbors="replace").compose_event(step, count=100)


def test_a_chain_prices_the_events_not_a_stored_curve_and_honours_the_accountant(tmp_path):
    """A ledger whose stored curve understates its events is priced from the events (``Ledger.replay``); with
    ``accountant="rdp"`` the PLD is left out, so the bound is the RDP one's, never below the tightest."""
    release = Ledger(neighbors="add_remove").compose_event(sampled_gaussian_steps(0.1, 0.7, 1, "add_remove"))
    honest = chained_group_epsilon(release, 2, 1e-3, "rdp")
    state = release.state_dict()
    state["rdp"] = [0.1 * value for value in state["rdp"]]
    tampered = Ledger()
    tampered.load_state_dict(state)
    assert chained_group_epsilon(tampered, 2, 1e-3, "rdp") == honest
    assert chained_group_epsilon(release, 2, 1e-3).epsilon <= honest.epsilon
