"""RDP curves: closed forms, independent re-derivations, orderings between them, argument checks."""

import math

import numpy as np
import pytest

from pate.privacy import DEFAULT_ORDERS
from pate.privacy.curves import (
    exponential_mechanism_rdp,
    gaussian_rdp,
    laplace_rdp,
    poisson_sampled_gaussian_rdp,
    pure_dp_rdp,
    report_noisy_max_rdp,
)

ORDERS = DEFAULT_ORDERS
MODERATE = ORDERS[ORDERS <= 64]  # where the naive textbook formulas do not overflow for eps <= 10


def _renyi(p, q, alpha):
    """D_alpha(P || Q) of two finite distributions, straight from the definition."""
    return np.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1)


@pytest.mark.parametrize(("sigma", "sensitivity"), [(1.0, 1.0), (50.0, 2.0), (60.0, np.sqrt(40)), (0.3, 5.0)])
def test_gaussian_closed_form(sigma, sensitivity):
    np.testing.assert_allclose(
        gaussian_rdp(ORDERS, sigma, sensitivity), ORDERS * sensitivity**2 / (2 * sigma**2), rtol=1e-15
    )


def test_gaussian_shape_follows_orders():
    orders = np.array([[2.0, 3.0], [4.0, 5.0]])
    out = gaussian_rdp(orders, 2.0, 1.0)
    assert out.shape == (2, 2) and out.dtype == np.float64
    assert gaussian_rdp(3.0, 1.0, 1.0) == pytest.approx(1.5)


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 3.0, 10.0])
def test_laplace_matches_mironov_proposition_6(eps):
    a = MODERATE
    naive = np.log(a / (2 * a - 1) * np.exp((a - 1) * eps) + (a - 1) / (2 * a - 1) * np.exp(-a * eps)) / (a - 1)
    np.testing.assert_allclose(laplace_rdp(a, scale=2.0 / eps, sensitivity=2.0), naive, rtol=1e-9)


@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 10.0, 100.0])
def test_laplace_lies_below_the_pure_dp_curve_and_tends_to_eps(eps):
    lap = laplace_rdp(ORDERS, 1.0 / eps, 1.0)
    assert np.all(np.isfinite(lap)) and np.all(lap > 0)
    assert np.all(lap <= pure_dp_rdp(ORDERS, eps) * (1 + 1e-9))  # Laplace is eps-DP
    assert np.all(np.diff(lap) >= -1e-12 * lap[1:])  # Renyi divergence grows with the order
    # near alpha = 1 it approaches KL = eps + expm1(-eps)
    assert lap[0] == pytest.approx(eps + np.expm1(-eps), rel=0.02)


@pytest.mark.parametrize(("t1", "t2"), [(0.1, 0.2), (0.5, 0.5), (1.0, 3.0), (0.01, 5.0)])
def test_laplace_curve_is_superadditive(t1, t2):
    """The vector-Laplace argument in the docstring: g(t1) + g(t2) <= g(t1 + t2)."""
    g = lambda t: laplace_rdp(ORDERS, 1.0, t)  # noqa: E731
    assert np.all(g(t1) + g(t2) <= g(t1 + t2) * (1 + 1e-12))


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 4.0, 10.0])
def test_pure_dp_curve_is_randomized_response(eps):
    p = np.array([np.exp(eps), 1.0]) / (1 + np.exp(eps))
    direct = np.array([_renyi(p, p[::-1], a) for a in MODERATE])
    np.testing.assert_allclose(pure_dp_rdp(MODERATE, eps), direct, rtol=1e-9)


@pytest.mark.parametrize("eps", [1e-6, 1e-3, 0.1, 1.0, 10.0, 100.0])
def test_pure_dp_curve_within_classic_bounds(eps):
    curve = pure_dp_rdp(ORDERS, eps)
    assert np.all(np.isfinite(curve)) and np.all(curve > 0)
    # Bun & Steinke 2016, Prop. 3.3: D_alpha <= min(eps, alpha eps^2 / 2)
    assert np.all(curve <= np.minimum(eps, ORDERS * eps**2 / 2) * (1 + 1e-12))
    # randomized response really is that private: at the largest order the curve is within log(2)/alpha of eps
    assert curve[-1] >= eps - np.log(2) / (ORDERS[-1] - 1) - 1e-12 * eps


def test_pure_dp_small_eps_is_quadratic():
    """For eps -> 0 randomized response has D_alpha ~ alpha eps^2 / 2 (no cancellation in the evaluation)."""
    eps = 1e-6
    np.testing.assert_allclose(pure_dp_rdp(MODERATE, eps), MODERATE * eps**2 / 2, rtol=1e-5)


