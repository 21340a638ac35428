"""The data-dependent release (generalized propose-test-release): the distance to the budget has sensitivity 1,
the box bound covers every histogram within its distance, the distance is the hand-computed one, the test passes
with its stated probability, the cost event is what the argument says, a failed test releases nothing, and the
screen passes at the rate of the noise its cost is priced at."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from pate.aggregators import BinaryVoting, DataDependentBinaryVoting
from pate.mechanisms.binary_voting import screen_labels
from pate.mechanisms.dd_release import DistanceTest, binary_label_rdp, cost_table, costs_within, distance_to_budget
from pate.privacy import Ledger, count_l2_sensitivity, gaussian_event, price

T, L = 60, 6


def _table(screen=None, size=T + 40):
    return cost_table(size, 6.0, 8.0, 8.0, screen)


def _neighbour(yes, relation, rng, teachers=T):
    """A random neighbour of the per-label yes-counts (and its teacher count): replace moves every label by -1, 0
    or +1 at once; add_remove adds (or removes) one teacher, who votes yes or no on each label."""
    if relation == "replace":
        return np.clip(yes + rng.integers(-1, 2, yes.shape), 0, teachers), teachers
    if rng.random() < 0.5:
        return yes + rng.integers(0, 2, yes.shape), teachers + 1
    # the removed teacher voted yes where every teacher did, no where none did, either way elsewhere
    drop = np.where(yes == teachers, 1, np.where(yes == 0, 0, rng.integers(0, 2, yes.shape)))
    return yes - drop, teachers - 1


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
@pytest.mark.parametrize("screen", [None, (20.0, 45.0)])
def test_the_distance_to_the_budget_has_sensitivity_one(relation, screen):
    rng = np.random.default_rng(5)
    table = _table(screen)
    for _ in range(60):
        yes = rng.integers(0, T + 1, (4, L))
        budget = float(rng.uniform(0.5, 30.0))
        other, teachers = _neighbour(yes, relation, rng)
        k = distance_to_budget(costs_within(table, yes, T - yes, 25), budget)
        k_other = distance_to_budget(costs_within(table, other, teachers - other, 25), budget)
        assert abs(k - k_other) <= 1


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_the_box_bound_covers_every_histogram_within_its_distance(relation):
    """U(D, d) >= the exact data-dependent cost of histograms reached by d random neighbour steps."""
    rng = np.random.default_rng(6)
    table = _table((20.0, 45.0))
    yes = rng.integers(0, T + 1, (5, L))
    within = costs_within(table, yes, T - yes, 6)
    for _ in range(200):
        current, teachers = yes, T
        for distance in range(1, 7):
            current, teachers = _neighbour(current, relation, rng, teachers)
            cost = table[current, teachers - current].sum()
            assert cost <= within[distance] + 1e-9


def test_costs_within_refuses_a_table_too_small():
    with pytest.raises(ValueError, match="must extend max_distance=5"):
        costs_within(_table(size=T + 3), np.array([T]), np.array([0]), 5)


def test_the_test_passes_with_its_stated_probability():
    """Pr[pass | distance k] = P[N(0, 1) > (threshold - min(k, cap)) / sigma]: exactly delta at distance 0."""
    test = DistanceTest(sigma=2.0, delta=0.05, order=4.0, budget=1.0)
    assert ndtr(-test.threshold / 2.0) == pytest.approx(0.05, rel=1e-12)
    rng = np.random.default_rng(7)
    for distance in (0, 2, 4, 1000):
        expected = ndtr((min(distance, test.max_distance - 1) - test.threshold) / 2.0)
        passes = np.mean([test.passes(distance, rng) for _ in range(20_000)])
        assert passes == pytest.approx(expected, abs=5 * math.sqrt(expected * (1 - expected) / 20_000) + 1e-9)


def test_the_cost_event_is_the_tests_gaussian_and_the_approximate_proposal():
    test = DistanceTest(sigma=3.0, delta=1e-7, order=8.0, budget=1.25)
    orders = np.array([2.0, 8.0, 8.5, 32.0])
    priced = price(test.dp_event, orders)
    np.testing.assert_allclose(priced.curve[:2], orders[:2] / (2 * 9.0) + 1.25)
    assert np.all(np.isinf(priced.curve[2:]))
    assert priced.delta == 1e-7


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_calibration_meets_the_target_and_a_failed_test_releases_nothing(relation):
    teachers = 400  # the test needs the votes ~30 teachers away from trouble
    aggregator = DataDependentBinaryVoting(
        L, teachers, sigma=5.0, order=8.0, test_sigma=1.0, test_delta=1e-7, neighbors=relation
    )
    calibrated, _ = aggregator.calibrated(4.0, 1e-6, 30)
    assert Ledger().compose(calibrated).get_epsilon(1e-6, "rdp").epsilon == pytest.approx(4.0, rel=1e-3)
    assert calibrated.order > 1 and calibrated.rdp_budget > 0
    contentious = np.full((30, L), teachers // 2)  # every label a tie: far from cheap, the test must fail
    result = calibrated(contentious, np.random.default_rng(0))
    assert not result.details["test"]["passed"]
    assert not result.answered.any() and not result.labels.any() and not result.released.any()
    assert np.all(result.k == -1)
    unanimous = np.tile([0, teachers, teachers, 0, teachers, 0], (30, 1))
    result = calibrated(unanimous, np.random.default_rng(0))
    assert result.details["test"]["passed"] and result.released.all()
    np.testing.assert_array_equal(result.labels, unanimous == teachers)


def test_a_proposal_is_needed_and_bad_settings_are_refused():
    aggregator = DataDependentBinaryVoting(L, T, sigma=5.0, order=8.0, test_sigma=1.0, test_delta=1e-7)
    with pytest.raises(ValueError, match="no proposal yet"):
        aggregator(np.zeros((2, L), int), np.random.default_rng(0))
    with pytest.raises(ValueError, match="screen_threshold=0.4"):
        DataDependentBinaryVoting(L, T, 5.0, 8.0, 1.0, 1e-7, screen_threshold=0.4)
    with pytest.raises(ValueError, match="test_share"):
        DataDependentBinaryVoting(L, T, 5.0, 8.0, 1.0, 1e-7, test_share=1.5)
    with pytest.raises(ValueError, match="unreachable|no RDP budget"):
        aggregator.calibrated(0.01, 1e-6, 30)


def test_the_screen_leaves_out_contentious_labels_and_the_label_cost_is_the_tables():
    rng, teachers = np.random.default_rng(2), 400
    aggregator = DataDependentBinaryVoting(
        L,
        teachers,
        sigma=20.0,
        order=8.0,
        test_sigma=1.0,
        test_delta=1e-7,
        rdp_budget=200.0,
        screen_sigma=20.0,
        screen_threshold=0.8,
    )
    votes = np.tile([0, teachers, teachers // 2, teachers // 2 + 1, teachers, 0], (40, 1))
    result = aggregator(votes, rng)
    assert result.details["test"]["passed"]
    released = result.released.mean(axis=0)
    assert released[[0, 1, 4, 5]].min() == 1.0 and released[[2, 3]].max() == 0.0
    cost = binary_label_rdp(np.array([7]), np.array([53]), [8.0], 2.0, 2.0, (3.0, 48.0))[0, 0]
    assert cost == pytest.approx(cost_table(T + 1, 8.0, 2.0, 2.0, (3.0, 48.0))[7, 53])


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_binary_voting_audit_stays_below_its_claim_and_catches_halved_noise(relation):
    """Monte Carlo privacy audit of ``BinaryVoting`` as a black box, on a worst-case pair made by applying the
    relation to the input it reads: the yes-count matrix with its configured T = 5. Every label 3 yes against 2 yes
    (one yes-voter on every label removed under add_remove, or its vote replaced by all-no under replace; T stays 5,
    as the aggregator is configured). The Renyi divergence of the empirical output laws (4 outcomes, 1,000,000 draws
    each; outcomes never drawn under one of them left out, which only lowers it) at orders 2 and 4 stays below the
    claim at the configured sigma, and at order 2 exceeds it when the noise is halved (the one-bit outputs hide much
    of the Gaussian's loss at higher orders). Under add_remove this pair breaks the sqrt(L) price used before
    issue 36 (claim alpha L / (2 sigma^2))."""
    labels, draws, teachers = 2, 1_000_000, 5
    yes, other_yes = np.full((draws, labels), 3), np.full((draws, labels), 2)
    claim = BinaryVoting(labels, teachers, 1.0, relation)

    def law(y, sigma, seed):
        bits = BinaryVoting(labels, teachers, sigma, relation)(y, np.random.default_rng(seed)).labels
        return np.bincount(bits @ (1 << np.arange(labels)), minlength=2**labels) / draws

    for sigma, below, orders in ((1.0, True, (2.0, 4.0)), (0.5, False, (2.0,))):
        p, q = law(yes, sigma, 1), law(other_yes, sigma, 2)
        seen = (p > 0) & (q > 0)
        for order in orders:
            empirical = math.log(np.sum(p[seen] ** order * q[seen] ** (1 - order))) / (order - 1)
            claimed = float(claim.rdp([order])[0])
            assert (empirical <= claimed) == below, (sigma, order, empirical, claimed)


@pytest.mark.parametrize("yes, other", [(5, 4), (4, 5), (239, 240), (240, 241)])
def test_a_certain_screen_still_prices_its_neighbours_failure(yes, other):
    """The per-label cost of a screened label bounds the exact Renyi divergence of its release (fail, pass & yes,
    pass & no), on the outside audit's pairs (issue 36) where the screen passes with certainty to double precision:
    log(1 - p) derived from log p underflowed to -inf and priced the screen at 0 (27.4 exact against 0.2 priced at
    T = 250). The release's three outcomes have closed forms: the screen passes with Phi((max - t) / s), and GNMax
    says yes with Phi((2 yes - T) / (sqrt(2) sigma))."""
    from scipy.special import log_ndtr, logsumexp

    teachers, sigma, screen_sigma, threshold, order = (
        (40, 0.25, 0.125, 28.0, 4.5) if yes < 40 else (250, 10.0, 1.0, 200.0, 64.0)
    )

    def log_law(y):
        larger = max(y, teachers - y)
        margin = (2 * y - teachers) / (math.sqrt(2.0) * sigma)
        log_pass = log_ndtr((larger - threshold) / screen_sigma)
        return np.array(
            [log_ndtr((threshold - larger) / screen_sigma), log_pass + log_ndtr(margin), log_pass + log_ndtr(-margin)]
        )

    exact = logsumexp(order * log_law(yes) + (1 - order) * log_law(other)) / (order - 1)
    priced = binary_label_rdp(
        np.array([yes]), np.array([teachers - yes]), [order], sigma, sigma, (screen_sigma, threshold)
    )[0, 0]
    assert exact <= priced * (1 + 1e-9), (exact, priced)


def _hand_table(size=11):
    """c[yes, no] = max(0, 3 - |yes - no|): 3 at a tie, 2, 1, then 0 from a gap of 3 on. A box of radius d around
    (yes, no) holds every gap from |yes - no| - 2d up (the larger count down d, the smaller up d; the table reaches
    that far), so the largest c within d is max(0, 3 - max(0, |yes - no| - 2d)): integers, exact in float64."""
    counts = np.arange(size)
    return np.maximum(0.0, 3.0 - np.abs(counts[:, None] - counts[None, :]))


@pytest.mark.parametrize(
    "budget, expected",
    [
        (0.0, 0),
        (0.5, 0),
        (0.999, 0),  # U(1) = 1 > B: k = 0
        (1.0, 1),
        (3.999, 1),  # U(1) = 1 <= B < U(2) = 4: k = 1 (the boundary B = U(1) is not "> B")
        (4.0, 2),
        (5.999, 2),  # U(2) = 4 <= B < U(3) = 6: k = 2
        (6.0, 3),
        (100.0, 3),  # no U(d + 1) > B up to d_max = 4: capped at d_max - 1 = 3
    ],
)
def test_the_distance_to_the_budget_is_the_hand_computed_one(budget, expected):
    """k(D) = min{ d >= 0 : U(D, d + 1) > B } exactly, on a table small enough to do by hand (``_hand_table``), T = 6,
    two labels: (yes, no) = (6, 0), gap 6, and (1, 5), gap 4. Largest cost within d, per label:

        d          0  1  2  3  4
        (6, 0)     0  0  1  3  3      gap max(0, 6 - 2d) = 6, 4, 2, 0, 0
        (1, 5)     0  1  3  3  3      gap max(0, 4 - 2d) = 4, 2, 0, 0, 0
        U(D, d)    0  1  4  6  6

    The budgets sit on both sides of every step of U, so k one too large or one too small fails here. The other
    tests of the distance (sensitivity one, the audit's law of DataDependentBinaryVoting) compare k with k of a
    neighbour or with itself, so a k shifted by a constant passes them; a k one too large lets through votes one
    step nearer a histogram whose cost exceeds the proposal than the argument allows."""
    yes, no = np.array([6, 1]), np.array([0, 5])
    within = costs_within(_hand_table(), yes, no, 4)
    np.testing.assert_array_equal(within, [0.0, 1.0, 4.0, 6.0, 6.0])
    assert distance_to_budget(within, budget) == expected


def test_the_distance_to_the_budget_is_zero_when_the_data_already_exceed_it():
    """A tie (3, 3) costs 3 at every distance: U(D, d) = 3 for d = 0..3, so k = 0 for any B < 3 (U(D, 1) > B even
    though the data's own cost already is), and with B = 3 nothing exceeds it: the cap d_max - 1 = 2."""
    within = costs_within(_hand_table(), np.array([3]), np.array([3]), 3)
    np.testing.assert_array_equal(within, [3.0, 3.0, 3.0, 3.0])
    assert distance_to_budget(within, 2.999) == 0
    assert distance_to_budget(within, 3.0) == 2


# Where the larger count sits half a screen sigma below, at, and one sigma above the threshold, on either side of
# the tie: a screen drawn at half the priced sigma passes at Phi(-1) = 0.159 instead of Phi(-0.5) = 0.309, and at
# Phi(2) = 0.977 instead of Phi(1) = 0.841, both over 20 standard errors away at 20,000 draws.
_SCREEN_T, _SCREEN_SIGMA, _SCREEN_FRACTION = 100, 10.0, 0.7
_SCREEN_YES = np.array([35, 65, 70, 20, 80])  # larger counts 65, 65, 70, 80, 80 against the threshold 70


def _assert_pass_rates(passed, yes, num_teachers, sigma, threshold):
    """Per column: the pass frequency of ``passed`` [draws, labels] is Phi((max(yes, T - yes) - threshold) / sigma)
    within 5 binomial standard errors (a false failure has probability below 1e-5 over the five columns)."""
    draws = passed.shape[0]
    expected = ndtr((np.maximum(yes, num_teachers - yes) - threshold) / sigma)
    tolerance = 5.0 * np.sqrt(expected * (1.0 - expected) / draws)
    observed = passed.mean(axis=0)
    assert np.all(np.abs(observed - expected) <= tolerance), (observed, expected, tolerance)


def test_the_screen_passes_at_the_rate_of_its_sigma():
    """``screen_labels`` passes a label with probability Phi((max(yes, T - yes) - threshold) / sigma), sigma the noise
    it is given: the screen's price (``binary_label_rdp``'s ``screen``) assumes exactly that noise, so noise drawn
    at any other scale (half of it, say) is a release priced for noise it did not get."""
    draws = 20_000
    yes = np.tile(_SCREEN_YES, (draws, 1))
    threshold = _SCREEN_FRACTION * _SCREEN_T
    passed = screen_labels(yes, _SCREEN_T, _SCREEN_SIGMA, threshold, np.random.default_rng(11))
    assert passed.dtype == bool and passed.shape == yes.shape
    _assert_pass_rates(passed, _SCREEN_YES, _SCREEN_T, _SCREEN_SIGMA, threshold)


def test_the_aggregators_screen_releases_at_the_rate_of_the_sigma_it_prices():
    """DataDependentBinaryVoting releases a (query, label) at the rate Phi((max(yes, T - yes) - threshold) /
    screen_sigma), with (screen_sigma, threshold) the ``screen`` its cost table prices (the distance to the budget
    is computed from ``cost_table(..., self.screen)``; the data-independent event names the same sigma). The
    proposal is so large that no histogram's cost exceeds it: k is the cap, and the test passes (with probability
    1 - 3e-7; checked), so ``released`` is the screen's outcome alone."""
    draws = 20_000
    aggregator = DataDependentBinaryVoting(
        len(_SCREEN_YES),
        _SCREEN_T,
        sigma=5.0,
        order=8.0,
        test_sigma=1.0,
        test_delta=1e-7,
        rdp_budget=1e9,
        screen_sigma=_SCREEN_SIGMA,
        screen_threshold=_SCREEN_FRACTION,
    )
    screen_sigma, threshold = aggregator.screen
    screen = aggregator.data_independent_event(1).event.events[0]
    assert screen == gaussian_event(screen_sigma, count_l2_sensitivity(aggregator.num_labels, aggregator.neighbors))
    result = aggregator(np.tile(_SCREEN_YES, (draws, 1)), np.random.default_rng(12))
    assert result.details["test"]["passed"]
    assert result.details["test"]["not_itself_private"]["distance"] == aggregator.test.max_distance - 1
    _assert_pass_rates(result.released, _SCREEN_YES, _SCREEN_T, screen_sigma, threshold)
