"""Closed forms written out independently of pate.privacy, for the tests to compare against.

Valid for the moderate orders and epsilons the tests use (no overflow handling).
"""

import numpy as np
from scipy import integrate, stats

ORDERS = np.array([1.25, 1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0])


def gaussian(orders, sigma, sensitivity):
    """Mironov 2017, Proposition 7: alpha s^2 / (2 sigma^2)."""
    return orders * sensitivity**2 / (2 * sigma**2)


def laplace(orders, scale, sensitivity):
    """Mironov 2017, Proposition 6, with lambda = s / b."""
    lam = sensitivity / scale
    a = orders
    return np.log(a / (2 * a - 1) * np.exp((a - 1) * lam) + (a - 1) / (2 * a - 1) * np.exp(-a * lam)) / (a - 1)


def pure_dp(orders, eps):
    """Bun & Steinke 2016, Proposition 3.3: log((sinh(a eps) - sinh((a-1) eps)) / sinh(eps)) / (a - 1)."""
    a = orders
    return np.log((np.sinh(a * eps) - np.sinh((a - 1) * eps)) / np.sinh(eps)) / (a - 1)


def exponential_mechanism(orders, eps):
    """Zhu & Wang 2022, Proposition 7: min(pure eps-DP curve, alpha eps^2 / 8)."""
    return np.minimum(pure_dp(orders, eps), orders * eps**2 / 8)


def rnm(base, orders, num_candidates):
    """Zhu & Wang 2022, Theorem 8: base + log(m) / (alpha - 1)."""
    return base + np.log(num_candidates) / (orders - 1)


def softmax_probabilities(scores, eps, sensitivity):
    """Exponential mechanism: Pr[j] proportional to exp(eps u(j) / (2 s)) (-inf scores get 0)."""
    weights = np.exp(eps * (np.asarray(scores, float) - np.max(scores)) / (2 * sensitivity))
    return weights / weights.sum()


def noisy_max_probabilities(scores, noise, scale):
    """Pr[argmax_j scores_j + Z_j = j] for i.i.d. Gaussian(0, scale^2) or Laplace(0, scale) noise, by quadrature."""
    dist = stats.norm(scale=scale) if noise == "gaussian" else stats.laplace(scale=scale)
    scores = np.asarray(scores, float)
    probabilities = []
    for j, score in enumerate(scores):
        others = np.delete(scores, j)

        def density(x):  # Z_j = x wins iff score_j + x > score_i + Z_i for all i != j
            return dist.pdf(x) * np.prod(dist.cdf(score - others + x))

        breakpoints = list(others - score) + [0.0]
        total = sum(
            integrate.quad(density, lo, hi, epsabs=1e-12, limit=200)[0]
            for lo, hi in zip([-np.inf, *sorted(breakpoints)], [*sorted(breakpoints), np.inf])
        )
        probabilities.append(total)
    return np.array(probabilities)


def chi_square_pvalue(observed_counts, probabilities):
    """Pearson chi-square goodness of fit p-value (bins with probability 0 must be empty)."""
    observed_counts = np.asarray(observed_counts, float)
    probabilities = np.asarray(probabilities, float)
    assert np.all(observed_counts[probabilities == 0] == 0)
    keep = probabilities > 0
    expected = observed_counts.sum() * probabilities[keep]
    statistic = np.sum((observed_counts[keep] - expected) ** 2 / expected)
    return stats.chi2.sf(statistic, df=keep.sum() - 1)
