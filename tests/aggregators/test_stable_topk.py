"""StableTopK end to end: the public contract, exact release above Theorem 11's gap, <= delta_t answers at
the sensitivity, exact top-k sets, cost = selection + test composed by the ledger, argument checks.
Monte Carlo tolerance: 5 binomial standard errors; seeds fixed."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

import pate.aggregators.stable_topk as stable_topk_module
from pate.aggregators import Aggregator, StableTopK
from pate.mechanisms import GapTest
from pate.privacy import DEFAULT_ORDERS, Ledger, calibrate_noise, gap_sensitivity
from tests.mechanisms import closed_forms as cf

TEST_NOISE = {"gaussian": dict(sigma_test=3.0), "laplace": dict(eps_test=0.8)}


def evenly_spaced_counts(gap, num_labels):
    """Counts gap * (L, ..., 1) with T = gap * (L + 1): every padded gap q_0..q_L equals ``gap``."""
    return gap * np.arange(num_labels, 0, -1), gap * (num_labels + 1)


def true_top_k(counts, k):
    labels = np.zeros(counts.shape, dtype=bool)
    labels[np.argsort(-counts, kind="stable")[:k]] = True
    return labels


def test_public_contract_verbatim():
    rng = np.random.default_rng(123)
    truth = rng.random((200, 40)) < 0.25
    votes = np.where(truth, rng.integers(785, 801, truth.shape), rng.integers(0, 6, truth.shape))
    orders = DEFAULT_ORDERS

    agg = StableTopK(
        num_labels=40,
        num_teachers=800,
        selection="gaussian",
        sigma_select=50.0,
        sigma_test=60.0,
        delta_t=1e-9,
        neighbors="replace",
    )
    res = agg(votes, rng=np.random.default_rng(0))
    res.labels
    res.answered
    agg.rdp(orders)
    agg.delta_per_query

    assert res.labels.shape == (200, 40) and res.labels.dtype == np.bool_
    assert res.answered.shape == (200,) and res.answered.dtype == np.bool_
    assert agg.rdp(orders).shape == orders.shape and agg.delta_per_query == 1e-9
    # Clear consensus (gap >= 780 > reliable gap 2 + 2 * 60 * sqrt(2 log 1e9) = 774.5): almost all answered, exactly.
    assert res.answered.mean() > 0.9
    np.testing.assert_array_equal(res.labels[res.answered], truth[res.answered])
    assert not res.labels[~res.answered].any()


@pytest.mark.parametrize("test", ["gaussian", "laplace"])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_gap_at_theorem_11_threshold_is_released_exactly_with_probability_at_least_one_minus_delta_t(test, relation):
    delta_t, draws, num_labels = 0.05, 20_000, 8
    noise = {"sigma": 3.0} if test == "gaussian" else {"epsilon": 0.8}  # = TEST_NOISE[test]
    gap = math.ceil(GapTest(test, delta_t=delta_t, neighbors=relation, **noise).reliable_gap)
    counts, teachers = evenly_spaced_counts(gap, num_labels)
    agg = StableTopK(
        num_labels,
        teachers,
        "gaussian",
        sigma_select=30.0,
        test=test,
        delta_t=delta_t,
        neighbors=relation,
        **TEST_NOISE[test],
    )
    res = agg(np.tile(counts, (draws, 1)), np.random.default_rng(0))
    assert res.answered.mean() >= 1 - delta_t
    # Every k is chosen, including no label (k = 0) and every label (k = L); each answer is the exact top-k set.
    assert set(np.unique(res.selected_k)) == set(range(num_labels + 1))
    for k in range(num_labels + 1):
        chosen = res.answered & (res.selected_k == k)
        assert np.all(res.labels[chosen] == true_top_k(counts, k))
        assert np.all(res.k[chosen] == k)
    assert np.all(res.k[~res.answered] == -1) and not res.labels[~res.answered].any()


@pytest.mark.parametrize("test", ["gaussian", "laplace"])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_histogram_whose_gaps_equal_the_sensitivity_is_answered_with_probability_at_most_delta_t(test, relation):
    delta_t, draws, num_labels = 0.1, 100_000, 5
    counts, teachers = evenly_spaced_counts(int(gap_sensitivity(relation)), num_labels)
    agg = StableTopK(
        num_labels,
        teachers,
        "gumbel",
        eps_select=1.0,
        test=test,
        delta_t=delta_t,
        neighbors=relation,
        **TEST_NOISE[test],
    )
    answered = agg(np.tile(counts, (draws, 1)), np.random.default_rng(1)).answered.mean()
    exact = stats.norm.sf(math.sqrt(2 * math.log(1 / delta_t))) if test == "gaussian" else delta_t / 2
    assert abs(answered - exact) <= 5 * math.sqrt(exact * (1 - exact) / draws)
    assert answered <= delta_t


@pytest.mark.parametrize(
    "selection", [dict(selection="gumbel", eps_select=2.0), dict(selection="laplace", sigma_select=2.0)]
)
def test_released_set_is_the_true_top_k_whenever_answered_with_a_gap_above_s(selection):
    rng = np.random.default_rng(2)
    num_queries, num_labels, teachers = 20_000, 10, 60
    levels = rng.integers(0, teachers + 1, size=(num_queries, 3))  # few distinct counts per query: real gaps
    counts = np.take_along_axis(levels, rng.integers(0, 3, size=(num_queries, num_labels)), axis=1)
    agg = StableTopK(num_labels, teachers, test="gaussian", sigma_test=2.0, delta_t=1e-3, **selection)
    res = agg(counts, np.random.default_rng(3))
    pads = np.full((num_queries, 1), teachers), np.zeros((num_queries, 1), int)
    padded = np.concatenate([pads[0], -np.sort(-counts, axis=1), pads[1]], axis=1)  # (T, decreasing counts, 0)
    gap_at_k = padded[np.arange(num_queries), res.selected_k] - padded[np.arange(num_queries), res.selected_k + 1]
    stable = res.answered & (gap_at_k > 2)
    assert stable.sum() > 5_000
    ranks = np.argsort(np.argsort(-counts, axis=1, kind="stable"), axis=1)  # 0 for the largest count
    np.testing.assert_array_equal(res.labels[stable], ranks[stable] < res.selected_k[stable, None])
    np.testing.assert_array_equal(res.k[stable], res.selected_k[stable])


def test_no_label_and_every_label_are_released():
    agg = StableTopK(3, 50, "gaussian", sigma_select=2.0, sigma_test=2.0, delta_t=1e-6)
    res = agg(np.array([[0, 0, 0], [50, 50, 50]]), np.random.default_rng(4))
    np.testing.assert_array_equal(res.answered, [True, True])
    np.testing.assert_array_equal(res.labels, [[False] * 3, [True] * 3])
    np.testing.assert_array_equal(res.k, [0, 3])


@pytest.mark.parametrize("selection", ["gumbel", "gaussian", "laplace"])
@pytest.mark.parametrize("test", ["gaussian", "laplace"])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_rdp_is_selection_plus_test_in_closed_form(selection, test, relation):
    s = gap_sensitivity(relation)
    select = dict(eps_select=0.6) if selection == "gumbel" else dict(sigma_select=7.0)
    check = dict(sigma_test=9.0) if test == "gaussian" else dict(eps_test=0.4)
    agg = StableTopK(12, 100, selection, test=test, delta_t=1e-8, neighbors=relation, **select, **check)
    o, m = cf.ORDERS, 13
    expected_select = {
        "gumbel": cf.exponential_mechanism(o, 0.6),
        "gaussian": cf.rnm(cf.gaussian(o, 7.0, 2 * s), o, m),
        "laplace": np.minimum(cf.rnm(cf.laplace(o, 7.0, 2 * s), o, m), cf.pure_dp(o, 2 * s / 7.0)),
    }[selection]
    expected_test = cf.gaussian(o, 9.0, s) if test == "gaussian" else cf.laplace(o, s / 0.4, s)
    np.testing.assert_allclose(agg.rdp(o), expected_select + expected_test, rtol=1e-10)
    assert agg.delta_per_query == 1e-8


def test_paper_setting_closed_form_and_ledger_composition():
    """Corollary 9 + Corollary 19 for the paper's setting; the ledger composes 600 queries of it."""
    agg = StableTopK(40, 800, "gaussian", sigma_select=50.0, sigma_test=60.0, delta_t=1e-9, neighbors="add_remove")
    o = cf.ORDERS
    np.testing.assert_allclose(agg.rdp(o), 2 * o / 50**2 + np.log(41) / (o - 1) + o / (2 * 60**2), rtol=1e-12)
    ledger = Ledger().compose(agg, count=600)
    np.testing.assert_allclose(ledger.rdp, 600 * agg.rdp(ledger.orders), rtol=1e-12)
    assert ledger.delta_t == pytest.approx(600e-9) and ledger.neighbors == "add_remove"
    split = Ledger().compose(agg.selection_mechanism, 600).compose(agg.test_mechanism, 600)
    assert split.get_epsilon(1e-6, "rdp").epsilon == pytest.approx(ledger.get_epsilon(1e-6, "rdp").epsilon, rel=1e-12)
    replace = Ledger().compose(StableTopK(40, 800, "gaussian", sigma_select=50.0, sigma_test=60.0, delta_t=1e-9), 600)
    assert (
        replace.get_epsilon(1e-6, "rdp").epsilon > ledger.get_epsilon(1e-6, "rdp").epsilon
    )  # gap sensitivity 2 instead of 1


