"""Noise calibration: closed forms, agreement with dp-accounting's calibration, impossible targets."""

import math

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent, SelfComposedDpEvent, mechanism_calibration
from dp_accounting.rdp import RdpAccountant

from pate.privacy import DEFAULT_ORDERS, Ledger, calibrate, calibrate_noise, gaussian_event, sampled_gaussian_steps
from tests.privacy.test_ledger import ExponentialQuery, GaussianNoisyMax, GaussianQuery

RTOL = 1e-4


def _achieved(mechanism, count, delta, orders=DEFAULT_ORDERS):
    return Ledger(orders).compose(mechanism, count).get_epsilon(delta, "rdp").epsilon


@pytest.mark.parametrize(("target", "count", "sensitivity"), [(1.5, 1, 1.0), (3.0, 600, math.sqrt(40)), (8.0, 50, 2.0)])
def test_gaussian_single_order_closed_form(target, count, sensitivity):
    """On one order a0 the tight conversion is count s^2 a0 / (2 sigma^2) + c(a0, delta): solve for sigma."""
    a0, delta = 10.0, 1e-6
    c = math.log1p(-1 / a0) - (math.log(delta) + math.log(a0)) / (a0 - 1)
    sigma_exact = math.sqrt(count * sensitivity**2 * a0 / (2 * (target - c)))
    calibrated, multiplier = calibrate_noise(
        GaussianQuery(1.0, sensitivity), target, delta, count, orders=np.array([a0]), rtol=RTOL
    )
    assert calibrated.sigma == pytest.approx(multiplier)
    assert sigma_exact <= calibrated.sigma <= sigma_exact * (1 + RTOL)


@pytest.mark.parametrize(("target", "delta", "count"), [(0.5, 1e-5, 1), (2.0, 1e-6, 100), (6.0, 1e-6, 600)])
def test_gaussian_default_grid_meets_target_and_matches_dp_accounting(target, delta, count):
    base = GaussianQuery(sigma=10.0)
    calibrated, multiplier = calibrate_noise(base, target, delta, count, rtol=RTOL)
    achieved = _achieved(calibrated, count, delta)
    assert target * (1 - RTOL) <= achieved <= target
    # dp-accounting's own calibration (Brent's method on its RdpAccountant, same orders)
    noise_multiplier = mechanism_calibration.calibrate_dp_mechanism(
        lambda: RdpAccountant(orders=DEFAULT_ORDERS),
        lambda z: SelfComposedDpEvent(GaussianDpEvent(z), count),
        target,
        delta,
        mechanism_calibration.LowerEndpointAndGuess(1e-3, 1.0),
        tol=1e-9,
    )
    assert calibrated.sigma == pytest.approx(noise_multiplier, rel=1e-3)
    # less noise would break the target: the answer is (nearly) the smallest multiplier
    assert _achieved(base.scale_noise(multiplier * (1 - 1e-3)), count, delta) > target


def test_pure_epsilon_parameter_is_divided():
    calibrated, multiplier = calibrate_noise(ExponentialQuery(epsilon=1.0), 3.0, 1e-6, 200, rtol=RTOL)
    assert calibrated.epsilon == pytest.approx(1.0 / multiplier)
    assert 3.0 * (1 - RTOL) <= _achieved(calibrated, 200, 1e-6) <= 3.0


def test_generous_target_shrinks_the_noise():
    calibrated, multiplier = calibrate_noise(GaussianQuery(sigma=100.0), 1.0, 1e-6, 10, rtol=RTOL)
    assert multiplier < 1 and 1.0 * (1 - RTOL) <= _achieved(calibrated, 10, 1e-6) <= 1.0


def test_delta_used_up_by_the_queries_raises():
    query = GaussianQuery(sigma=60.0, delta_per_query=1e-9)
    with pytest.raises(ValueError, match=r"target_epsilon=5.0 at delta=1e-06 over count=1000.*delta_per_query"):
        calibrate_noise(query, 5.0, 1e-6, 1000)
    calibrate_noise(query, 5.0, 1e-6, 999)  # a sliver of delta left is enough in principle


