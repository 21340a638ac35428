"""Private-kNN: the subsampled nearest-neighbour votes against a direct computation, one query's output
frequencies against a direct simulation (Monte Carlo), its accounting against dp-accounting's sampled-Gaussian
events, calibration, and bad input refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from dp_accounting import dp_event as dpa
from dp_accounting.pld import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.rdp import RdpAccountant

from pate.mechanisms import PrivateKNN, subsampled_knn_votes
from pate.mechanisms.poisson import poisson_subsample, realised_sampling_rate
from pate.mechanisms.private_knn import exact_similarities, grid_directions, nearest_mask
from pate.privacy import Ledger, calibrate_noise


def _data(n=40, d=6, num_labels=3, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(n, d)).astype(np.float32),
        (rng.random((n, num_labels)) < 0.5).astype(np.uint8),
        rng.normal(size=(7, d)).astype(np.float32),
    )


def _direct_votes(private, labels, query, k, keep):
    """One query, by hand: cosine similarity to the kept records, the k largest, their label counts."""
    kept = np.flatnonzero(keep)
    cos = (private[kept] @ query) / (np.linalg.norm(private[kept], axis=1) * np.linalg.norm(query))
    nearest = kept[np.argsort(-cos, kind="stable")[:k]]
    return labels[nearest].sum(axis=0)


def test_with_every_record_sampled_the_votes_are_the_k_nearest_records_labels():
    private, labels, queries = _data()
    votes = subsampled_knn_votes(
        torch.from_numpy(private),
        torch.from_numpy(labels),
        torch.from_numpy(queries),
        5,
        1.0,
        torch.Generator().manual_seed(0),
    )
    expected = [_direct_votes(private, labels, q, 5, np.ones(len(private), bool)) for q in queries]
    np.testing.assert_array_equal(votes, np.array(expected))


def test_a_subsample_smaller_than_k_votes_with_the_records_it_has():
    private, labels, queries = _data(n=6)
    votes = subsampled_knn_votes(
        torch.from_numpy(private),
        torch.from_numpy(labels),
        torch.from_numpy(queries),
        50,
        0.3,
        torch.Generator().manual_seed(3),
    )
    assert votes.max() <= 6 and votes.min() >= 0


def test_one_querys_release_frequencies_match_a_direct_simulation():
    """20,000 independent releases of one query (one batched call) against 20,000 by hand: each label's release
    frequency agrees within 5 standard errors of the difference of two binomial proportions."""
    private, labels, queries = _data(n=30)
    trials, k, rate, sigma = 20_000, 5, 0.4, 1.5
    mechanism = PrivateKNN(3, k, rate, sigma, "replace")
    repeated = torch.from_numpy(np.repeat(queries[:1], trials, axis=0))
    counts = subsampled_knn_votes(
        torch.from_numpy(private),
        torch.from_numpy(labels),
        repeated,
        k,
        rate,
        torch.Generator().manual_seed(1),
        chunk=4096,
    )
    ours = mechanism.release(counts, np.random.default_rng(2)).mean(axis=0)
    rng = np.random.default_rng(3)
    direct = np.zeros(3)
    for _ in range(trials):
        votes = _direct_votes(private, labels, queries[0], k, rng.random(len(private)) < rate)
        direct += votes + rng.normal(0.0, sigma, 3) > k / 2
    direct /= trials
    standard_error = np.sqrt(ours * (1 - ours) / trials + direct * (1 - direct) / trials)
    assert np.all(np.abs(ours - direct) <= 5 * standard_error + 1e-12)
    assert np.all((ours > 0.02) & (ours < 0.98))  # the test is informative: no label is always on or off


@pytest.mark.parametrize("rate,sigma", [(0.1, 20.0), (0.02, 8.0)])
def test_the_add_remove_epsilon_is_dp_accountings_sampled_gaussian(rate, sigma):
    orders = [float(a) for a in range(2, 257)]
    num_labels, queries = 40, 600
    mechanism = PrivateKNN(num_labels, 200, rate, sigma, "add_remove")
    ours = Ledger(orders=orders).compose(mechanism, count=queries).get_epsilon(1e-6, "rdp").epsilon
    reference = RdpAccountant(orders=orders)
    reference.compose(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(sigma / math.sqrt(num_labels))), queries)
    assert ours == pytest.approx(reference.get_epsilon(1e-6), rel=1e-9)


def test_the_replace_epsilon_is_within_ten_percent_above_dp_accountings_tight_pld():
    mechanism = PrivateKNN(40, 200, 0.1, 20.0, "replace")
    ours = Ledger().compose(mechanism, count=600).get_epsilon(1e-6, "rdp").epsilon
    pld = PLDAccountant(neighboring_relation=NeighborRel.REPLACE_ONE, value_discretization_interval=1e-3)
    pld.compose(dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(20.0 / math.sqrt(40))), 600)
    assert pld.get_epsilon(1e-6) <= ours <= 1.1 * pld.get_epsilon(1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_calibration_meets_the_target_with_the_least_noise(relation):
    calibrated, multiplier = calibrate_noise(PrivateKNN(40, 200, 0.1, 1.0, relation), 2.0, 1e-6, 600)
    assert calibrated.sigma == pytest.approx(multiplier)
    eps = Ledger().compose(calibrated, count=600).get_epsilon(1e-6, "rdp").epsilon
    assert 2.0 * (1 - 1e-3) <= eps <= 2.0
    less = Ledger().compose(calibrated.scale_noise(0.99), count=600).get_epsilon(1e-6, "rdp").epsilon
    assert less > 2.0


@pytest.mark.parametrize(
    "argument,kwargs",
    [
        ("k", {"k": 0}),
        ("sampling_rate", {"sampling_rate": 1.5}),
        ("sampling_rate", {"sampling_rate": 0.0}),
        ("sigma", {"sigma": -1.0}),
        ("num_labels", {"num_labels": 0}),
        ("neighbors", {"neighbors": "swap"}),
    ],
)
def test_bad_settings_are_refused_by_name(argument, kwargs):
    settings = {"num_labels": 3, "k": 5, "sampling_rate": 0.5, "sigma": 1.0, "neighbors": "replace", **kwargs}
    with pytest.raises(ValueError, match=argument):
        PrivateKNN(**settings)
    with pytest.raises(ValueError, match=r"counts must have shape \[Q, 3\]"):
        PrivateKNN(3, 5, 0.5, 1.0).release(np.zeros((2, 4)), np.random.default_rng(0))


@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_tied_similarities_choose_the_lowest_indexed_sampled_records(rate):
    """Every record has the same features, so every similarity ties: the k voters must be the k lowest-indexed
    records of the subsample (the total order the sensitivity argument needs). Record i's label is the one-hot
    e_i, so the votes show which records voted; the subsample is redrawn from the same seeded generator, which
    the function draws from once per chunk, [chunk, N] inclusions (``poisson_subsample``)."""
    n, k = 12, 4
    private, labels = torch.ones(n, 3), torch.eye(n, dtype=torch.uint8)
    queries = torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    votes = subsampled_knn_votes(private, labels, queries, k, rate, torch.Generator().manual_seed(5))
    sampled = poisson_subsample((2, n), rate, torch.Generator().manual_seed(5)).numpy()
    for row, keep in zip(votes, sampled):
        expected = np.zeros(n, np.int64)
        expected[np.flatnonzero(keep)[:k]] = 1
        np.testing.assert_array_equal(row, expected)


def test_nearest_mask_is_the_stable_descending_order_cut_at_k():
    """``nearest_mask`` against its definition on 300 random rows with many ties and unsampled records (-inf): the
    first k finite entries of a stable sort in decreasing order (lower index first among equal similarities)."""
    gen = torch.Generator().manual_seed(3)
    for _ in range(300):
        n = int(torch.randint(1, 30, (), generator=gen))
        similarity = torch.randint(0, 4, (5, n), generator=gen).float()
        similarity[torch.rand(5, n, generator=gen) < 0.3] = -torch.inf
        k = int(torch.randint(1, n + 1, (), generator=gen))
        top, index = similarity.sort(dim=1, descending=True, stable=True)
        expected = torch.zeros_like(similarity, dtype=torch.bool)
        keep = torch.isfinite(top[:, :k])
        expected.scatter_(1, index[:, :k], keep)
        assert torch.equal(nearest_mask(similarity, k), expected), (similarity, k)


@pytest.mark.parametrize("rate", [0.1, 0.3, 1e-9, 0.5, 1.0])
def test_a_query_is_priced_at_the_rate_the_sampler_realises(rate):
    step = PrivateKNN(3, 5, rate, 1.0).dp_event.event  # one query: one Poisson-sampled step
    assert step.sampling_probability == realised_sampling_rate(rate)


def test_a_record_added_moves_the_votes_by_at_most_sqrt_l_even_with_duplicated_neighbours():
    """add_remove's neighbour built by its definition: the private records with one appended (here the query
    itself, labels all 1). Rows 0, 4 and 5 hold one feature vector with different labels, so the k nearest hinge on
    a tie broken by index; a similarity that depended on N in its last bit (float32 matrix routines choose their
    blocking by N: the first implementation failed 110 of 500 such trials) would break the tie differently and move
    the votes by 2 sqrt(L). Single-query chunks, as an outside audit's counterexample."""
    num_labels, dim, k = 5, 384, 2
    generator = torch.Generator().manual_seed(3)
    for _ in range(200):
        query = torch.nn.functional.normalize(torch.randn(1, dim, generator=generator), dim=1)
        shared = torch.nn.functional.normalize(query + 0.5 * torch.randn(1, dim, generator=generator), dim=1)[0]
        private = -torch.randn(7, dim, generator=generator).abs() * torch.sign(query)  # far from the query
        private[0] = private[4] = private[5] = shared
        labels = torch.zeros(7, num_labels, dtype=torch.int64)
        labels[0] = 1
        votes = subsampled_knn_votes(private, labels, query, k, 1.0, torch.Generator().manual_seed(0), chunk=1)
        added = subsampled_knn_votes(
            torch.cat([private, query]),
            torch.cat([labels, torch.ones(1, num_labels, dtype=torch.int64)]),
            query,
            k,
            1.0,
            torch.Generator().manual_seed(0),
            chunk=1,
        )
        assert np.linalg.norm(added - votes) <= math.sqrt(num_labels) + 1e-9, (votes, added)