def test_scale_noise_calibration_and_descriptions():
    agg = StableTopK(40, 800, "gumbel", eps_select=0.05, test="laplace", eps_test=0.1, delta_t=1e-9)
    scaled = agg.scale_noise(2.0)
    assert scaled.noise_parameters() == {"eps_select": 0.025, "eps_test": 0.05}
    gaussian = StableTopK(40, 800, "gaussian", sigma_select=50.0, sigma_test=60.0, delta_t=1e-9)
    assert gaussian.scale_noise(0.5).noise_parameters() == {"sigma_select": 25.0, "sigma_test": 30.0}
    assert "neighbors=replace" in gaussian.name and "delta_t=1e-09" in gaussian.name
    calibrated, multiplier = calibrate_noise(gaussian, target_epsilon=4.0, delta=1e-6, count=600)
    assert Ledger().compose(calibrated, 600).get_epsilon(1e-6, "rdp").epsilon <= 4.0
    assert calibrated.sigma_select / calibrated.sigma_test == pytest.approx(50 / 60)
    assert calibrated.sigma_select == pytest.approx(50.0 * multiplier)


def test_same_seed_same_result_and_torch_input():
    rng = np.random.default_rng(5)
    votes = rng.integers(0, 801, size=(10_000, 40))  # several blocks
    agg = StableTopK(40, 800, "gumbel", eps_select=0.5, sigma_test=5.0, delta_t=1e-3)
    first, second = agg(votes, np.random.default_rng(6)), agg(votes, np.random.default_rng(6))
    from_torch = agg(torch.from_numpy(votes), np.random.default_rng(6))
    for other in (second, from_torch):
        np.testing.assert_array_equal(first.labels, other.labels)
        np.testing.assert_array_equal(first.selected_k, other.selected_k)
    assert first.answered.any() and not first.answered.all()


