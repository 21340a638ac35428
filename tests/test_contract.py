"""One contract that every mechanism, aggregator and method of the project keeps: it is frozen, its cost events
describe the mathematics and round-trip through JSON to the same price, calibrating it to a smaller target buys
more noise and meets the target, and bad input is refused with ``ValueError`` naming the argument."""

import dataclasses
import inspect
import json

import numpy as np
import pytest

from pate.aggregators import BinaryVoting, DataDependentBinaryVoting, GaussianPATE, StableTopK, TauPATE
from pate.mechanisms import DistanceTest, PrivateKNN
from pate.mechanisms.gap_selection import GapSelection
from pate.mechanisms.ptr import GapTest
from pate.mechanisms.topk import EMPeeling, Joint, PNFPeeling, StableTopKFixed
from pate.pipeline.methods import Method
from pate.privacy import DEFAULT_ORDERS, Ledger, calibrate_noise, event_from_dict, event_to_dict, price
from tests.audit.discover import method_classes, priced_classes
from tests.pipeline.methods.noisy_prevalence import NoisyPrevalence

L, T, DELTA, QUERIES = 8, 50, 1e-6, 100
COUNTS_TOO_HIGH = np.full((2, L), T + 1)
HISTOGRAMS = -np.ones((2, 30))


def _counts_too_high(mechanism):
    return mechanism(COUNTS_TOO_HIGH, np.random.default_rng(0))


def _negative_histograms(mechanism):
    return mechanism(HISTOGRAMS, np.random.default_rng(0))


# Every mechanism priced by RDP (a ``dp_event``), as (factory of the relation, bad-input call), keyed by class: the
# classes are discovered (tests/audit/discover.py), so a new one fails ``test_every_rdp_mechanism_is_listed`` until
# it gets an entry here.
RDP_MECHANISMS = {
    GaussianPATE: [(lambda r: GaussianPATE(L, T, 9.0, r), _counts_too_high)],
    BinaryVoting: [(lambda r: BinaryVoting(L, T, 9.0, r), _counts_too_high)],
    DataDependentBinaryVoting: [
        (
            lambda r: DataDependentBinaryVoting(
                L, T, 9.0, order=8.0, test_sigma=4.0, test_delta=1e-7, rdp_budget=2.0, neighbors=r
            ),
            _counts_too_high,
        )
    ],
    TauPATE: [
        (
            lambda r: TauPATE(L, T, 9.0, 3.0, "l2", r),
            lambda m: m(np.zeros((2, T, L + 1), bool), np.random.default_rng(0)),
        )
    ],
    StableTopK: [
        (
            lambda r: StableTopK(L, T, "gumbel", eps_select=0.5, sigma_test=6.0, delta_t=1e-8, neighbors=r),
            _counts_too_high,
        ),
        (
            lambda r: StableTopK(
                L, T, "laplace", sigma_select=4.0, test="laplace", eps_test=0.3, delta_t=1e-8, neighbors=r
            ),
            lambda m: m(-COUNTS_TOO_HIGH, np.random.default_rng(0)),
        ),
    ],
    PrivateKNN: [
        (lambda r: PrivateKNN(L, 5, 0.1, 9.0, r), lambda m: m.release(np.zeros((2, L + 1)), np.random.default_rng(0)))
    ],
    GapSelection: [(lambda r: GapSelection(L, T, "gaussian", sigma=3.0, neighbors=r), _counts_too_high)],
    GapTest: [
        (lambda r: GapTest("gaussian", 1e-7, sigma=5.0, neighbors=r), lambda m: GapTest("gaussian", 2.0, sigma=5.0))
    ],
    DistanceTest: [
        (
            lambda r: DistanceTest(sigma=4.0, delta=1e-7, order=8.0, budget=2.0),
            lambda m: DistanceTest(sigma=4.0, delta=2.0, order=8.0, budget=2.0),
        )
    ],
    EMPeeling: [(lambda r: EMPeeling(k=3, pick_epsilon=0.2, neighbors=r), _negative_histograms)],
    PNFPeeling: [(lambda r: PNFPeeling(k=3, pick_epsilon=0.2, neighbors=r), _negative_histograms)],
    Joint: [(lambda r: Joint(k=3, epsilon=0.4, neighbors=r), _negative_histograms)],
    StableTopKFixed: [
        (
            lambda r: StableTopKFixed(
                k=3, select_epsilon=0.3, test_sigma=4.0, fill_rho=0.01, delta_t=1e-8, neighbors=r
            ),
            _negative_histograms,
        )
    ],
}
STATEMENT_MECHANISMS = [cls for cls in priced_classes() if hasattr(cls, "dp_statement")]

RDP = [
    pytest.param(relation, cls, index, id=f"{cls.__name__}{index}-{relation}")
    for relation in ("replace", "add_remove")
    for cls, entries in RDP_MECHANISMS.items()
    for index in range(len(entries))
]