def test_noisy_max_floor_raises():
    """log(m)/(alpha - 1) does not shrink with the noise: 600 x log(40)/(1e5 - 1) ~ 0.022 is a floor."""
    query = GaussianNoisyMax(sigma=50.0, num_candidates=40)
    with pytest.raises(ValueError, match=r"target_epsilon=0.01 .*count=600.*floor"):
        calibrate_noise(query, 0.01, 1e-6, 600)
    floor = Ledger().compose(query.scale_noise(1e6), 600).get_epsilon(1e-6, "rdp").epsilon
    assert 0.01 < floor < 0.03
    calibrated, _ = calibrate_noise(query, 0.1, 1e-6, 600, rtol=RTOL)  # above the floor: reachable
    assert 0.1 * (1 - RTOL) <= _achieved(calibrated, 600, 1e-6) <= 0.1


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"target_epsilon": 0.0}, "target_epsilon"),
        ({"target_epsilon": -1.0}, "target_epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"count": 0}, "count"),
        ({"count": 2.5}, "count"),
        ({"rtol": 0.0}, "rtol"),
    ],
)
def test_bad_arguments_raise(kwargs, argument):
    arguments = {"target_epsilon": 1.0, "delta": 1e-6, "count": 10, **kwargs}
    with pytest.raises(ValueError, match=argument):
        calibrate_noise(GaussianQuery(1.0), **arguments)


def test_calibrate_finds_dp_sgds_noise_multiplier_from_its_event_alone():
    """A cost that is no configured mechanism calibrates through its event: the Poisson-sampled Gaussian over
    1,000 steps at rate 0.01 (add_remove), cross-checked against dp-accounting's RDP accountant at the multiplier
    found (integer orders, where both compute the same curve)."""
    from dp_accounting import dp_event as dpa
    from dp_accounting.rdp import RdpAccountant

    from pate.privacy import calibrate, sampled_gaussian_steps

    orders = [float(order) for order in range(2, 257)]
    multiplier = calibrate(
        lambda m: sampled_gaussian_steps(0.01, m, 1000), 2.0, 1e-5, orders=orders, neighbors="add_remove"
    )
    reference = RdpAccountant(orders=orders)
    reference.compose(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(multiplier)), 1000)
    assert reference.get_epsilon(1e-5) <= 2.0 * (1 + 1e-6)
    slightly_less = RdpAccountant(orders=orders)
    slightly_less.compose(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(multiplier * 0.99)), 1000)
    assert slightly_less.get_epsilon(1e-5) > 2.0
    with pytest.raises(ValueError, match="cannot compose into a ledger with neighbors='replace'"):
        calibrate(lambda m: sampled_gaussian_steps(0.01, m, 1000), 2.0, 1e-5, neighbors="replace")


@pytest.mark.parametrize(
    "event_of,neighbors",
    [
        (lambda m: gaussian_event(m, 1.0), None),
        (lambda m: sampled_gaussian_steps(0.05, m, 200, "replace"), "replace"),
    ],
    ids=["gaussian", "sampled"],
)
def test_calibrating_by_the_tightest_epsilon_meets_the_target_with_less_noise(event_of, neighbors):
    """The same search priced by ``Ledger.get_epsilon`` (the tightest) (exact GDP for the Gaussian, PLD for the sampled one):
    the least noise that meets the target by that epsilon, below the RDP calibration's."""
    by_rdp = calibrate(event_of, 2.0, 1e-6, count=100, neighbors=neighbors)
    by_tightest = calibrate(event_of, 2.0, 1e-6, count=100, neighbors=neighbors, accountant="tightest")

    def tightest(multiplier):
        ledger = Ledger().compose_event(event_of(multiplier), 100, neighbors=neighbors)
        return ledger.get_epsilon(1e-6).epsilon

    assert 2.0 * (1 - 1e-4) <= tightest(by_tightest) <= 2.0 < tightest(by_tightest * (1 - 1e-3))
    assert by_tightest < 0.95 * by_rdp


def test_an_unknown_accountant_is_refused_naming_it():
    with pytest.raises(ValueError, match="accountant='pld'; expected one of"):
        calibrate(lambda m: gaussian_event(m, 1.0), 2.0, 1e-6, accountant="pld")
