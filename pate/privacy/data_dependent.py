"""Data-dependent Renyi-DP of noisy-max and threshold releases (Papernot et al. 2018, "Scalable Private Learning
with PATE", ICLR; its reference code is tensorflow/privacy's research/pate_2018/core.py).

A data-dependent bound holds for the vote histogram at hand and every neighbour of it, not for every pair of
neighbours: it is **not by itself a DP guarantee** (its value depends on the private votes). The ledger marks a
curve built from these functions ``data_dependent`` and never reports it as a run's epsilon; what makes it one is
a private test of it (``pate.mechanisms.dd_release``).

The functions are vectorised over histograms (leading axes) and orders (last axis of the result), and state the
data-independent curve they improve on by a ``scale``: a mechanism that is (alpha, alpha / scale^2)-RDP, i.e. a
Gaussian mechanism whose sensitivity / sigma is sqrt(2) / scale. For GNMax over a histogram in which one vote
moves from a class to another (PATE 2018's neighbours) scale = sigma (Proposition 8); where one vote is added to
or removed from one class of a histogram of true counts, it moves by 1 in one class and scale = sqrt(2) sigma.
Which applies is decided by what the mechanism reads: binary voting derives "no" as T - yes with T configured, so
one teacher moves a vote between its two classes under both relations and its scale is sigma under both
(``pate.privacy.sensitivity.binary_vote_l2_sensitivity``). Theorem 6 needs nothing but that curve and an
upper bound q on Pr[outcome != the likely one], so it holds with the scale of the neighbours the input has.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from pate.privacy import checks

__all__ = [
    "gnmax_log_q",
    "data_dependent_rdp",
    "threshold_log_pass",
    "threshold_log_fail",
    "threshold_data_dependent_rdp",
    "screened_rdp",
    "log1mexp",
]


def log1mexp(x):
    """log(1 - exp(x)) for x <= 0, elementwise and stable (log1p(-e^x) below -1, log(-expm1(x)) above);
    -inf at x = 0. (Maechler 2012, "Accurately computing log(1 - exp(-|a|))".)"""
    x = np.asarray(x, dtype=np.float64)
    if np.any(x > 0):
        raise ValueError(f"log1mexp needs x <= 0, got a maximum of {x.max()!r}")
    with np.errstate(divide="ignore"):
        return np.where(x < -1.0, np.log1p(-np.exp(np.minimum(x, -1.0))), np.log(-np.expm1(np.minimum(x, 0.0))))


def _log_normal_sf(x, scale: float) -> np.ndarray:
    """log Pr[N(0, scale^2) > x], accurate in both tails (scipy.special.log_ndtr)."""
    return log_ndtr(-np.asarray(x, dtype=np.float64) / scale)


def gnmax_log_q(counts, sigma: float) -> np.ndarray:
    """log q: an upper bound on log Pr[GNMax's output != argmax of ``counts``], one per histogram.

        q = min( sum_{i != i*} Pr[N(0, 2 sigma^2) > n_{i*} - n_i],  1 - 1/m )

    Papernot et al. 2018, Proposition 7 (a union bound over the m - 1 other classes; the cap at 1 - 1/m is the
    reference code's, so that q never exceeds the uniform outcome's). ``counts`` [..., m] (m >= 2) of any real
    type; ``sigma`` the Gaussian noise's standard deviation on every count. The argmax is the first of tied
    maxima, as numpy's argmax; the bound does not depend on that choice.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim < 1 or counts.shape[-1] < 2:
        raise ValueError(f"counts must have at least 2 classes on its last axis, got shape {counts.shape}")
    if not np.all(np.isfinite(counts)):
        raise ValueError("counts must be finite")
    sigma = checks.positive("sigma", sigma)
    m = counts.shape[-1]
    top = np.argmax(counts, axis=-1)
    gaps = np.take_along_axis(counts, top[..., None], axis=-1) - counts  # >= 0, 0 at the argmax
    terms = _log_normal_sf(gaps, math.sqrt(2.0) * sigma)
    np.put_along_axis(terms, top[..., None], -np.inf, axis=-1)  # the argmax is not an "other" class
    return np.minimum(np.logaddexp.reduce(terms, axis=-1), math.log(1.0 - 1.0 / m))


def data_dependent_rdp(log_q, orders, scale: float) -> np.ndarray:
    """Data-dependent RDP of a mechanism that is (alpha, alpha / scale^2)-RDP at every order and whose likely
    outcome fails with probability at most q = exp(``log_q``), at the given ``orders``: shape log_q.shape +
    orders.shape[-1:] (``orders`` 1-D).

    Papernot et al. 2018, Theorem 6, with the two higher orders of Proposition 10:
    mu2 = scale sqrt(log(1/q)), mu1 = mu2 + 1, eps_i = mu_i / scale^2. Where lambda < mu1, mu2 > 1,
    q <= exp((mu2 - 1) eps2) / (mu1/(mu1-1) * mu2/(mu2-1))^mu2 and log(1/q) > eps2,

        eps(lambda) <= 1/(lambda-1) log( (1-q) A^(lambda-1) + q B^(lambda-1) ),
        A = (1-q) / (1 - (q e^eps2)^((mu2-1)/mu2)),   B = e^eps1 / q^(1/(mu1-1)),

    and the smaller of that and the data-independent lambda / scale^2 is returned; elsewhere the
    data-independent value. q = 0 (the outcome is fixed) costs nothing. The same arithmetic in log space as the
    reference code (research/pate_2018/core.py, ``rdp_gaussian``), so the two agree to rounding.
    """
    log_q = np.asarray(log_q, dtype=np.float64)
    if np.any(np.isnan(log_q)) or np.any(log_q > 0):
        raise ValueError("log_q must be <= 0 (a log-probability) and not NaN")
    orders = checks.orders_array(orders)
    if orders.ndim != 1:
        raise ValueError(f"orders must be 1-D, got shape {orders.shape}")
    scale = checks.positive("scale", scale)
    variance = scale**2
    result = np.broadcast_to(orders / variance, log_q.shape + orders.shape).copy()
    fixed = np.isneginf(log_q)
    result[fixed] = 0.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mu2 = np.sqrt(variance * -log_q)
        mu1 = mu2 + 1.0
        eps1, eps2 = mu1 / variance, mu2 / variance
        log_a2 = (mu2 - 1.0) * eps2
        applies = (
            ~fixed
            & (mu2 > 1.0)
            & (-log_q > eps2)
            & (log_q <= log_a2 - mu2 * (np.log1p(1.0 / (mu1 - 1.0)) + np.log1p(1.0 / (mu2 - 1.0))))
        )
    if not applies.any():
        return result
    lq, m1, m2, e1, e2 = (value[applies][..., None] for value in (log_q, mu1, mu2, eps1, eps2))
    log1q = log1mexp(lq)
    log_a = (orders - 1.0) * (log1q - log1mexp((lq + e2) * (1.0 - 1.0 / m2)))
    log_b = (orders - 1.0) * (e1 - lq / (m1 - 1.0))
    bound = np.logaddexp(log1q + log_a, lq + log_b) / (orders - 1.0)
    inside = m1 > orders  # Theorem 6 needs lambda <= mu1 (the reference code: mu1 > lambda)
    rows = result[applies]
    rows[inside] = np.minimum(rows, bound)[inside]
    result[applies] = rows
    return result


def threshold_log_pass(max_counts, threshold: float, sigma: float) -> np.ndarray:
    """log Pr[max count + N(0, sigma^2) >= threshold] for each entry of ``max_counts`` (Papernot et al. 2018,
    Algorithm 1's first step; ``max_counts`` rounded to integers as in the reference code)."""
    sigma = checks.positive("sigma", sigma)
    return _log_normal_sf(threshold - np.round(np.asarray(max_counts, dtype=np.float64)), sigma)


def threshold_log_fail(max_counts, threshold: float, sigma: float) -> np.ndarray:
    """log Pr[max count + N(0, sigma^2) < threshold], computed directly, accurate where the pass is certain to double
    precision (there ``threshold_log_pass`` is exactly 0 and log(1 - p) would be -inf)."""
    sigma = checks.positive("sigma", sigma)
    return log_ndtr((threshold - np.round(np.asarray(max_counts, dtype=np.float64))) / sigma)


def threshold_data_dependent_rdp(log_pass, sigma: float, orders, log_fail=None) -> np.ndarray:
    """Data-dependent RDP of the threshold check max + N(0, sigma^2) >= T: Theorem 6 with q the probability of the
    less likely of its two outcomes, min(p, 1 - p), and scale sqrt(2) sigma, since the max count moves by at most 1
    between neighbours (under either relation) where GNMax's gap moves by 2 (research/pate_2018/core.py,
    ``compute_rdp_threshold``).

    ``log_fail``: log(1 - p) from ``threshold_log_fail``. Without it, log(1 - p) is derived from log p as the reference
    code does, which underflows to -inf once (max - T) / sigma exceeds about 37.6: q = 0 then prices the check at 0
    although a neighbour's failure probability may be far larger (a pair exists whose exact divergence is 27 where
    0.2 would be priced, on an event of probability e^-765). A release passes it."""
    log_pass = np.asarray(log_pass, dtype=np.float64)
    log_q = np.minimum(log_pass, log1mexp(log_pass) if log_fail is None else np.asarray(log_fail, np.float64))
    return data_dependent_rdp(log_q, orders, math.sqrt(2.0) * checks.positive("sigma", sigma))


def screened_rdp(screen_rdp, log_pass, log_pass_neighbour, release_rdp, order) -> np.ndarray:
    """Data-dependent RDP at ``order`` (a scalar or an array that broadcasts with the others, e.g. the orders on the
    last axis) of "screen, then release only if the screen passed": a threshold check that
    passes with probability p = exp(``log_pass``), followed (on a pass only) by a release whose data-dependent RDP is
    ``release_rdp``; ``screen_rdp`` is the check's own data-dependent RDP and ``log_pass_neighbour`` a lower bound on
    log p' over the neighbours (the pass probability one count lower). Elementwise:

        eps <= 1/(lambda-1) log( e^((lambda-1) eps_screen) + p (p/p_low)^(lambda-1) (e^((lambda-1) eps_release) - 1) ).

    Derivation (ours; it makes Papernot et al. 2018's "a query that is not answered costs only the check" a bound on
    the combined mechanism, with no condition on the random outcome). With P, Q the output laws on neighbours,
    sum P^lambda Q^(1-lambda) = A + B e^((lambda-1) D_release), where A + B = e^((lambda-1) D(Bern(p) || Bern(p')))
    <= e^((lambda-1) eps_screen) and B = p^lambda p'^(1-lambda) = p (p/p')^(lambda-1) <= p (p/p_low)^(lambda-1),
    the release's noise being independent of the check's. So a label that almost surely fails the check pays its
    check and a vanishing share of the release.
    """
    order = checks.orders_array(order, name="order")
    log_pass, log_low = np.asarray(log_pass, np.float64), np.asarray(log_pass_neighbour, np.float64)
    scaled = (order - 1.0) * np.asarray(release_rdp, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_b = np.where(np.isneginf(log_pass), -np.inf, log_pass + (order - 1.0) * (log_pass - log_low))
        log_release = scaled + log1mexp(-scaled)  # log(e^x - 1) without overflow; -inf at x = 0
    return np.logaddexp((order - 1.0) * np.asarray(screen_rdp, np.float64), log_b + log_release) / (order - 1.0)
