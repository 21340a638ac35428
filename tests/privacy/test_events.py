"""Cost events: they describe the mathematics, round-trip through JSON, are priced by one accountant, and a saved
ledger replays to the same epsilon under both relations with today's accountant."""

import json
import math

import attr
import numpy as np
import pytest
from dp_accounting import dp_event as dpa
from dp_accounting.rdp import RdpAccountant

from pate.aggregators import GaussianPATE, StableTopK, TauPATE
from pate.mechanisms.gap_selection import GapSelection
from pate.mechanisms.ptr import GapTest
from pate.mechanisms.topk import EMPeeling, Joint, PNFPeeling, StableTopKFixed
from pate.privacy import (
    DEFAULT_ORDERS,
    CostEvent,
    Ledger,
    NeighboringRelation,
    check_relation,
    exponential_mechanism_rdp,
    gaussian_rdp,
    laplace_rdp,
    pure_dp_rdp,
)
from pate.privacy.accountant import price
from pate.privacy.events import (
    ApproximateEvent,
    BoundedRangeEvent,
    DpEvent,
    PureDpEvent,
    RdpAtOrderEvent,
    RdpCurveEvent,
    ReplaceSampledGaussianEvent,
    ReportNoisyMaxEvent,
    TightestOfEvent,
    event_from_dict,
    event_to_dict,
    gaussian_event,
    laplace_event,
    sampled_gaussian_steps,
)

L, T, Q, DELTA = 40, 800, 600, 1e-6
ORDERS = np.array([1.5, 2.0, 3.0, 8.0, 32.0, 256.0])


def _aggregators(neighbors):
    return [
        GaussianPATE(num_labels=L, num_teachers=T, sigma=40.0, neighbors=neighbors),
        TauPATE(num_labels=L, num_teachers=T, sigma=12.0, tau=10, norm="l1", neighbors=neighbors),
        StableTopK(
            num_labels=L,
            num_teachers=T,
            selection="gaussian",
            sigma_select=50.0,
            sigma_test=60.0,
            delta_t=1e-9,
            neighbors=neighbors,
        ),
        StableTopK(
            num_labels=L,
            num_teachers=T,
            selection="gumbel",
            eps_select=0.5,
            sigma_test=60.0,
            delta_t=1e-9,
            neighbors=neighbors,
        ),
        StableTopK(
            num_labels=L,
            num_teachers=T,
            selection="laplace",
            sigma_select=9.0,
            test="laplace",
            eps_test=0.2,
            delta_t=1e-9,
            neighbors=neighbors,
        ),
    ]


EVERY_EVENT = [
    gaussian_event(sigma=3.0, sensitivity=2.0),
    laplace_event(scale=5.0, sensitivity=1.0),
    PureDpEvent(epsilon=0.7),
    BoundedRangeEvent(epsilon=0.7),
    dpa.ZCDpEvent(rho=0.01),
    dpa.ZCDpEvent(rho=0.01, xi=0.2),
    sampled_gaussian_steps(sampling_rate=0.01, noise_multiplier=1.1, steps=1000),
    sampled_gaussian_steps(sampling_rate=0.01, noise_multiplier=1.1, steps=1000, neighbors="replace"),
    RdpCurveEvent(
        orders=tuple(ORDERS),
        epsilons=tuple(ORDERS * 0.01),
        delta=1e-9,
        data_dependent_bound=True,
        source="a smooth-sensitivity bound",
    ),
    ReportNoisyMaxEvent(gaussian_event(50.0, 4.0), num_candidates=41),
    TightestOfEvent((PureDpEvent(1.0), BoundedRangeEvent(1.5))),
    ApproximateEvent(gaussian_event(60.0, 2.0), delta=1e-9),
    dpa.ComposedDpEvent([BoundedRangeEvent(0.1), ApproximateEvent(laplace_event(10.0, 2.0), 1e-8)]),
    dpa.SelfComposedDpEvent(dpa.ComposedDpEvent([gaussian_event(2.0, 1.0), dpa.ZCDpEvent(0.5)]), count=7),
]


def _name(event) -> str:
    return event_to_dict(event)["type"]


