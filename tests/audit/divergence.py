"""Divergences of discrete output laws and Monte Carlo bounds on epsilon, the audit's yardsticks.

A law is a mapping output -> log-probability (outputs of zero probability may be left out). Log-probabilities
keep the tails exact: at order 32 a Renyi divergence is decided by outputs of probability 1e-20 and below.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import beta

__all__ = ["aligned", "clopper_pearson", "epsilon_lower_bound", "hockey_stick_epsilon", "renyi_divergence"]


def aligned(p: dict, q: dict) -> tuple[np.ndarray, np.ndarray]:
    """The log-probabilities of two laws over the union of their outputs (-inf where a law lacks one)."""
    keys = list(p) + [key for key in q if key not in p]
    return (np.array([p.get(key, -np.inf) for key in keys]), np.array([q.get(key, -np.inf) for key in keys]))


def renyi_divergence(log_p: np.ndarray, log_q: np.ndarray, orders) -> np.ndarray:
    """D_alpha(P || Q) = log(sum_o p_o^alpha q_o^(1 - alpha)) / (alpha - 1) for each order alpha > 1 (Mironov 2017,
    Definition 3), from log-probabilities over the same outputs: +inf if P puts mass where Q puts none."""
    log_p, log_q = np.asarray(log_p, np.float64), np.asarray(log_q, np.float64)
    support = np.isfinite(log_p)
    if np.any(support & ~np.isfinite(log_q)):
        return np.full(len(orders), np.inf)
    orders = np.asarray(orders, np.float64)[:, None]
    terms = orders * log_p[support] + (1.0 - orders) * log_q[support]
    return logsumexp(terms, axis=1) / (orders[:, 0] - 1.0)


def hockey_stick_epsilon(log_p: np.ndarray, log_q: np.ndarray, delta: float) -> float:
    """The smallest epsilon >= 0 with sum_o max(0, p_o - e^epsilon q_o) <= delta: the exact (epsilon, delta) of the
    pair in the direction P vs Q (Balle et al. 2018, Theorem 1, hockey-stick divergence). The excess is a
    decreasing, piecewise-linear function of e^epsilon, so a bisection on epsilon finds it; +inf when the mass
    P puts where Q puts none exceeds delta."""
    p, q = np.exp(log_p), np.exp(log_q)

    def excess(epsilon: float) -> float:
        return float(np.maximum(0.0, p - math.exp(epsilon) * q).sum())

    if excess(0.0) <= delta:
        return 0.0
    if np.sum(p[q == 0]) > delta:
        return math.inf
    low, high = 0.0, float(np.max(log_p[q > 0] - log_q[q > 0])) + 1.0
    for _ in range(100):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if excess(middle) <= delta else (middle, high)
    return high


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion at ``confidence`` (each side (1 - c) / 2)."""
    tail = (1.0 - confidence) / 2.0
    low = beta.ppf(tail, successes, trials - successes + 1) if successes > 0 else 0.0
    high = beta.ppf(1.0 - tail, successes + 1, trials - successes) if successes < trials else 1.0
    return float(low), float(high)


def epsilon_lower_bound(hits_p: int, hits_q: int, trials: int, delta: float, confidence: float) -> float:
    """A lower bound, holding with probability >= ``confidence``, on the epsilon of an (epsilon, delta)-DP mechanism
    from one output event E seen ``hits_p`` times in ``trials`` runs on P and ``hits_q`` times on Q: DP gives
    Pr_P[E] <= e^epsilon Pr_Q[E] + delta, so epsilon >= log((p_low - delta) / q_high) with p_low, q_high the ends of
    two-sided Clopper-Pearson intervals at ``confidence``: each one-sided end fails with probability
    (1 - confidence) / 2, so both hold with probability >= ``confidence`` (union bound). 0 when vacuous."""
    p_low = clopper_pearson(hits_p, trials, confidence)[0]
    q_high = clopper_pearson(hits_q, trials, confidence)[1]
    return max(0.0, math.log((p_low - delta) / q_high)) if p_low > delta else 0.0
