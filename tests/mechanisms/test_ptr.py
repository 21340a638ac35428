"""GapTest (PTR): answer probabilities against their exact values and the delta_t bound, Theorem 11's
reliable gap, RDP closed forms, argument checks. Monte Carlo tolerance: 5 binomial standard errors."""

import math

import numpy as np
import pytest
from scipy import stats

from pate.mechanisms import GapTest
from pate.privacy import gap_sensitivity
from tests.mechanisms import closed_forms as cf

DRAWS = 200_000


def make_test(test, relation, delta_t=0.1):
    noise = dict(sigma=3.0) if test == "gaussian" else dict(epsilon=0.8)
    return GapTest(test, delta_t=delta_t, neighbors=relation, **noise)


def exact_pass_probability(gap_test, gap):
    """Pr[max(s, q) + Z - margin > s]."""
    shift = max(gap, gap_test.sensitivity) - gap_test.sensitivity - gap_test.margin
    scale = gap_test.noise_scale
    dist = stats.norm(scale=scale) if gap_test.test == "gaussian" else stats.laplace(scale=scale)
    return dist.sf(-shift)


def pass_frequency(gap_test, gap, seed):
    return gap_test.passes(np.full(DRAWS, gap), np.random.default_rng(seed)).mean()


def within_tolerance(frequency, probability):
    return abs(frequency - probability) <= 5 * math.sqrt(probability * (1 - probability) / DRAWS) + 1e-12


@pytest.mark.parametrize("test", ["gaussian", "laplace"])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_gaps_up_to_the_sensitivity_are_answered_with_probability_at_most_delta_t(test, relation):
    gap_test = make_test(test, relation)
    s = int(gap_sensitivity(relation))
    # Exact value: the Gaussian tail at sqrt(2 log(1/delta_t)), or half delta_t for the Laplace test.
    exact = stats.norm.sf(math.sqrt(2 * math.log(10))) if test == "gaussian" else 0.05
    for gap in range(s + 1):  # 0 .. s: the released set could differ on a neighbour
        assert exact_pass_probability(gap_test, gap) == pytest.approx(exact)
        frequency = pass_frequency(gap_test, gap, seed=gap)
        assert within_tolerance(frequency, exact)
        assert frequency <= gap_test.delta_t


@pytest.mark.parametrize("test", ["gaussian", "laplace"])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_reliable_gap_is_answered_with_probability_at_least_one_minus_delta_t(test, relation):
    gap_test = make_test(test, relation, delta_t=0.05)
    s = gap_sensitivity(relation)
    if test == "gaussian":  # Theorem 11: s + 2 sigma sqrt(2 log(1/delta_t))
        assert gap_test.reliable_gap == pytest.approx(s + 2 * 3.0 * math.sqrt(2 * math.log(20)))
    else:  # Theorem 20 with beta = delta_t: s + 2 log(1/delta_t) / eps, at Laplace scale s / eps
        assert gap_test.reliable_gap == pytest.approx(s + 2 * (s / 0.8) * math.log(20))
    gap = math.ceil(gap_test.reliable_gap)
    frequency = pass_frequency(gap_test, gap, seed=7)
    assert within_tolerance(frequency, exact_pass_probability(gap_test, gap))
    assert frequency >= 1 - gap_test.delta_t


@pytest.mark.parametrize("test", ["gaussian", "laplace"])
def test_pass_probability_follows_the_noise_distribution_across_gaps(test):
    gap_test = make_test(test, "replace")
    for gap in (3, 8, 12, 20):
        assert within_tolerance(pass_frequency(gap_test, gap, seed=gap), exact_pass_probability(gap_test, gap))


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_rdp_closed_forms(relation):
    s = gap_sensitivity(relation)
    gaussian = GapTest("gaussian", delta_t=1e-9, sigma=60.0, neighbors=relation)
    np.testing.assert_allclose(gaussian.rdp(cf.ORDERS), cf.ORDERS * s**2 / (2 * 60.0**2), rtol=1e-12)
    laplace = GapTest("laplace", delta_t=1e-9, epsilon=0.3, neighbors=relation)
    np.testing.assert_allclose(laplace.rdp(cf.ORDERS), cf.laplace(cf.ORDERS, s / 0.3, s), rtol=1e-10)
    assert np.all(laplace.rdp(cf.ORDERS) <= 0.3)  # (eps, delta_t)-DP, Corollary 19
    assert gaussian.delta_per_query == laplace.delta_per_query == 1e-9
    assert gaussian.margin == pytest.approx(60.0 * math.sqrt(2 * math.log(1e9)))
    assert laplace.margin == pytest.approx(s / 0.3 * math.log(1e9))


def test_scale_noise_and_descriptions():
    gaussian = GapTest("gaussian", delta_t=0.01, sigma=2.0)
    laplace = GapTest("laplace", delta_t=0.01, epsilon=0.5, neighbors="add_remove")
    assert gaussian.scale_noise(3.0).sigma == 6.0 and laplace.scale_noise(2.0).epsilon == 0.25
    assert gaussian.noise_parameters() == {"sigma": 2.0} and laplace.noise_parameters() == {"epsilon": 0.5}
    assert "replace" in gaussian.name and "add_remove" in laplace.name and "delta_t=0.01" in gaussian.name


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(test="exponential", delta_t=0.1, sigma=1.0), r"test must be one of \('gaussian', 'laplace'\), got 'exp"),
        (dict(test="gaussian", delta_t=0.1, epsilon=1.0), r"epsilon=1.0 is not used by test='gaussian', which takes"),
        (dict(test="laplace", delta_t=0.1, sigma=1.0), r"sigma=1.0 is not used by test='laplace', which takes epsilon"),
        (dict(test="gaussian", delta_t=0.1, sigma=0.0), r"sigma must be a finite number > 0, got 0.0"),
        (dict(test="laplace", delta_t=0.1, epsilon=-2.0), r"epsilon must be a finite number > 0, got -2.0"),
        (dict(test="gaussian", delta_t=0.0, sigma=1.0), r"delta_t must lie in the open interval \(0, 1\), got 0.0"),
        (dict(test="gaussian", delta_t=1.0, sigma=1.0), r"delta_t must lie in the open interval \(0, 1\), got 1.0"),
        (dict(test="gaussian", delta_t=0.1, sigma=1.0, neighbors="edit"), r"neighbors must be one of .*got 'edit'"),
    ],
)
def test_arguments_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GapTest(**kwargs)