@pytest.mark.parametrize("event", EVERY_EVENT, ids=_name)
def test_every_event_is_a_dp_accounting_event_round_trips_through_json_and_is_frozen(event):
    assert isinstance(event, dpa.DpEvent)
    record = json.loads(json.dumps(event_to_dict(event), allow_nan=False))
    assert event_from_dict(record) == event
    assert event.to_named_tuple()  # dp-accounting's own serialisation takes it too: every field public and set by init
    field = attr.fields(type(event))[0].name
    with pytest.raises(AttributeError):
        setattr(event, field, None)


@pytest.mark.parametrize("event", EVERY_EVENT, ids=_name)
def test_every_event_is_priced(event):
    priced = price(event, ORDERS)
    assert priced.curve.shape == ORDERS.shape and np.all(priced.curve >= 0) and np.all(np.isfinite(priced.curve))
    assert priced.delta >= 0


def test_the_basic_events_price_at_their_closed_forms():
    np.testing.assert_allclose(price(gaussian_event(3.0, 2.0), ORDERS).curve, ORDERS * 4 / 18, rtol=1e-15)
    np.testing.assert_array_equal(price(laplace_event(5.0, 1.0), ORDERS).curve, laplace_rdp(ORDERS, 5.0, 1.0))
    np.testing.assert_array_equal(price(PureDpEvent(0.7), ORDERS).curve, pure_dp_rdp(ORDERS, 0.7))
    np.testing.assert_array_equal(price(BoundedRangeEvent(0.7), ORDERS).curve, exponential_mechanism_rdp(ORDERS, 0.7))
    np.testing.assert_array_equal(price(dpa.ZCDpEvent(0.01), ORDERS).curve, ORDERS * 0.01)
    np.testing.assert_array_equal(price(dpa.ZCDpEvent(0.01, 0.2), ORDERS).curve, 0.2 + ORDERS * 0.01)
    rnm = price(ReportNoisyMaxEvent(gaussian_event(50.0, 4.0), 41), ORDERS).curve
    np.testing.assert_allclose(rnm, ORDERS * 16 / 5000 + math.log(41) / (ORDERS - 1), rtol=1e-15)


def test_combinators_add_take_the_minimum_and_carry_the_delta():
    a, b = gaussian_event(2.0, 1.0), laplace_event(3.0, 1.0)
    composed = price(dpa.ComposedDpEvent([a, ApproximateEvent(b, 1e-7)]), ORDERS)
    np.testing.assert_allclose(composed.curve, gaussian_rdp(ORDERS, 2.0, 1.0) + laplace_rdp(ORDERS, 3.0, 1.0))
    assert composed.delta == 1e-7
    repeated = price(dpa.SelfComposedDpEvent(ApproximateEvent(b, 1e-7), 5), ORDERS)
    np.testing.assert_allclose(repeated.curve, 5 * laplace_rdp(ORDERS, 3.0, 1.0))
    assert repeated.delta == pytest.approx(5e-7)
    tightest = price(TightestOfEvent((PureDpEvent(1.0), a)), ORDERS).curve
    np.testing.assert_array_equal(tightest, np.minimum(pure_dp_rdp(ORDERS, 1.0), gaussian_rdp(ORDERS, 2.0, 1.0)))
    with pytest.raises(ValueError, match="pure RDP bounds"):
        price(TightestOfEvent((ApproximateEvent(a, 1e-9), b)), ORDERS)
    assert np.all(price(dpa.SelfComposedDpEvent(RdpCurveEvent((2.0,), (math.inf,)), 0), [2.0]).curve == 0)


@pytest.mark.parametrize("rate,sigma", [(0.01, 1.1), (0.004, 0.8), (0.3, 4.0), (1.0, 2.0)])
def test_the_poisson_sampled_gaussian_matches_dp_accounting_at_integer_orders(rate, sigma):
    integer_orders = [2, 3, 4, 8, 16, 64, 256, 1024]
    reference = RdpAccountant(orders=integer_orders)
    reference.compose(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(sigma)), 250)
    ours = price(sampled_gaussian_steps(rate, sigma, 250), integer_orders).curve
    np.testing.assert_allclose(ours, reference._rdp, rtol=1e-9)


def test_the_poisson_sampled_gaussian_charges_a_fractional_order_its_next_integer():
    event = sampled_gaussian_steps(0.02, 1.0, 1)
    np.testing.assert_array_equal(price(event, [1.3, 2.5, 7.01]).curve, price(event, [2.0, 3.0, 8.0]).curve)


