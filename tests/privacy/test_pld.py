"""Privacy loss distributions of the cost events (pate.privacy.pld): each event mapped to its dominating pair and
checked against an independent path -- the exact GDP profile for Gaussians, dp-accounting's own accountant fed
dp-accounting's events for the Poisson-sampled Gaussian and Laplace, basic composition for pure DP -- never below
the exact value, never above the RDP bound, and None where an event has no PLD."""

import math

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import optimize, special, stats
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting import ComposedDpEvent, SelfComposedDpEvent

from pate.aggregators import GaussianPATE, TauPATE
from pate.mechanisms import PrivateKNN
from pate.privacy import (
    ApproximateEvent,
    BoundedRangeEvent,
    Ledger,
    PureDpEvent,
    calibrate,
    gaussian_event,
    laplace_event,
    sampled_gaussian_steps,
)
from pate.privacy.gdp import gaussian_mu, gdp_epsilon
from pate.privacy.pld import pld_epsilon

DELTA = 1e-6
RELATION = {"replace": dpa.NeighboringRelation.REPLACE_ONE, "add_remove": dpa.NeighboringRelation.ADD_OR_REMOVE_ONE}


@pytest.mark.parametrize("sigma,sensitivity,count", [(75.5143, math.sqrt(20), 600), (10.0, 2.0, 50), (3.0, 1.0, 1)])
def test_a_gaussian_composition_is_within_1e3_of_its_exact_epsilon_and_never_below(sigma, sensitivity, count):
    events = [(gaussian_event(sigma, sensitivity), count)]
    exact = gdp_epsilon(gaussian_mu(events), DELTA)
    assert exact * (1 - 2e-5) <= pld_epsilon(events, DELTA) <= exact * (1 + 1e-3) + 1e-9  # exact: rounded up 1e-5


@pytest.mark.slow  # a heavy computation
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
@pytest.mark.parametrize(
    "rate,multiplier,steps",
    [(0.05, 1.0, 400), (0.0125, 0.8, 1000), (4096 / 120_510, 0.9645, 883), (4096 / 120_510, 1.34, 883)],
    ids=["q0.05", "q0.0125", "dp_sgd_eps8_add_remove", "dp_sgd_eps8_replace"],
)
def test_the_sampled_gaussian_is_dp_accountings_own_under_each_relation(relation, rate, multiplier, steps):
    # the last two: DP-SGD's default batches and steps at its epsilon-8 noise (accountants.json), where the
    # floating-point bound spent out of delta costs most; the bar is 1e-3 relative
    accountant = PLDAccountant(neighboring_relation=RELATION[relation], value_discretization_interval=1e-4)
    accountant.compose(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(multiplier)), steps)
    ours = pld_epsilon([(sampled_gaussian_steps(rate, multiplier, steps, relation), 1)], DELTA)
    theirs = accountant.get_epsilon(DELTA)  # ours is read at delta less the FFT round-off bound: never below theirs
    assert theirs <= ours <= theirs * (1 + 1e-3)
    rdp = Ledger(neighbors=relation).compose_event(sampled_gaussian_steps(rate, multiplier, steps, relation))
    assert ours <= rdp.get_epsilon(DELTA, "rdp").epsilon


def test_laplace_is_dp_accountings_laplace_with_the_sensitivity_divided_out():
    accountant = PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dpa.LaplaceDpEvent(4.0 / 2.0), 30)
    theirs = accountant.get_epsilon(DELTA)
    assert theirs <= pld_epsilon([(laplace_event(4.0, 2.0), 30)], DELTA) <= theirs * (1 + 1e-3)


def test_pure_dp_composes_no_worse_than_basic_composition():
    ours = pld_epsilon([(PureDpEvent(0.1), 50)], DELTA)
    assert ours <= 50 * 0.1 and ours <= Ledger().compose_event(PureDpEvent(0.1), 50).get_epsilon(DELTA, "rdp").epsilon
    assert pld_epsilon([(PureDpEvent(0.7), 1)], DELTA) == pytest.approx(0.7, abs=1e-3)


@pytest.mark.parametrize(
    "mechanism",
    [
        TauPATE(40, 400, 75.5143, 10, "l1", "replace"),
        GaussianPATE(40, 250, 40.0, "add_remove"),
        PrivateKNN(40, 200, 0.1, 20.0, "replace"),
        PrivateKNN(40, 200, 0.1, 20.0, "add_remove"),
    ],
    ids=lambda m: m.name,
)
def test_a_ledger_prices_its_history_by_pld_no_higher_than_by_rdp(mechanism):
    ledger = Ledger().compose(mechanism, count=600)
    pld = ledger.get_epsilon(DELTA, "pld")
    assert pld.accountant == "pld" and pld.epsilon <= pld.rdp == ledger.get_epsilon(DELTA, "rdp").epsilon
    if not isinstance(mechanism, PrivateKNN):  # the Gaussian aggregators: the exact GDP epsilon exists
        gdp = ledger.get_epsilon(DELTA, "gdp").epsilon  # exact, rounded up by 1e-5 relative
        assert gdp * (1 - 2e-5) <= pld.epsilon <= gdp * (1 + 1e-3)
    else:  # Poisson-sampled: no Gaussian-DP form
        with pytest.raises(ValueError, match="accountant='gdp': an event composed here is not a Gaussian"):
            ledger.get_epsilon(DELTA, "gdp")


