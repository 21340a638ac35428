"""Limited Domain and Top Stable: exact distributions on tiny inputs, structural properties, statements."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from pate.mechanisms.topk.base import TopKResult, sorted_order
from pate.mechanisms.topk.limited_domain import LimitedDomain, PayWhatYouGet
from pate.mechanisms.topk.top_stable import TopStable, delta_max, query_delta

DRAWS = 40_000


def chi_square_p(observed: np.ndarray, expected_probabilities: np.ndarray) -> float:
    return stats.chisquare(observed, expected_probabilities * observed.sum()).pvalue


def within_standard_errors(frequency: float, probability: float, draws: int, errors: float = 5.0) -> bool:
    return abs(frequency - probability) <= errors * math.sqrt(probability * (1 - probability) / draws)


def peeling_probability(scores, sequence, rate: float) -> float:
    """Exact probability that peeling with Pr proportional to exp(rate score) picks ``sequence``."""
    scores = np.asarray(scores, dtype=float)
    remaining = list(range(len(scores)))
    probability = 1.0
    for item in sequence:
        weights = np.exp(rate * (scores[remaining] - scores[remaining].max()))
        probability *= weights[remaining.index(item)] / weights.sum()
        remaining.remove(item)
    return probability


def codes(indices: np.ndarray, num_bins: int) -> np.ndarray:
    """One integer per row of ``indices`` (entries in -1..num_bins-1)."""
    return ((indices + 1) * (num_bins + 1) ** np.arange(indices.shape[1])).sum(axis=1)


# ------------------------------------------------------------------------------------------ Limited Domain
def test_ld_shuts_out_a_bin_no_more_often_than_its_delta():
    """The outside audit's pair (scaled down): h has kbar empty bins, then kbar bins of 1; its add_remove neighbour
    h' adds one user to every empty bin, so h' ranks bins 0..kbar-1 first (ties by index) and never releases a bin
    >= kbar. Such a bin beats bot on h only by the threshold's delta: Pr_h[a bin >= kbar released] <= delta (the
    statement's delta is 2 delta + delta'). With the Delta = 1 threshold the project once accepted it was about
    kbar times delta. Tolerance: 200,000 runs, the frequency ~ 0.01 has std 2.2e-4; bound 1.1 delta is 4.5 std."""
    kbar, delta = 10, 1e-2
    mechanism = LimitedDomain(1, kbar, 1.0, delta)
    h = np.array([0] * kbar + [1] * kbar)
    released = mechanism(np.repeat(h[None], 200_000, axis=0), np.random.default_rng(0)).indices[:, 0]
    assert not np.any(
        mechanism(np.repeat((h + (np.arange(2 * kbar) < kbar))[None], 20_000, axis=0), np.random.default_rng(1)).indices
        >= kbar
    )
    assert np.mean(released >= kbar) <= 1.1 * delta


def test_ld_threshold_offset_hand_computed():
    # d = 5, kbar = 2, eps = 0.5, delta = 1e-3: min{kbar = 2, d - kbar = 3} = 2.
    assert LimitedDomain(1, 2, 0.5, 1e-3).threshold_offset(5) == pytest.approx(1 + math.log(2 / 1e-3) / 0.5)
    assert LimitedDomain(1, 4, 0.5, 1e-3).threshold_offset(5) == pytest.approx(1 + math.log(1 / 1e-3) / 0.5)


def test_ld_single_pick_is_the_exponential_mechanism_over_the_limited_domain_and_bot():
    # k = 1, kbar = 2, d = 3: Pr[j] = exp(eps h_j) / (exp(eps h_(1)) + exp(eps h_(2)) + exp(eps h_bot)).
    counts, epsilon, delta = np.array([3, 5, 1]), 1.0, 0.5
    mechanism = LimitedDomain(1, 2, epsilon, delta)
    h_bot = 1 + 1 + math.log(min(3, 2, 1) / delta) / epsilon
    weights = np.exp(epsilon * np.array([5.0, 3.0, h_bot]))
    expected = weights / weights.sum()  # bin 1, bin 0, nothing
    released = mechanism(np.tile(counts, (DRAWS, 1)), np.random.default_rng(3)).indices[:, 0]
    for frequency, probability in zip(
        [(released == 1).mean(), (released == 0).mean(), (released == -1).mean()], expected
    ):
        assert within_standard_errors(frequency, probability, DRAWS)
    assert not np.any(released == 2)


def test_ld_two_picks_follow_peeling_with_bot_as_a_stop():
    # k = kbar = 2, d = 4: peeling two rounds over {h_(1), h_(2), h_bot}; bot ends the output.
    counts, epsilon, delta = np.array([0, 4, 1, 3]), 1.0, 0.2
    mechanism = LimitedDomain(2, 2, epsilon, delta)
    scores = [4.0, 3.0, 1 + mechanism.threshold_offset(4)]  # bins 1, 3 and bot (h_(3) = 1)
    names = [1, 3, -1]
    expected = {}
    for first, second in itertools.permutations(range(3), 2):
        output = (-1, -1) if first == 2 else (names[first], -1) if second == 2 else (names[first], names[second])
        expected[output] = expected.get(output, 0.0) + peeling_probability(scores, (first, second), epsilon)
    released = mechanism(np.tile(counts, (DRAWS, 1)), np.random.default_rng(4)).indices
    outputs = sorted(expected)
    observed = np.array([np.all(released == output, axis=1).sum() for output in outputs])
    assert observed.sum() == DRAWS
    assert chi_square_p(observed, np.array([expected[output] for output in outputs])) > 1e-3


def test_ld_releases_only_the_true_top_kbar_distinct_and_packed():
    rng = np.random.default_rng(5)
    for _ in range(30):
        num_bins = int(rng.integers(3, 12))
        k = int(rng.integers(1, num_bins))
        kbar = int(rng.integers(k, num_bins))
        histograms = rng.integers(0, 4, size=(200, num_bins))  # many ties
        mechanism = LimitedDomain(k, kbar, float(rng.uniform(0.5, 5.0)), float(rng.uniform(0.05, 0.9)))
        indices = mechanism(histograms, rng).indices
        order, _ = sorted_order(histograms, depth=kbar)
        assert indices.shape == (200, k)
        released = indices >= 0
        assert np.all(released[:, :-1] >= released[:, 1:])  # -1 only after the released ones
        in_top = (indices[:, :, None] == order[:, None, :]).any(axis=2)
        assert np.all(in_top | ~released)
        for row in indices:
            kept = row[row >= 0]
            assert len(set(kept.tolist())) == len(kept)


def test_ld_returns_exactly_the_top_k_in_rank_order_behind_a_huge_gap():
    counts = np.array([5, 9000, 3, 10000, 2, 8000, 4, 1])
    indices = LimitedDomain(3, 5, 1.0, 1e-6)(np.tile(counts, (500, 1)), np.random.default_rng(6)).indices
    assert np.all(indices == [3, 1, 5])


def test_ld_returns_nothing_on_a_flat_histogram():
    indices = LimitedDomain(3, 5, 0.5, 1e-6)(np.full((20_000, 20), 50), np.random.default_rng(7)).indices
    assert (indices >= 0).any(axis=1).mean() <= 1e-3


def test_pay_what_you_get_charges_bot_and_refuses_overdrafts():
    result = TopKResult(np.array([[4, 7, -1], [1, 2, 3], [-1, -1, -1], [5, -1, -1]]))
    # |o| = 2 + bot, 3, bot, 1 + bot = 3 + 3 + 1 + 2.
    assert PayWhatYouGet(items=10, queries=5).remaining_after(result) == PayWhatYouGet(items=1, queries=1)
    with pytest.raises(ValueError, match="call 3"):
        PayWhatYouGet(items=9, queries=5).remaining_after(result)  # 7 spent before call 3, 2 left < k = 3
    with pytest.raises(ValueError, match="calls left"):
        PayWhatYouGet(items=100, queries=3).remaining_after(result)
    with pytest.raises(ValueError, match="items"):
        PayWhatYouGet(items=-1, queries=3)


# ------------------------------------------------------------------------------------------ Top Stable
def test_delta_max_hand_computed():
    # c = 2, delta_q = 0.01: (2e-4 + 0.01 - 2 (1e-4 + 0.02)) / (4 (1 - 2)) = -0.03 / -4 = 0.0075.
    assert delta_max(0.01, 2.0) == pytest.approx(0.0075, rel=1e-12)
    # c = 0.5, delta_q = 0.01: (0.2 + 0.01 - 0.5 (0.1 + 0.02)) / 2 = 0.075.
    assert delta_max(0.01, 0.5) == pytest.approx(0.075, rel=1e-12)
    # The paper's form, at the TS default c and a small delta_q.
    c, value = 2 * 0.37 / 0.63, 1e-7
    assert delta_max(value, c) == pytest.approx(
        (2 * value**c + value - c * (value**c + 2 * value)) / (4 * (1 - c)), rel=1e-9
    )


@pytest.mark.parametrize("c, delta", [(2 * 0.37 / 0.63, 0.05), (0.5, 0.05), (2.5, 1e-3)])
def test_lemma_3_1_bounds_the_probability_it_bounds(c, delta):
    # Pr[Lap(1/eps_a) > ln(1/delta)/eps_a + Lap(1/eps_b)] with eps_a = 1, eps_b = c.
    draws = 2_000_000
    rng = np.random.default_rng(8)
    frequency = (rng.laplace(size=draws) > math.log(1 / delta) + rng.laplace(scale=1 / c, size=draws)).mean()
    bound = delta_max(delta, c)
    assert frequency <= bound
    assert frequency >= 0.7 * bound  # the bound is within ~20% here


@pytest.mark.parametrize("delta, max_k, c", [(1e-6, 6, 2 * 0.37 / 0.63), (1e-9, 50, 0.4), (0.01, 1, 3.0)])
def test_query_delta_sits_on_the_boundary(delta, max_k, c):
    solved = query_delta(delta, max_k, c)
    assert max_k * delta_max(solved, c) <= delta  # exactly, in floating point
    assert max_k * delta_max(solved * (1 + 1e-9), c) > delta


def test_ts_returns_the_stable_top_j_in_random_order():
    # One huge gap after position 3 (< kbar = 6), gaps of 1 elsewhere (distance 0).
    counts = np.array([999, 11, 1000, 9, 998, 10, 8, 7, 6, 5])
    indices = TopStable(5, 6, 1.0, 1e-6)(np.tile(counts, (6000, 1)), np.random.default_rng(9)).indices
    assert np.all(np.sort(indices[:, :3], axis=1) == [0, 2, 4])
    assert np.all(indices[:, 3:] == -1)
    orders = codes(indices[:, :3], 10)
    observed = np.array([(orders == code).sum() for code in np.unique(orders)])
    assert len(observed) == 6
    assert chi_square_p(observed, np.full(6, 1 / 6)) > 1e-3


def test_ts_almost_never_passes_on_a_flat_histogram():
    indices = TopStable(3, 5, 1.0, 1e-6)(np.full((20_000, 20), 50), np.random.default_rng(10)).indices
    assert (indices >= 0).any(axis=1).mean() <= 1e-3


def test_ts_without_em_returns_k_of_the_stable_i_uniformly():
    counts = np.array([1000, 990, 980, 970, 960, 950, 10, 9, 8, 7])  # i = 6 passes, k = 2
    indices = TopStable(2, 8, 1.0, 1e-6)(np.tile(counts, (DRAWS, 1)), np.random.default_rng(11)).indices
    pairs = list(itertools.permutations(range(6), 2))
    observed = np.array([np.all(indices == pair, axis=1).sum() for pair in pairs])
    assert observed.sum() == DRAWS
    assert chi_square_p(observed, np.full(len(pairs), 1 / len(pairs))) > 1e-3


@pytest.mark.parametrize("neighbors, selection_range", [("add_remove", 1.0), ("replace", 2.0)])
def test_ts_with_em_is_the_exponential_mechanism_on_the_stable_set(neighbors, selection_range):
    counts = np.array([1001, 1002, 10, 1000, 9, 8])  # kbar = 3 passes at once; k = 1, eps_EM = 1
    mechanism = TopStable(1, 3, 1.0, 1e-6, em_epsilon=1.0, neighbors=neighbors)
    released = mechanism(np.tile(counts, (DRAWS, 1)), np.random.default_rng(12)).indices[:, 0]
    weights = np.exp(np.array([1.0, 2.0, 0.0]) / selection_range)  # counts 1001, 1002, 1000 less 1000
    observed = np.array([(released == j).sum() for j in (0, 1, 3)])
    assert observed.sum() == DRAWS
    assert chi_square_p(observed, weights / weights.sum()) > 1e-3


def test_ts_fill_peels_the_missing_slots_with_the_exponential_mechanism():
    # Nothing passes (eps = 0.2 makes T huge); fill = 1 over k = 1 pick: Pr[j] proportional to exp(h_j).
    counts = np.array([3, 2, 0])
    mechanism = TopStable(1, 2, 0.2, 1e-6, fill_epsilon=1.0)
    released = mechanism(np.tile(counts, (DRAWS, 1)), np.random.default_rng(13)).indices[:, 0]
    weights = np.exp(counts.astype(float))
    observed = np.array([(released == j).sum() for j in range(3)])
    assert chi_square_p(observed, weights / weights.sum()) > 1e-3


def test_ts_fill_completes_a_short_stable_set_with_other_bins():
    counts = np.array([999, 11, 1000, 9, 998, 10, 8, 7, 6, 5])
    indices = TopStable(5, 6, 1.0, 1e-6, fill_epsilon=2.0)(
        np.tile(counts, (2000, 1)), np.random.default_rng(14)
    ).indices
    assert np.all(np.sort(indices[:, :3], axis=1) == [0, 2, 4])
    assert np.all(indices >= 0)
    assert np.all(np.sort(indices, axis=1)[:, 1:] != np.sort(indices, axis=1)[:, :-1])  # distinct


# ------------------------------------------------------------------------------------------ statements
def test_ld_statement_hand_computed():
    # eps = 0.1, k = 2, 5 queries: k* = 10, slack 1e-6: Lemma 4.4's third term 0.05 + 0.1 sqrt(5 ln 1e6)
    # = 0.8811292; delta = 2 * 5 * 1e-7 + 1e-6 = 2e-6.
    mechanism = LimitedDomain(2, 4, 0.1, 1e-7)
    statement = mechanism.dp_statement(5, 1e-6)
    assert (statement.epsilon, statement.delta) == (pytest.approx(0.8811292, rel=1e-6), pytest.approx(2e-6))
    assert "Theorem 2" in statement.source and statement.neighbors == "add_remove"
    # Pay-what-you-get: k* = 4 outcomes over the same 5 calls: min(0.4, ..., 0.02 + 0.1 sqrt(2 ln 1e6)) = 0.4.
    assert mechanism.dp_statement(5, 1e-6, items=4).epsilon == pytest.approx(0.4)
    replaced = LimitedDomain(2, 4, 0.1, 1e-7, neighbors="replace").dp_statement(5, 1e-6)
    assert replaced.epsilon == pytest.approx(2 * 0.8811292, rel=1e-6)
    assert replaced.delta == pytest.approx((1 + math.exp(0.8811292)) * 2e-6, rel=1e-6)


def test_ts_statement_hand_computed():
    # Per query eps + eps_EM + fill = 0.05 + 0 + 0.01 = 0.06; 1000 queries, slack 1e-6:
    # sqrt(2000 ln 1e6) 0.06 + 1000 0.06 (e^0.06 - 1) = 9.973549 + 3.710193 = 13.683742 < basic 60.
    mechanism = TopStable(2, 4, 0.05, 1e-8, fill_epsilon=0.01)
    statement = mechanism.dp_statement(1000, 1e-6)
    assert statement.epsilon == pytest.approx(13.683742, rel=1e-6)
    assert statement.delta == pytest.approx(1000 * 1e-8 + 1e-6)
    # Replace: per query (2 eps + fill, (1 + e^eps) delta) = (0.11, 2.0512711e-8).
    replaced = TopStable(2, 4, 0.05, 1e-8, fill_epsilon=0.01, neighbors="replace")
    assert replaced.per_query_statement() == (pytest.approx(0.11), pytest.approx(2.0512711e-8, rel=1e-7))
    single = TopStable(2, 4, 0.5, 1e-8, em_epsilon=0.2).dp_statement(1, 1e-9)
    assert (single.epsilon, single.delta) == (pytest.approx(0.7), pytest.approx(1.1e-8))  # Theorem 3.2


@pytest.mark.parametrize("neighbors", ["add_remove", "replace"])
@pytest.mark.parametrize("queries", [1, 300])
def test_ld_for_budget_round_trips(neighbors, queries):
    mechanism = LimitedDomain.for_budget(3, 6, 2.0, 1e-6, queries, neighbors)
    spent = mechanism.spent(queries, 1e-6)
    assert spent <= 2.0
    assert spent == pytest.approx(2.0, rel=1e-6)
    assert mechanism.neighbors == neighbors


@pytest.mark.parametrize("neighbors", ["add_remove", "replace"])
@pytest.mark.parametrize("queries, fill_fraction", [(1, 0.0), (500, 0.3)])
def test_ts_for_budget_round_trips(neighbors, queries, fill_fraction):
    mechanism = TopStable.for_budget(3, 6, 4.0, 1e-6, queries, neighbors, fill_fraction=fill_fraction)
    spent = mechanism.spent(queries, 1e-6)
    assert spent <= 4.0
    assert spent == pytest.approx(4.0, rel=1e-6)
    per_query_epsilon = mechanism.epsilon + mechanism.fill_epsilon
    assert mechanism.fill_epsilon == pytest.approx(fill_fraction * per_query_epsilon)


def test_spent_matches_the_statement_and_refuses_too_small_deltas():
    ld = LimitedDomain(2, 4, 0.1, 1e-7)
    assert ld.spent(5, 3e-6) == pytest.approx(ld.dp_statement(5, 3e-6 - 1e-6).epsilon, rel=1e-9)
    ts = TopStable(2, 4, 0.05, 1e-8)
    assert ts.spent(100, 1e-5) == pytest.approx(ts.dp_statement(100, 1e-5 - 1e-6).epsilon, rel=1e-12)
    with pytest.raises(ValueError, match="no room"):
        ld.spent(5, 1e-6)
    with pytest.raises(ValueError, match="own delta"):
        ts.spent(1000, 1e-6)


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: TopStable(2, 4, 1.0, 1e-6, p1=1 / 3), "p1"),
        (lambda: TopStable(2, 4, 1.0, 1e-6, p1=1.0), "p1"),
        (lambda: TopStable(3, 2, 1.0, 1e-6), "max_k"),
        (lambda: TopStable(2, 4, 0.0, 1e-6), "epsilon"),
        (lambda: TopStable(2, 4, 1.0, 1.0), "delta"),
        (lambda: TopStable(2, 4, 1.0, 1e-6, em_epsilon=-1.0), "em_epsilon"),
        (lambda: TopStable(2, 4, 1.0, 1e-6, fill_epsilon=math.nan), "fill_epsilon"),
        (lambda: TopStable(2, 4, 1.0, 1e-6, neighbors="swap"), "neighbors"),
        (lambda: TopStable.for_budget(2, 4, 1.0, 1e-6, 10, fill_fraction=1.0), "fill_fraction"),
        (lambda: LimitedDomain(3, 2, 1.0, 1e-6), "max_k"),
        (lambda: LimitedDomain(0, 2, 1.0, 1e-6), "k"),
        (lambda: LimitedDomain(2, 3, -1.0, 1e-6), "epsilon"),
        (lambda: LimitedDomain(2, 3, 1.0, 0.0), "delta"),
        (lambda: LimitedDomain(2, 3, 1.0, 1e-6).dp_statement(0, 1e-6), "queries"),
        (lambda: LimitedDomain(2, 3, 1.0, 1e-6).dp_statement(3, 1.0), "delta_slack"),
        (lambda: LimitedDomain.for_budget(2, 3, 1.0, 1e-6, 0), "queries"),
    ],
)
def test_argument_checks(build, name):
    with pytest.raises(ValueError, match=name):
        build()


@pytest.mark.parametrize("mechanism", [LimitedDomain(2, 4, 1.0, 1e-6), TopStable(2, 4, 1.0, 1e-6)])
def test_histogram_checks(mechanism):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="max_k"):
        mechanism(np.ones((2, 4), dtype=int), rng)  # kbar = 4 needs d >= 5
    with pytest.raises(ValueError, match="histograms"):
        mechanism(np.full((2, 6), 0.5), rng)