def test_the_poisson_sampled_gaussian_composes_only_under_the_relation_it_is_priced_for():
    event = sampled_gaussian_steps(0.01, 1.0, 100)
    assert isinstance(event.event, dpa.PoissonSampledDpEvent)  # dp-accounting's own under add / remove
    replace = sampled_gaussian_steps(0.01, 1.0, 100, "replace")
    assert replace.event == ReplaceSampledGaussianEvent(0.01, 1.0)
    Ledger(neighbors="add_remove").compose_event(event, neighbors="add_remove")
    Ledger(neighbors="replace").compose_event(replace)
    with pytest.raises(
        ValueError, match="neighbors='replace' cannot compose into a ledger with neighbors='add_remove'"
    ):
        Ledger(neighbors="add_remove").compose_event(replace)
    with pytest.raises(
        ValueError, match="neighbors='add_remove' cannot compose into a ledger with neighbors='replace'"
    ):
        Ledger(neighbors="replace").compose_event(event, name="DP-SGD")
    with pytest.raises(ValueError, match="neighbors='add_remove' cannot compose into a ledger with neighbors=None"):
        Ledger().compose_event(event)
    with pytest.raises(ValueError, match="neighbors must be one of.*'swap'"):
        sampled_gaussian_steps(0.01, 1.0, 100, "swap")


FORMAT_3 = [
    ({"type": "gaussian", "sigma": 3.0, "sensitivity": 2.0}, dpa.GaussianDpEvent(1.5)),
    ({"type": "laplace", "scale": 5.0, "sensitivity": 2.0}, dpa.LaplaceDpEvent(2.5)),
    ({"type": "zcdp", "rho": 0.01}, dpa.ZCDpEvent(0.01)),
    (
        {"type": "poisson_sampled_gaussian", "sampling_rate": 0.01, "noise_multiplier": 1.0, "steps": 100},
        sampled_gaussian_steps(0.01, 1.0, 100, "add_remove"),  # recorded before it named its relation
    ),
    (
        {
            "type": "self_composed",
            "count": 3,
            "event": {
                "type": "composed",
                "events": [
                    {"type": "pure_dp", "epsilon": 0.5},
                    {
                        "type": "poisson_sampled_gaussian",
                        "sampling_rate": 0.01,
                        "noise_multiplier": 1.0,
                        "steps": 10,
                        "neighbors": "replace",
                    },
                ],
            },
        },
        dpa.SelfComposedDpEvent(
            dpa.ComposedDpEvent([PureDpEvent(0.5), sampled_gaussian_steps(0.01, 1.0, 10, "replace")]), 3
        ),
    ),
]


@pytest.mark.parametrize("record,event", FORMAT_3, ids=[record["type"] for record, _ in FORMAT_3])
def test_a_format_3_record_reads_as_the_dp_accounting_event_of_the_same_mathematics(record, event):
    """Ledgers written before the standard events were dp-accounting's (a dataset's privacy budget keeps them for
    good) read as the same mathematics, and price as before to the last few ulps."""
    assert event_from_dict(record) == event
    old_gaussian = gaussian_rdp(ORDERS, 3.0, 2.0)  # what format 3's Gaussian priced at
    np.testing.assert_allclose(price(event_from_dict(FORMAT_3[0][0]), ORDERS).curve, old_gaussian, rtol=1e-15)


@pytest.mark.parametrize(
    "event,match",
    [
        (dpa.GaussianDpEvent(0.0), "noise_multiplier must be"),
        (dpa.LaplaceDpEvent(-1.0), "noise_multiplier must be"),
        (dpa.ZCDpEvent(-0.1), "rho must be"),
        (dpa.PoissonSampledDpEvent(1.5, dpa.GaussianDpEvent(1.0)), "sampling_probability"),
        (dpa.PoissonSampledDpEvent(0.1, dpa.LaplaceDpEvent(1.0)), "only a Poisson-sampled Gaussian"),
        (dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), -2), "count must be"),
        (dpa.ComposedDpEvent([dpa.GaussianDpEvent(1.0), "a Gaussian"]), "must be a dp_accounting DpEvent"),
        (dpa.NoOpDpEvent(), "the accountant has no rule"),
    ],
    ids=lambda value: value if isinstance(value, str) else type(value).__name__,
)
def test_a_bad_dp_accounting_event_is_refused_by_the_ledger_naming_the_field(event, match):
    """dp-accounting's events check nothing: a ledger checks every part before it prices."""
    with pytest.raises(ValueError, match=match):
        Ledger(neighbors="add_remove").compose_event(event, name="M")