def test_blocks_draw_noise_in_order_so_a_big_batch_equals_block_by_block_calls():
    """The batched call prefetches each block's noise in a helper thread; the draws must stay in block order."""
    agg = StableTopK(40, 800, "gaussian", sigma_select=20.0, sigma_test=5.0, delta_t=1e-3)
    block = stable_topk_module._BLOCK_SCORES // 41
    votes = np.random.default_rng(7).integers(0, 801, size=(3 * block + 17, 40))
    whole = agg(votes, np.random.default_rng(8))
    rng = np.random.default_rng(8)
    pieces = [agg(votes[start : start + block], rng) for start in range(0, len(votes), block)]
    np.testing.assert_array_equal(whole.selected_k, np.concatenate([piece.selected_k for piece in pieces]))
    np.testing.assert_array_equal(whole.labels, np.concatenate([piece.labels for piece in pieces]))
    np.testing.assert_array_equal(whole.k, np.concatenate([piece.k for piece in pieces]))


def test_empty_batch_and_protocol():
    agg = StableTopK(5, 10, "gumbel", eps_select=1.0, sigma_test=1.0, delta_t=0.01)
    res = agg(np.zeros((0, 5), dtype=int), np.random.default_rng(0))
    assert res.labels.shape == (0, 5) and res.answered.shape == res.k.shape == res.selected_k.shape == (0,)
    assert isinstance(agg, Aggregator)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(selection="top1"), r"selection must be one of \('gumbel', 'gaussian', 'laplace'\), got 'top1'"),
        (dict(selection="gumbel"), r"sigma_select=50.0 is not used by selection='gumbel', which takes eps_select"),
        (dict(eps_select=0.1), r"eps_select=0.1 is not used by selection='gaussian', which takes sigma_select"),
        (dict(selection="laplace", sigma_select=None), r"sigma_select is required by selection='laplace'"),
        (dict(selection="gaussian", sigma_select=0.0), r"sigma_select must be a finite number > 0, got 0.0"),
        (dict(selection="gumbel", sigma_select=None, eps_select=-1.0), r"eps_select must be a finite number > 0, got"),
        (dict(test="ptr"), r"test must be one of \('gaussian', 'laplace'\), got 'ptr'"),
        (dict(sigma_test=None, eps_test=0.5), r"eps_test=0.5 is not used by test='gaussian', which takes sigma_test"),
        (dict(test="laplace"), r"sigma_test=60.0 is not used by test='laplace', which takes eps_test"),
        (dict(test="laplace", sigma_test=None, eps_test=0.0), r"eps_test must be a finite number > 0, got 0.0"),
        (dict(sigma_test=-3.0), r"sigma_test must be a finite number > 0, got -3.0"),
        (dict(delta_t=0.0), r"delta_t must lie in the open interval \(0, 1\), got 0.0"),
        (dict(delta_t=1.0), r"delta_t must lie in the open interval \(0, 1\), got 1.0"),
        (dict(delta_t=None), r"delta_t must lie in the open interval \(0, 1\), got None"),
        (dict(neighbors="add"), r"neighbors must be one of \('replace', 'add_remove'\), got 'add'"),
        (dict(num_labels=0), r"num_labels must be an integer >= 1, got 0"),
        (dict(num_teachers=-5), r"num_teachers must be an integer >= 1, got -5"),
        (dict(num_teachers=800.0), r"num_teachers must be an integer >= 1, got 800.0"),
        (dict(regularizer=[0.0] * 40), r"regularizer must have one value per k = 0..num_labels, i.e. length 41"),
        (dict(max_k=41), r"max_k must be an integer in \[1, num_labels=40\], got 41"),
    ],
)
def test_arguments_are_checked(kwargs, match):
    arguments = dict(
        num_labels=40, num_teachers=800, selection="gaussian", sigma_select=50.0, sigma_test=60.0, delta_t=1e-9
    )
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=match):
        StableTopK(**arguments)


@pytest.mark.parametrize(
    "votes, match",
    [
        (np.array([[1, -2, 3]]), r"votes must be counts >= 0, got negative value -2"),
        (np.array([[1, 2.5, 3]]), r"votes must be whole-number counts, got fractional value 2.5"),
        (np.array([[1, 11, 3]]), r"votes must be counts <= num_teachers=10, got value 11"),
        (np.array([[1, 2]]), r"votes must be vote counts of shape \[queries, num_labels=3\], got shape \(1, 2\)"),
        (np.ones((2, 4, 3), dtype=int), r"votes must be vote counts of shape .* got shape \(2, 4, 3\)"),
    ],
)
def test_bad_votes_and_rng_are_refused(votes, match):
    agg = StableTopK(3, 10, "gaussian", sigma_select=1.0, sigma_test=1.0, delta_t=0.01)
    with pytest.raises(ValueError, match=match):
        agg(votes, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"rng must be a numpy.random.Generator"):
        agg(np.array([[1, 2, 3]]), 0)
