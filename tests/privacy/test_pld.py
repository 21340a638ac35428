"""Privacy loss distributions of the cost events (pate.privacy.pld): each event mapped to its dominating pair and
checked against an independent path -- the exact GDP profile for Gaussians, dp-accounting's own accountant fed
dp-accounting's events for the Poisson-sampled Gaussian and Laplace, basic composition for pure DP -- never below
the exact value, never above the RDP bound, and None where an event has no PLD."""

import math

import dp_accounting as dpa
import pytest
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

from pate.aggregators import GaussianPATE, TauPATE
from pate.mechanisms import PrivateKNN
from pate.privacy import (ApproximateEvent, BoundedRangeEvent, ComposedEvent, GaussianEvent, LaplaceEvent, Ledger,
                          PoissonSampledGaussianEvent, PureDpEvent, SelfComposedEvent)
from pate.privacy.gdp import gaussian_mu, gdp_epsilon
from pate.privacy.pld import pld_epsilon

DELTA = 1e-6
RELATION = {"replace": dpa.NeighboringRelation.REPLACE_ONE, "add_remove": dpa.NeighboringRelation.ADD_OR_REMOVE_ONE}


@pytest.mark.parametrize("sigma,sensitivity,count", [(75.5143, math.sqrt(20), 600), (10.0, 2.0, 50), (3.0, 1.0, 1)])
def test_a_gaussian_composition_is_within_1e3_of_its_exact_epsilon_and_never_below(sigma, sensitivity, count):
    events = [(GaussianEvent(sigma, sensitivity), count)]
    exact = gdp_epsilon(gaussian_mu(events), DELTA)
    assert exact * (1 - 2e-5) <= pld_epsilon(events, DELTA) <= exact * (1 + 1e-3) + 1e-9  # exact: rounded up 1e-5


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
@pytest.mark.parametrize("rate,multiplier,steps", [(0.05, 1.0, 400), (0.0125, 0.8, 1000)])
def test_the_sampled_gaussian_is_dp_accountings_own_under_each_relation(relation, rate, multiplier, steps):
    accountant = PLDAccountant(neighboring_relation=RELATION[relation], value_discretization_interval=1e-4)
    accountant.compose(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(multiplier)), steps)
    ours = pld_epsilon([(PoissonSampledGaussianEvent(rate, multiplier, steps, relation), 1)], DELTA)
    assert ours == pytest.approx(accountant.get_epsilon(DELTA), rel=1e-6)
    rdp = Ledger(neighbors=relation).compose_event(PoissonSampledGaussianEvent(rate, multiplier, steps, relation))
    assert ours <= rdp.epsilon(DELTA)[0]


def test_laplace_is_dp_accountings_laplace_with_the_sensitivity_divided_out():
    accountant = PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dpa.LaplaceDpEvent(4.0 / 2.0), 30)
    assert pld_epsilon([(LaplaceEvent(4.0, 2.0), 30)], DELTA) == pytest.approx(accountant.get_epsilon(DELTA), rel=1e-6)


def test_pure_dp_composes_no_worse_than_basic_composition():
    ours = pld_epsilon([(PureDpEvent(0.1), 50)], DELTA)
    assert ours <= 50 * 0.1 and ours <= Ledger().compose_event(PureDpEvent(0.1), 50).epsilon(DELTA)[0]
    assert pld_epsilon([(PureDpEvent(0.7), 1)], DELTA) == pytest.approx(0.7, abs=1e-3)


@pytest.mark.parametrize("mechanism", [TauPATE(40, 400, 75.5143, 10, "l1", "replace"),
                                       GaussianPATE(40, 250, 40.0, "add_remove"),
                                       PrivateKNN(40, 200, 0.1, 20.0, "replace"),
                                       PrivateKNN(40, 200, 0.1, 20.0, "add_remove")], ids=lambda m: m.name)
def test_a_ledger_prices_its_history_by_pld_no_higher_than_by_rdp(mechanism):
    ledger = Ledger().compose(mechanism, count=600)
    assert ledger.epsilon_pld(DELTA) <= ledger.epsilon(DELTA)[0]
    if ledger.epsilon_gdp(DELTA) is not None:
        gdp = ledger.epsilon_gdp(DELTA)  # exact, rounded up by 1e-5 relative
        assert gdp * (1 - 2e-5) <= ledger.epsilon_pld(DELTA) <= gdp * (1 + 1e-3)


def test_composed_and_self_composed_events_are_the_composition_of_their_parts():
    gaussian, sampled = GaussianEvent(5.0, 1.0), PoissonSampledGaussianEvent(0.02, 1.0, 100, "replace")
    flat = pld_epsilon([(gaussian, 10), (sampled, 1)], DELTA)
    nested = pld_epsilon([(ComposedEvent((SelfComposedEvent(gaussian, 10), sampled)), 1)], DELTA)
    assert nested == pytest.approx(flat, rel=1e-9)
    assert flat > max(pld_epsilon([(gaussian, 10)], DELTA), pld_epsilon([(sampled, 1)], DELTA))
    assert pld_epsilon([(gaussian, 0)], DELTA) == 0.0


@pytest.mark.parametrize("event", [BoundedRangeEvent(0.5), ApproximateEvent(GaussianEvent(1.0, 1.0), 1e-9),
                                   ComposedEvent((GaussianEvent(1.0, 1.0), BoundedRangeEvent(0.5)))],
                         ids=["bounded_range", "approximate", "composed_with_bounded_range"])
def test_events_without_a_pld_leave_the_rdp_bound_standing(event):
    assert pld_epsilon([(GaussianEvent(1.0, 1.0), 2), (event, 1)], DELTA) is None
    assert Ledger().compose_event(event, 1).epsilon_pld(DELTA) is None


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match="delta must lie"):
        pld_epsilon([(GaussianEvent(1.0, 1.0), 1)], 0.0)
    with pytest.raises(ValueError, match="interval must be"):
        pld_epsilon([(GaussianEvent(1.0, 1.0), 1)], DELTA, interval=-1.0)
    with pytest.raises(ValueError, match="count must be"):
        pld_epsilon([(GaussianEvent(1.0, 1.0), -1)], DELTA)


@pytest.mark.parametrize("mechanism,accountant", [
    (TauPATE(40, 400, 75.5143, 10, "l1", "replace"), "gdp"), (PrivateKNN(40, 200, 0.1, 20.0, "replace"), "pld"),
], ids=["gaussian", "sampled"])
def test_the_tightest_epsilon_is_the_smallest_valid_one_and_names_its_accountant(mechanism, accountant):
    """The least of the RDP bound and the exact GDP epsilon where it exists (the PLD, an upper bound on the same
    profile, is then not asked), else of the RDP bound and the PLD."""
    ledger = Ledger().compose(mechanism, count=600)
    epsilon, chosen = ledger.epsilon_tightest(DELTA)
    other = ledger.epsilon_gdp(DELTA) if ledger.epsilon_gdp(DELTA) is not None else ledger.epsilon_pld(DELTA)
    assert chosen == accountant and epsilon == min(ledger.epsilon(DELTA)[0], other) < ledger.epsilon(DELTA)[0]


def test_a_history_without_a_closed_form_or_a_pld_is_priced_by_rdp():
    ledger = Ledger().compose_event(BoundedRangeEvent(0.5), 10)
    assert ledger.epsilon_tightest(DELTA) == (ledger.epsilon(DELTA)[0], "rdp")
