"""One contract that every mechanism, aggregator and method of the project keeps: it is frozen, its cost events
describe the mathematics and round-trip through JSON to the same price, calibrating it to a smaller target buys
more noise and meets the target, and bad input is refused with ``ValueError`` naming the argument."""

import dataclasses
import json

import numpy as np
import pytest

from pate.aggregators import GaussianPATE, StableTopK, TauPATE
from pate.mechanisms.gap_selection import GapSelection
from pate.mechanisms.ptr import GapTest
from pate.mechanisms.topk import EMPeeling, Joint, LimitedDomain, PNFPeeling, StableTopKFixed, TopStable
from pate.pipeline.methods import PATE, Method
from pate.privacy import DEFAULT_ORDERS, Ledger, calibrate_noise, event_from_dict, price
from tests.pipeline.methods.noisy_prevalence import NoisyPrevalence

L, T, DELTA, QUERIES = 8, 50, 1e-6, 100
COUNTS_TOO_HIGH = np.full((2, L), T + 1)


def _rdp_mechanisms(relation):
    """(mechanism, bad-input call) for every mechanism priced by RDP, under ``relation``."""
    histograms = -np.ones((2, 30))
    return [
        (GaussianPATE(L, T, 9.0, relation), lambda m: m(COUNTS_TOO_HIGH, np.random.default_rng(0))),
        (TauPATE(L, T, 9.0, 3.0, "l2", relation), lambda m: m(np.zeros((2, T, L + 1), bool), np.random.default_rng(0))),
        (StableTopK(L, T, "gumbel", eps_select=0.5, sigma_test=6.0, delta_t=1e-8, neighbors=relation),
         lambda m: m(COUNTS_TOO_HIGH, np.random.default_rng(0))),
        (StableTopK(L, T, "laplace", sigma_select=4.0, test="laplace", eps_test=0.3, delta_t=1e-8, neighbors=relation),
         lambda m: m(-COUNTS_TOO_HIGH, np.random.default_rng(0))),
        (GapSelection(L, T, "gaussian", sigma=3.0, neighbors=relation),
         lambda m: m(COUNTS_TOO_HIGH, np.random.default_rng(0))),
        (GapTest("gaussian", 1e-7, sigma=5.0, neighbors=relation), lambda m: GapTest("gaussian", 2.0, sigma=5.0)),
        (EMPeeling(k=3, pick_epsilon=0.2, neighbors=relation), lambda m: m(histograms, np.random.default_rng(0))),
        (PNFPeeling(k=3, pick_epsilon=0.2, neighbors=relation), lambda m: m(histograms, np.random.default_rng(0))),
        (Joint(k=3, epsilon=0.4, neighbors=relation), lambda m: m(histograms, np.random.default_rng(0))),
        (StableTopKFixed(k=3, select_epsilon=0.3, test_sigma=4.0, fill_rho=0.01, delta_t=1e-8, neighbors=relation),
         lambda m: m(histograms, np.random.default_rng(0))),
    ]


RDP = [(relation, index) for relation in ("replace", "add_remove") for index in range(10)]


def _mechanism(relation, index):
    return _rdp_mechanisms(relation)[index]


@pytest.mark.parametrize("relation, index", RDP)
def test_every_rdp_mechanism_is_frozen(relation, index):
    mechanism, _ = _mechanism(relation, index)
    field = dataclasses.fields(mechanism)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(mechanism, field, getattr(mechanism, field))


@pytest.mark.parametrize("relation, index", RDP)
def test_every_rdp_mechanisms_event_round_trips_to_the_same_price(relation, index, tmp_path):
    mechanism, _ = _mechanism(relation, index)
    event = event_from_dict(json.loads(json.dumps(mechanism.dp_event.to_dict(), allow_nan=False)))
    assert event == mechanism.dp_event
    np.testing.assert_array_equal(price(event, DEFAULT_ORDERS).curve, mechanism.rdp(DEFAULT_ORDERS))
    ledger = Ledger().compose(mechanism, count=QUERIES)
    ledger.save(tmp_path / "ledger.json")
    assert Ledger.replay(Ledger.load(tmp_path / "ledger.json").history).epsilon(1e-3) == ledger.epsilon(1e-3)


@pytest.mark.parametrize("relation, index", RDP)
def test_calibrating_to_a_smaller_target_buys_more_noise_and_meets_it(relation, index):
    mechanism, _ = _mechanism(relation, index)
    delta = 1e-3  # room for the PTR steps' delta_t over the queries
    multipliers = []
    for target in (0.5, 2.0, 8.0):
        calibrated, multiplier = calibrate_noise(mechanism, target, delta, QUERIES)
        assert Ledger().compose(calibrated, count=QUERIES).epsilon(delta)[0] <= target
        multipliers.append(multiplier)
    assert multipliers[0] > multipliers[1] > multipliers[2]


@pytest.mark.parametrize("relation, index", RDP)
def test_every_rdp_mechanism_refuses_bad_input(relation, index):
    mechanism, bad_call = _mechanism(relation, index)
    with pytest.raises(ValueError, match=r"votes|histograms|delta_t|counts"):
        bad_call(mechanism)


@pytest.mark.parametrize("factory", [LimitedDomain.for_budget, TopStable.for_budget])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_the_statement_mechanisms_keep_the_contract(factory, relation):
    """Limited Domain and Top Stable are stated as (epsilon, delta)-DP by their papers' theorems: frozen, their
    calibration meets the target and a smaller target buys a smaller per-query epsilon, bad input is refused."""
    built = [factory(k=3, max_k=5, epsilon=target, delta=DELTA, queries=QUERIES, neighbors=relation)
             for target in (0.5, 2.0)]
    for mechanism, target in zip(built, (0.5, 2.0)):
        assert mechanism.spent(QUERIES, DELTA) <= target * (1 + 1e-9)
        with pytest.raises(dataclasses.FrozenInstanceError):
            mechanism.k = 4
    assert built[0].epsilon < built[1].epsilon
    with pytest.raises(ValueError, match="histograms"):
        built[0](-np.ones((2, 30)), np.random.default_rng(0))


@pytest.mark.parametrize("method", [PATE(), NoisyPrevalence()], ids=["pate", "noisy_prevalence"])
def test_every_method_follows_the_protocol(method):
    """Their events, released in end-to-end runs, are checked by tests/pipeline/methods and the pipeline tests."""
    assert isinstance(method, Method)
