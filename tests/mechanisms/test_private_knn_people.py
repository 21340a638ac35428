"""Private-kNN over people (``subsampled_knn_votes(..., person=...)``): one coin per person, one vote per sampled
person, with the labels of their record nearest the query. The neighbours are built by the person-level relation
on the input the mechanism takes: every row of one person removed."""

from __future__ import annotations

import numpy as np
import torch

from pate.mechanisms.private_knn import subsampled_knn_votes

NUM_LABELS, K = 6, 10


def _data(seed: int = 0):
    """80 people of 1 to 4 rows; person "p_near" has 6 rows almost on the first query's direction."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 5, 80)
    person = np.repeat([f"p{j:03d}" for j in range(80)], counts)
    features = rng.normal(size=(len(person), 16))
    labels = rng.integers(0, 2, (len(person), NUM_LABELS))
    queries = rng.normal(size=(5, 16))
    near = queries[0] + 0.01 * rng.normal(size=(6, 16))
    person = np.concatenate([person, ["p_near"] * 6])
    features = np.concatenate([features, near])
    labels = np.concatenate([labels, np.ones((6, NUM_LABELS), dtype=labels.dtype)])
    return torch.from_numpy(features), torch.from_numpy(labels), torch.from_numpy(queries), person


def _votes(features, labels, queries, person, rate: float = 1.0, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return subsampled_knn_votes(features, labels, queries, K, rate, generator, person=person)


def test_removing_one_person_moves_at_most_one_vote_and_the_record_form_moves_more():
    """Every person sampled (rate 1, so the two inputs see the same sample): removing all of "p_near"'s rows moves
    each query's vote vector by at most one neighbour's labels, sqrt(L) in L2, over people; over records (the
    weakening a person-level price must not rest on), the person's six rows were six of the ten neighbours."""
    features, labels, queries, person = _data()
    keep = person != "p_near"
    by_person = _votes(features, labels, queries, person) - _votes(features[keep], labels[keep], queries, person[keep])
    assert np.linalg.norm(by_person, axis=1).max() <= np.sqrt(NUM_LABELS)
    assert np.abs(by_person).sum(axis=1).max() > 0  # the person was a neighbour: the bound is met, not vacuous
    by_record = _votes(features, labels, queries, None) - _votes(features[keep], labels[keep], queries, None)
    assert np.linalg.norm(by_record[0]) > np.sqrt(NUM_LABELS)


def test_each_sampled_person_votes_once_with_their_nearest_record():
    features, labels, queries, person = _data(1)
    votes = _votes(features, labels, queries, person)
    assert (votes.max(axis=1) <= K).all() and (votes[0] == votes[0].max()).any()
    # the nearest record of each person, computed directly: the top K people by it vote with its labels
    directions = torch.nn.functional.normalize(features, dim=1)
    query = torch.nn.functional.normalize(queries[:1], dim=1)
    similarity = (query @ directions.T)[0].numpy()
    people = np.unique(person)
    best = np.array([np.flatnonzero(person == who)[np.argmax(similarity[person == who])] for who in people])
    top = best[np.argsort(-similarity[best], kind="stable")[:K]]
    assert (votes[0] == labels.numpy()[top].sum(axis=0)).all()


def test_one_row_per_person_in_row_order_is_the_record_form_coin_for_coin():
    """With one row per person and identifiers in row order, the people's coins are the records' coins: the two
    forms give the same votes at any rate."""
    features, labels, queries, _ = _data(2)
    person = np.array([f"r{i:05d}" for i in range(len(features))])
    for rate in (1.0, 0.3):
        assert (
            _votes(features, labels, queries, person, rate, 7) == _votes(features, labels, queries, None, rate, 7)
        ).all()
