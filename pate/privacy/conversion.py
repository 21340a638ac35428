"""Conversions from an RDP curve to (epsilon, delta)-DP, minimised over the orders given.

``rdp`` is a curve on ``orders`` (1-D, every order finite and > 1): the mechanism is
(alpha, rdp[alpha])-RDP for every alpha listed. Entries may be +inf (such an order never wins; a curve
that is +inf everywhere gives epsilon = inf, delta = 1); NaN and negative entries are refused.
"""

from __future__ import annotations

import numpy as np

from pate.privacy import checks

__all__ = ["delta_from_rdp", "epsilon_from_rdp", "epsilon_from_rdp_classic", "log_deltas_from_rdp"]


def _curve(orders, rdp) -> tuple[np.ndarray, np.ndarray]:
    orders = checks.orders_array(orders)
    if orders.ndim != 1:
        raise ValueError(f"orders must be a 1-D array, got shape {orders.shape}")
    return orders, checks.rdp_array(rdp, orders)


def _tv_bound_holds(rdp: np.ndarray, delta: float) -> np.ndarray:
    """Where (0, delta)-DP already follows from the divergence: delta >= sqrt(1 - exp(-rdp)).

    (0, delta)-DP is exactly total variation <= delta; Bretagnolle-Huber gives
    TV(P, Q) <= sqrt(1 - exp(-KL(P || Q))), and KL = D_1 <= D_alpha for alpha > 1 (Renyi divergences
    increase with the order). Rewritten without cancellation: rdp <= -log1p(-delta^2). This only
    matters for tiny curves (rdp below ~delta^2); dp-accounting applies the same bound.
    """
    return rdp <= -np.log1p(-(delta**2))


def epsilon_from_rdp(orders, rdp, delta: float) -> tuple[float, float]:
    """Tightest valid RDP -> (eps, delta) conversion; returns (eps, the order attaining it).

        eps(alpha) = rdp(alpha) + log((alpha - 1) / alpha) - (log(delta) + log(alpha)) / (alpha - 1),

    minimised over the orders. Sources: Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
    Differential Privacy", Proposition 12; Balle, Barthe, Gaboardi, Hsu & Sato 2020, "Hypothesis
    Testing Interpretations and Renyi Differential Privacy", Theorem 21. It is never worse than the
    classic conversion (``epsilon_from_rdp_classic``): the difference is
    log(1 - 1/alpha) - log(alpha) / (alpha - 1) < 0.

    Two documented adjustments, both valid because (eps, delta)-DP implies (eps', delta)-DP for every
    eps' >= eps: an order where (0, delta)-DP follows from total variation (see ``_tv_bound_holds``)
    gives 0, and a negative value of the formula is reported as 0.
    """
    orders, rdp = _curve(orders, rdp)
    delta = checks.open_unit("delta", delta)
    eps = rdp + np.log1p(-1.0 / orders) - (np.log(delta) + np.log(orders)) / (orders - 1.0)
    eps = np.where(_tv_bound_holds(rdp, delta), 0.0, np.maximum(eps, 0.0))
    best = int(np.argmin(eps))
    return float(eps[best]), float(orders[best])


def epsilon_from_rdp_classic(orders, rdp, delta: float) -> tuple[float, float]:
    """Classic RDP -> (eps, delta) conversion; returns (eps, the order attaining it).

        eps(alpha) = rdp(alpha) + log(1 / delta) / (alpha - 1), minimised over the orders.

    Source: Mironov 2017, "Renyi Differential Privacy", Proposition 3; used by Zhu & Wang 2022
    (Lemma 4, Lemma 17). Kept for comparison with the literature; ``epsilon_from_rdp`` is tighter.
    """
    orders, rdp = _curve(orders, rdp)
    delta = checks.open_unit("delta", delta)
    eps = rdp + np.log(1.0 / delta) / (orders - 1.0)
    best = int(np.argmin(eps))
    return float(eps[best]), float(orders[best])


def delta_from_rdp(orders, rdp, epsilon: float) -> tuple[float, float]:
    """Inverse of the tight conversion: the smallest delta with (epsilon, delta)-DP; returns (delta, order).

        log delta(alpha) = (alpha - 1) (rdp(alpha) - epsilon + log(1 - 1/alpha)) - log(alpha),

    which is Canonne, Kamath & Steinke 2020, Proposition 12 solved for delta; minimised over the
    orders together with the total-variation bound delta <= sqrt(1 - exp(-rdp(alpha))) (see
    ``_tv_bound_holds``), and capped at 1. For every delta in (0, 1) and eps = epsilon_from_rdp(...,
    delta)[0] > 0, delta_from_rdp(..., eps)[0] == delta up to rounding.
    """
    orders, rdp = _curve(orders, rdp)
    log_delta = _log_deltas(orders, rdp, np.array([checks.non_negative("epsilon", epsilon)]))[0]
    best = int(np.argmin(log_delta))
    return float(np.exp(log_delta[best])), float(orders[best])


def log_deltas_from_rdp(orders, rdp, epsilons) -> np.ndarray:
    """``log(delta_from_rdp(orders, rdp, eps)[0])`` for each eps of ``epsilons`` (1-D, each >= 0), in log space so
    that a delta below the smallest float (a large epsilon) keeps its value: what group privacy multiplies by
    e^(n eps) (``pate.privacy.group``)."""
    orders, rdp = _curve(orders, rdp)
    epsilons = np.asarray(epsilons, dtype=np.float64)
    if epsilons.ndim != 1 or not np.all(np.isfinite(epsilons) & (epsilons >= 0)):
        raise ValueError(f"epsilons must be a 1-D array of finite numbers >= 0, got {epsilons!r}")
    return _log_deltas(orders, rdp, epsilons).min(axis=1)


def _log_deltas(orders: np.ndarray, rdp: np.ndarray, epsilons: np.ndarray) -> np.ndarray:
    """log delta(alpha) of :func:`delta_from_rdp` for each epsilon (rows) and order (columns), capped at 0."""
    with np.errstate(divide="ignore"):  # log(0) = -inf where rdp == 0: identical outputs, delta = 0
        log_tv = 0.5 * np.log(-np.expm1(-rdp))
    log_delta = (orders - 1.0) * (rdp - epsilons[:, None] + np.log1p(-1.0 / orders)) - np.log(orders)
    return np.minimum(np.minimum(log_delta, log_tv), 0.0)
