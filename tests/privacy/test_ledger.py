"""The ledger: composition identities, monotonicity, delta_t handling, relations, persistence, checks."""

import dataclasses
import json
import math

import numpy as np
import pytest

from pate.aggregators import TauPATE
from pate.privacy import (
    DEFAULT_ORDERS,
    Ledger,
    delta_from_rdp,
    epsilon_from_rdp,
    epsilon_from_rdp_classic,
    exponential_mechanism_rdp,
    gaussian_rdp,
    report_noisy_max_rdp,
)


# Test doubles following the mechanism protocol (.rdp(orders), .delta_per_query, .neighbors, .name,
# .scale_noise(m)); test_calibration.py reuses them.
@dataclasses.dataclass(frozen=True)
class GaussianQuery:
    sigma: float
    sensitivity: float = 1.0
    neighbors: str | None = "replace"
    delta_per_query: float = 0.0
    name: str = "GaussianQuery"

    def rdp(self, orders):
        return gaussian_rdp(orders, self.sigma, self.sensitivity)

    def scale_noise(self, multiplier):
        return dataclasses.replace(self, sigma=self.sigma * multiplier)


@dataclasses.dataclass(frozen=True)
class GaussianNoisyMax:
    """RNM with Gaussian noise over gaps of sensitivity 2 (Zhu & Wang Corollary 9)."""

    sigma: float
    num_candidates: int
    neighbors: str | None = "replace"
    delta_per_query: float = 0.0
    name: str = "GaussianNoisyMax"

    def rdp(self, orders):
        return report_noisy_max_rdp(orders, gaussian_rdp(orders, self.sigma, 2.0), self.num_candidates)

    def scale_noise(self, multiplier):
        return dataclasses.replace(self, sigma=self.sigma * multiplier)


@dataclasses.dataclass(frozen=True)
class ExponentialQuery:
    epsilon: float
    neighbors: str | None = "add_remove"
    delta_per_query: float = 0.0
    name: str = "ExponentialQuery"

    def rdp(self, orders):
        return exponential_mechanism_rdp(orders, self.epsilon)

    def scale_noise(self, multiplier):
        return dataclasses.replace(self, epsilon=self.epsilon / multiplier)


class NoRelationQuery:
    """Declares neither a relation nor a name; its curve is infinite above order 100."""

    delta_per_query = 0.0

    def rdp(self, orders):
        return np.where(orders > 100, np.inf, 0.01 * orders)


def test_empty_ledger_costs_nothing():
    ledger = Ledger()
    assert np.all(ledger.rdp == 0) and ledger.delta_t == 0.0 and ledger.neighbors is None
    assert ledger.get_epsilon(1e-6).epsilon == 0.0 and ledger.get_epsilon(1e-6, "rdp").epsilon == 0.0


def test_compose_count_equals_repeated_compose():
    query = GaussianQuery(sigma=10.0)
    once_by_three = Ledger().compose(query, count=3)
    three_times = Ledger().compose(query).compose(query).compose(query)
    np.testing.assert_allclose(once_by_three.rdp, 3 * Ledger().compose(query, 1).rdp, rtol=1e-15)
    np.testing.assert_allclose(three_times.rdp, once_by_three.rdp, rtol=1e-15)
    assert three_times.get_epsilon(1e-6, "rdp").epsilon == pytest.approx(
        once_by_three.get_epsilon(1e-6, "rdp").epsilon, rel=1e-12
    )


def test_heterogeneous_compositions_add():
    a = GaussianQuery(sigma=5.0, delta_per_query=1e-9)
    b = GaussianNoisyMax(sigma=50.0, num_candidates=40, delta_per_query=2e-9)
    ledger = Ledger().compose(a, count=7).compose(b, count=11)
    expected = 7 * a.rdp(DEFAULT_ORDERS) + 11 * b.rdp(DEFAULT_ORDERS)
    np.testing.assert_allclose(ledger.rdp, expected, rtol=1e-14)
    assert ledger.delta_t == pytest.approx(7e-9 + 22e-9, rel=1e-12)
    priced = ledger.get_epsilon(1e-6, "rdp")
    assert (priced.epsilon, priced.order) == epsilon_from_rdp(DEFAULT_ORDERS, expected, 1e-6 - 29e-9)


def test_epsilon_increases_with_count_and_decreases_with_sigma_and_delta():
    by_count = [
        Ledger().compose(GaussianQuery(20.0), count=c).get_epsilon(1e-6, "rdp").epsilon for c in (1, 10, 100, 1000)
    ]
    by_sigma = [
        Ledger().compose(GaussianQuery(s), count=100).get_epsilon(1e-6, "rdp").epsilon for s in (5.0, 10.0, 20.0, 40.0)
    ]
    ledger = Ledger().compose(GaussianQuery(20.0), count=100)
    by_delta = [ledger.get_epsilon(d, "rdp").epsilon for d in (1e-12, 1e-9, 1e-6, 1e-3)]
    for sequence in (by_sigma, by_delta):
        assert all(a > b for a, b in zip(sequence, sequence[1:]))
    assert all(a < b for a, b in zip(by_count, by_count[1:]))