@pytest.mark.parametrize("eps", [0.01, 0.5, 2.0, 20.0])
def test_exponential_mechanism_curve(eps):
    expected = np.minimum(pure_dp_rdp(ORDERS, eps), ORDERS * eps**2 / 8)
    curve = exponential_mechanism_rdp(ORDERS, eps)
    np.testing.assert_allclose(curve, expected, rtol=1e-15)
    assert np.all(curve <= pure_dp_rdp(ORDERS, eps))
    # at small orders the bounded-range (zCDP) bound is 4x better than pure DP's alpha eps^2 / 2
    assert curve[0] == pytest.approx(min(ORDERS[0] * eps**2 / 8, pure_dp_rdp(ORDERS[:1], eps)[0]))


@pytest.mark.parametrize("num_candidates", [1, 2, 39, 1000])
def test_report_noisy_max_closed_form(num_candidates):
    base = gaussian_rdp(ORDERS, 50.0, 2.0)
    expected = 2 * ORDERS / 50.0**2 + np.log(num_candidates) / (ORDERS - 1)  # Zhu & Wang Corollary 9
    np.testing.assert_allclose(report_noisy_max_rdp(ORDERS, base, num_candidates), expected, rtol=1e-13)


def test_report_noisy_max_with_one_candidate_is_the_base_curve():
    base = laplace_rdp(ORDERS, 2.0, 1.0)
    np.testing.assert_array_equal(report_noisy_max_rdp(ORDERS, base, 1), base)


# ------------------------------------------------------------------ argument checks
@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), float("inf"), None, True])
def test_gaussian_rejects_bad_sigma(sigma):
    with pytest.raises(ValueError, match="sigma"):
        gaussian_rdp(ORDERS, sigma, 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: gaussian_rdp(ORDERS, 1.0, s),
        lambda s: laplace_rdp(ORDERS, 1.0, s),
    ],
)
@pytest.mark.parametrize("sensitivity", [0.0, -2.0, float("nan")])
def test_rejects_bad_sensitivity(call, sensitivity):
    with pytest.raises(ValueError, match="sensitivity"):
        call(sensitivity)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("inf")])
def test_laplace_rejects_bad_scale(scale):
    with pytest.raises(ValueError, match="scale"):
        laplace_rdp(ORDERS, scale, 1.0)


@pytest.mark.parametrize("function", [pure_dp_rdp, exponential_mechanism_rdp])
@pytest.mark.parametrize("eps", [0.0, -0.5, float("inf"), float("nan")])
def test_rejects_bad_epsilon(function, eps):
    with pytest.raises(ValueError, match="epsilon"):
        function(ORDERS, eps)


@pytest.mark.parametrize("orders", [[1.0, 2.0], [0.5], [2.0, float("inf")], [2.0, float("nan")], []])
@pytest.mark.parametrize(
    "call",
    [
        lambda o: gaussian_rdp(o, 1.0, 1.0),
        lambda o: laplace_rdp(o, 1.0, 1.0),
        lambda o: pure_dp_rdp(o, 1.0),
        lambda o: exponential_mechanism_rdp(o, 1.0),
        lambda o: report_noisy_max_rdp(o, np.zeros(len(o)), 3),
    ],
)
def test_rejects_orders_not_above_one(call, orders):
    with pytest.raises(ValueError, match="orders"):
        call(orders)


@pytest.mark.parametrize("num_candidates", [0, -1, 2.5, True])
def test_report_noisy_max_rejects_bad_num_candidates(num_candidates):
    with pytest.raises(ValueError, match="num_candidates"):
        report_noisy_max_rdp(ORDERS, np.zeros_like(ORDERS), num_candidates)


@pytest.mark.parametrize("base", [np.zeros(3), np.full(ORDERS.shape, np.nan), -np.ones(ORDERS.shape)])
def test_report_noisy_max_rejects_bad_base_curve(base):
    with pytest.raises(ValueError, match="base_rdp"):
        report_noisy_max_rdp(ORDERS, base, 3)


@pytest.mark.parametrize("rate,sigma", [(1e-9, 0.3), (1e-9, 1.0), (1e-7, 10.0), (0.01, 1.0)])
def test_the_add_remove_curve_at_order_two_is_its_closed_form_at_tiny_rates(rate, sigma):
    # A_2 = 1 + q^2 (e^(1/s^2) - 1), so eps(2) = log1p(q^2 expm1(1/s^2)); an outside audit found a negative value at
    # q = 1e-9 (the sum of A_2's terms lost its excess over 1), which the ledger then refused
    expected = math.log1p(rate**2 * math.expm1(1 / sigma**2))
    assert poisson_sampled_gaussian_rdp([2.0], rate, sigma)[0] == pytest.approx(expected, rel=1e-9)
