"""The Poisson-sampled Gaussian under replace (``poisson_sampled_gaussian_replace_rdp``): the dominating pair's
divergence by quadrature, checked against closed forms, a 2-D search over the replaced contributions, dp-accounting's
tight PLD epsilon for REPLACE_ONE, and two looser valid bounds (joint convexity; the weak triangle inequality over
dp-accounting's add / remove curve)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event as dpa
from dp_accounting.pld import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.rdp import RdpAccountant

from pate.privacy import Ledger, poisson_sampled_gaussian_replace_rdp, sampled_gaussian_steps
from pate.privacy.curves import replace_convexity_bound


@pytest.mark.parametrize("sigma", [0.7, 3.0])
def test_with_every_record_sampled_the_replace_curve_is_the_gaussian_at_sensitivity_two(sigma):
    orders = np.array([1.5, 2.0, 8.0, 64.0, 256.0])
    np.testing.assert_allclose(
        poisson_sampled_gaussian_replace_rdp(orders, 1.0, sigma), 2 * orders / sigma**2, rtol=1e-9
    )


@pytest.mark.parametrize("rate,sigma", [(0.01, 1.1), (0.05, 0.9), (0.3, 4.0)])
def test_above_order_256_the_curve_is_the_joint_convexity_bound(rate, sigma):
    orders = np.array([300.0, 1000.0, 4096.0])
    # log(1 - q + q exp(2 alpha (alpha - 1) / s^2)) / (alpha - 1); the exponent is in the hundreds to millions
    expected = np.logaddexp(np.log1p(-rate), np.log(rate) + 2 * orders * (orders - 1) / sigma**2) / (orders - 1)
    np.testing.assert_allclose(poisson_sampled_gaussian_replace_rdp(orders, rate, sigma), expected, rtol=1e-9)
    # and it approaches the sensitivity-2 Gaussian curve shifted by log(q) / (alpha - 1) as alpha grows
    np.testing.assert_allclose(expected, 2 * orders / sigma**2 + np.log(rate) / (orders - 1), rtol=1e-6)


@pytest.mark.parametrize("rate,sigma", [(0.05, 1.0), (0.3, 2.0), (0.6, 0.8), (0.01, 3.0)])
def test_the_quadrature_never_exceeds_two_other_valid_bounds(rate, sigma):
    """The exact divergence of the dominating pair lies below the joint-convexity bound and below Renyi's weak
    triangle inequality through the record removed (Mironov 2017, Proposition 11 with p = q = 2), whose add /
    remove curves dp-accounting computes."""
    orders = np.array([2.0, 4.0, 16.0, 100.0, 256.0])
    reference = RdpAccountant(orders=list(np.concatenate([2 * orders, 2 * orders - 1])))
    reference.compose(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(sigma)), 1)
    double, double_less_one = np.split(np.asarray(reference._rdp), 2)
    triangle = (orders - 0.5) / (orders - 1) * double + double_less_one
    convexity = [replace_convexity_bound(order, rate, sigma) for order in orders]
    exact = poisson_sampled_gaussian_replace_rdp(orders, rate, sigma)
    assert np.all(exact <= triangle) and np.all(exact <= convexity)


def _divergence_2d(order: float, rate: float, sigma: float, a: np.ndarray, b: np.ndarray) -> float:
    """D_alpha((1-q) N(0, s^2 I) + q N(a, s^2 I) || (1-q) N(0, s^2 I) + q N(b, s^2 I)) in the plane, by the
    rectangle rule on a grid of step s / 10. The integrand is smooth and decays like a Gaussian, so the rule
    converges geometrically in the step: at s / 10 the opposite pair agrees with the 1-D quadrature to 5e-12, as at
    s / 40, on a sixteenth of the points."""
    step = sigma / 10
    t = np.arange(-2 * order - 2 - 10 * sigma, 10 * sigma + 2, step)  # covers the modes (curves.py)
    x, y = np.meshgrid(t, t, indexing="ij")

    def log_mixture(mean):
        return np.logaddexp(
            math.log1p(-rate) - (x**2 + y**2) / (2 * sigma**2),
            math.log(rate) - ((x - mean[0]) ** 2 + (y - mean[1]) ** 2) / (2 * sigma**2),
        )

    log_integrand = order * log_mixture(a) + (1 - order) * log_mixture(b) - math.log(2 * math.pi * sigma**2)
    top = log_integrand.max()
    return (top + math.log(np.exp(log_integrand - top).sum() * step**2)) / (order - 1)


@pytest.mark.slow
@pytest.mark.parametrize("rate,sigma,order", [(0.2, 1.0, 3.0), (0.5, 1.5, 2.0), (0.1, 0.8, 5.0)])
def test_no_pair_of_contributions_in_the_unit_disc_diverges_more_than_the_opposite_pair(rate, sigma, order):
    """Contributions a, b with |a|, |b| <= 1 (clipped), 40 random pairs and the extremes: none exceeds the
    curve, and the opposite pair attains it (the grid in the plane agrees with the 1-D quadrature to 1e-6)."""
    bound = float(poisson_sampled_gaussian_replace_rdp([order], rate, sigma)[0])
    rng = np.random.default_rng(0)
    angles, radii = rng.uniform(0, 2 * np.pi, (40, 2)), np.sqrt(rng.uniform(0, 1, (40, 2)))
    pairs = [(np.array([1.0, 0.0]), np.array([0.0, 1.0])), (np.array([1.0, 0.0]), np.array([0.0, 0.0]))]
    pairs += [
        (r[0] * np.array([np.cos(t[0]), np.sin(t[0])]), r[1] * np.array([np.cos(t[1]), np.sin(t[1])]))
        for t, r in zip(angles, radii)
    ]
    for a, b in pairs:
        assert _divergence_2d(order, rate, sigma, a, b) <= bound * (1 + 1e-6)
    opposite = _divergence_2d(order, rate, sigma, np.array([-1.0, 0.0]), np.array([1.0, 0.0]))
    assert opposite == pytest.approx(bound, rel=1e-6)


@pytest.mark.parametrize("rate,sigma,steps", [(0.05, 1.0, 400), (0.0512, 3.0, 2000), (0.0125, 1.0, 1000)])
def test_the_replace_epsilon_is_within_ten_percent_above_dp_accountings_tight_pld(rate, sigma, steps):
    """RDP then conversion costs a little over the exact privacy-loss distribution, never less."""
    delta = 1e-6
    ours = (
        Ledger(neighbors="replace")
        .compose_event(sampled_gaussian_steps(rate, sigma, steps, "replace"))
        .get_epsilon(delta, "rdp")
        .epsilon
    )
    pld = PLDAccountant(neighboring_relation=NeighborRel.REPLACE_ONE, value_discretization_interval=1e-3)
    pld.compose(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(sigma)), steps)
    tight = pld.get_epsilon(delta)
    assert tight <= ours <= 1.1 * tight


def _replace_divergence_mpmath(order: float, rate: float, sigma: float) -> float:
    """D_order(P || R) of the dominating replace pair by mpmath's quadrature at 50 digits: an independent reference
    where the float64 sum of an integral just above 1 loses the excess."""
    import mpmath  # torch's sympy brings it

    mpmath.mp.dps = 50
    order, rate, sigma = mpmath.mpf(order), mpmath.mpf(rate), mpmath.mpf(sigma)

    def mixture(x, contribution):
        return (1 - rate) * mpmath.npdf(x, 0, sigma) + rate * mpmath.npdf(x, contribution, sigma)

    integral = mpmath.quad(
        lambda x: mixture(x, -1) ** order * mixture(x, 1) ** (1 - order),
        [-mpmath.inf, -10 * sigma, -1, 0, 1, 10 * sigma, mpmath.inf],
    )
    return float(mpmath.log(integral) / (order - 1))


@pytest.mark.parametrize(
    "order,rate,sigma", [(1.01, 0.01, 1e4), (1.01, 0.01, 1e5), (1.02, 1e-8, 0.5), (2.0, 0.05, 1.0)]
)
def test_a_tiny_divergence_is_never_computed_below_its_true_value(order, rate, sigma):
    # an outside audit: the sum's rounding erased the excess over 1, so the curve was 0 (1e5) or 3% low (1e4), and a
    # ledger with a 0 at any order printed epsilon 0 whatever its steps
    computed = poisson_sampled_gaussian_replace_rdp([order], rate, sigma)[0]
    reference = _replace_divergence_mpmath(order, rate, sigma)
    assert reference <= computed <= replace_convexity_bound(order, rate, sigma) * (1 + 1e-12)
    if order == 2.0:  # where the excess is far above the rounding the quadrature is tight
        assert computed == pytest.approx(reference, rel=1e-9)


def test_a_billion_steps_of_a_tiny_divergence_are_never_priced_at_epsilon_zero():
    ledger = Ledger(neighbors="replace").compose_event(sampled_gaussian_steps(1e-8, 0.5, 10**9, "replace"))
    assert ledger.get_epsilon(1e-8).epsilon > 0.1  # the composition's total variation exceeds 1e-6: epsilon > 0
