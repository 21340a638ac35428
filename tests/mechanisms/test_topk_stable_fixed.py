"""StableTopK with a fixed k (Zhu & Wang 2022, Algorithm 3): exact probabilities, the fill branches, its cost."""

import math

import numpy as np
import pytest
from scipy import stats

from pate.mechanisms.topk import StableTopKFixed
from pate.privacy import Ledger
from tests.mechanisms.closed_forms import ORDERS, exponential_mechanism, gaussian

DRAWS = 40_000


def mechanism(**overrides):
    settings = dict(k=3, select_epsilon=1.0, test_sigma=2.0, fill_rho=0.5, delta_t=1e-6, neighbors="add_remove")
    return StableTopKFixed(**{**settings, **overrides})


def released_sets(mech, histogram, draws, seed):
    indices = mech(np.tile(histogram, (draws, 1)), np.random.default_rng(seed)).indices
    return [frozenset(row) for row in indices.tolist()]


def test_probability_of_the_top_one_is_test_pass_plus_fill():
    """k = kbar = 1: khat = 1 always; the answer is bin 0 iff the test passes or the fill's one pick is bin 0.

    Pr = Phi((max(s, q) - margin - s) / sigma) + (1 - Phi(...)) * softmax(eps_pick h)_0 with
    eps_pick = sqrt(8 rho_fill) (one pick) and margin = sigma sqrt(2 log(1/delta_t)).
    """
    histogram = np.array([40, 26, 20, 3])
    sigma, delta_t, rho = 3.0, 1e-3, 0.002
    mech = StableTopKFixed(k=1, select_epsilon=1.0, test_sigma=sigma, fill_rho=rho, delta_t=delta_t, max_k=1)
    margin = sigma * math.sqrt(2 * math.log(1 / delta_t))
    passes = stats.norm.cdf((14 - margin - 1) / sigma)
    weights = np.exp(math.sqrt(8 * rho) * histogram)
    expected = passes + (1 - passes) * weights[0] / weights.sum()
    first = mech(np.tile(histogram, (DRAWS, 1)), np.random.default_rng(0)).indices[:, 0]
    observed = (first == 0).mean()
    assert 0.05 < passes < 0.95 and expected < 0.99  # both branches matter at these settings
    assert abs(observed - expected) < 5 * math.sqrt(expected * (1 - expected) / DRAWS)


def test_a_large_gap_at_k_releases_the_true_top_k():
    histogram = np.array([0, 500, 3, 480, 2, 470, 1, 0, 0, 4])
    assert set(released_sets(mechanism(), histogram, 2000, 1)) == {frozenset({1, 3, 5})}


def test_a_large_gap_below_k_keeps_that_set_and_fills_the_rest():
    # One clear gap after the top 2; k = 4: the top 2 are always there, the fill adds 2 of the rest.
    histogram = np.array([900, 5, 880, 6, 4, 5, 7, 6])
    sets = released_sets(mechanism(k=4, max_k=6, regularization=0.0), histogram, 3000, 2)
    assert all(len(s) == 4 and {0, 2} <= s for s in sets)
    assert len(set(sets)) > 3  # the filled part is random


@pytest.mark.parametrize("gap_at, expected_picks", [(5, "drop"), (8, "keep")])
def test_a_large_gap_above_k_trims_the_released_set(gap_at, expected_picks):
    # k = 3, one huge gap after the top `gap_at` bins: the answer is 3 bins out of that set (dropping
    # 2 when gap_at = 5 <= 2k, keeping 3 when gap_at = 8 > 2k), never a bin from outside it.
    histogram = np.concatenate([np.full(gap_at, 1000) + np.arange(gap_at), np.zeros(6, dtype=np.int64)])
    sets = released_sets(mechanism(max_k=10), histogram, 2000, 3)
    assert all(len(s) == 3 and s <= set(range(gap_at)) for s in sets)
    # With a tiny fill budget the trim is nearly uniform: every bin of the set appears.
    assert set().union(*sets) == set(range(gap_at))


def test_no_gap_means_the_test_fails_and_the_fill_picks_all_k():
    histogram = np.full(30, 50)
    indices = mechanism()(np.tile(histogram, (500, 1)), np.random.default_rng(4)).indices
    assert indices.shape == (500, 3) and (indices >= 0).all()
    assert all(len(set(row)) == 3 for row in indices.tolist())
    assert len(np.unique(indices)) == 30  # uniform over the tied bins


@pytest.mark.parametrize("neighbors, s", [("add_remove", 1.0), ("replace", 2.0)])
def test_cost_is_selection_plus_test_plus_fill(neighbors, s):
    mech = mechanism(neighbors=neighbors)
    expected = exponential_mechanism(ORDERS, 1.0) + gaussian(ORDERS, 2.0, s) + ORDERS * 0.5
    np.testing.assert_allclose(mech.rdp(ORDERS), expected, rtol=1e-9)
    assert mech.delta_per_query == 1e-6


def test_for_budget_meets_the_target_and_splits_delta():
    mech = StableTopKFixed.for_budget(k=10, epsilon=1.0, delta=1e-6, queries=10, neighbors="replace")
    assert mech.delta_t == pytest.approx(0.5e-6 / 10)
    spent = Ledger().compose(mech, 10).get_epsilon(1e-6, "rdp").epsilon
    assert spent <= 1.0 and spent == pytest.approx(1.0, rel=1e-3)
    assert mech.spent(10, 1e-6) == spent
    # The zCDP budget is split 1/4 selection, 1/4 test, 1/2 fill at any calibration.
    rho_select, rho_test = mech.select_epsilon**2 / 8, 2.0**2 / (2 * mech.test_sigma**2)
    assert rho_select == pytest.approx(rho_test) and mech.fill_rho == pytest.approx(2 * rho_select)


def test_scale_noise_scales_every_part():
    scaled = mechanism().scale_noise(2.0)
    assert (scaled.select_epsilon, scaled.test_sigma, scaled.fill_rho) == pytest.approx((0.5, 4.0, 0.125))


@pytest.mark.parametrize(
    "overrides, match",
    [
        (dict(k=0), "k must"),
        (dict(select_epsilon=-1.0), "select_epsilon"),
        (dict(test_sigma=0.0), "test_sigma"),
        (dict(fill_rho=0.0), "fill_rho"),
        (dict(delta_t=1.0), "delta_t"),
        (dict(max_k=2), "max_k must be >= k"),
        (dict(regularization=-0.1), "regularization"),
        (dict(neighbors="both"), "neighbors"),
    ],
)
def test_arguments_are_checked(overrides, match):
    with pytest.raises(ValueError, match=match):
        mechanism(**overrides)


def test_max_k_must_fit_the_histogram():
    with pytest.raises(ValueError, match="max_k must be <= d - 1"):
        mechanism(max_k=10)(np.ones((1, 5), dtype=np.int64), np.random.default_rng(0))


def test_the_released_set_is_listed_by_bin_index_not_by_count():
    # The PTR release covers the set only; listing it by true count would leak the order inside it.
    histogram = np.array([3, 500, 2, 900, 1, 700, 0, 0])
    indices = mechanism()(np.tile(histogram, (200, 1)), np.random.default_rng(6)).indices
    assert (np.diff(indices, axis=1) > 0).all()
    assert indices.tolist()[0] == [1, 3, 5]
