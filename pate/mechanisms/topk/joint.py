"""JOINT: one exponential mechanism over all length-k sequences of distinct bins.

Source: Gillenwater, Joseph, Munoz Medina & Ribero 2022, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML), Section 3 (Theorem 1: privacy; Theorem 2 and its counting lemma,
Lemma 3.7 in the authors' code, for the sampler). Notation: c_0 >= c_1 >= ... the counts sorted in
decreasing order (positions 0-indexed here), h_j the count of bin j.

Mechanism. Over the outputs s = (s_0, ..., s_{k-1}) of k distinct bins, with utility

    u(s) = -max_{0 <= i < k} (c_i - h_{s_i}),

    Pr[s] proportional to exp(eta u(s)),   eta = epsilon / (2 Delta_u),   Delta_u = ``gap_sensitivity(neighbors)``.

Sensitivity (the gap argument of ``pate.privacy.sensitivity.gap_sensitivity``). Order statistics are
monotone and 1-Lipschitz in the max-norm. add_remove: h <= h' <= h + 1 entrywise (or the reverse), so
c_i and h_{s_i} both move by an amount in [0, 1] in the same direction and c_i - h_{s_i} by at most 1;
replace: ||h' - h||_inf <= 1, each moves in [-1, 1] independently, the difference by at most 2. A max of
functions that each move by at most Delta moves by at most Delta, so |u(s) - u'(s)| <= Delta_u.

Privacy. For neighbours the log-ratio is log Pr[s] / Pr'[s] = eta (u(s) - u'(s)) - log(Z / Z'), so its
range over s is at most eta 2 Delta_u = epsilon: JOINT is epsilon-bounded-range (Durfee & Rogers 2019,
Definition 4.2), hence epsilon-DP (Theorem 1 of the paper) and its RDP curve is
``exponential_mechanism_rdp(orders, epsilon)``; delta_per_query = 0.

Exact sampling in O(k V log(k V)) per histogram after the O(d log d) sort, V = the number of distinct
counts. The d sorted positions p = 0..d-1 (ties by the smaller bin index, ``base.sorted_order``) fall
into blocks b = 0..V-1 of equal value v_0 > v_1 > ..., block b covering [C_{b-1}, C_b) (C_{-1} = 0).
Entry (i, b), i < k, stands for "position i holds a bin of block b", cost(i, b) = c_i - v_b. Entries are
totally ordered by the key (cost ascending, i descending, b ascending) -- the paper's tie-breaking,
which the authors' code implements as the perturbation (d (k - i - 1) + j + 1) / (2 d k). Then:

(1) within a row i the cost c_i - v_b increases with b, so the entries of a row come in block order and
    the blocks of row i' that precede an entry t form a prefix: sorted positions [0, n_{i'}(t));
(2) prefixes are nested, n_0(t) <= n_1(t) <= ...: if (i', b') < t and i'' > i', then
    cost(i'', b') <= cost(i', b') <= cost(t), and on equal costs i'' > i' >= i_t, so (i'', b') < t;
(3) for t = (i, b): rows i' < i do not hold block b before t (cost(i', b) >= cost(t), equality with
    i' < i sorts after t), rows i' > i do (cost(i', b) <= cost(t), equality with i' > i sorts before).

Every sequence has a binding entry, the largest of its k entries (i, block of s_i), and
u(s) = -cost(binding entry). Count the sequences bound by t = (i, b): s_i in block b, every other s_{i'}
in row i''s prefix before t. Choose positions in increasing order. For i' < i the i' bins already placed
lie in prefixes of smaller rows, inside P_{i'} by (2): n_{i'} - i' choices. Position i: any of the
|block b| bins, none used, since all earlier bins lie in prefixes that exclude block b by (3). For
i' > i all i' placed bins, s_i's included (3), lie in P_{i'}: n_{i'} - i' choices. Hence

    m(t) = |block b| prod_{i' != i} (n_{i'}(t) - i')   if every factor is > 0, else 0,

and the entries partition the k-sequences, so Pr[binding entry = t] is proportional to
m(t) exp(-eta cost(t)). The sampler walks the sorted entries once: passing (i, b) moves row i's prefix
from C_{b-1} to C_b, so a cumulative sum of the increments of sum_{i'} log(n_{i'} - i') over the rows
with a positive factor, and a count of the rows whose factor is still <= 0, give log m(t) for every t
before it is passed (t is valid iff no row other than its own has a factor <= 0). t is drawn by
Gumbel-max on log m(t) - eta cost(t); the sequence is then uniform given t: s_i uniform in block b,
every other position, in increasing i', uniform among the unused positions of its prefix. A swap
array of the sorted positions does that: at step j swap slot j with a slot r_j drawn uniformly in
[j, n_j), or with the chosen position of s_i at step j = i; slot r_j's value is s_j. Every swap up to
step j touches slots < n_j (nestedness; s_i's position lies in block b inside P_{j} for j > i), so slots
[j, n_j) hold exactly the unused positions of P_j, and the chosen position of s_i (>= C_{b-1} >= n_{i-1}
>= i) still holds itself at step i. Only the k slots written are stored, so a draw costs O(k^2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pate.mechanisms.noise import sample_noise
from pate.mechanisms.topk.base import PureEpsilonCost, TopKResult, check_histograms, check_k, sorted_order
from pate.privacy import checks
from pate.privacy.events import BoundedRangeEvent
from pate.privacy.sensitivity import NeighboringRelation, check_relation, gap_sensitivity

__all__ = ["Joint"]

# Histograms per chunk: at most this many entries k x V (<= k d) in flight, which bounds the ~10
# temporaries per entry (and the d sorted positions per histogram) to a few hundred MB.
_ENTRY_BUDGET = 4_000_000
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Joint(PureEpsilonCost):
    """JOINT (module docstring): an epsilon-bounded-range exponential mechanism over k-sequences.

    Arguments: ``k`` (sequence length), ``epsilon`` (its DP / bounded-range parameter), ``neighbors``.
    Returns exactly k distinct indices per histogram, in sequence order (position 0 = estimated top bin).
    """

    k: int
    epsilon: float
    neighbors: NeighboringRelation | str = "add_remove"

    def __post_init__(self):
        checks.set_fields(
            self,
            k=check_k(self.k),
            epsilon=checks.positive("epsilon", self.epsilon),
            neighbors=check_relation(self.neighbors),
        )

    @classmethod
    def for_budget(
        cls,
        k: int,
        epsilon: float,
        delta: float,
        queries: int = 1,
        neighbors: str = "add_remove",
        accountant: str = "pure",
    ) -> "Joint":
        """JOINT within (epsilon, delta)-DP over ``queries`` queries.

        ``accountant="pure"`` (the paper's setting): epsilon / queries per query, basic composition, so the
        run is even (epsilon, 0)-DP. ``accountant="rdp"``: the largest epsilon whose ``queries``
        bounded-range curves the RDP ledger converts to (epsilon, delta).
        """
        queries = checks.positive_int("queries", queries)
        start = cls(k=k, epsilon=checks.positive("epsilon", epsilon) / queries, neighbors=neighbors)
        return start._calibrated(accountant, "pure", epsilon, delta, queries)

    @property
    def name(self) -> str:
        return f"JOINT(k={self.k}, eps={self.epsilon:.4g}, neighbors={self.neighbors})"

    @property
    def pure_epsilon(self) -> float:
        """epsilon: JOINT is epsilon-DP per query."""
        return self.epsilon

    @property
    def eta(self) -> float:
        """epsilon / (2 Delta_u), Delta_u = ``gap_sensitivity(neighbors)`` (module docstring)."""
        return self.epsilon / (2.0 * gap_sensitivity(self.neighbors))

    @property
    def dp_event(self) -> BoundedRangeEvent:
        """JOINT is epsilon-bounded-range (module docstring)."""
        return BoundedRangeEvent(self.epsilon)

    def __call__(self, histograms, rng: np.random.Generator) -> TopKResult:
        counts = check_histograms(histograms, k=self.k)
        num_bins = counts.shape[1]
        indices = np.empty((counts.shape[0], self.k), dtype=np.int64)
        rows = max(1, _ENTRY_BUDGET // (self.k * num_bins))
        for start in range(0, counts.shape[0], rows):
            indices[start : start + rows] = _sample_chunk(counts[start : start + rows], self.k, self.eta, rng)
        return TopKResult(indices)


def _blocks(sorted_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blocks of equal value in counts sorted decreasingly, per row, padded to the chunk's largest V.

    Returns (values, starts, ends) int64 ``[R, V]``: block b covers sorted positions [starts, ends).
    Padded blocks are empty (starts = ends = d) and repeat the last real value.
    """
    rows, num_bins = sorted_counts.shape
    is_last = sorted_counts[:, 1:] != sorted_counts[:, :-1]  # position p ends its block
    block_of = np.zeros(sorted_counts.shape, dtype=np.int64)
    np.cumsum(is_last, axis=1, out=block_of[:, 1:])
    ends = np.full((rows, int(block_of[:, -1].max()) + 1), num_bins, dtype=np.int64)
    row, position = np.nonzero(is_last)
    ends[row, block_of[row, position]] = position + 1
    starts = np.zeros_like(ends)
    starts[:, 1:] = ends[:, :-1]
    values = np.take_along_axis(sorted_counts, ends - 1, axis=1)
    return values, starts, ends


def _entry_order(cost: np.ndarray) -> np.ndarray:
    """Per row, the entries (i, b) of ``cost`` ``[R, k, V]`` sorted by (cost asc, i desc, b asc), flat index i V + b.

    One int64 key when (cost span) k V fits in int64, else a three-key lexsort (same order).
    """
    rows, k, width = cost.shape
    low, span = int(cost.min()), int(cost.max()) - int(cost.min()) + 1
    reversed_row = (k - 1 - np.arange(k))[:, None]
    block = np.arange(width)
    if span * k * width <= _INT64_MAX:
        key = ((cost - low) * k + reversed_row) * width + block
        return np.argsort(key.reshape(rows, -1), axis=1)
    shape = cost.shape
    keys = (np.broadcast_to(block, shape), np.broadcast_to(reversed_row, shape), cost)
    return np.lexsort(tuple(key.reshape(rows, -1) for key in keys), axis=-1)


def _log_positive(values: np.ndarray) -> np.ndarray:
    """log(x) for the integer factors x >= 1, 0 for x <= 0 (rows whose factor is <= 0 are counted apart)."""
    return np.log(np.maximum(values, 1))


def _sample_chunk(counts: np.ndarray, k: int, eta: float, rng: np.random.Generator) -> np.ndarray:
    """JOINT for a chunk ``[R, d]`` of validated histograms: bin indices int64 ``[R, k]`` (module docstring)."""
    order, sorted_counts = sorted_order(counts)
    values, starts, ends = _blocks(sorted_counts)
    rows, width = values.shape
    cost = sorted_counts[:, :k, None] - values[:, None, :]  # [R, k, V], c_i - v_b

    # Walk the entries in order; row i's prefix grows from starts[b] to ends[b] when (i, b) is passed.
    entry = _entry_order(cost)
    row_of, block_of = entry // width, entry % width
    before = np.take_along_axis(starts, block_of, axis=1) - row_of  # factor n_i - i of the entry's own row
    after = np.take_along_axis(ends, block_of, axis=1) - row_of
    log_before = _log_positive(before)
    log_step = _log_positive(after) - log_before
    bad_step = (after <= 0).astype(np.int64) - (before <= 0)
    log_sum = np.cumsum(log_step, axis=1) - log_step  # sum of log(n_i - i) over rows with n_i > i, before t
    bad = k + np.cumsum(bad_step, axis=1) - bad_step  # rows with n_i <= i, before t (all k at the start)
    size = after - before
    valid = (bad - (before <= 0) == 0) & (size > 0)
    log_count = _log_positive(size) + log_sum - log_before
    score = np.where(valid, log_count - eta * np.take_along_axis(cost.reshape(rows, -1), entry, axis=1), -np.inf)
    score += sample_noise("gumbel", 1.0, score.shape, rng)  # Gumbel-max: a draw from softmax(score)
    pick = score.argmax(axis=1)

    # The binding entry t = (i, b) and every row's prefix n_{i'}(t) = C_{beta - 1}, beta = its blocks before t.
    # Padded blocks repeat the last value, so they sort right after their row's last real block and end at d
    # like it: counting them leaves C_{beta - 1} unchanged.
    chosen = entry[np.arange(rows), pick]
    chosen_row, chosen_block = chosen // width, chosen % width
    rank = np.empty_like(entry)
    np.put_along_axis(rank, entry, np.broadcast_to(np.arange(entry.shape[1]), entry.shape), axis=1)
    passed = (rank.reshape(rows, k, width) < pick[:, None, None]).sum(axis=2)
    prefix = np.take_along_axis(np.concatenate([np.zeros((rows, 1), np.int64), ends], axis=1), passed, axis=1)

    take = np.arange(rows)
    chosen_position = rng.integers(starts[take, chosen_block], ends[take, chosen_block])
    positions = _swap_sample(prefix, chosen_row, chosen_position, rng)
    return np.take_along_axis(order, positions, axis=1)


def _swap_sample(prefix: np.ndarray, own_row: np.ndarray, own_position: np.ndarray, rng) -> np.ndarray:
    """Sorted positions ``[R, k]``: own_position at own_row, every other j uniform among the unused of [0, prefix_j).

    The swap trick of the module docstring on a virtual identity array, storing only the slots written.
    """
    rows, k = prefix.shape
    positions = np.empty((rows, k), dtype=np.int64)
    written_slots = np.empty((rows, k), dtype=np.int64)
    written_values = np.empty((rows, k), dtype=np.int64)
    for j in range(k):
        own = own_row == j
        drawn = rng.integers(j, np.where(own, j + 1, prefix[:, j]))
        slot = np.where(own, own_position, drawn)
        positions[:, j] = _value_at(slot, written_slots[:, :j], written_values[:, :j])
        # Slot j is never read again (later steps read slots > j); its old value moves to ``slot``.
        written_slots[:, j] = slot
        written_values[:, j] = _value_at(np.full(rows, j), written_slots[:, :j], written_values[:, :j])
    return positions


def _value_at(slot: np.ndarray, written_slots: np.ndarray, written_values: np.ndarray) -> np.ndarray:
    """Value of ``slot`` per row in the swap array: the latest write to it, or the slot itself if never written."""
    hits = written_slots == slot[:, None]
    if hits.shape[1] == 0:
        return slot
    latest = hits.shape[1] - 1 - hits[:, ::-1].argmax(axis=1)
    return np.where(hits.any(axis=1), np.take_along_axis(written_values, latest[:, None], axis=1)[:, 0], slot)