@pytest.mark.slow  # a heavy computation
def test_composed_and_self_composed_events_are_the_composition_of_their_parts():
    gaussian, sampled = gaussian_event(5.0, 1.0), sampled_gaussian_steps(0.02, 1.0, 100, "replace")
    flat = pld_epsilon([(gaussian, 10), (sampled, 1)], DELTA)
    nested = pld_epsilon([(ComposedDpEvent([SelfComposedDpEvent(gaussian, 10), sampled]), 1)], DELTA)
    assert nested == pytest.approx(flat, rel=1e-4)  # the round-off bounds follow the order of the compositions
    assert flat > max(pld_epsilon([(gaussian, 10)], DELTA), pld_epsilon([(sampled, 1)], DELTA))
    assert pld_epsilon([(gaussian, 0)], DELTA) == 0.0


@pytest.mark.parametrize(
    "event",
    [
        BoundedRangeEvent(0.5),
        ApproximateEvent(gaussian_event(1.0, 1.0), 1e-9),
        ComposedDpEvent([gaussian_event(1.0, 1.0), BoundedRangeEvent(0.5)]),
    ],
    ids=["bounded_range", "approximate", "composed_with_bounded_range"],
)
def test_events_without_a_pld_leave_the_rdp_bound_standing(event):
    assert pld_epsilon([(gaussian_event(1.0, 1.0), 2), (event, 1)], DELTA) is None
    ledger = Ledger().compose_event(event, 1)
    with pytest.raises(ValueError, match="accountant='pld': an event composed here has no privacy loss"):
        ledger.get_epsilon(DELTA, "pld")
    assert ledger.get_epsilon(DELTA).accountant == "rdp"


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match="delta must lie"):
        pld_epsilon([(gaussian_event(1.0, 1.0), 1)], 0.0)
    with pytest.raises(ValueError, match="interval must be"):
        pld_epsilon([(gaussian_event(1.0, 1.0), 1)], DELTA, interval=-1.0)
    with pytest.raises(ValueError, match="count must be"):
        pld_epsilon([(gaussian_event(1.0, 1.0), -1)], DELTA)


@pytest.mark.parametrize(
    "mechanism,accountant",
    [
        (TauPATE(40, 400, 75.5143, 10, "l1", "replace"), "gdp"),
        (PrivateKNN(40, 200, 0.1, 20.0, "replace"), "pld"),
    ],
    ids=["gaussian", "sampled"],
)
def test_the_tightest_epsilon_is_the_smallest_valid_one_and_names_its_accountant(mechanism, accountant):
    """The least of the RDP bound and the exact GDP epsilon where it exists (the PLD, an upper bound on the same
    profile, is then not asked), else of the RDP bound and the PLD."""
    ledger = Ledger().compose(mechanism, count=600)
    tightest, alone = ledger.get_epsilon(DELTA), ledger.get_epsilon(DELTA, accountant)
    rdp = ledger.get_epsilon(DELTA, "rdp").epsilon
    assert tightest.accountant == accountant and tightest.epsilon == min(rdp, alone.epsilon) < rdp
    assert (tightest.rdp, tightest.order) == (alone.rdp, alone.order) == (rdp, ledger.get_epsilon(DELTA, "rdp").order)


def test_a_history_without_a_closed_form_or_a_pld_is_priced_by_rdp():
    ledger = Ledger().compose_event(BoundedRangeEvent(0.5), 10)
    assert ledger.get_epsilon(DELTA) == ledger.get_epsilon(DELTA, "rdp")


def _pure_dp_delta(epsilon0: float, count: int, epsilon: float) -> float:
    """The exact delta(epsilon) of ``count`` compositions of epsilon0-DP: that of randomized response (Kairouz, Oh &
    Viswanath 2015, Theorem 3.3), sum over j of Binomial(count, p)(j) [1 - e^(epsilon - (2j - count) epsilon0)]_+,
    p = e^epsilon0 / (1 + e^epsilon0)."""
    j = np.arange(count + 1)
    mass = np.exp(stats.binom.logpmf(j, count, 1.0 / (1.0 + math.exp(-epsilon0))))
    excess = -np.expm1(epsilon - (2 * j - count) * epsilon0)
    return float(np.sum(mass[excess > 0] * excess[excess > 0]))


