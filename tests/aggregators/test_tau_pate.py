"""TauPATE: clipping by hand and as a norm property, frequencies against Phi((c_clipped - T/2) / sigma),
agreement with GaussianPATE when nothing is clipped, packed = unpacked, RDP closed forms, argument checks.
Monte Carlo tolerance: 5 binomial standard errors; seeds fixed."""

import numpy as np
import pytest
import torch
from scipy import stats

from pate.aggregators import GaussianPATE, TauPATE
from pate.aggregators.tau_pate import clipped_counts
from pate.votes import PackedVotes, pack_votes
from tests.mechanisms import closed_forms as cf

# One query, 3 teachers, 5 labels: teachers vote for 0, 2 and 4 labels.
HAND_VOTES = np.array([[[0, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 1, 1]]], dtype=bool)


@pytest.mark.parametrize("norm, third_weight", [("l1", 0.5), ("l2", np.sqrt(0.5))])
def test_clipping_by_hand(norm, third_weight):
    # tau = 2: the teacher with 4 votes is scaled to |v|_1 = 2 (l1) or |v|_2 = sqrt(2) (l2); the others are kept.
    expected = np.array([[1 + third_weight, 1, third_weight, third_weight, third_weight]])
    np.testing.assert_allclose(clipped_counts(HAND_VOTES, 2.0, norm), expected)
    np.testing.assert_allclose(clipped_counts(PackedVotes.from_bits(HAND_VOTES), 2.0, norm), expected)


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_each_clipped_vote_has_norm_at_most_tau(norm):
    rng = np.random.default_rng(0)
    votes = rng.random((30, 1, 12)) < rng.random((30, 1, 1))  # one teacher per query: its clipped vector
    clipped = clipped_counts(votes, 3.5, norm)
    norms = np.abs(clipped).sum(axis=1) if norm == "l1" else np.sqrt((clipped**2).sum(axis=1))
    bound = 3.5 if norm == "l1" else np.sqrt(3.5)
    assert np.all(norms <= bound + 1e-12)
    within = votes.sum(axis=(1, 2)) <= 3.5  # for bits |v|_2 <= sqrt(tau) iff |v|_1 <= tau
    np.testing.assert_array_equal(clipped[within], votes[within, 0])  # unclipped when within the budget


def test_label_frequencies_match_the_gaussian_threshold_on_clipped_counts():
    draws, sigma = 40_000, 0.8
    votes = np.repeat(HAND_VOTES, draws, axis=0)
    res = TauPATE(5, 3, sigma, 2.0, "l1")(votes, np.random.default_rng(1))
    clipped = np.array([1.5, 1, 0.5, 0.5, 0.5])
    expected = stats.norm.sf((1.5 - clipped) / sigma)  # threshold T / 2 = 1.5
    tolerance = 5 * np.sqrt(expected * (1 - expected) / draws)
    assert np.all(np.abs(res.labels.mean(axis=0) - expected) <= tolerance)
    np.testing.assert_array_equal(res.k, res.labels.sum(axis=1))
    assert res.answered.all()


def test_without_clipping_it_is_gaussian_pate_draw_for_draw():
    rng = np.random.default_rng(2)
    votes = rng.random((200, 25, 8)) < 0.3
    for tau_pate in (TauPATE(8, 25, 3.0, 8.0, "l1"), TauPATE(8, 25, 3.0, 8.0, "l2")):  # tau = L clips nothing
        np.testing.assert_array_equal(
            tau_pate(votes, np.random.default_rng(3)).labels,
            GaussianPATE(8, 25, 3.0)(votes.sum(axis=1), np.random.default_rng(3)).labels,
        )
    np.testing.assert_allclose(TauPATE(8, 25, 3.0, 8.0, "l1").rdp(cf.ORDERS), GaussianPATE(8, 25, 3.0).rdp(cf.ORDERS))


def test_packed_bits_torch_and_chunking_agree(monkeypatch):
    rng = np.random.default_rng(4)
    votes = rng.random((64, 20, 13)) < 0.6
    agg = TauPATE(13, 20, 2.0, 4.0, "l2")
    reference = agg(votes, np.random.default_rng(5)).labels
    for other in (PackedVotes(pack_votes(votes), 13), torch.from_numpy(votes), votes.astype(np.uint8)):
        np.testing.assert_array_equal(agg(other, np.random.default_rng(5)).labels, reference)
    monkeypatch.setattr("pate.aggregators.tau_pate._CHUNK_VOTES", 20 * 13 * 5)  # 5 queries per chunk
    np.testing.assert_array_equal(agg(PackedVotes.from_bits(votes), np.random.default_rng(5)).labels, reference)


