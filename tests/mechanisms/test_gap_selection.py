"""GapSelection: output frequencies against the exact selection probabilities, a privacy audit on
worst-case neighbours, the RDP closed forms and argument checks. Seeds are fixed; tolerances are stated
per test (chi-square p-values are deterministic given the seed)."""

import numpy as np
import pytest

from pate.mechanisms import GapSelection
from pate.privacy import gap_sensitivity
from tests.mechanisms import closed_forms as cf

# Counts [9, 7, 4, 4] with T = 10: padded (10, 9, 7, 4, 4, 0), gaps q_j for j = 0..4.
COUNTS = np.array([9, 7, 4, 4])
TEACHERS = 10
GAPS = np.array([1, 2, 3, 0, 4])
DRAWS = 200_000


def selection_frequencies(selection, seed, draws=DRAWS, counts=COUNTS, teachers=TEACHERS):
    votes = np.tile(counts, (draws, 1))
    k = selection(votes, np.random.default_rng(seed))
    return np.bincount(k, minlength=len(counts) + 1)


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_gumbel_frequencies_match_the_exponential_mechanism(relation):
    selection = GapSelection(4, TEACHERS, "gumbel", epsilon=1.5, neighbors=relation)
    observed = selection_frequencies(selection, seed=0)
    expected = cf.softmax_probabilities(GAPS, 1.5, gap_sensitivity(relation))
    # Fit at the 1e-3 level; the same draws reject a mechanism with half the noise scale outright.
    assert cf.chi_square_pvalue(observed, expected) > 1e-3
    wrong = cf.softmax_probabilities(GAPS, 3.0, gap_sensitivity(relation))
    assert cf.chi_square_pvalue(observed, wrong) < 1e-12


def test_gumbel_with_regularizer_and_max_k_samples_the_restricted_softmax():
    regularizer = [0.0, 1.0, -np.inf, 0.5, -2.0]
    selection = GapSelection(4, TEACHERS, "gumbel", epsilon=2.0, regularizer=regularizer, max_k=3)
    observed = selection_frequencies(selection, seed=1)
    scores = GAPS + np.array(regularizer)
    scores[4] = -np.inf  # max_k = 3
    expected = cf.softmax_probabilities(scores, 2.0, 2.0)
    assert observed[2] == observed[4] == 0
    assert cf.chi_square_pvalue(observed, expected) > 1e-3
    assert selection.num_candidates == 3


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_noisy_max_frequencies_match_quadrature(noise):
    selection = GapSelection(4, TEACHERS, noise, sigma=1.5)
    observed = selection_frequencies(selection, seed=2)
    expected = cf.noisy_max_probabilities(GAPS, noise, 1.5)
    assert abs(expected.sum() - 1) < 1e-6
    assert cf.chi_square_pvalue(observed, expected) > 1e-3
    assert cf.chi_square_pvalue(observed, cf.noisy_max_probabilities(GAPS, noise, 3.0)) < 1e-12


def test_max_k_restricts_and_k_zero_and_k_all_are_reachable():
    votes = np.array([[0, 0, 0], [5, 5, 5]] * 500)
    k = GapSelection(3, 5, "gaussian", sigma=0.5)(votes, np.random.default_rng(3))
    np.testing.assert_array_equal(k[0::2], 0)  # all counts 0: the only non-zero gap is q_0 = T
    np.testing.assert_array_equal(k[1::2], 3)  # all counts T: the only non-zero gap is q_L = T
    restricted = GapSelection(3, 5, "gaussian", sigma=0.5, max_k=2)
    assert restricted.num_candidates == 3
    assert restricted(votes, np.random.default_rng(3)).max() <= 2


# Worst-case neighbouring pairs found by exhaustive search over L = 3, T <= 8 (largest exact log-ratio of
# an output with probability >= 0.05 under the exponential mechanism): one teacher's vote (1, 0, 1)
# replaced by (0, 1, 0), resp. removed.
AUDIT_PAIRS = {
    "replace": (8, np.array([8, 2, 1]), np.array([7, 3, 0])),
    "add_remove": (7, np.array([5, 4, 2]), np.array([4, 4, 1])),
}


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_privacy_audit_gumbel_log_ratio_stays_below_epsilon(relation):
    """Empirical privacy loss of every output on a worst-case pair, with a 4-standard-error margin."""
    epsilon, draws = 2.0, 400_000
    teachers, counts, neighbour = AUDIT_PAIRS[relation]
    selection = GapSelection(3, teachers, "gumbel", epsilon=epsilon, neighbors=relation)
    freq = selection_frequencies(selection, 4, draws, counts, teachers) / draws
    freq_neighbour = selection_frequencies(selection, 5, draws, neighbour, teachers) / draws
    seen = (freq > 0.01) & (freq_neighbour > 0.01)
    log_ratio = np.abs(np.log(freq[seen] / freq_neighbour[seen]))
    p, p_neighbour = freq[seen], freq_neighbour[seen]
    standard_error = np.sqrt((1 - p) / (draws * p) + (1 - p_neighbour) / (draws * p_neighbour))
    assert np.all(log_ratio - 4 * standard_error <= epsilon)
    # The pair is a hard one: the loss reaches 3/4 of epsilon, so half the noise (loss ~2x) would fail above.
    assert log_ratio.max() > 0.7 * epsilon


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
@pytest.mark.parametrize("max_k", [None, 5])
def test_rdp_closed_forms(relation, max_k):
    s = gap_sensitivity(relation)
    m = 11 if max_k is None else 6
    gumbel = GapSelection(10, 50, "gumbel", epsilon=0.7, neighbors=relation, max_k=max_k)
    np.testing.assert_allclose(gumbel.rdp(cf.ORDERS), cf.exponential_mechanism(cf.ORDERS, 0.7), rtol=1e-10)
    gaussian = GapSelection(10, 50, "gaussian", sigma=4.0, neighbors=relation, max_k=max_k)
    expected = cf.ORDERS * (2 * s) ** 2 / (2 * 4.0**2) + np.log(m) / (cf.ORDERS - 1)
    np.testing.assert_allclose(gaussian.rdp(cf.ORDERS), expected, rtol=1e-10)
    laplace = GapSelection(10, 50, "laplace", sigma=6.0, neighbors=relation, max_k=max_k)
    expected = np.minimum(cf.rnm(cf.laplace(cf.ORDERS, 6.0, 2 * s), cf.ORDERS, m), cf.pure_dp(cf.ORDERS, 2 * s / 6.0))
    np.testing.assert_allclose(laplace.rdp(cf.ORDERS), expected, rtol=1e-10)
    # Pure-DP caps: eps for Gumbel, 2 s / b for Laplace, at every order.
    assert np.all(gumbel.rdp(cf.ORDERS) <= 0.7 + 1e-12)
    assert np.all(laplace.rdp(cf.ORDERS) <= 2 * s / 6.0 + 1e-12)
    assert gaussian.delta_per_query == laplace.delta_per_query == gumbel.delta_per_query == 0.0