def _mechanism(relation, cls, index):
    factory, bad_call = RDP_MECHANISMS[cls][index]
    return factory(relation), bad_call


def test_every_rdp_mechanism_is_listed():
    """Every discovered priced class is checked here: by RDP (``RDP_MECHANISMS``) or as an (epsilon, delta)
    statement (``test_the_statement_mechanisms_keep_the_contract``)."""
    assert set(priced_classes()) == set(RDP_MECHANISMS) | set(STATEMENT_MECHANISMS)


@pytest.mark.parametrize("relation, cls, index", RDP)
def test_every_rdp_mechanism_is_frozen(relation, cls, index):
    mechanism, _ = _mechanism(relation, cls, index)
    field = dataclasses.fields(mechanism)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(mechanism, field, getattr(mechanism, field))


@pytest.mark.parametrize("relation, cls, index", RDP)
def test_every_rdp_mechanisms_event_round_trips_to_the_same_price(relation, cls, index, tmp_path):
    mechanism, _ = _mechanism(relation, cls, index)
    event = event_from_dict(json.loads(json.dumps(event_to_dict(mechanism.dp_event), allow_nan=False)))
    assert event == mechanism.dp_event
    np.testing.assert_array_equal(price(event, DEFAULT_ORDERS).curve, mechanism.rdp(DEFAULT_ORDERS))
    ledger = Ledger().compose(mechanism, count=QUERIES)
    ledger.save(tmp_path / "ledger.json")
    assert Ledger.replay(Ledger.load(tmp_path / "ledger.json").history).get_epsilon(1e-3) == ledger.get_epsilon(1e-3)


@pytest.mark.slow  # a heavy computation
@pytest.mark.parametrize("relation, cls, index", RDP)
def test_calibrating_to_a_smaller_target_buys_more_noise_and_meets_it(relation, cls, index):
    """Per query (``calibrate_noise``), or, for a release priced as one batch, by its own ``calibrated`` (whose
    proposal meets the target over the batch); a test without noise to scale (DistanceTest) is calibrated by the
    release that owns it."""
    mechanism, _ = _mechanism(relation, cls, index)
    if not hasattr(mechanism, "scale_noise"):
        pytest.skip(f"{cls.__name__} is calibrated by the release that owns it")
    delta = 1e-3  # room for the PTR steps' delta_t over the queries
    multipliers = []
    for target in (0.5, 2.0, 8.0):
        if getattr(mechanism, "priced_per_query", True):
            calibrated, multiplier = calibrate_noise(mechanism, target, delta, QUERIES)
            count = QUERIES
        else:
            calibrated, multiplier = mechanism.calibrated(target, delta, QUERIES)
            count = 1
        assert Ledger().compose(calibrated, count=count).get_epsilon(delta, "rdp").epsilon <= target * (1 + 1e-9)
        multipliers.append(multiplier)
    assert multipliers[0] > multipliers[1] > multipliers[2]


@pytest.mark.parametrize("relation, cls, index", RDP)
def test_every_rdp_mechanism_refuses_bad_input(relation, cls, index):
    mechanism, bad_call = _mechanism(relation, cls, index)
    with pytest.raises(ValueError, match=r"votes|histograms|delta_t|counts|delta"):
        bad_call(mechanism)


@pytest.mark.parametrize("cls", STATEMENT_MECHANISMS, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_the_statement_mechanisms_keep_the_contract(cls, relation):
    """Limited Domain and Top Stable are stated as (epsilon, delta)-DP by their papers' theorems: frozen, their
    calibration meets the target and a smaller target buys a smaller per-query epsilon, bad input is refused."""
    built = [
        cls.for_budget(k=3, max_k=5, epsilon=target, delta=DELTA, queries=QUERIES, neighbors=relation)
        for target in (0.5, 2.0)
    ]
    for mechanism, target in zip(built, (0.5, 2.0)):
        assert mechanism.spent(QUERIES, DELTA) <= target * (1 + 1e-9)
        with pytest.raises(dataclasses.FrozenInstanceError):
            mechanism.k = 4
    assert built[0].epsilon < built[1].epsilon
    with pytest.raises(ValueError, match="histograms"):
        built[0](-np.ones((2, 30)), np.random.default_rng(0))


@pytest.mark.parametrize("cls", [*method_classes(), NoisyPrevalence], ids=lambda cls: cls.__name__)
def test_every_method_follows_the_protocol(cls):
    """Every method of pate.pipeline.methods (discovered) and the test suite's example: a concrete ``Method``, an
    immutable (frozen) dataclass built by ``from_config``, naming who contributes one unit of its input. Their
    events, released in end-to-end runs, are checked by tests/pipeline/methods and the pipeline tests."""
    assert issubclass(cls, Method) and not inspect.isabstract(cls)
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    assert cls.contributor in ("teacher", "record") and "run" in {f.name for f in dataclasses.fields(cls)}
    assert isinstance(inspect.getattr_static(cls, "from_config"), classmethod)