@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_delta_of_epsilon_round_trip_with_delta_t(delta):
    ledger = Ledger().compose(GaussianQuery(30.0, delta_per_query=1e-12), count=600)
    eps = ledger.get_epsilon(delta, "rdp").epsilon
    # back: the conditional pair's delta at eps, plus the delta_t spent before the conversion
    assert delta_from_rdp(ledger.orders, ledger.rdp, eps)[0] + ledger.delta_t == pytest.approx(delta, rel=1e-8)


def test_delta_t_is_spent_before_the_conversion():
    """Zhu & Wang Lemma 17: the conversion runs at delta - delta_t (their CelebA run: 1e-6 - 600e-9)."""
    query = GaussianQuery(60.0, delta_per_query=1e-9)
    ledger = Ledger().compose(query, count=600)
    assert ledger.delta_t == pytest.approx(6e-7, rel=1e-12)
    priced = ledger.get_epsilon(1e-6, "rdp")
    eps, order = priced.epsilon, priced.order
    assert (eps, order) == epsilon_from_rdp(DEFAULT_ORDERS, 600 * query.rdp(DEFAULT_ORDERS), 1e-6 - 6e-7)
    without = Ledger().compose(dataclasses.replace(query, delta_per_query=0.0), count=600)
    assert eps > without.get_epsilon(1e-6, "rdp").epsilon
    assert delta_from_rdp(ledger.orders, ledger.rdp, eps)[0] + 6e-7 == pytest.approx(1e-6, rel=1e-8)


@pytest.mark.parametrize("delta", [1e-7, 6e-7])
def test_epsilon_at_delta_not_above_delta_t_raises(delta):
    ledger = Ledger().compose(GaussianQuery(60.0, delta_per_query=1e-9), count=600)
    with pytest.raises(ValueError, match=r"delta=.*delta_t=6"):
        ledger.get_epsilon(delta, "rdp")
    with pytest.raises(ValueError, match="delta_t"):
        ledger.get_epsilon(delta)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-6, 2.0])
def test_epsilon_at_delta_outside_unit_interval_raises(delta):
    with pytest.raises(ValueError, match="delta"):
        Ledger().compose(GaussianQuery(1.0)).get_epsilon(delta)


def test_classic_conversion_is_looser():
    ledger = Ledger().compose(GaussianQuery(10.0), count=100)
    assert ledger.get_epsilon(1e-6, "rdp").epsilon < epsilon_from_rdp_classic(ledger.orders, ledger.rdp, 1e-6)[0]


def test_relation_fixed_by_first_mechanism_and_never_mixed():
    ledger = Ledger().compose(NoRelationQuery())
    assert ledger.neighbors is None
    ledger.compose(GaussianQuery(5.0, neighbors="add_remove"))
    assert ledger.neighbors == "add_remove"
    before = ledger.rdp
    with pytest.raises(ValueError, match=r"neighbors='replace'.*neighbors='add_remove'"):
        ledger.compose(GaussianQuery(5.0, neighbors="replace"))
    np.testing.assert_array_equal(ledger.rdp, before)  # a refused mechanism leaves no trace
    assert len(ledger.history) == 2


def test_relation_fixed_by_constructor():
    with pytest.raises(ValueError, match="neighbors"):
        Ledger(neighbors="replace").compose(ExponentialQuery(1.0))  # declares add_remove
    with pytest.raises(ValueError, match="neighbors"):
        Ledger(neighbors="swap")


@pytest.mark.parametrize("count", [-1, 1.0, 2.5, True, "3", None])
def test_bad_count_raises(count):
    with pytest.raises(ValueError, match="count"):
        Ledger().compose(GaussianQuery(5.0), count=count)


def test_bad_mechanism_costs_raise():
    with pytest.raises(ValueError, match="delta_per_query"):
        Ledger().compose(GaussianQuery(5.0, delta_per_query=-1e-9))

    class WrongLength(NoRelationQuery):
        def rdp(self, orders):
            return np.ones(orders.size + 1)

    class NaNCurve(NoRelationQuery):
        def rdp(self, orders):
            return np.full(orders.shape, np.nan)

    for bad in (WrongLength(), NaNCurve()):
        with pytest.raises(ValueError, match="rdp"):
            Ledger().compose(bad)


