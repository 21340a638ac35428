"""Closed-form composition and conversion rules for (epsilon, delta) statements.

The ledger (``pate.privacy.ledger``) composes RDP curves; the functions here cover the mechanisms and
papers that state their cost differently: zero-concentrated DP (rho-zCDP) and its (epsilon, delta)
conversion, used by EM-CDP (Durfee & Rogers 2019; Zhu & Wang 2022, EXP2), and -- further down -- the
composition theorems for (epsilon, delta)-DP statements. Pure functions; every one gives its formula and
source.
"""

from __future__ import annotations

import math

from pate.privacy import checks

__all__ = ["zcdp_epsilon", "zcdp_rho_for"]


def zcdp_epsilon(rho: float, delta: float) -> float:
    """epsilon of rho-zCDP at delta: eps = rho + 2 sqrt(rho log(1/delta)).

    Source: Bun & Steinke 2016, "Concentrated Differential Privacy", Proposition 1.3 (the classic
    conversion; Zhu & Wang 2022, Theorem 11 states it for StableTopK). ``rho`` >= 0.
    """
    rho = checks.non_negative("rho", rho)
    delta = checks.open_unit("delta", delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest rho with ``zcdp_epsilon(rho, delta) <= epsilon``: the inverse of the conversion above.

    Writing L = log(1/delta), eps = rho + 2 sqrt(rho L) = (sqrt(rho) + sqrt(L))^2 - L, so
    rho = (sqrt(eps + L) - sqrt(L))^2, computed as eps^2 / (sqrt(eps + L) + sqrt(L))^2 (no cancellation
    for small eps).
    """
    epsilon = checks.positive("epsilon", epsilon)
    log_inverse_delta = math.log(1.0 / checks.open_unit("delta", delta))
    return epsilon**2 / (math.sqrt(epsilon + log_inverse_delta) + math.sqrt(log_inverse_delta)) ** 2
