"""A ledger priced for a group (``Ledger(group_size=n)``): its epsilon covers n records changed at once, and a
release calibrated to it (``calibrate(..., group_size=n)``) meets the target for the exact law of a group."""

from __future__ import annotations

import pytest
from scipy.optimize import brentq

from pate.aggregators import GaussianPATE
from pate.privacy import Ledger, calibrate, sampled_gaussian_steps
from pate.privacy.events import RdpCurveEvent
from pate.privacy.group import chained_group_epsilon, group_ledger
from pate.privacy.orders import DEFAULT_ORDERS
from tests.privacy.test_group import _group_hockey_stick, approximate_release

DELTA = 1e-6


def _sampled(rate: float, sigma: float, steps: int, relation: str = "replace", group_size: int = 1) -> Ledger:
    return Ledger(neighbors=relation, group_size=group_size).compose_event(
        sampled_gaussian_steps(rate, sigma, steps, relation), name="DP-SGD"
    )


def test_a_group_of_gaussian_votes_is_priced_exactly_as_the_group_ledger():
    """Events that scale with their sensitivity: the group's price is the exact conversion's, by every accountant."""
    per_step = Ledger().compose(GaussianPATE(40, 400, 60.0, "replace"), count=600)
    group = Ledger(group_size=7).compose(GaussianPATE(40, 400, 60.0, "replace"), count=600)
    for accountant in ("tightest", "rdp", "gdp"):
        assert (
            group.get_epsilon(DELTA, accountant).epsilon
            == group_ledger(per_step, 7).get_epsilon(DELTA, accountant).epsilon
        )
    priced = group.get_epsilon(DELTA)
    assert priced.accountant == "gdp" and "7 records at once, by group privacy, exact" in priced.description
    assert priced.epsilon > 6 * per_step.get_epsilon(DELTA).epsilon


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_a_group_of_sampled_steps_is_the_chain_and_survives_a_save(relation, tmp_path):
    """A sampled Gaussian has no exact conversion: the group's epsilon is the chain of its per-record profile, by
    "chain", with the RDP bound's own chain beside it; saved and loaded, the ledger prices the same group."""
    group = _sampled(0.03, 3.0, 90, relation, group_size=20)
    per_step = _sampled(0.03, 3.0, 90, relation)
    priced = group.get_epsilon(DELTA)
    assert priced.epsilon == chained_group_epsilon(per_step, 20, DELTA).epsilon
    assert priced.rdp == chained_group_epsilon(per_step, 20, DELTA, "rdp").epsilon >= priced.epsilon
    assert priced.accountant == "chain" and priced.order is None
    assert (
        "20 records at once, by group privacy" in priced.description and "an upper bound, loose" in priced.description
    )
    assert group.get_epsilon(DELTA, "rdp").epsilon == priced.rdp
    assert priced.epsilon > 5 * per_step.get_epsilon(DELTA).epsilon
    group.save(tmp_path / "ledger.json")
    loaded = Ledger.load(tmp_path / "ledger.json")
    assert loaded.group_size == 20 and loaded.get_epsilon(DELTA) == priced
    assert Ledger.replay(loaded.history, neighbors=relation, group_size=20).get_epsilon(DELTA) == priced
    per_step.save(tmp_path / "step.json")
    assert "group_size" not in (tmp_path / "step.json").read_text()  # a per-step ledger's file is as before


def test_a_group_epsilon_holds_for_the_exact_law_of_its_records():
    """The ledger's epsilon for 5 records of one sampled step under add_remove holds for the law of 5 records
    added at once (a binomial mixture of shifted Gaussians, integrated), and is above its exact epsilon."""
    rate, sigma, delta = 0.05, 1.0, 1e-5
    priced = _sampled(rate, sigma, 1, "add_remove", group_size=5).get_epsilon(delta).epsilon
    exact_delta = _group_hockey_stick(5, rate, sigma)
    assert exact_delta(priced) <= delta
    assert brentq(lambda eps: exact_delta(eps) - delta, 1e-6, priced, xtol=1e-6) < priced


def test_calibrating_to_a_group_gives_the_least_noise_that_meets_the_target():
    """calibrate(..., group_size=35): the noise whose chained epsilon for 35 records meets the target, within 1%
    (the chain's grid moves in steps of 0.12%), and 1% less noise misses it."""
    rate, steps, target = 4096 / 120_524, 89, 2.0

    def group_epsilon(multiplier: float) -> float:
        return _sampled(rate, multiplier, steps, group_size=35).get_epsilon(DELTA).epsilon

    multiplier = calibrate(
        lambda m: sampled_gaussian_steps(rate, m, steps, "replace"),
        target,
        DELTA,
        neighbors="replace",
        accountant="tightest",
        group_size=35,
    )
    assert 0.99 * target <= group_epsilon(multiplier) <= target < group_epsilon(0.99 * multiplier)
    per_record = calibrate(
        lambda m: sampled_gaussian_steps(rate, m, steps, "replace"), target, DELTA, neighbors="replace"
    )
    assert multiplier > 10 * per_record  # a person of 35 records costs far more noise than one record


def test_too_little_noise_for_the_chain_is_an_infinite_epsilon_and_calibration_adds_noise():
    """A full-batch release at a hundredth of a clip's noise: no per-record epsilon of the chain's grid meets delta,
    so the group's epsilon is infinite (valid, and no guarantee), and a calibration that starts there adds noise
    rather than stopping."""
    # by the RDP bound's chain: a PLD at a hundredth of a clip's noise would need billions of bins
    priced = _sampled(1.0, 0.01, 300, group_size=35).get_epsilon(DELTA, "rdp")
    assert priced.epsilon == priced.rdp == float("inf") and "epsilon = inf" in priced.description
    event_of = lambda m: sampled_gaussian_steps(1.0, m, 300, "replace")
    multiplier = calibrate(event_of, 8.0, 1e-5, neighbors="replace", group_size=35)
    assert 0.99 * 8.0 <= _sampled(1.0, multiplier, 300, group_size=35).get_epsilon(1e-5, "rdp").epsilon <= 8.0


def test_a_group_refuses_what_it_cannot_price():
    with pytest.raises(ValueError, match="group_size must be an integer >= 1, got 0"):
        Ledger(group_size=0)
    with pytest.raises(ValueError, match=r"delta must lie in the open interval \(0, 1\), got -1e-06"):
        _sampled(0.03, 3.0, 10, group_size=3).get_epsilon(-1e-6)
    with pytest.raises(ValueError, match="accountant='pld': a group of 3 records"):
        _sampled(0.03, 3.0, 10, group_size=3).get_epsilon(DELTA, "pld")
    bound = RdpCurveEvent(tuple(DEFAULT_ORDERS), tuple(0.01 * DEFAULT_ORDERS), data_dependent_bound=True)
    with pytest.raises(ValueError, match="its history is data-dependent"):
        Ledger(group_size=3).compose_event(bound).get_epsilon(DELTA, "rdp")
    approximate = Ledger.replay(approximate_release().history, neighbors="replace", group_size=20)
    with pytest.raises(ValueError, match=r"chained over 20 records meets delta=1e-05 \(n delta_t = 2e-05\)"):
        approximate.get_epsilon(1e-5)
    state = _sampled(0.03, 3.0, 10).state_dict()
    state["group_size"] = 1.5
    with pytest.raises(ValueError, match=r"state\['group_size'\] must be an integer >= 1, got 1.5"):
        Ledger().load_state_dict(state)
