"""Composition rules for (epsilon, delta) statements: closed forms, orderings, dp-accounting cross-checks, solver."""

import math

import numpy as np
import pytest
from dp_accounting.pld import common, privacy_loss_distribution

from pate.privacy.composition import (
    advanced_composition,
    basic_composition,
    bounded_range_composition,
    replace_from_add_remove,
    solve_per_query,
    zcdp_epsilon,
    zcdp_rho_for,
)


def kairouz_optimal_epsilon(epsilon: float, count: int, delta: float) -> float:
    """Kairouz, Oh & Viswanath 2015, Theorem 3.3 (pure eps-DP, homogeneous): the smallest (k - 2i) eps with

    delta_i = sum_{l=0}^{i-1} C(k, l) (e^{(k-l) eps} - e^{(k-2i+l) eps}) / (1 + e^eps)^k <= delta.
    (Durfee & Rogers 2019 restate it as Lemma 4.5.) Written in log space for moderate k.
    """
    log_normaliser = count * math.log1p(math.exp(epsilon))
    for i in range(count // 2 + 1):
        terms = [
            math.comb(count, ell)
            * (
                math.exp((count - ell) * epsilon - log_normaliser)
                - math.exp((count - 2 * i + ell) * epsilon - log_normaliser)
            )
            for ell in range(i)
        ]
        if sum(terms) <= delta:
            best = (count - 2 * i) * epsilon
    return best


def test_basic_composition_closed_form():
    assert basic_composition(0.5, 1e-6, 3) == (pytest.approx(1.5), pytest.approx(3e-6))
    assert basic_composition(0.0, 0.0, 7) == (0.0, 0.0)


def test_advanced_composition_at_hand_computed_points():
    # eps = 0.1, count = 100, slack = 1e-5: sqrt(200 ln 1e5) 0.1 + 100 0.1 (e^0.1 - 1)
    # = 47.98526 * 0.1 + 10 * 0.1051709 = 4.798526 + 1.051709 = 5.850235 < basic 10.
    epsilon, delta = advanced_composition(0.1, 1e-6, 100, 1e-5)
    assert epsilon == pytest.approx(5.850235, rel=1e-6)
    assert delta == pytest.approx(100 * 1e-6 + 1e-5)
    # eps = 1, count = 3, slack = 1e-6: sqrt(6 ln 1e6) + 3 (e - 1) = 9.1048 + 5.1548 > 3 = basic, which wins.
    assert advanced_composition(1.0, 0.0, 3, 1e-6) == (pytest.approx(3.0), pytest.approx(1e-6))
    # slack 0: the advanced term is infinite, basic composition remains.
    assert advanced_composition(0.1, 1e-6, 100, 0.0) == (pytest.approx(10.0), pytest.approx(1e-4))


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("count", [1, 10, 1000])
def test_advanced_composition_is_the_minimum_with_basic(epsilon, count):
    slack = 1e-6
    advanced = math.sqrt(2 * count * math.log(1 / slack)) * epsilon + count * epsilon * math.expm1(epsilon)
    ours, _ = advanced_composition(epsilon, 0.0, count, slack)
    assert ours == pytest.approx(min(count * epsilon, advanced), rel=1e-12)
    assert ours <= basic_composition(epsilon, 0.0, count)[0]


def test_composition_bounds_are_monotone():
    epsilons = np.geomspace(1e-3, 3.0, 40)
    counts = [1, 2, 5, 20, 100, 1000]
    slacks = np.geomspace(1e-12, 0.5, 40)
    for rule in (lambda e, c, s: advanced_composition(e, 0.0, c, s)[0], bounded_range_composition):
        assert np.all(np.diff([rule(e, 50, 1e-6) for e in epsilons]) > 0)
        assert np.all(np.diff([rule(0.05, c, 1e-6) for c in counts]) > 0)
        assert np.all(np.diff([rule(0.05, 50, s) for s in slacks]) <= 0)


@pytest.mark.parametrize("epsilon, count, slack", [(0.1, 50, 1e-6), (0.05, 400, 1e-8), (0.5, 20, 1e-3)])
def test_advanced_composition_is_above_the_optimal_composition(epsilon, count, slack):
    ours, _ = advanced_composition(epsilon, 0.0, count, slack)
    optimal = kairouz_optimal_epsilon(epsilon, count, slack)
    # dp-accounting's pessimistic PLD of the worst-case eps-DP mechanism, self-composed: the optimal bound
    # up to discretisation (rounding up), a check of the closed form above.
    pld = privacy_loss_distribution.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon, 0.0))
    numerical = pld.self_compose(count).get_epsilon_for_delta(slack)
    assert numerical == pytest.approx(optimal, abs=2 * epsilon + 1e-3)
    assert max(optimal, numerical) <= ours


