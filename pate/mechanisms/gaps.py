"""Sorted vote counts, their gaps and the top-k set: the deterministic part of StableTopK.

Conventions (Zhu & Wang 2022, Section 2): h_(1) >= ... >= h_(L) are the counts of one query sorted in
decreasing order and the gap at j is q_j = h_(j) - h_(j+1).

Padding. The paper's Algorithm 1 chooses among the gaps j in [m-1] = {1, ..., L-1}, so it can never
return "no label" (k = 0) or "every label" (k = L), both ordinary answers in multi-label PATE. We pad
the sorted counts with two public constants, h_(0) = T (num_teachers, the largest possible count)
in front and h_(L+1) = 0 at the back, which adds the gaps q_0 = T - h_(1) and q_L = h_(L) - 0: there
are L + 1 candidate gaps, j = 0..L, and k = j labels are released.

Why the padding keeps the gap sensitivity s (``pate.privacy.gap_sensitivity``). A constant does not
move between neighbouring datasets. The inner gaps are unchanged functions of the order statistics.
The end gaps depend on one order statistic each: q_0 = T - h_(1) moves by |h'_(1) - h_(1)| <= 1 and
q_L = h_(L) moves by |h'_(L) - h_(L)| <= 1 (order statistics are 1-Lipschitz in the max-norm, and each
count moves by at most 1 under both relations), and 1 <= s under both relations. The mechanism is
defined on the sequence (T, h_(1), ..., h_(L), 0) with the constants at fixed positions, so the
argument needs no ordering between the constants and the counts (it also covers an add_remove
neighbour with T + 1 teachers and a count above T). For the inputs accepted here, 0 <= counts <= T,
sorting the constants together with the counts (as the code does) yields exactly that sequence, and
every gap is >= 0.

Released set. For k >= 1 the top-k set is {i : h_i >= h_(k)} whenever q_k > 0 (no tie across
position k), and StableTopK only releases a set (outside an event of probability <= delta_t) when
q_k > s > 0; so no argsort is needed. For k = 0 the released set is empty.
"""

from __future__ import annotations

import numpy as np

__all__ = ["count_gaps", "sorted_padded_counts", "top_k_labels"]


def sorted_padded_counts(counts: np.ndarray, num_teachers: int) -> np.ndarray:
    """The counts of each query sorted in INCREASING order and padded: ``[0, h_(L), ..., h_(1), T]``.

    ``counts`` int ``[Q, L]`` (already validated); returns ``a`` int32 ``[Q, L+2]``. Increasing order is
    what ``np.sort`` produces, so no reversal is made: in this layout h_(j) = a[:, L + 1 - j] for
    j = 0..L+1 (h_(0) = T, h_(L+1) = 0).
    """
    num_queries, num_labels = counts.shape
    padded = np.empty((num_queries, num_labels + 2), dtype=np.int32)
    padded[:, 0] = 0
    padded[:, -1] = num_teachers
    padded[:, 1:-1] = counts
    # Sorting the whole row in place is as fast as sorting the middle and avoids a temporary; the pads
    # stay at the ends because 0 <= counts <= T.
    padded.sort(axis=1)
    return padded


def count_gaps(padded: np.ndarray) -> np.ndarray:
    """Gaps of the padded sorted counts in the increasing layout: ``d[:, i] = q_(L - i)``, shape ``[Q, L+1]``.

    ``d[:, i] = a[:, i+1] - a[:, i] = h_(L-i) - h_(L-i+1)``, the gap at j = L - i (so column 0 is
    q_L = h_(L) - 0 and the last column is q_0 = T - h_(1)).
    """
    return padded[:, 1:] - padded[:, :-1]


def top_k_labels(counts: np.ndarray, padded: np.ndarray, k: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """bool ``[Q, L]``: labels with count >= h_(k), and none where k = 0 (the top-k set when q_k > 0).

    ``k`` int ``[Q]`` in 0..L; ``padded`` from ``sorted_padded_counts``; ``out`` optional bool ``[Q, L]``.
    """
    num_queries, num_labels = counts.shape
    threshold = padded[np.arange(num_queries), num_labels + 1 - k]
    # k = 0 would read the pad T; a count can equal T, so use a threshold no count reaches.
    threshold = np.where(k == 0, np.int32(np.iinfo(np.int32).max), threshold)
    return np.greater_equal(counts, threshold[:, None], out=out)