@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("relation, squared_sensitivity", [("add_remove", 10.0), ("replace", 12.0)])
def test_rdp_closed_forms(norm, relation, squared_sensitivity):
    # L = 40, tau = 6: max(sqrt(tau), sqrt(L) / 2) under add_remove (the threshold T / 2 moves with the
    # ensemble), min(sqrt(2 tau), sqrt(L)) under replace, for both norms.
    agg = TauPATE(40, 800, 190.0, 6.0, norm, relation)
    np.testing.assert_allclose(agg.rdp(cf.ORDERS), cf.ORDERS * squared_sensitivity / (2 * 190.0**2), rtol=1e-12)
    assert agg.delta_per_query == 0.0 and relation in agg.name and "tau=6" in agg.name
    assert agg.scale_noise(2.0).sigma == 380.0 and agg.noise_parameters() == {"sigma": 190.0}


@pytest.mark.parametrize(
    "args, match",
    [
        ((5, 3, 1.0, 0.5), r"tau must be a number in \[1, num_labels=5\], got 0.5"),
        ((5, 3, 1.0, 6), r"tau must be a number in \[1, num_labels=5\], got 6"),
        ((5, 3, 1.0, 2.0, "linf"), r"norm must be one of \('l1', 'l2'\), got 'linf'"),
        ((5, 3, 0.0, 2.0), r"sigma must be a finite number > 0, got 0.0"),
        ((5, 3, 1.0, 2.0, "l1", "swap"), r"neighbors must be one of .*got 'swap'"),
        ((0, 3, 1.0, 1.0), r"num_labels must be an integer >= 1, got 0"),
    ],
)
def test_arguments_are_checked(args, match):
    with pytest.raises(ValueError, match=match):
        TauPATE(*args)


@pytest.mark.parametrize(
    "votes, match",
    [
        (np.array([[1, 2, 0, 0, 3]]), r"votes of shape \(1, 5\) look like vote counts .* needs the per-teacher votes"),
        (
            np.zeros((2, 4, 5), dtype=bool),
            r"votes must be per-teacher votes \[queries, num_teachers=3, num_labels=5\], got shape \(2, 4, 5\)",
        ),
        (np.full((2, 3, 5), 2), r"votes must hold only 0/1 votes, got value 2"),
        (PackedVotes.from_bits(np.zeros((2, 4, 5), dtype=bool)), r"got PackedVotes of shape \(2, 4, 5\)"),
    ],
)
def test_counts_and_bad_votes_are_refused(votes, match):
    with pytest.raises(ValueError, match=match):
        TauPATE(5, 3, 1.0, 2.0)(votes, np.random.default_rng(0))


def _label_on_probabilities(votes: np.ndarray, tau: float, norm: str, sigma: float) -> np.ndarray:
    """P(label on) per query and label, written from the mechanism's definition (module docstring): clipped count
    plus N(0, sigma^2) above T / 2, T the ensemble's size."""
    return stats.norm.sf((clipped_counts(votes, tau, norm) - votes.shape[1] / 2.0) / sigma)


def _bernoulli_renyi(order: float, p: np.ndarray, q: np.ndarray) -> float:
    """D_order of two products of independent Bernoullis: the sum over coordinates."""
    return float(np.sum(np.log(p**order * q ** (1 - order) + (1 - p) ** order * (1 - q) ** (1 - order))) / (order - 1))


@pytest.mark.parametrize("tau,norm", [(1.0, "l1"), (4.0, "l2"), (10.0, "l1")])
@pytest.mark.parametrize("added_vote", ["nothing", "everything"])
def test_add_remove_prices_a_teacher_added_to_the_ensemble(tau, norm, added_vote):
    # the neighbour as add_remove defines it: the same ensemble with one teacher more, run by the aggregator built
    # for that ensemble (its threshold T / 2 follows T); an outside audit found the divergence 6 times the price
    # at L = 40, tau = 1 when the price was the clipped sum's sqrt(tau) alone
    num_labels, num_teachers, sigma = 40, 10, 50.0
    rng = np.random.default_rng(0)
    votes = rng.random((1, num_teachers, num_labels)) < 0.3
    added = np.full((1, 1, num_labels), added_vote == "everything")
    neighbour = np.concatenate([votes, added], axis=1)
    p = _label_on_probabilities(votes, tau, norm, sigma)
    q = _label_on_probabilities(neighbour, tau, norm, sigma)
    for aggregator_teachers in (num_teachers, num_teachers + 1):  # either side's aggregator states the same price
        priced = TauPATE(num_labels, aggregator_teachers, sigma, tau, norm, "add_remove").rdp(cf.ORDERS)
        for order, price in zip(cf.ORDERS, priced):
            assert max(_bernoulli_renyi(order, p, q), _bernoulli_renyi(order, q, p)) <= price
