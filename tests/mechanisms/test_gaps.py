"""Sorted padded counts, gaps, top-k sets; and the gap sensitivity checked on real neighbouring vote sets."""

import numpy as np
import pytest

from pate.mechanisms.gaps import count_gaps, sorted_padded_counts, top_k_labels
from pate.privacy import gap_sensitivity


def descending_gaps(counts, num_teachers):
    """Reference: q_j = h_(j) - h_(j+1) for j = 0..L on (T, sorted decreasing counts, 0), by plain Python."""
    padded = [num_teachers, *sorted(counts, reverse=True), 0]
    return [padded[j] - padded[j + 1] for j in range(len(counts) + 1)]


def test_padded_layout_and_gaps_on_a_hand_example():
    counts = np.array([[4, 9, 4, 7]])
    padded = sorted_padded_counts(counts, 10)
    np.testing.assert_array_equal(padded, [[0, 4, 4, 7, 9, 10]])
    gaps = count_gaps(padded)
    # increasing layout: column i is the gap at j = L - i; q_0 = 10 - 9, q_1 = 9 - 7, q_2 = 7 - 4, q_3 = 0, q_4 = 4 - 0
    np.testing.assert_array_equal(gaps[0, ::-1], [1, 2, 3, 0, 4])
    assert list(gaps[0, ::-1]) == descending_gaps([4, 9, 4, 7], 10)


def test_gaps_match_the_reference_on_random_histograms():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 21, size=(200, 6))
    gaps = count_gaps(sorted_padded_counts(counts, 20))
    for row, gap_row in zip(counts, gaps):
        assert list(gap_row[::-1]) == descending_gaps(list(row), 20)
    assert gaps.min() >= 0


def test_top_k_labels_is_the_top_k_set_when_the_gap_is_positive():
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 31, size=(500, 7))
    padded = sorted_padded_counts(counts, 30)
    gaps = count_gaps(padded)
    k = rng.integers(0, 8, size=500)
    labels = top_k_labels(counts, padded, k)
    checked = 0
    for row, gap_row, chosen, released in zip(counts, gaps, k, labels):
        if gap_row[7 - chosen] > 0:
            expected = np.zeros(7, dtype=bool)
            expected[np.argsort(-row, kind="stable")[:chosen]] = True
            np.testing.assert_array_equal(released, expected)
            checked += 1
    assert checked > 300


def test_k_zero_releases_nothing_even_when_a_count_equals_the_pad():
    counts = np.array([[5, 5, 0], [5, 2, 1]])
    padded = sorted_padded_counts(counts, 5)
    np.testing.assert_array_equal(top_k_labels(counts, padded, np.array([0, 0])), np.zeros((2, 3), dtype=bool))
    np.testing.assert_array_equal(top_k_labels(counts, padded, np.array([3, 3])), np.ones((2, 3), dtype=bool))


def neighbouring_histograms(relation, rng, num_teachers, num_labels, trials):
    """Pairs of vote histograms of real teacher votes differing in one teacher, for the relation."""
    for _ in range(trials):
        density = rng.random()
        votes = rng.random((num_teachers, num_labels)) < density
        teacher = rng.integers(num_teachers)
        if relation == "replace":
            other = votes.copy()
            other[teacher] = rng.random(num_labels) < rng.random()
        else:  # remove one teacher (the pair is symmetric, so this covers add as well)
            other = np.delete(votes, teacher, axis=0)
        yield votes.sum(axis=0), other.sum(axis=0)


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_padded_gaps_move_by_at_most_the_gap_sensitivity_and_reach_it(relation):
    """The sensitivity that pate.privacy claims, checked on the padded gaps this module computes."""
    rng = np.random.default_rng(3)
    num_teachers, num_labels = 6, 4
    largest = 0
    for counts, other in neighbouring_histograms(relation, rng, num_teachers, num_labels, trials=3000):
        gaps = count_gaps(sorted_padded_counts(counts[None], num_teachers))
        other_gaps = count_gaps(sorted_padded_counts(other[None], num_teachers))
        largest = max(largest, int(np.abs(gaps - other_gaps).max()))
    assert largest == gap_sensitivity(relation)