def test_a_tabulated_curve_is_read_at_its_own_orders_only():
    event = RdpCurveEvent(orders=(2.0, 4.0), epsilons=(0.1, 0.3))
    np.testing.assert_array_equal(price(event, [4.0, 2.0]).curve, [0.3, 0.1])
    with pytest.raises(ValueError, match=r"no value at alpha = \[3.0\]"):
        price(event, [2.0, 3.0])


@pytest.mark.parametrize(
    "record,match",
    [
        ({"type": "gaussian", "sigma": 1.0}, "needs the fields"),
        ({"type": "dp_accounting.GaussianDpEvent"}, "needs the fields"),
        ({"type": "dp_accounting.GaussianDpEvent", "noise_multiplier": -1.0}, "noise_multiplier must be"),
        ({"type": "wishful", "epsilon": 0.0}, "unknown cost event type 'wishful'"),
        ({"sigma": 1.0}, "must be a dict with a 'type'"),
        ({"type": "gaussian", "sigma": -1.0, "sensitivity": 1.0}, "sigma must be"),
        ({"type": "approximate", "event": {"type": "pure_dp", "epsilon": 1.0}, "delta": 2.0}, "delta"),
    ],
)
def test_a_bad_event_record_is_refused_by_name(record, match):
    with pytest.raises(ValueError, match=match):
        event_from_dict(record)


@pytest.mark.parametrize("neighbors", ["replace", "add_remove"])
@pytest.mark.parametrize("index", range(5))
def test_a_saved_ledger_replays_to_the_same_epsilon(neighbors, index, tmp_path):
    aggregator = _aggregators(neighbors)[index]
    ledger = Ledger().compose(aggregator, count=Q).compose(aggregator, count=7)
    ledger.save(tmp_path / "ledger.json")
    loaded = Ledger.load(tmp_path / "ledger.json")
    assert loaded.history == ledger.history
    replayed = Ledger.replay(loaded.history)
    np.testing.assert_array_equal(replayed.rdp, ledger.rdp)
    assert replayed.delta_t == ledger.delta_t
    assert replayed.get_epsilon(DELTA) == ledger.get_epsilon(DELTA)
    assert replayed.neighbors == neighbors and replayed.history == ledger.history


def test_a_ledger_records_the_mathematics_not_the_class():
    """TauPATE's record is a Gaussian on the clipped sensitivity sqrt(2 tau) (replace), sigma, the relation and
    the count: nothing names a Python class, so moving TauPATE cannot break a saved ledger."""
    entry = Ledger().compose(_aggregators("replace")[1], count=Q).history[0]
    assert entry.event == dpa.GaussianDpEvent(12.0 / math.sqrt(20))
    assert entry.count == Q and entry.neighbors is NeighboringRelation.REPLACE
    assert "pate." not in json.dumps(entry.to_dict())
    assert CostEvent.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry


def _mechanisms():
    return [
        *_aggregators("replace"),
        *_aggregators("add_remove"),
        GapSelection(L, T, "laplace", sigma=7.0),
        GapTest("laplace", 1e-6, epsilon=0.3),
        EMPeeling(k=5, pick_epsilon=0.1),
        PNFPeeling(k=5, pick_epsilon=0.1),
        Joint(k=5, epsilon=0.3),
        StableTopKFixed(k=5, select_epsilon=0.2, test_sigma=9.0, fill_rho=0.01, delta_t=1e-8),
    ]


@pytest.mark.parametrize("mechanism", _mechanisms(), ids=lambda m: m.name)
def test_every_mechanism_reports_the_price_of_its_event(mechanism):
    """``rdp`` and ``delta_per_query`` come from ``dp_event``: what a mechanism says and what a replayed ledger
    prices are one computation."""
    assert isinstance(mechanism.dp_event, DpEvent)
    priced = price(mechanism.dp_event, DEFAULT_ORDERS)
    np.testing.assert_array_equal(mechanism.rdp(DEFAULT_ORDERS), priced.curve)
    assert mechanism.delta_per_query == priced.delta


