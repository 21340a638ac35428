"""EM-CDP, PNF peeling and one-shot Gumbel peeling against exact distributions and closed forms."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from pate.mechanisms.topk import EMPeeling, PNFPeeling, em_cdp_pick_epsilon, gumbel_peel
from pate.privacy import Ledger
from pate.privacy.composition import zcdp_epsilon
from tests.mechanisms.closed_forms import ORDERS, exponential_mechanism, pure_dp

DRAWS = 60_000


def chi_square_p(observed: np.ndarray, expected_probabilities: np.ndarray) -> float:
    expected = expected_probabilities * observed.sum()
    return stats.chisquare(observed, expected).pvalue


def peeling_probability(scores: np.ndarray, sequence: tuple[int, ...], scale: float) -> float:
    """Exact probability that exponential-mechanism peeling picks ``sequence`` (independent of the code)."""
    remaining = list(range(len(scores)))
    probability = 1.0
    for item in sequence:
        weights = np.exp((scores[remaining] - scores[remaining].max()) / scale)
        probability *= weights[remaining.index(item)] / weights.sum()
        remaining.remove(item)
    return probability


def test_gumbel_peel_is_exponential_mechanism_peeling():
    scores = np.array([3.0, 2.0, 0.5, 0.0])
    scale = 1.3
    sequences = list(itertools.permutations(range(4), 2))
    picked = gumbel_peel(np.tile(scores, (DRAWS, 1)), np.full(DRAWS, 2), scale, np.random.default_rng(1))
    codes = picked[:, 0] * 4 + picked[:, 1]
    observed = np.array([(codes == a * 4 + b).sum() for a, b in sequences])
    expected = np.array([peeling_probability(scores, sequence, scale) for sequence in sequences])
    assert expected.sum() == pytest.approx(1.0)
    assert chi_square_p(observed, expected) > 1e-3


def test_gumbel_peel_respects_per_row_picks_and_excluded_items():
    scores = np.array([[5.0, -np.inf, 1.0, 0.0], [0.0, 0.0, -np.inf, -np.inf]])
    picked = gumbel_peel(scores, np.array([3, 1]), 1.0, np.random.default_rng(0))
    assert picked.shape == (2, 3)
    assert set(picked[0]) == {0, 2, 3}
    assert picked[1, 0] in (0, 1) and list(picked[1, 1:]) == [-1, -1]
    with pytest.raises(ValueError, match="picks"):
        gumbel_peel(scores, np.array([4, 1]), 1.0, np.random.default_rng(0))


@pytest.mark.parametrize("neighbors, factor", [("add_remove", 1.0), ("replace", 2.0)])
def test_em_cdp_single_pick_is_the_softmax_of_the_counts(neighbors, factor):
    counts = np.array([6, 4, 4, 0])
    mechanism = EMPeeling(k=1, pick_epsilon=0.7, neighbors=neighbors)
    picked = mechanism(np.tile(counts, (DRAWS, 1)), np.random.default_rng(2)).indices[:, 0]
    expected = np.exp(0.7 * counts / factor)
    assert chi_square_p(np.bincount(picked, minlength=4), expected / expected.sum()) > 1e-3


def test_em_cdp_pick_epsilon_closed_form():
    # By hand: L = ln(1e6) = 13.815511; sqrt(14.815511) - sqrt(13.815511) = 3.849092 - 3.716922 = 0.132170;
    # rho = 0.0174689; eps_pick = sqrt(8 rho / 10) = 0.118216.
    assert em_cdp_pick_epsilon(1.0, 1e-6, 10) == pytest.approx(0.118216, rel=1e-5)
    for epsilon, delta, picks in [(0.15, 1e-6, 1500), (1.0, 1e-5, 30), (4.0, 1e-8, 150)]:  # zCDP wins here
        pick = em_cdp_pick_epsilon(epsilon, delta, picks)
        assert zcdp_epsilon(picks * pick**2 / 8, delta) == pytest.approx(epsilon, rel=1e-12)


def _dp_topk_em_epsilon_cdp(epsilon, delta, k):
    """dp_topk's formula (google-research/dp_topk, ``em_epsilon_cdp``), restated for the cross-check."""
    log_delta = math.log(1 / delta)
    return max(epsilon / k, math.sqrt((8 * log_delta + 8 * epsilon) / k) - math.sqrt(8 * log_delta / k))


@pytest.mark.parametrize(
    "epsilon, delta, picks",
    [
        (1.0, 1e-6, 1),
        (1.0, 1e-6, 10),
        (8.0, 1e-6, 2),
        (50.0, 1e-6, 3),
        (0.15, 1e-6, 1500),
        (4.0, 1e-8, 150),
        (30.0, 1e-3, 5),
    ],
)
def test_em_cdp_pick_epsilon_is_dp_topks_formula(epsilon, delta, picks):
    assert em_cdp_pick_epsilon(epsilon, delta, picks) == pytest.approx(
        _dp_topk_em_epsilon_cdp(epsilon, delta, picks), rel=1e-12
    )


