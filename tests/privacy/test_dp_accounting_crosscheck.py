"""Cross-checks against dp-accounting (test-only dependency) on the same curves and orders."""

import math

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent, LaplaceDpEvent, SelfComposedDpEvent, ZCDpEvent, get_epsilon_gaussian
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import compute_delta, compute_epsilon

from pate.privacy import (
    DEFAULT_ORDERS,
    Ledger,
    delta_from_rdp,
    epsilon_from_rdp,
    epsilon_from_rdp_classic,
    gaussian_rdp,
    laplace_rdp,
    pure_dp_rdp,
)
from tests.privacy.test_ledger import GaussianQuery

RTOL = 1e-3  # the brief's agreement target; the formulas agree to ~1e-12 in practice
# dp-accounting skips orders <= 1.01 (numerical caution), so compare on the orders it evaluates.
ORDERS = DEFAULT_ORDERS[DEFAULT_ORDERS > 1.01]


class ZCDPQuery:
    """A (xi, rho)-zCDP release: (alpha, xi + rho alpha)-RDP."""

    def __init__(self, rho, xi=0.0):
        self.rho, self.xi = rho, xi
        self.delta_per_query = 0.0

    def rdp(self, orders):
        return self.xi + self.rho * orders


CURVES = {
    "gaussian": lambda: 600 * gaussian_rdp(ORDERS, 60.0, math.sqrt(40)),
    "gaussian_tight": lambda: 10 * gaussian_rdp(ORDERS, 0.7, 1.0),
    "laplace": lambda: 50 * laplace_rdp(ORDERS, 10.0, 1.0),
    "pure_dp": lambda: 30 * pure_dp_rdp(ORDERS, 0.2),
    "mixed_with_inf": lambda: np.where(ORDERS > 500, np.inf, 100 * gaussian_rdp(ORDERS, 30.0, 1.0)),
}


@pytest.mark.parametrize("curve", sorted(CURVES))
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-2])
def test_epsilon_from_rdp_matches_compute_epsilon(curve, delta):
    rdp = CURVES[curve]()
    ours, our_order = epsilon_from_rdp(ORDERS, rdp, delta)
    theirs, their_order = compute_epsilon(ORDERS, rdp, delta)
    assert ours == pytest.approx(theirs, rel=RTOL)
    assert our_order == their_order


@pytest.mark.parametrize("curve", sorted(CURVES))
@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
def test_delta_from_rdp_matches_compute_delta(curve, epsilon):
    rdp = CURVES[curve]()
    ours, _ = delta_from_rdp(ORDERS, rdp, epsilon)
    theirs, _ = compute_delta(ORDERS, rdp, epsilon)
    assert ours == pytest.approx(theirs, rel=RTOL, abs=1e-300)


@pytest.mark.parametrize(("sigma", "count"), [(1.0, 1), (5.0, 100), (60.0 / math.sqrt(40), 600)])
def test_ledger_matches_rdp_accountant_on_gaussian_events(sigma, count):
    accountant = RdpAccountant(orders=DEFAULT_ORDERS)
    accountant.compose(SelfComposedDpEvent(GaussianDpEvent(sigma), count))
    ledger = Ledger().compose(GaussianQuery(sigma, sensitivity=1.0), count)
    np.testing.assert_allclose(ledger.rdp, accountant.rdp, rtol=1e-12)
    for delta in (1e-9, 1e-6, 1e-3):
        assert ledger.get_epsilon(delta, "rdp").epsilon == pytest.approx(accountant.get_epsilon(delta), rel=RTOL)
    for epsilon in (0.5, 2.0):
        ours, _ = delta_from_rdp(ledger.orders, ledger.rdp, epsilon)  # the ledger of Gaussians: delta_t = 0
        assert ours == pytest.approx(accountant.get_delta(epsilon), rel=RTOL, abs=1e-300)


@pytest.mark.parametrize(("rho", "xi", "count"), [(0.01, 0.0, 10), (0.002, 0.01, 300), (0.5, 0.0, 1)])
def test_ledger_matches_rdp_accountant_on_zcdp_events(rho, xi, count):
    accountant = RdpAccountant(orders=DEFAULT_ORDERS)
    accountant.compose(ZCDpEvent(rho, xi), count)
    ledger = Ledger().compose(ZCDPQuery(rho, xi), count)
    np.testing.assert_allclose(ledger.rdp, accountant.rdp, rtol=1e-12)
    assert ledger.get_epsilon(1e-6, "rdp").epsilon == pytest.approx(accountant.get_epsilon(1e-6), rel=RTOL)


@pytest.mark.parametrize("noise_multiplier", [0.5, 2.0, 20.0])
def test_laplace_curve_matches_rdp_accountant(noise_multiplier):
    accountant = RdpAccountant(orders=DEFAULT_ORDERS)
    accountant.compose(LaplaceDpEvent(noise_multiplier), 7)
    np.testing.assert_allclose(7 * laplace_rdp(DEFAULT_ORDERS, noise_multiplier, 1.0), accountant.rdp, rtol=1e-9)


@pytest.mark.parametrize(
    ("sigma", "count", "delta"), [(5.0, 100, 1e-6), (60.0 / math.sqrt(40), 600, 1e-6), (2.0, 10, 1e-5)]
)
def test_ledger_lies_between_exact_gaussian_and_classic_conversion(sigma, count, delta):
    """Exact (analytic Gaussian mechanism, Balle & Wang 2018, and the PLD accountant) <= ledger <= classic.

    count compositions of N(0, sigma^2) with sensitivity 1 are one Gaussian with noise sigma / sqrt(count).
    """
    exact = get_epsilon_gaussian(sigma / math.sqrt(count), delta)
    pld = PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(SelfComposedDpEvent(GaussianDpEvent(sigma), count))
    pld_eps = pld.get_epsilon(delta)  # pessimistic discretisation: slightly above exact
    ledger = Ledger().compose(GaussianQuery(sigma, sensitivity=1.0), count)
    eps = ledger.get_epsilon(delta, "rdp").epsilon
    classic, _ = epsilon_from_rdp_classic(ledger.orders, ledger.rdp, delta)  # delta_t = 0
    assert exact == pytest.approx(pld_eps, rel=1e-2)
    assert max(exact, pld_eps) < eps < classic