def test_a_replay_prices_with_the_current_accountant(monkeypatch):
    """A fix to a curve after the release changes the replayed epsilon (here: the Gaussian curve doubled)."""
    ledger = Ledger().compose(_aggregators("replace")[0], count=Q)
    import pate.privacy.accountant as accountant

    real = accountant.gaussian_rdp
    monkeypatch.setattr(accountant, "gaussian_rdp", lambda *a: 2 * real(*a))
    replayed = Ledger.replay(ledger.history)
    np.testing.assert_allclose(replayed.rdp, 2 * ledger.rdp, rtol=1e-15)
    assert replayed.get_epsilon(DELTA, "rdp").epsilon > 1.4 * ledger.get_epsilon(DELTA, "rdp").epsilon


class _Opaque:
    """Follows the compose protocol with no ``dp_event``: recorded as its tabulated curve."""

    name = "Opaque"
    neighbors = "replace"
    delta_per_query = 1e-9

    def rdp(self, orders):
        return np.asarray(orders) * 0.01


def test_an_opaque_mechanism_is_recorded_as_its_curve_and_replays(tmp_path):
    ledger = Ledger().compose(_Opaque(), count=3)
    event = ledger.history[0].event
    assert isinstance(event, RdpCurveEvent) and event.source == "Opaque" and event.delta == 1e-9
    ledger.save(tmp_path / "ledger.json")
    replayed = Ledger.replay(Ledger.load(tmp_path / "ledger.json").history)
    assert replayed.get_epsilon(DELTA) == ledger.get_epsilon(DELTA) and replayed.delta_t == ledger.delta_t
    with pytest.raises(ValueError, match="tabulated at other orders"):
        Ledger.replay(ledger.history, orders=[2.55, 3.5])


def test_a_data_dependent_curve_is_flagged_in_the_description():
    bound = RdpCurveEvent(
        tuple(DEFAULT_ORDERS), tuple(DEFAULT_ORDERS * 1e-4), data_dependent_bound=True, source="GNMax data-dependent"
    )
    ledger = Ledger(neighbors="replace").compose(_aggregators("replace")[0], count=1)
    assert not ledger.data_dependent
    ledger.compose_event(dpa.ComposedDpEvent([bound]), count=10, name="GNMax")
    assert ledger.data_dependent
    assert (
        "DATA-DEPENDENT: a bound for this data only, not by itself a DP guarantee"
        in ledger.get_epsilon(DELTA, "rdp").description
    )


@pytest.mark.parametrize("old_format", [1, 2])
def test_an_older_ledger_is_refused_in_one_line(old_format):
    with pytest.raises(
        ValueError, match=f"ledger format {old_format} cannot be priced by this version.*rebuild"
    ) as err:
        Ledger().load_state_dict({"format": old_format, "history": []})
    assert "\n" not in str(err.value)


def test_the_relation_enum_reads_and_writes_as_its_string():
    relation = check_relation("add_remove")
    assert relation is NeighboringRelation.ADD_REMOVE and relation == "add_remove"
    assert f"{relation}" == str(relation) == "add_remove" and json.dumps(relation) == '"add_remove"'
    assert check_relation(NeighboringRelation.REPLACE) is NeighboringRelation.REPLACE
    assert GaussianPATE(num_labels=2, num_teachers=3, sigma=1.0).neighbors is NeighboringRelation.REPLACE
    with pytest.raises(ValueError, match="neighbors must be one of.*'swap'"):
        check_relation("swap")


def test_a_release_priced_by_a_data_dependent_bound_is_not_reported_as_epsilon(tmp_path):
    """The run's epsilon is a DP guarantee: an aggregate whose ledger holds a raw data-dependent bound is refused."""
    from pate.aggregate import LEDGER_FILE, replay_privacy
    from pate.artifacts import Artifact

    bound = RdpCurveEvent(
        tuple(DEFAULT_ORDERS), tuple(DEFAULT_ORDERS * 1e-4), data_dependent_bound=True, source="GNMax data-dependent"
    )
    Ledger(neighbors="replace").compose_event(bound, count=5, name="GNMax").save(tmp_path / LEDGER_FILE)
    with pytest.raises(ValueError, match="data-dependent RDP bound, which is not by itself a DP guarantee"):
        replay_privacy(Artifact("aggregate", "k", tmp_path), 1e-6)