def test_bounded_range_composition_at_a_hand_computed_point():
    # eps = 0.1, k = 10, slack = 1e-6, ln(1/slack) = 13.815511:
    # term 1: 1.0; term 2: 10 * 0.1 * tanh(0.05) + 0.1 sqrt(20 * 13.815511) = 0.0499584 + 1.6622583 = 1.7122167;
    # term 3: 10 * 0.01 / 2 + 0.1 sqrt(10 * 13.815511 / 2) = 0.05 + 0.8311292 = 0.8811292 (the minimum).
    assert bounded_range_composition(0.1, 10, 1e-6) == pytest.approx(0.8811292, rel=1e-6)
    # eps = 0.01, k = 10000: term 2 = 100 tanh(0.005) + 0.01 sqrt(20000 * 13.815511) = 0.4999958 + 5.2565160.
    assert bounded_range_composition(0.01, 10_000, 1e-6) == pytest.approx(
        min(100.0, 5.7565118, 0.5 + 2.6282580), rel=1e-6
    )
    assert bounded_range_composition(0.3, 4, 1e-6) == pytest.approx(1.2)  # few mechanisms: basic wins
    assert bounded_range_composition(0.3, 4, 0.0) == pytest.approx(1.2)


@pytest.mark.parametrize("epsilon", [0.01, 0.2, 1.0])
@pytest.mark.parametrize("count", [1, 30, 3000])
def test_bounded_range_composition_never_exceeds_advanced_composition(epsilon, count):
    # tanh(eps / 2) <= e^eps - 1, so Lemma 4.4's second term is at most the advanced one.
    for slack in (1e-9, 1e-5, 1e-2):
        assert bounded_range_composition(epsilon, count, slack) <= advanced_composition(epsilon, 0.0, count, slack)[0]


def test_replace_from_add_remove_closed_form():
    assert replace_from_add_remove(0.5, 1e-6) == (pytest.approx(1.0), pytest.approx((1 + math.exp(0.5)) * 1e-6))
    assert replace_from_add_remove(3.0, 0.0) == (6.0, 0.0)
    assert replace_from_add_remove(800.0, 1e-9) == (1600.0, math.inf)  # no statement, and no overflow error


def test_replace_from_add_remove_is_tight_for_laplace_counts():
    # A Laplace(1/eps) count is eps-DP when one step moves it by 1; a replacement that moves it by 2 has
    # worst-case log-ratio exactly 2 eps, the pure part of the conversion.
    epsilon = 0.7
    log_ratio = lambda x, shift: epsilon * (abs(x - shift) - abs(x))  # noqa: E731
    worst_two_steps = max(log_ratio(x, 2.0) for x in np.linspace(-5, 5, 1001))
    assert worst_two_steps == pytest.approx(replace_from_add_remove(epsilon, 0.0)[0])


@pytest.mark.parametrize("rho", [1e-4, 0.05, 1.0, 20.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5])
def test_zcdp_conversion_round_trip(rho, delta):
    epsilon = zcdp_epsilon(rho, delta)
    assert epsilon == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)))
    assert zcdp_rho_for(epsilon, delta) == pytest.approx(rho, rel=1e-10)


def test_solve_per_query_round_trips():
    assert solve_per_query(2.0, lambda x: 8 * x, 1e-9, 10.0) == pytest.approx(0.25, rel=1e-11)
    compose = lambda x: advanced_composition(x, 0.0, 600, 1e-6)[0]  # noqa: E731
    solved = solve_per_query(4.0, compose, 1e-9, 4.0)
    assert compose(solved) <= 4.0  # exactly, in floating point
    assert compose(solved * (1 + 1e-9)) > 4.0


def test_solve_per_query_accepts_infinite_values_and_refuses_bad_brackets():
    assert solve_per_query(1.0, lambda x: x if x < 3 else math.inf, 1e-6, 10.0) == pytest.approx(1.0, rel=1e-11)
    with pytest.raises(ValueError, match=r"total=0\.5 is unreachable"):
        solve_per_query(0.5, lambda x: x + 1.0, 1e-6, 10.0)
    with pytest.raises(ValueError, match="bracket"):
        solve_per_query(5.0, lambda x: x, 1e-6, 2.0)
    with pytest.raises(ValueError, match="lo < hi"):
        solve_per_query(5.0, lambda x: x, 2.0, 1.0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: basic_composition(-0.1, 1e-6, 2), "epsilon"),
        (lambda: basic_composition(0.1, 1.5, 2), "delta"),
        (lambda: basic_composition(0.1, 1e-6, 0), "count"),
        (lambda: advanced_composition(0.1, 1e-6, 2.0, 1e-6), "count"),
        (lambda: advanced_composition(0.1, 1e-6, 2, 1.0), "delta_slack"),
        (lambda: advanced_composition(0.1, 1e-6, 2, -1e-6), "delta_slack"),
        (lambda: bounded_range_composition(math.inf, 2, 1e-6), "epsilon"),
        (lambda: bounded_range_composition(0.1, True, 1e-6), "count"),
        (lambda: replace_from_add_remove(0.1, -1e-9), "delta"),
        (lambda: solve_per_query(0.0, lambda x: x, 1e-3, 1.0), "total"),
    ],
)
def test_argument_checks(call, name):
    with pytest.raises(ValueError, match=name):
        call()
