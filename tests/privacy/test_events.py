"""Cost events: a saved ledger replays to the same epsilon under both relations, a replay prices with the
current code, and the relation is one enum that reads and writes as its string."""

import json

import numpy as np
import pytest

from pate.aggregators import GaussianPATE, StableTopK, TauPATE
from pate.privacy import CostEvent, Ledger, NeighboringRelation, check_relation

L, T, Q, DELTA = 40, 800, 600, 1e-6


def _aggregators(neighbors):
    return [
        GaussianPATE(num_labels=L, num_teachers=T, sigma=40.0, neighbors=neighbors),
        TauPATE(num_labels=L, num_teachers=T, sigma=12.0, tau=10, norm="l1", neighbors=neighbors),
        StableTopK(num_labels=L, num_teachers=T, selection="gaussian", sigma_select=50.0, sigma_test=60.0,
                   delta_t=1e-9, neighbors=neighbors),
        StableTopK(num_labels=L, num_teachers=T, selection="gumbel", eps_select=0.5, sigma_test=60.0,
                   delta_t=1e-9, neighbors=neighbors),
    ]


@pytest.mark.parametrize("neighbors", ["replace", "add_remove"])
@pytest.mark.parametrize("index", range(4))
def test_a_saved_ledger_replays_to_the_same_epsilon(neighbors, index, tmp_path):
    aggregator = _aggregators(neighbors)[index]
    ledger = Ledger().compose(aggregator, count=Q).compose(aggregator, count=7)
    ledger.save(tmp_path / "ledger.json")
    loaded = Ledger.load(tmp_path / "ledger.json")
    assert loaded.history == ledger.history
    replayed = Ledger.replay(loaded.history)
    np.testing.assert_array_equal(replayed.rdp, ledger.rdp)
    assert replayed.delta_t == ledger.delta_t
    assert replayed.epsilon(DELTA) == ledger.epsilon(DELTA)
    assert replayed.neighbors == neighbors and replayed.history == ledger.history


def test_an_event_records_the_class_every_argument_and_the_count():
    event = CostEvent.of(_aggregators("replace")[1], count=Q)
    assert event.mechanism == "pate.aggregators.tau_pate:TauPATE"
    assert dict(event.parameters) == {"num_labels": L, "num_teachers": T, "sigma": 12.0, "tau": 10.0, "norm": "l1",
                                      "neighbors": "replace"}
    assert event.count == Q and event.neighbors is NeighboringRelation.REPLACE
    assert CostEvent.from_dict(json.loads(json.dumps(event.to_dict()))) == event


def test_a_replay_prices_with_the_current_code(monkeypatch):
    """Doubling the count sensitivity after the release must change the replayed epsilon (upwards)."""
    ledger = Ledger().compose(_aggregators("replace")[0], count=Q)
    import pate.aggregators.gaussian_pate as module

    real = module.count_l2_sensitivity
    monkeypatch.setattr(module, "count_l2_sensitivity", lambda *a: 2 * real(*a))
    replayed = Ledger.replay(ledger.history)
    assert replayed.epsilon(DELTA)[0] > 1.9 * ledger.epsilon(DELTA)[0]


class _Opaque:
    """Follows the compose protocol but is no dataclass: composes, cannot be replayed."""

    name = "Opaque"
    neighbors = "replace"
    delta_per_query = 0.0

    def rdp(self, orders):
        return np.asarray(orders) * 0.01


def test_an_opaque_mechanism_composes_but_its_replay_names_it():
    ledger = Ledger().compose(_Opaque(), count=3)
    assert not ledger.history[0].replayable
    with pytest.raises(ValueError, match="'Opaque'.*cannot be replayed"):
        Ledger.replay(ledger.history)


def test_a_vanished_mechanism_class_is_named():
    event = CostEvent(name="Gone", count=1, neighbors="replace", mechanism="pate.aggregators:NoSuchAggregator")
    with pytest.raises(ValueError, match="NoSuchAggregator.*no longer exists"):
        event.rebuild()


def test_the_relation_enum_reads_and_writes_as_its_string():
    relation = check_relation("add_remove")
    assert relation is NeighboringRelation.ADD_REMOVE and relation == "add_remove"
    assert f"{relation}" == str(relation) == "add_remove" and json.dumps(relation) == '"add_remove"'
    assert check_relation(NeighboringRelation.REPLACE) is NeighboringRelation.REPLACE
    assert GaussianPATE(num_labels=2, num_teachers=3, sigma=1.0).neighbors is NeighboringRelation.REPLACE
    with pytest.raises(ValueError, match="neighbors must be one of.*'swap'"):
        check_relation("swap")