def test_regularizer_minus_inf_reduces_the_candidates_of_the_rnm_bound():
    regularizer = [0.0] * 6 + [-np.inf] * 5
    selection = GapSelection(10, 50, "gaussian", sigma=4.0, regularizer=regularizer)
    assert selection.num_candidates == 6
    restricted = GapSelection(10, 50, "gaussian", sigma=4.0, max_k=5)
    np.testing.assert_allclose(selection.rdp(cf.ORDERS), restricted.rdp(cf.ORDERS))


def test_scale_noise_and_descriptions():
    gumbel = GapSelection(10, 50, "gumbel", epsilon=0.8, neighbors="add_remove")
    assert gumbel.scale_noise(2.0).epsilon == 0.4 and gumbel.noise_scale == 2 * 1 / 0.8
    gaussian = GapSelection(10, 50, "gaussian", sigma=3.0)
    assert gaussian.scale_noise(2.0).sigma == 6.0
    assert np.all(gaussian.scale_noise(2.0).rdp(cf.ORDERS) < gaussian.rdp(cf.ORDERS))
    assert "add_remove" in gumbel.name and "replace" in gaussian.name
    assert gumbel.noise_parameters() == {"epsilon": 0.8} and gaussian.noise_parameters() == {"sigma": 3.0}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(selection="softmax", sigma=1.0), r"selection must be one of \('gumbel', 'gaussian', 'laplace'\), got"),
        (dict(selection="gumbel", sigma=1.0), r"sigma=1.0 is not used by selection='gumbel', which takes epsilon"),
        (dict(selection="gumbel", epsilon=0.0), r"epsilon must be a finite number > 0, got 0.0"),
        (dict(selection="gumbel"), r"epsilon is required by selection='gumbel'"),
        (dict(selection="gaussian", epsilon=1.0), r"epsilon=1.0 is not used by selection='gaussian', which takes sig"),
        (dict(selection="laplace", sigma=-1.0), r"sigma must be a finite number > 0, got -1.0"),
        (dict(selection="gaussian", sigma=float("inf")), r"sigma must be a finite number > 0, got inf"),
        (dict(selection="gaussian", sigma=1.0, neighbors="swap"), r"neighbors must be one of .*got 'swap'"),
        (dict(selection="gaussian", sigma=1.0, regularizer=[0.0] * 3), r"regularizer must have .* length 5, got shape"),
        (dict(selection="gaussian", sigma=1.0, regularizer=[0, np.nan, 0, 0, 0]), r"regularizer must be finite or"),
        (dict(selection="gaussian", sigma=1.0, regularizer=[0, np.inf, 0, 0, 0]), r"regularizer must be finite or"),
        (dict(selection="gaussian", sigma=1.0, regularizer=[-np.inf] * 5), r"regularizer excludes every k"),
        (dict(selection="gaussian", sigma=1.0, regularizer=[0.0, 0, -np.inf, -np.inf, -np.inf], max_k=1), None),
        (dict(selection="gaussian", sigma=1.0, regularizer=[-np.inf, -np.inf, 0, 0, 0], max_k=1), r"leaves no k"),
        (dict(selection="gaussian", sigma=1.0, max_k=0), r"max_k must be an integer >= 1, got 0"),
        (dict(selection="gaussian", sigma=1.0, max_k=5), r"max_k must be an integer in \[1, num_labels=4\], got 5"),
        (dict(selection="gaussian", sigma=1.0, max_k=2.0), r"max_k must be an integer >= 1, got 2.0"),
    ],
)
def test_arguments_are_checked(kwargs, match):
    if match is None:
        assert GapSelection(4, 10, **kwargs).num_candidates == 2
        return
    with pytest.raises(ValueError, match=match):
        GapSelection(4, 10, **kwargs)


@pytest.mark.parametrize(
    "num_labels, num_teachers, match",
    [(0, 10, r"num_labels must be an integer >= 1, got 0"), (4, 2.5, r"num_teachers must be an integer >= 1, got 2.5")],
)
def test_sizes_are_checked(num_labels, num_teachers, match):
    with pytest.raises(ValueError, match=match):
        GapSelection(num_labels, num_teachers, "gaussian", sigma=1.0)