def test_one_pick_spends_the_whole_budget():
    """At one pick basic composition beats zCDP: the pick gets all of epsilon (0.368 by zCDP alone), and
    ``spent`` charges exactly epsilon for it."""
    assert em_cdp_pick_epsilon(1, 1e-6, 1) == 1
    mechanism = EMPeeling.for_budget(k=1, epsilon=1.0, delta=1e-6, queries=1)
    assert mechanism.pick_epsilon == 1 and mechanism.spent(1, 1e-6) == pytest.approx(1.0, rel=1e-12)
    assert mechanism.spent(1, 1e-6) <= 1.0


def test_em_cdp_budgets():
    zcdp = EMPeeling.for_budget(k=20, epsilon=0.5, delta=1e-6, queries=3)
    assert zcdp.pick_epsilon == pytest.approx(em_cdp_pick_epsilon(0.5, 1e-6, 60))
    # The ledger's tight conversion of the same curve is never worse than the closed form ...
    assert zcdp.spent(3, 1e-6) <= 0.5
    rdp = EMPeeling.for_budget(k=20, epsilon=0.5, delta=1e-6, queries=3, accountant="rdp")
    # ... so calibrating by the ledger allows a larger pick epsilon, spending the target.
    assert rdp.pick_epsilon > zcdp.pick_epsilon
    assert rdp.spent(3, 1e-6) == pytest.approx(0.5, rel=1e-3) and rdp.spent(3, 1e-6) <= 0.5
    np.testing.assert_allclose(rdp.rdp(ORDERS), 20 * exponential_mechanism(ORDERS, rdp.pick_epsilon), rtol=1e-9)
    assert rdp.delta_per_query == 0.0
    with pytest.raises(ValueError, match="accountant"):
        EMPeeling.for_budget(k=2, epsilon=1.0, delta=1e-6, accountant="pure")


def test_pnf_single_round_matches_the_exponential_noise_race():
    # Two bins: bin 0 wins iff E1 - E0 < h0 - h1, and E1 - E0 ~ Laplace(b): Pr = 1 - exp(-(h0 - h1) / b) / 2.
    counts = np.array([3, 1])
    mechanism = PNFPeeling(k=1, pick_epsilon=0.4, neighbors="replace")  # b = 2 / 0.4 = 5
    wins = (mechanism(np.tile(counts, (DRAWS, 1)), np.random.default_rng(3)).indices[:, 0] == 0).mean()
    expected = 1 - math.exp(-2 / 5) / 2
    assert abs(wins - expected) < 5 * math.sqrt(expected * (1 - expected) / DRAWS)


def test_pnf_peel_returns_distinct_bins_and_is_pure_dp():
    rng = np.random.default_rng(4)
    histograms = rng.poisson(3.0, size=(50, 30))
    result = PNFPeeling(k=8, pick_epsilon=0.2)(histograms, rng)
    assert result.indices.shape == (50, 8)
    assert all(len(set(row)) == 8 for row in result.indices.tolist())
    pure = PNFPeeling.for_budget(k=8, epsilon=0.8, delta=1e-6, queries=2)
    assert pure.pick_epsilon == pytest.approx(0.05)
    np.testing.assert_allclose(pure.rdp(ORDERS), 8 * pure_dp(ORDERS, 0.05), rtol=1e-9)
    assert pure.spent(2, 1e-6) <= 0.8
    tight = PNFPeeling.for_budget(k=8, epsilon=0.8, delta=1e-6, queries=2, accountant="rdp")
    assert tight.pick_epsilon > pure.pick_epsilon
    assert Ledger().compose(tight, 2).get_epsilon(1e-6, "rdp").epsilon == pytest.approx(0.8, rel=1e-3)


def test_peeling_on_a_clear_top_k_returns_it():
    histograms = np.zeros((20, 500), dtype=np.int64)
    histograms[:, [7, 70, 300]] = 10_000
    for mechanism in (EMPeeling(k=3, pick_epsilon=1.0), PNFPeeling(k=3, pick_epsilon=1.0)):
        indices = mechanism(histograms, np.random.default_rng(5)).indices
        assert all(set(row) == {7, 70, 300} for row in indices.tolist())


@pytest.mark.parametrize(
    "histograms, match",
    [
        (np.array([1, 2, 3]), "2-D"),
        (np.array([[1, -1, 3]]), ">= 0"),
        (np.array([[1.5, 2, 3]]), "integer"),
        (np.array([[True, False, True]]), "integer"),
    ],
)
def test_bad_histograms_are_refused(histograms, match):
    with pytest.raises(ValueError, match=match):
        EMPeeling(k=1, pick_epsilon=1.0)(histograms, np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=0, pick_epsilon=1.0), "k must"),
        (dict(k=2, pick_epsilon=0.0), "pick_epsilon"),
        (dict(k=2, pick_epsilon=1.0, neighbors="swap"), "neighbors"),
    ],
)
def test_arguments_are_checked(kwargs, match):
    for cls in (EMPeeling, PNFPeeling):
        with pytest.raises(ValueError, match=match):
            cls(**kwargs)


def test_k_must_be_below_the_number_of_bins():
    with pytest.raises(ValueError, match="k must be < the number of bins"):
        EMPeeling(k=3, pick_epsilon=1.0)(np.ones((1, 3), dtype=np.int64), np.random.default_rng(0))
