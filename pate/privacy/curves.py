"""Renyi-DP curves of the basic mechanisms: pure functions, vectorised over the orders.

Each function takes ``orders`` (any shape, every entry finite and > 1) and returns a float64 array of
the same shape holding eps(alpha): the mechanism is (alpha, eps(alpha))-RDP for every alpha given.
Sensitivities come from ``pate.privacy.sensitivity``; these functions never assume a relation.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from pate.privacy import checks

__all__ = [
    "gaussian_rdp",
    "laplace_rdp",
    "pure_dp_rdp",
    "exponential_mechanism_rdp",
    "report_noisy_max_rdp",
    "poisson_sampled_gaussian_rdp",
    "poisson_sampled_gaussian_replace_rdp",
]


def gaussian_rdp(orders, sigma: float, sensitivity: float) -> np.ndarray:
    """Gaussian mechanism N(f(D), sigma^2 I) with L2 sensitivity s: eps(alpha) = alpha s^2 / (2 sigma^2).

    Source: Mironov 2017, "Renyi Differential Privacy", Proposition 7 (exact: the Renyi divergence
    of two Gaussians with common covariance sigma^2 I and means at distance s).
    """
    orders = checks.orders_array(orders)
    sigma = checks.positive("sigma", sigma)
    sensitivity = checks.positive("sensitivity", sensitivity)
    return orders * (sensitivity**2 / (2.0 * sigma**2))


def laplace_rdp(orders, scale: float, sensitivity: float) -> np.ndarray:
    """Laplace mechanism f(D) + Lap(scale) with L1 sensitivity s, eps = s / scale:

        eps(alpha) = 1/(alpha-1) log( alpha/(2alpha-1) e^{(alpha-1) eps} + (alpha-1)/(2alpha-1) e^{-alpha eps} )

    Source: Mironov 2017, Proposition 6 (exact for a scalar query). Evaluated as the algebraically
    equal form eps + log1p( (alpha-1)/(2alpha-1) expm1(-(2alpha-1) eps) ) / (alpha-1): the log1p
    argument lies in (-1/2, 0], so nothing overflows at large alpha * eps, and there is no
    cancellation for small eps (where eps(alpha) ~ alpha eps^2 / 2), unlike a logaddexp of the two terms.

    Vector queries (coordinate-wise Laplace noise, ||f(D) - f(D')||_1 <= s): the divergence is the sum
    of the scalar curves g(|d_i| / scale) over coordinates. g(t) is a positively weighted log-sum-exp
    of linear functions of t divided by alpha - 1, hence convex, and g(0) = 0, so g is superadditive
    on [0, inf): sum_i g(t_i) <= g(sum_i t_i) <= g(s / scale). The same curve therefore holds.
    """
    orders = checks.orders_array(orders)
    scale = checks.positive("scale", scale)
    sensitivity = checks.positive("sensitivity", sensitivity)
    eps = sensitivity / scale
    am1 = orders - 1.0
    return eps + np.log1p(am1 / (2.0 * orders - 1.0) * np.expm1(-(2.0 * orders - 1.0) * eps)) / am1


def pure_dp_rdp(orders, epsilon: float) -> np.ndarray:
    """Tightest RDP curve implied by epsilon-DP alone: that of binary randomized response,

        eps(alpha) = 1/(alpha-1) log( (e^{alpha eps} + e^{(1-alpha) eps}) / (1 + e^{eps}) )
                   = 1/(alpha-1) log( (sinh(alpha eps) - sinh((alpha-1) eps)) / sinh(eps) ).

    Sources: Bun & Steinke 2016, "Concentrated Differential Privacy: Simplifications, Extensions, and
    Lower Bounds", Proposition 3.3 and its proof (this sinh form; it implies the familiar
    eps(alpha) <= min(eps, alpha eps^2 / 2)); Steinke 2022, "Tight RDP & zCDP bounds from pure DP"
    (differentialprivacy.org/pdp-to-zcdp) for optimality. Why it holds: every epsilon-DP pair of
    output distributions is a post-processing of the randomized-response pair
    P = (e^eps, 1) / (1 + e^eps), Q = (1, e^eps) / (1 + e^eps) (Kairouz, Oh & Viswanath 2015), so by the
    data-processing inequality its Renyi divergence is at most D_alpha(P || Q), the expression above;
    randomized response attains it, so no curve depending on eps alone is smaller.

    Evaluation: the ratio inside the log equals 1 + x with
    x = expm1((alpha-1) eps) * (-expm1(-alpha eps)) * e^eps / (1 + e^eps) > 0,
    computed in log space and passed to logaddexp(0, log x) = log1p(x): exact to rounding for tiny
    eps (no cancellation) and free of overflow at large alpha * eps.
    """
    orders = checks.orders_array(orders)
    epsilon = checks.positive("epsilon", epsilon)
    am1 = orders - 1.0
    log_x = (
        am1 * epsilon
        + np.log(-np.expm1(-am1 * epsilon))
        + np.log(-np.expm1(-orders * epsilon))
        - np.logaddexp(0.0, -epsilon)
    )
    return np.logaddexp(0.0, log_x) / am1


def exponential_mechanism_rdp(orders, epsilon: float) -> np.ndarray:
    """Exponential mechanism (or one-shot Gumbel noise) that is epsilon-bounded-range:

        eps(alpha) = min( pure_dp_rdp(alpha, eps), alpha eps^2 / 8 ).

    ``epsilon`` is the bounded-range parameter: for sampling proportional to exp(eta u(D, r)) with
    utility sensitivity Delta it is 2 eta Delta, or eta Delta when the utilities of neighbours move in
    one direction only (Durfee & Rogers 2019, Definition 4.2 and Lemma 4.3). epsilon-BR implies
    epsilon-DP (ibid., Corollary 4.2), hence the first term (see ``pure_dp_rdp``); epsilon-BR implies (eps^2 / 8)-zCDP (Cesar & Rogers 2021,
    "Bounding, Concentrating, and Truncating", Lemma 17; Hoeffding's lemma on the privacy loss, which
    lies in an interval of length eps), hence the second. Zhu & Wang 2022, Proposition 7 states the
    same two bounds for their Algorithm 1 (Gumbel(2 / eps) noise on gaps of sensitivity 1).
    """
    orders = checks.orders_array(orders)
    epsilon = checks.positive("epsilon", epsilon)
    return np.minimum(pure_dp_rdp(orders, epsilon), orders * (epsilon**2 / 8.0))


def report_noisy_max_rdp(orders, base_rdp, num_candidates: int) -> np.ndarray:
    """Report-noisy-max over m candidates with i.i.d. additive noise whose scalar release is eps_g(alpha)-RDP:

        eps(alpha) = eps_g(alpha) + log(m) / (alpha - 1).

    Source: Zhu & Wang 2022, Theorem 8 (restated as Theorem 21); with Gaussian noise N(0, sigma^2) and
    gap sensitivity Delta, eps_g = ``gaussian_rdp(orders, sigma, Delta)`` gives Corollary 9
    (2 alpha / sigma^2 + log(m)/(alpha-1) for the paper's Delta = 2). ``base_rdp`` must be the
    scalar mechanism's curve on ``orders`` for the sensitivity the theorem assumes, which the
    caller takes from ``pate.privacy.sensitivity``. m = 1 leaves the curve unchanged.
    """
    orders = checks.orders_array(orders)
    base_rdp = checks.rdp_array(base_rdp, orders, name="base_rdp")
    num_candidates = checks.positive_int("num_candidates", num_candidates)
    return base_rdp + np.log(num_candidates) / (orders - 1.0)


def poisson_sampled_gaussian_rdp(orders, sampling_rate: float, noise_multiplier: float) -> np.ndarray:
    """One step of the Poisson-sampled Gaussian mechanism, neighbours adding or removing one record:

        eps(alpha) = log( sum_{k=0}^{alpha} C(alpha, k) (1 - q)^{alpha - k} q^k exp((k^2 - k) / (2 sigma^2)) ) / (alpha - 1)

    for integer alpha >= 2, q the sampling rate and sigma the noise multiplier (noise standard deviation over
    the clipping norm). Source: Mironov, Talwar & Zhang 2019, "Renyi Differential Privacy of the Sampled
    Gaussian Mechanism", Section 3.3 (the integer-order expansion of A_alpha, exact there). A fractional order
    is charged the curve of the next integer, ceil(alpha) (at least 2): the Renyi divergence is non-decreasing
    in its order (van Erven & Harremoes 2014, "Renyi Divergence and Kullback-Leibler Divergence", Theorem 3),
    so eps(alpha) <= eps(ceil(alpha)) is a valid, slightly loose, bound. q = 1 gives alpha / (2 sigma^2),
    the Gaussian curve at sensitivity 1. Evaluated in log space (log-binomials, log-sum-exp): no overflow at large
    alpha.
    """
    orders = checks.orders_array(orders)
    rate = checks.sampling_rate("sampling_rate", sampling_rate)
    sigma = checks.positive("noise_multiplier", noise_multiplier)
    integer = np.maximum(np.ceil(orders), 2.0)
    values = {alpha: _sampled_gaussian_integer_order(int(alpha), rate, sigma) for alpha in np.unique(integer)}
    return np.vectorize(values.__getitem__, otypes=[np.float64])(integer)


def _sampled_gaussian_integer_order(alpha: int, rate: float, sigma: float) -> float:
    """eps(alpha) of ``poisson_sampled_gaussian_rdp`` at an integer order alpha >= 2."""
    if rate == 1.0:
        return alpha / (2.0 * sigma**2)
    k = np.arange(alpha + 1, dtype=np.float64)
    # log C(alpha, k) = sum_{j=1}^{k} log((alpha - j + 1) / j), accumulated (rounding ~1e-12 relative at 1e5 terms)
    log_binomial = np.concatenate([[0.0], np.cumsum(np.log(alpha - k[1:] + 1.0) - np.log(k[1:]))])
    # A_alpha - 1 = sum_{k>=2} C(alpha, k) (1 - q)^{alpha - k} q^k (exp((k^2 - k) / (2 sigma^2)) - 1), by the binomial
    # theorem (the k = 0 and 1 terms have exponent 0): every term is positive, so a tiny A_alpha - 1 is not lost to
    # cancellation against 1, as summing A_alpha itself would lose it (a negative order-2 value at q 1e-9)
    k = k[2:]
    exponent = (k * k - k) / (2.0 * sigma**2)
    log_expm1 = exponent + np.log(-np.expm1(-exponent))  # log(exp(c) - 1), stable for every c > 0
    terms = log_binomial[2:] + (alpha - k) * math.log1p(-rate) + k * math.log(rate) + log_expm1
    top = terms.max()
    log_excess = top + math.log(np.exp(terms - top).sum())  # log(A_alpha - 1)
    return float(np.logaddexp(0.0, log_excess) / (alpha - 1))


def poisson_sampled_gaussian_replace_rdp(orders, sampling_rate: float, noise_multiplier: float) -> np.ndarray:
    """One step of the Poisson-sampled Gaussian mechanism, neighbours that REPLACE one record: one of two valid
    bounds at each order.

    1. The exact divergence of the dominating pair, by quadrature (orders <= 256):

           eps(alpha) = log( integral P(x)^alpha R(x)^(1 - alpha) dx ) / (alpha - 1),
           P = (1 - q) N(0, s^2) + q N(-1, s^2),   R = (1 - q) N(0, s^2) + q N(+1, s^2)

       with s the noise multiplier: the record's clipped contribution (norm <= 1) is in the batch with
       probability q on both sides, and the worst case puts the two contributions at opposite ends of a
       diameter. This is the pair dp-accounting's PLD accountant uses for REPLACE_ONE (``GaussianPrivacyLoss``
       with ``AdjacencyType.REPLACE``; Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, "Connect the Dots",
       supplementary material); tests/privacy/test_poisson_replace.py checks that no other pair of contributions
       in the unit disc diverges more. The integrand is evaluated in log space on a grid of step s / 16 from
       20 s beyond its modes on either side (x near 0, and between 1 - 2 alpha and -alpha); the trapezoid rule's
       error there is far below 1e-9 relative. The pair is symmetric, so D(P || R) = D(R || P).
    2. Joint convexity, in closed form (every order):

           eps(alpha) <= log( 1 - q + q exp(2 alpha (alpha - 1) / s^2) ) / (alpha - 1)

       since (P, R) -> integral P^alpha R^(1 - alpha) is jointly convex for alpha > 1 (the perspective of
       t -> t^alpha; van Erven & Harremoes 2014, "Renyi Divergence and Kullback-Leibler Divergence", Section VI),
       the two mixtures share the weight (1 - q) on N(0, s^2), and N(a, s^2) against N(b, s^2) with |a - b| <= 2
       is the Gaussian at sensitivity 2 (Mironov 2017, Proposition 7). Used above order 256 (a grid there would be
       long; the bound approaches the exact divergence as alpha grows) and wherever the quadrature's grid cannot
       be trusted.

    q = 1 gives 2 alpha / s^2, the Gaussian curve at sensitivity 2 (checked by a test). Results are cached per
    (q, s, order): a calibration asks for the same curve many times.
    """
    orders = checks.orders_array(orders)
    rate = checks.sampling_rate("sampling_rate", sampling_rate)
    sigma = checks.positive("noise_multiplier", noise_multiplier)
    values = {float(alpha): _replace_bound(float(alpha), rate, sigma) for alpha in np.unique(orders)}
    return np.vectorize(values.__getitem__, otypes=[np.float64])(orders)


QUADRATURE_MAX_ORDER = 256.0
STEPS_PER_SIGMA = 16.0  # trapezoid on a smooth, Gaussian-tailed integrand: error ~exp(-2 pi^2 16^2), nil


@functools.lru_cache(maxsize=65536)
def _replace_bound(alpha: float, rate: float, sigma: float) -> float:
    bound = replace_convexity_bound(alpha, rate, sigma)
    if alpha <= QUADRATURE_MAX_ORDER:
        exact = _replace_pair_divergence(alpha, rate, sigma)
        if exact is not None:
            return min(exact, bound)  # both upper bounds (the quadrature's rounded up by its rounding error)
    return bound


def replace_convexity_bound(alpha: float, rate: float, sigma: float) -> float:
    """Bound 2 of ``poisson_sampled_gaussian_replace_rdp``: log(1 - q + q exp(2 alpha (alpha - 1) / s^2)) / (alpha - 1),
    as log1p(q expm1(c)) for a small exponent c (no cancellation of 1 - q against q e^c) and in log space above."""
    shifted = 2.0 * alpha * (alpha - 1.0) / sigma**2
    if shifted < 1.0:
        return math.log1p(rate * math.expm1(shifted)) / (alpha - 1.0)
    log_one_minus = math.log1p(-rate) if rate < 1 else -math.inf
    return float(np.logaddexp(log_one_minus, math.log(rate) + shifted) / (alpha - 1.0))


def _replace_pair_divergence(alpha: float, rate: float, sigma: float) -> float | None:
    """D_alpha(P || R) of the dominating replace pair (``poisson_sampled_gaussian_replace_rdp``, bound 1), or
    None where the grid's ends still carry mass (then the caller uses bound 2). The log-integrand peaks between
    x = 1 - 2 alpha (where q N(-1) and q N(+1) dominate) and x = -alpha (q N(-1) over (1 - q) N(0))."""
    x = np.arange(-2.0 * alpha - 2.0 - 20.0 * sigma, 2.0 + 20.0 * sigma, sigma / STEPS_PER_SIGMA)
    unsampled = math.log1p(-rate) - x * x / (2 * sigma**2) if rate < 1 else -np.inf

    def log_mixture(contribution: float) -> np.ndarray:
        """log of (1 - q) N(0, s^2) + q N(contribution, s^2) at x, without the common normalising constant."""
        return np.logaddexp(unsampled, math.log(rate) - (x - contribution) ** 2 / (2 * sigma**2))

    powered = alpha * log_mixture(-1.0), (1.0 - alpha) * log_mixture(1.0)
    log_integrand = powered[0] + powered[1] - math.log(sigma * math.sqrt(2 * math.pi))
    top = log_integrand.max()
    if max(log_integrand[0], log_integrand[-1]) > top - 60.0:
        return None
    weights = np.full(x.shape, sigma / STEPS_PER_SIGMA)
    weights[[0, -1]] /= 2.0  # trapezoid rule
    log_integral = top + math.log(np.sum(weights * np.exp(log_integrand - top)))
    # the integral is >= 1, so a tiny divergence is a tiny excess over 1 that the sum's rounding can erase (0 where
    # the true value is 2e-14): the result is rounded up by a bound on that rounding, the
    # relative error of n positive terms (n u) and of each term's exponent (u times its magnitude), 4 u each
    magnitude = float(np.max(np.abs(powered[0]) + np.abs(powered[1])))
    rounding = 4.0 * np.finfo(np.float64).eps * (x.size + magnitude + abs(top) + 1.0)
    return (max(log_integral, 0.0) + rounding) / (alpha - 1.0)