@pytest.mark.parametrize("num_private", [7, 65, 1000, 8193])
def test_each_similarity_is_a_function_of_its_query_and_record_alone(num_private):
    """The similarities of the first N records are the same to the bit with a record appended, for one query and
    for a chunk of 64, across the float64 blocks of 8,192 rows."""
    generator = torch.Generator().manual_seed(num_private)
    private = torch.randn(num_private + 1, 96, generator=generator) * 3
    queries = grid_directions(torch.randn(64, 96, generator=generator))
    for chunk in (queries[:1], queries):
        first = exact_similarities(chunk, grid_directions(private[:-1]))
        appended = exact_similarities(chunk, grid_directions(private))[:, :-1]
        assert torch.equal(first, appended)


def test_non_finite_features_are_refused_by_name():
    """A nan similarity would sit above every finite one in topk and move the k-th value: refused, not ranked."""
    private, labels, queries = _data()
    private[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"private: expected finite features; row 3 holds nan or inf"):
        subsampled_knn_votes(
            torch.from_numpy(private),
            torch.from_numpy(labels),
            torch.from_numpy(queries),
            3,
            1.0,
            torch.Generator().manual_seed(0),
        )


def test_a_column_major_table_gives_the_contiguous_tables_directions():
    """grid_directions works on a contiguous float64 copy: a row's rounding is the same whatever the strides."""
    rows = torch.randn(50, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert torch.equal(grid_directions(rows.T.contiguous().T), grid_directions(rows.contiguous()))