def test_count_zero_records_but_costs_nothing_even_for_infinite_curves():
    ledger = Ledger().compose(NoRelationQuery(), count=0)
    assert np.all(ledger.rdp == 0) and ledger.history[0].count == 0
    ledger.compose(NoRelationQuery(), count=2)
    assert np.isinf(ledger.rdp[-1]) and np.isfinite(ledger.get_epsilon(1e-6, "rdp").epsilon)


def test_rdp_is_a_read_only_copy():
    ledger = Ledger().compose(GaussianQuery(5.0))
    curve = ledger.rdp
    with pytest.raises(ValueError):
        curve[0] = 0.0
    with pytest.raises(ValueError):
        ledger.orders[0] = 2.0
    ledger.compose(GaussianQuery(5.0))
    assert ledger.rdp[0] == pytest.approx(2 * curve[0])


def test_describe_states_epsilon_delta_relation_and_queries():
    ledger = Ledger().compose(GaussianQuery(60.0, delta_per_query=1e-9, name="StableTopK"), count=600)
    priced = ledger.get_epsilon(1e-6, "rdp")
    eps, order, text = priced.epsilon, priced.order, priced.description
    assert text.startswith(f"epsilon = {eps:.4g} at delta = 1e-06 (neighbours: replace;")
    assert f"order {order:.4g}" in text and "600 queries of StableTopK" in text and "delta_t = 6e-07" in text
    assert "neighbours: unspecified" in Ledger().compose(NoRelationQuery()).get_epsilon(1e-6, "rdp").description


def test_state_dict_and_save_load_round_trip(tmp_path):
    ledger = (
        Ledger(neighbors="replace")
        .compose(GaussianQuery(7.0, delta_per_query=1e-10), count=13)
        .compose(NoRelationQuery(), count=2)  # infinite entries must survive the JSON file
    )
    path = tmp_path / "ledger.json"
    ledger.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.json"]  # no temporary file left behind
    json.loads(path.read_text())  # strict JSON (no NaN / Infinity tokens)
    loaded = Ledger.load(path)
    np.testing.assert_array_equal(loaded.rdp, ledger.rdp)
    np.testing.assert_array_equal(loaded.orders, ledger.orders)
    assert loaded.delta_t == ledger.delta_t and loaded.neighbors == "replace"
    assert loaded.history == ledger.history
    assert loaded.get_epsilon(1e-6) == ledger.get_epsilon(1e-6)  # the epsilon, the RDP bound and the line

    restored = Ledger(orders=[2.0, 3.0])
    restored.load_state_dict(ledger.state_dict())
    assert restored.get_epsilon(1e-6) == ledger.get_epsilon(1e-6)
    # a restored ledger keeps composing
    loaded.compose(GaussianQuery(7.0, delta_per_query=1e-10), count=1)
    assert loaded.delta_t == pytest.approx(14e-10, rel=1e-12)


def test_load_state_dict_validates():
    state = Ledger().compose(GaussianQuery(7.0)).state_dict()
    with pytest.raises(ValueError, match="rdp"):
        Ledger().load_state_dict({**state, "rdp": state["rdp"][:-1]})
    with pytest.raises(ValueError, match="neighbors"):
        Ledger().load_state_dict({**state, "neighbors": "swap"})
    with pytest.raises(ValueError, match="delta_t"):
        Ledger().load_state_dict({**state, "delta_t": -1.0})
    with pytest.raises(ValueError, match="format"):
        Ledger().load_state_dict({**state, "format": 99})


@pytest.mark.parametrize("orders", [[1.0, 2.0], [], [[2.0, 3.0]], [2.0, math.inf]])
def test_bad_orders_raise(orders):
    with pytest.raises(ValueError, match="orders"):
        Ledger(orders=orders)


def test_delta_of_a_large_epsilon_uses_the_whole_curve():
    ledger = Ledger().compose(GaussianQuery(2.0), count=10)
    assert 0.0 <= delta_from_rdp(DEFAULT_ORDERS, ledger.rdp, 1e3)[0] < 1e-100


def test_the_public_contracts_epsilon_is_the_tightest_with_the_rdp_order_or_none():
    """DESIGN.md's contract: ``eps, order = ledger.epsilon(delta=1e-6)``, the tightest valid epsilon, with the RDP
    order where the RDP bound gave it and None where a tighter accountant did."""
    by_rdp = Ledger().compose(GaussianQuery(20.0), count=100)  # a curve without an event: RDP only
    priced = by_rdp.get_epsilon(1e-6)
    assert priced.accountant == "rdp" and by_rdp.epsilon(delta=1e-6) == (priced.epsilon, priced.order)
    exact = Ledger().compose(TauPATE(40, 400, 75.5143, 10, "l1", "replace"), count=600)
    eps, order = exact.epsilon(delta=1e-6)
    assert order is None and eps == exact.get_epsilon(1e-6, "gdp").epsilon < exact.get_epsilon(1e-6, "rdp").epsilon
