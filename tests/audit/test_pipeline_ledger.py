"""The ledger of a release composes every query asked, answered or not: for every discovered aggregator, the
aggregate stage (``pate.aggregate.build_aggregate``) on synthetic votes, with queries left unanswered, replays to
the epsilon of ``asked`` queries (one release for an aggregator priced as one batch, ``priced_per_query=False``);
and a ledger that composes fewer queries than were asked is caught by the same check."""

import numpy as np
import pytest

from pate.aggregate import build_aggregate, read_aggregate, replay_privacy
from pate.aggregators import BinaryVoting, DataDependentBinaryVoting, GaussianPATE, StableTopK, TauPATE
from pate.artifacts import Artifact
from pate.privacy import Ledger
from pate.votes import pack_votes
from tests.audit.discover import aggregator_classes

L, T, Q, ASKED, DELTA = 3, 20, 40, 30, 1e-2  # DELTA above the asked queries' delta_t
INSTANCES = {
    "StableTopK": lambda: StableTopK(L, T, "gaussian", sigma_select=1.0, sigma_test=1.0, delta_t=1e-4),
    "GaussianPATE": lambda: GaussianPATE(L, T, 5.0),
    "TauPATE": lambda: TauPATE(L, T, 5.0, 2.0),
    "BinaryVoting": lambda: BinaryVoting(L, T, 5.0),
    "DataDependentBinaryVoting": lambda: DataDependentBinaryVoting(
        L, T, 2.0, order=8.0, test_sigma=1.0, test_delta=1e-7, rdp_budget=3.0
    ),
}


def _votes():
    """Per-teacher bits [Q, T, L] (half of the queries split, half near unanimity) and their counts."""
    rng = np.random.default_rng(0)
    rate = np.where(np.arange(Q)[:, None, None] % 2 == 0, 0.5, 0.95)
    bits = rng.random((Q, T, L)) < rate
    return {"counts": bits.sum(axis=1), "bits": pack_votes(bits)}


def _replayed_and_expected(agg, tmp_path):
    build_aggregate(tmp_path, agg, _votes(), L, ASKED, np.random.default_rng(0))
    replayed = replay_privacy(Artifact("aggregate", "audit", tmp_path), DELTA)
    count = ASKED if getattr(agg, "priced_per_query", True) else 1
    return replayed, Ledger().compose(agg, count=count), read_aggregate(Artifact("aggregate", "audit", tmp_path))


@pytest.mark.parametrize("cls", aggregator_classes(), ids=lambda cls: cls.__name__)
def test_the_ledger_composes_every_query_asked(cls, tmp_path):
    assert cls.__name__ in INSTANCES, f"{cls.__name__}: add a small instance to INSTANCES"
    agg = INSTANCES[cls.__name__]()
    replayed, expected, released = _replayed_and_expected(agg, tmp_path)
    assert not released["answered"][ASKED:].any()  # queries past the budget are not asked
    assert replayed["queries_asked"] == (ASKED if getattr(agg, "priced_per_query", True) else 1)
    priced = expected.get_epsilon(DELTA)
    assert replayed["epsilon_accountant"] == priced.accountant
    assert replayed["epsilon"] == pytest.approx(priced.epsilon)
    assert replayed["epsilon_rdp"] == pytest.approx(
        expected.get_epsilon(DELTA, "rdp").epsilon, rel=1e-12
    )  # the RDP bound beside it


def test_some_asked_queries_go_unanswered_in_this_check(tmp_path):
    """The check above is about unanswered queries too: StableTopK leaves some of the asked ones unanswered."""
    _, _, released = _replayed_and_expected(INSTANCES["StableTopK"](), tmp_path)
    assert 0 < released["answered"][:ASKED].sum() < ASKED


def test_a_ledger_that_composes_fewer_queries_than_asked_is_caught(tmp_path, monkeypatch):
    """The variant: the stage prices half of the queries asked (as if it priced only those answered), and the
    check fails on it."""

    def half_of_the_queries(aggregator, asked):
        return Ledger().compose(aggregator, count=max(1, asked // 2))

    monkeypatch.setattr("pate.aggregate.release_ledger", half_of_the_queries)
    replayed, expected, _ = _replayed_and_expected(INSTANCES["StableTopK"](), tmp_path)
    assert replayed["epsilon"] < expected.get_epsilon(DELTA).epsilon * (1 - 1e-6)