def test_a_composition_list_changed_after_it_was_priced_changes_nothing_the_ledger_holds():
    """An outside audit: dp-accounting's composition holds the caller's list, and a caller that reused it as an
    accumulator emptied a priced history (epsilon 0 by GDP, in the saved ledger and in its replay)."""
    batch = [gaussian_event(1.0, 1.0)] * 10
    ledger = Ledger(neighbors="replace").compose_event(dpa.ComposedDpEvent(batch), name="batch")
    before = ledger.get_epsilon(1e-5)
    batch.clear()
    ledger.history[0].event.events.clear()  # nor does a list reached through the history
    assert ledger.get_epsilon(1e-5) == before and before.epsilon > 1.0
    assert len(ledger.history[0].event.events) == 10
    assert Ledger.replay(ledger.history, neighbors="replace").get_epsilon(1e-5) == before


def test_a_subclass_of_a_sampled_step_is_held_to_its_relation():
    """An outside audit: a subclass of dp-accounting's Poisson-sampled event passed the relation check by type."""

    @attr.s(frozen=True)
    class MyPoisson(dpa.PoissonSampledDpEvent):
        pass

    event = dpa.SelfComposedDpEvent(MyPoisson(0.01, dpa.GaussianDpEvent(1.0)), 1000)
    for relation in ("replace", None):
        with pytest.raises(ValueError, match="neighbors='add_remove' cannot compose into a ledger"):
            Ledger(neighbors=relation).compose_event(event)


def test_a_ledger_prices_and_keeps_its_own_copy_of_every_part_of_an_event():
    """A second outside audit: the innermost events were the caller's own objects, so a caller's subclass that
    allows assignment lowered the GDP and PLD prices after composing; and a list that changed between the check and
    the copy left the curve changed with nothing in the history."""

    class Mutable(dpa.GaussianDpEvent):
        __setattr__ = object.__setattr__

    gaussian = Mutable(2.0)
    ledger = Ledger(neighbors="replace").compose_event(gaussian, count=50)
    before = ledger.get_epsilon(DELTA)
    gaussian.noise_multiplier = 1e6
    assert ledger.get_epsilon(DELTA) == before and ledger.history[0].event is not gaussian

    class Flips(list):
        reads = 0

        def __iter__(self):
            Flips.reads += 1
            late = [dpa.GaussianDpEvent(1.0), dpa.ZCDpEvent(-0.45)]
            return iter([dpa.GaussianDpEvent(1.0)] if Flips.reads == 1 else late)

    ledger = Ledger(neighbors="replace").compose_event(dpa.ComposedDpEvent(Flips([])), count=10)
    honest = Ledger(neighbors="replace").compose_event(dpa.ComposedDpEvent([dpa.GaussianDpEvent(1.0)]), count=10)
    # read once: what was checked is what was priced and what is kept
    assert ledger.history[0].event == honest.history[0].event
    np.testing.assert_array_equal(ledger.rdp, honest.rdp)
    assert ledger.get_epsilon(DELTA) == honest.get_epsilon(DELTA)


def test_an_event_changed_before_it_is_composed_is_checked_again():
    bound = RdpAtOrderEvent(256.0, 1.0)
    object.__setattr__(bound, "epsilon", -0.5)  # past the attrs class's own check
    with pytest.raises(ValueError, match="epsilon must be"):
        Ledger().compose_event(dpa.ComposedDpEvent([gaussian_event(1.0, 1.0), bound]))


def test_the_ledgers_orders_cannot_be_written_through_the_array_it_hands_out():
    ledger = Ledger(neighbors="replace").compose_event(gaussian_event(2.0, 1.0), count=50)
    before = ledger.get_epsilon(DELTA, "rdp")
    orders = ledger.orders
    orders.setflags(write=True)
    orders *= 1000
    assert ledger.get_epsilon(DELTA, "rdp") == before


def test_a_saved_sampled_step_under_another_relation_than_its_ledgers_is_refused_on_load():
    state = Ledger(neighbors="replace").compose_event(sampled_gaussian_steps(0.01, 1.0, 100, "replace")).state_dict()
    state["neighbors"] = "add_remove"
    with pytest.raises(
        ValueError, match="neighbors='replace' cannot compose into a ledger with neighbors='add_remove'"
    ):
        Ledger().load_state_dict(state)


@pytest.mark.parametrize("kind", ["composed", "dp_accounting.ComposedDpEvent"])
def test_a_composition_record_without_a_list_is_a_value_error(kind):
    with pytest.raises(ValueError, match="events must be a list of cost events"):
        event_from_dict({"type": kind, "events": 5})