def _gdp_delta(mu: float, epsilon: float) -> float:
    """The exact delta(epsilon) of mu-GDP (Balle & Wang 2018, Theorem 8), in log space."""
    return float(
        np.exp(special.log_ndtr(-epsilon / mu + mu / 2)) - np.exp(epsilon + special.log_ndtr(-epsilon / mu - mu / 2))
    )


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
@pytest.mark.parametrize("epsilon0,count,delta", [(0.01, 10_000, 1e-14), (2e-4, 200_000, 1e-12), (0.01, 10_000, 1e-6)])
def test_many_pure_dp_events_are_never_priced_below_their_exact_epsilon(epsilon0, count, delta, relation):
    # an outside audit: the FFT composition's round-off put the PLD's epsilon below the exact one at small delta
    # (7.478 against 7.864 at 1e-14); the round-off bound spent out of delta hands those back to the RDP bound
    printed = Ledger(neighbors=relation).compose_event(PureDpEvent(epsilon0), count).get_epsilon(delta).epsilon
    assert _pure_dp_delta(epsilon0, count, printed) <= delta
    exact = optimize.brentq(lambda e: _pure_dp_delta(epsilon0, count, e) - delta, 0.0, count * epsilon0, xtol=1e-12)
    if delta == 1e-6:  # where the round-off bound is below delta the PLD still prices it: 0.8% above exact here,
        assert printed <= exact * (1 + 1e-2)  # the bound's price at 10,000 events (1.7e-7 of the 1e-6)


@pytest.mark.parametrize(
    "multiplier,steps,delta",
    [(math.sqrt(100_000), 100_000, 1e-12), (100.0, 10_000, 1e-12), (100.0, 10_000, 1e-6), (20.0, 400, 1e-10)],
)
def test_full_batch_gaussian_steps_are_never_priced_below_their_exact_gdp_epsilon(multiplier, steps, delta):
    # q = 1: every record in every step, so the composition is exactly mu-GDP with mu = sqrt(steps) / multiplier
    mu = math.sqrt(steps) / multiplier
    ledger = Ledger(neighbors="add_remove").compose_event(sampled_gaussian_steps(1.0, multiplier, steps))
    priced = ledger.get_epsilon(delta)
    epsilon, accountant = priced.epsilon, priced.accountant
    assert _gdp_delta(mu, epsilon) <= delta
    if delta == 1e-6:  # the rounding bound's price: 0.4% at 10,000 steps (9e-8 of the 1e-6)
        assert accountant == "pld" and epsilon <= gdp_epsilon(mu, delta) * (1 + 5e-3)


def test_calibration_by_the_tightest_accountant_meets_its_target_at_small_delta():
    # the audit's calibration: target 7 at delta 1e-12 over 100,000 full-batch steps returned noise whose exact
    # epsilon was 7.079
    multiplier = calibrate(
        lambda m: sampled_gaussian_steps(1.0, m, 100_000, "add_remove"),
        7.0,
        1e-12,
        neighbors="add_remove",
        accountant="tightest",
    )
    assert _gdp_delta(math.sqrt(100_000) / multiplier, 7.0) <= 1e-12


def test_the_round_off_bound_is_small_beside_the_default_delta_and_grows_with_the_steps():
    from pate.privacy.pld import _composed, delta_error_bound

    def margin(steps):
        return delta_error_bound(_composed([(sampled_gaussian_steps(0.034, 2.4, steps, "replace"), 1)], 1e-4))

    assert 0 < margin(100) < margin(1000) < 1e-7  # a hundredth of the default delta at DP-SGD's ~900 steps


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_private_knns_600_queries_are_within_1e3_of_dp_accountings_epsilon(relation):
    # Private-kNN's default: 600 queries, each a Poisson-sampled Gaussian step at gamma 0.3 (its epsilon-8 noise)
    entry = Ledger().compose(PrivateKNN(40, 800, 0.3, 60.0, relation), count=600).history[0]
    event, count = entry.event, entry.count
    step = event.event  # one query: one Poisson-sampled step, under the relation's own event
    multiplier = step.noise_multiplier if relation == "replace" else step.event.noise_multiplier
    accountant = PLDAccountant(neighboring_relation=RELATION[relation], value_discretization_interval=1e-4)
    accountant.compose(
        dpa.PoissonSampledDpEvent(step.sampling_probability, dpa.GaussianDpEvent(multiplier)), count * event.count
    )
    theirs = accountant.get_epsilon(DELTA)
    assert theirs <= pld_epsilon([(event, count)], DELTA) <= theirs * (1 + 1e-3)
