"""RDP -> (epsilon, delta): closed forms, orderings, monotonicity, round trips, argument checks."""

import numpy as np
import pytest

from pate.privacy import DEFAULT_ORDERS, delta_from_rdp, epsilon_from_rdp, epsilon_from_rdp_classic, gaussian_rdp

ORDERS = DEFAULT_ORDERS
# Relative grid error of the classic conversion of a linear curve whose optimum lies at an order >= 1.1:
# (q^(1/4) - q^(-1/4))^2 / 2 with q = 1.1 the largest ratio of consecutive (alpha - 1) (see orders.py).
GRID_RTOL = 1.2e-3


@pytest.mark.parametrize("rho", [1e-4, 1e-3, 0.01, 0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_linear_curve_classic_conversion_closed_form(rho, delta):
    """rho-zCDP: min over alpha of rho alpha + log(1/delta)/(alpha-1) = rho + 2 sqrt(rho log(1/delta))."""
    log_inv = np.log(1 / delta)
    optimum = 1 + np.sqrt(log_inv / rho)
    assert 1.1 <= optimum <= ORDERS[-1]  # the parameter choice keeps the stated tolerance valid
    exact = rho + 2 * np.sqrt(rho * log_inv)
    eps, order = epsilon_from_rdp_classic(ORDERS, rho * ORDERS, delta)
    assert exact <= eps <= exact * (1 + GRID_RTOL)  # a grid can only overstate the continuous optimum
    assert order == pytest.approx(optimum, rel=0.11)


@pytest.mark.parametrize(("sigma", "delta"), [(0.8, 1e-9), (2.0, 1e-5), (10.0, 1e-9), (100.0, 1e-5), (2.0, 0.1)])
def test_tight_conversion_never_worse_than_classic(sigma, delta):
    curve = gaussian_rdp(ORDERS, sigma, 1.0)
    tight, tight_order = epsilon_from_rdp(ORDERS, curve, delta)
    classic, _ = epsilon_from_rdp_classic(ORDERS, curve, delta)
    assert 0 < tight < classic
    # at the tight optimum the two differ by exactly log(1 - 1/a) - log(a)/(a - 1)
    a = tight_order
    classic_there = np.interp(a, ORDERS, curve) + np.log(1 / delta) / (a - 1)
    assert tight == pytest.approx(classic_there + np.log1p(-1 / a) - np.log(a) / (a - 1), rel=1e-12)


def test_epsilon_decreases_with_delta_and_increases_with_the_curve():
    curve = gaussian_rdp(ORDERS, 3.0, 1.0) * 50
    deltas = [1e-12, 1e-9, 1e-6, 1e-3, 0.1]
    eps = [epsilon_from_rdp(ORDERS, curve, d)[0] for d in deltas]
    assert all(a > b for a, b in zip(eps, eps[1:]))
    assert epsilon_from_rdp(ORDERS, 2 * curve, 1e-6)[0] > eps[2]


@pytest.mark.parametrize("scale", [1e-3, 0.1, 1.0, 30.0, 1000.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-2])
def test_delta_of_epsilon_of_delta_round_trip(scale, delta):
    curve = gaussian_rdp(ORDERS, 1.0, 1.0) * scale
    eps, order = epsilon_from_rdp(ORDERS, curve, delta)
    assert eps > 0
    back, back_order = delta_from_rdp(ORDERS, curve, eps)
    assert back == pytest.approx(delta, rel=1e-9)
    assert back_order == order


def test_delta_decreases_with_epsilon_and_is_capped_at_one():
    curve = gaussian_rdp(ORDERS, 1.0, 1.0) * 2  # 1-zCDP
    deltas = [delta_from_rdp(ORDERS, curve, e)[0] for e in [0.0, 1.0, 3.0, 5.0, 10.0, 20.0]]
    assert all(a > b for a, b in zip(deltas, deltas[1:]))
    assert delta_from_rdp(ORDERS, np.full(ORDERS.shape, 1e3), 0.0)[0] == 1.0


def test_infinite_entries_never_win_and_all_infinite_gives_infinite_epsilon():
    curve = gaussian_rdp(ORDERS, 2.0, 1.0)
    holed = np.where(ORDERS > 20, np.inf, curve)
    eps_full, order_full = epsilon_from_rdp(ORDERS, curve, 1e-6)
    eps_holed, order_holed = epsilon_from_rdp(ORDERS, holed, 1e-6)
    assert order_full <= 20 and eps_holed == eps_full and order_holed == order_full
    everywhere = np.full(ORDERS.shape, np.inf)
    assert epsilon_from_rdp(ORDERS, everywhere, 1e-6)[0] == np.inf
    assert epsilon_from_rdp_classic(ORDERS, everywhere, 1e-6)[0] == np.inf
    assert delta_from_rdp(ORDERS, everywhere, 5.0)[0] == 1.0


def test_zero_curve_gives_zero_epsilon_and_delta():
    zero = np.zeros_like(ORDERS)
    assert epsilon_from_rdp(ORDERS, zero, 1e-6)[0] == 0.0
    assert delta_from_rdp(ORDERS, zero, 0.0)[0] == 0.0


def test_total_variation_bound_gives_zero_epsilon_for_tiny_divergences():
    """rdp <= -log(1 - delta^2) at some order: (0, delta)-DP via Bretagnolle-Huber.

    The curve is finite only at order 1.01, where Proposition 12 alone would give eps of several hundred.
    """
    delta = 1e-3

    def curve(value):
        return np.where(ORDERS == ORDERS[0], value, np.inf)

    assert epsilon_from_rdp(ORDERS, curve(0.5 * delta**2), delta) == (0.0, ORDERS[0])
    assert epsilon_from_rdp(ORDERS, curve(4 * delta**2), delta)[0] > 100  # TV bound no longer applies
    tv = np.sqrt(-np.expm1(-0.5 * delta**2))
    assert delta_from_rdp(ORDERS, curve(0.5 * delta**2), 0.0)[0] == pytest.approx(tv, rel=1e-12)


# ------------------------------------------------------------------ argument checks
CONVERSIONS = [epsilon_from_rdp, epsilon_from_rdp_classic]


@pytest.mark.parametrize("function", CONVERSIONS)
@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-6, 1.5, float("nan"), None])
def test_delta_outside_open_unit_interval_raises(function, delta):
    with pytest.raises(ValueError, match="delta"):
        function(ORDERS, np.ones_like(ORDERS), delta)


@pytest.mark.parametrize("epsilon", [-0.1, float("nan"), float("inf")])
def test_bad_epsilon_raises(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        delta_from_rdp(ORDERS, np.ones_like(ORDERS), epsilon)


@pytest.mark.parametrize(
    "call",
    [
        lambda o, r: epsilon_from_rdp(o, r, 1e-6),
        lambda o, r: epsilon_from_rdp_classic(o, r, 1e-6),
        lambda o, r: delta_from_rdp(o, r, 1.0),
    ],
)
def test_bad_curves_raise(call):
    with pytest.raises(ValueError, match="rdp"):
        call(ORDERS, np.ones(3))  # shape mismatch
    with pytest.raises(ValueError, match="rdp"):
        call(ORDERS, np.where(ORDERS > 5, np.nan, 1.0))
    with pytest.raises(ValueError, match="rdp"):
        call(ORDERS, -np.ones_like(ORDERS))
    with pytest.raises(ValueError, match="orders"):
        call(np.array([1.0, 2.0]), np.ones(2))
    with pytest.raises(ValueError, match="orders"):
        call(np.array([[2.0, 3.0]]), np.ones((1, 2)))
