"""The exact profile of composed Gaussian mechanisms (pate.privacy.gdp): the closed form against the analytic
Gaussian computed directly, the inversion, dp-accounting's PLD accountant on the same events (never below the exact
epsilon, within 1e-3 of it), never above the RDP bound, and the events that have no closed form."""

import math

import dp_accounting
import mpmath
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from scipy.stats import norm
from dp_accounting import ComposedDpEvent, SelfComposedDpEvent

from pate.aggregators import BinaryVoting, GaussianPATE, TauPATE
from pate.privacy import (
    ApproximateEvent,
    Ledger,
    gaussian_event,
    sampled_gaussian_steps,
)
from pate.privacy.gdp import gaussian_mu, gdp_delta, gdp_epsilon

CASES = [(0.05, 1e-6), (0.5, 1e-5), (1.4506, 1e-6), (3.0, 1e-8), (10.0, 1e-6)]


@pytest.mark.parametrize("mu,epsilon", [(0.5, 0.0), (0.5, 1.0), (1.0, 2.0), (2.0, 0.3), (3.0, 6.0)])
def test_the_profile_is_the_analytic_gaussians(mu, epsilon):
    """Balle & Wang 2018, Theorem 8 with D / sigma = mu, computed with plain CDFs where they do not underflow."""
    direct = norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
    assert gdp_delta(mu, epsilon) == pytest.approx(direct, rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("mu,delta", CASES)
def test_the_epsilon_is_valid_and_at_most_its_rounding_above_the_smallest(mu, delta):
    """Valid by the profile computed to 80 digits (mpmath), not only by gdp_delta's floating point, and within the
    1e-5 relative rounding-up of the root."""
    mpmath.mp.dps = 80
    epsilon = gdp_epsilon(mu, delta)

    def true_delta(eps):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)

    assert true_delta(epsilon) <= delta < true_delta(epsilon * (1 - 2e-5))


@pytest.mark.parametrize("mu,delta", [(1e-8, 1e-300), (1e-7, 1e-300), (1e-8, 1e-50), (0.0016352702870007845, 1e-15)])
def test_the_extremes_an_outside_audit_found_are_valid_and_return_at_once(mu, delta):
    """The audit's worst cases: the profile's two nearly equal terms lose digits at small mu (the unrounded root
    was 1e-6 relative below the true epsilon at mu = 1e-8, delta = 1e-300), and a float-by-float step hung."""
    mpmath.mp.dps = 80
    epsilon = gdp_epsilon(mu, delta)
    m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
    assert mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2) <= delta


@pytest.mark.slow  # a heavy computation
@pytest.mark.parametrize("mu,delta", CASES)
def test_dp_accountings_pld_agrees_and_never_goes_below_the_exact_epsilon(mu, delta):
    """dp-accounting's PLD accountant, pessimistic discretisation at 1e-4, on one Gaussian of noise multiplier
    1 / mu self-composed 100 times (mu / 10 each): an upper bound, within 1e-3 relative of the exact value."""
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(10 / mu), 100)
    exact, pld = gdp_epsilon(mu, delta), accountant.get_epsilon(delta)  # exact: rounded up by 1e-5 relative
    assert pld >= exact * (1 - 2e-5) - 1e-12 and pld == pytest.approx(exact, rel=1e-3, abs=1e-6)


@pytest.mark.parametrize(
    "aggregator",
    [
        TauPATE(40, 400, 75.5143, 10, "l1", "replace"),
        TauPATE(40, 400, 30.0, 5, "l2", "add_remove"),
        GaussianPATE(40, 250, 40.0, "replace"),
        BinaryVoting(40, 400, 106.793, "add_remove"),
    ],
    ids=lambda agg: agg.name,
)
def test_exact_epsilon_is_never_above_the_rdp_bound_of_the_same_queries(aggregator):
    ledger = Ledger().compose(aggregator, count=600)
    exact = gdp_epsilon(gaussian_mu([(aggregator.dp_event, 600)]), 1e-6)
    assert exact <= ledger.get_epsilon(1e-6, "rdp").epsilon
    assert ledger.get_epsilon(1e-6, "gdp").epsilon == exact == ledger.get_epsilon(1e-6).epsilon


def test_the_default_runs_tau_pate_is_7_506_exactly_where_rdp_says_7_999():
    """Issue 39's measurement: TauPATE(sigma 75.5143, tau 10, l1) over 600 queries, replace, delta 1e-6."""
    ledger = Ledger().compose(TauPATE(40, 400, 75.5143, 10, "l1", "replace"), count=600)
    assert ledger.get_epsilon(1e-6, "rdp").epsilon == pytest.approx(7.999, abs=1e-3)
    assert ledger.get_epsilon(1e-6, "gdp").epsilon == pytest.approx(7.506, abs=1e-3)


def test_mu_composes_as_the_root_sum_of_squares():
    a, b = gaussian_event(2.0, 1.0), gaussian_event(3.0, 2.0)
    expected = math.sqrt(5 * 0.25 + 2 * (4 / 9))
    assert gaussian_mu([(a, 5), (b, 2)]) == pytest.approx(expected, rel=1e-15)
    assert gaussian_mu([(ComposedDpEvent([SelfComposedDpEvent(a, 5), b]), 1), (b, 1)]) == pytest.approx(expected)
    assert gaussian_mu([]) == 0.0


@pytest.mark.parametrize(
    "event",
    [
        sampled_gaussian_steps(0.01, 1.0, 100, "replace"),
        ApproximateEvent(gaussian_event(1.0, 1.0), 1e-9),
        ComposedDpEvent([gaussian_event(1.0, 1.0), sampled_gaussian_steps(0.01, 1.0, 10, "replace")]),
    ],
    ids=["poisson_sampled", "approximate", "composed_with_sampled"],
)
def test_events_without_a_closed_form_have_no_exact_epsilon(event):
    assert gaussian_mu([(gaussian_event(1.0, 1.0), 3), (event, 1)]) is None
    ledger = Ledger(neighbors="replace").compose_event(gaussian_event(1.0, 1.0), 3).compose_event(event, 1)
    with pytest.raises(ValueError, match="accountant='gdp'"):
        ledger.get_epsilon(1e-5, "gdp")


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match="mu must be"):
        gdp_epsilon(0.0, 1e-6)
    with pytest.raises(ValueError, match="delta must lie"):
        gdp_epsilon(1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon must be"):
        gdp_delta(1.0, -1.0)
    assert np.isfinite(gdp_epsilon(1e-4, 1e-12)) and gdp_epsilon(1e-4, 0.5) == 0.0
