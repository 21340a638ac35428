"""Group privacy of a record-level release (``pate.privacy.group``): n records changed at once, priced exactly
where the event scales with its sensitivity, and not at all elsewhere."""

from __future__ import annotations

import math

import pytest

from pate.aggregators import GaussianPATE, TauPATE
from pate.mechanisms import PrivateKNN
from pate.privacy import Ledger, PureDpEvent, gaussian_event, sampled_gaussian_steps
from pate.privacy.events import dpa
from pate.privacy.group import group_event, group_ledger

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


def test_a_sampled_gaussian_has_no_exact_group_conversion_and_gets_none():
    """n records of one person, each sampled on its own, are a mixture, not a scaled Gaussian: no number is given
    rather than a loose one."""
    assert group_event(sampled_gaussian_steps(0.01, 1.0, 100, "replace"), 3) is None
    assert group_ledger(Ledger().compose(PrivateKNN(40, 20, 0.1, 20.0, "replace"), count=10), 3) is None
    assert group_ledger(Ledger().compose(GaussianPATE(40, 400, 60.0, "replace"), count=5), 1) is not None
    with pytest.raises(ValueError, match="size"):
        group_event(gaussian_event(1.0, 1.0), 0)
    assert math.isfinite(
        group_ledger(Ledger().compose(GaussianPATE(40, 400, 60.0, "replace"), 5), 3).get_epsilon(DELTA).epsilon
    )
