"""The audit's yardsticks against closed forms: the Renyi divergence of two Gaussians, the exact epsilon of
randomized response, Clopper-Pearson's coverage ends, the integrated report-noisy-max law."""

import math

import numpy as np
import pytest
from scipy.special import log_ndtr

from tests.audit.divergence import clopper_pearson, epsilon_lower_bound, hockey_stick_epsilon, renyi_divergence
from tests.audit.laws import argmax_log_probs


def test_the_divergence_of_finely_binned_gaussians_approaches_alpha_mu_squared_over_two():
    """N(0, 1) vs N(1, 1) binned on a fine grid: D_alpha -> alpha / 2 (Mironov 2017, Proposition 7)."""
    edges = np.linspace(-30, 30, 60001)
    log_p = np.log(np.diff(np.exp(log_ndtr(edges))) + 1e-300)
    log_q = np.log(np.diff(np.exp(log_ndtr(edges - 1.0))) + 1e-300)
    orders = np.array([2.0, 4.0, 8.0])
    np.testing.assert_allclose(renyi_divergence(log_p, log_q, orders), orders / 2.0, rtol=1e-3)


def test_mass_where_the_other_law_has_none_is_infinite():
    assert np.all(np.isinf(renyi_divergence(np.log([0.5, 0.5]), np.array([0.0, -np.inf]), [2.0])))


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_randomized_response_has_its_epsilon_exactly(epsilon):
    p = math.exp(epsilon) / (1.0 + math.exp(epsilon))
    log_p, log_q = np.log([p, 1.0 - p]), np.log([1.0 - p, p])
    assert hockey_stick_epsilon(log_p, log_q, 0.0) == pytest.approx(epsilon, abs=1e-9)
    assert hockey_stick_epsilon(log_p, log_q, 1e-3) < epsilon


def test_clopper_pearson_matches_its_closed_form_at_zero_successes():
    """0 of n: the upper end solves (1 - p)^n = (1 - c) / 2."""
    low, high = clopper_pearson(0, 1000, 0.999)
    assert low == 0.0 and high == pytest.approx(1.0 - 0.0005 ** (1 / 1000), rel=1e-9)
    assert epsilon_lower_bound(5, 500, 1000, 0.0, 0.999) == 0.0


@pytest.mark.parametrize("kind", ["gaussian", "laplace", "gumbel"])
def test_the_integrated_argmax_law_sums_to_one_and_matches_gumbel_softmax(kind):
    scores = np.array([0.0, 1.0, 3.0, 3.0])
    log_probs = argmax_log_probs(scores, kind, 1.5)
    assert np.exp(log_probs).sum() == pytest.approx(1.0, abs=1e-7)
    if kind == "gumbel":  # Gumbel-max: Pr[j] = softmax(scores / scale)_j
        softmax = np.exp(scores / 1.5) / np.exp(scores / 1.5).sum()
        np.testing.assert_allclose(np.exp(log_probs), softmax, rtol=1e-9)
