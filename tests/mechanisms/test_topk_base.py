"""The top-k batch protocol: sorting with data-independent tie-breaking, recall, input checks."""

import numpy as np
import pytest

from pate.mechanisms.topk import TopKResult, check_histograms, sorted_order, top_k_recall


def test_sorted_order_breaks_ties_by_index_at_every_depth():
    histograms = np.array([[3, 5, 5, 1, 5], [0, 0, 0, 0, 0]])
    order, counts = sorted_order(histograms)
    assert order.tolist() == [[1, 2, 4, 0, 3], [0, 1, 2, 3, 4]]
    assert counts.tolist() == [[5, 5, 5, 3, 1], [0, 0, 0, 0, 0]]
    for depth in range(1, 6):
        assert sorted_order(histograms, depth)[0].tolist() == order[:, :depth].tolist()


def test_sorted_order_survives_counts_that_would_overflow_a_packed_key():
    huge = np.array([[2**62, 0, 1, 2**62 - 1]])
    assert sorted_order(huge)[0].tolist() == [[0, 3, 2, 1]]
    assert sorted_order(huge, 2)[0].tolist() == [[0, 3]]


def test_top_k_recall_counts_ties_and_empty_slots():
    histograms = np.array([[9, 7, 7, 1], [9, 7, 7, 1]])
    indices = np.array([[0, 2], [3, -1]])
    # k = 2: the 2nd count is 7, so bins 0, 1, 2 are all true top-2 bins.
    assert top_k_recall(histograms, indices, 2).tolist() == [1.0, 0.0]
    assert TopKResult(indices).returned.tolist() == [2, 1]


@pytest.mark.parametrize(
    "histograms, match",
    [
        (np.zeros((0, 4)), "batch >= 1"),
        (np.zeros((2, 1)), "bins >= 2"),
        (np.array([["a", "b"]]), "integer counts"),
        (np.array([[np.nan, 1.0]]), "non-integer"),
        (np.array([[-1, 1]]), ">= 0"),
    ],
)
def test_check_histograms_refuses_bad_input(histograms, match):
    with pytest.raises(ValueError, match=match):
        check_histograms(histograms)


def test_check_histograms_accepts_whole_floats_as_int64():
    assert check_histograms(np.array([[1.0, 2.0]])).dtype == np.int64
