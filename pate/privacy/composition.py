"""Closed-form composition and conversion rules for (epsilon, delta) statements.

The ledger (``pate.privacy.ledger``) composes RDP curves; the functions here cover the mechanisms and
papers that state their cost differently: zero-concentrated DP (rho-zCDP) and its (epsilon, delta)
conversion, used by EM-CDP (Durfee & Rogers 2019; Zhu & Wang 2022, EXP2), and -- further down -- the
composition theorems for (epsilon, delta)-DP statements (basic, advanced, bounded-range), group privacy
from add/remove to replace neighbours, and a solver for the per-query parameter that meets a total.
Pure functions; every one gives its formula and source.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

from pate.privacy import checks

__all__ = [
    "advanced_composition",
    "basic_composition",
    "bounded_range_composition",
    "replace_from_add_remove",
    "solve_per_query",
    "zcdp_epsilon",
    "zcdp_rho_for",
]

_LOG_MAX_FLOAT = math.log(sys.float_info.max)  # exp() of anything larger overflows


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


def _closed_unit(name: str, value) -> float:
    """A real number in [0, 1] (a per-mechanism delta; 0 for pure DP)."""
    value = checks.non_negative(name, value)
    if value > 1:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return value


def _log_inverse_slack(delta_slack) -> float:
    """log(1 / delta_slack) for a slack in [0, 1): +inf at 0 (the advanced bounds then degrade to basic composition)."""
    delta_slack = checks.non_negative("delta_slack", delta_slack)
    if delta_slack >= 1:
        raise ValueError(f"delta_slack must lie in [0, 1), got {delta_slack!r}")
    return math.inf if delta_slack == 0 else math.log(1.0 / delta_slack)


def basic_composition(epsilon: float, delta: float, count: int) -> tuple[float, float]:
    """``count`` adaptive (epsilon, delta)-DP mechanisms are (count epsilon, count delta)-DP.

    Source: Dwork & Roth 2014, "The Algorithmic Foundations of Differential Privacy", Theorem 3.16
    (stated there for non-adaptive composition; Theorem 3.20's setting, the k-fold adaptive composition
    experiment, gives the same bound).
    """
    epsilon = checks.non_negative("epsilon", epsilon)
    delta = _closed_unit("delta", delta)
    count = checks.positive_int("count", count)
    return count * epsilon, count * delta


def advanced_composition(epsilon: float, delta: float, count: int, delta_slack: float) -> tuple[float, float]:
    """``count`` adaptive (epsilon, delta)-DP mechanisms are (eps', count delta + delta_slack)-DP with

        eps' = min(count eps, sqrt(2 count ln(1/delta_slack)) eps + count eps (e^eps - 1)).

    Source: Dwork, Rothblum & Vadhan 2010, "Boosting and Differential Privacy", Theorem III.3; Dwork &
    Roth 2014, Theorem 3.20 (which writes the second term as k eps (e^eps - 1)). The minimum with basic
    composition (Theorem 3.16) is valid because both statements hold at the larger delta
    count delta + delta_slack. delta_slack = 0 gives basic composition.
    """
    epsilon = checks.non_negative("epsilon", epsilon)
    delta = _closed_unit("delta", delta)
    count = checks.positive_int("count", count)
    log_inverse_slack = _log_inverse_slack(delta_slack)
    if math.isinf(log_inverse_slack) or epsilon >= _LOG_MAX_FLOAT:  # the advanced term is infinite
        return count * epsilon, count * delta + delta_slack
    advanced = math.sqrt(2.0 * count * log_inverse_slack) * epsilon + count * epsilon * math.expm1(epsilon)
    return min(count * epsilon, advanced), count * delta + delta_slack


def bounded_range_composition(epsilon: float, count: int, delta_slack: float) -> float:
    """Epsilon of ``count`` adaptive epsilon-bounded-range mechanisms at delta = ``delta_slack``:

        eps' = min{ k eps,
                    k eps (e^eps - 1)/(e^eps + 1) + eps sqrt(2 k ln(1/delta_slack)),
                    k eps^2 / 2 + eps sqrt(k ln(1/delta_slack) / 2) },   k = count.

    Source: Durfee & Rogers 2019, "Practical Differentially Private Top-k Selection with
    Pay-what-you-get Composition", Lemma 4.4, homogeneous case eps_i = eps (the paper's eq. (4) reads
    min{sum eps_i, sum eps_i (e^eps_i - 1)/(e^eps_i + 1) + sqrt(2 sum eps_i^2 ln(1/delta)),
    sum eps_i^2 / 2 + sqrt(sum eps_i^2 ln(1/delta) / 2)}; Theorem 1 / eq. (2) states the same
    homogeneous form). (e^eps - 1)/(e^eps + 1) is computed as tanh(eps / 2), which does not overflow.
    The result is (eps', delta_slack)-DP; delta_slack = 0 gives k eps.
    """
    epsilon = checks.non_negative("epsilon", epsilon)
    count = checks.positive_int("count", count)
    log_inverse_slack = _log_inverse_slack(delta_slack)
    if math.isinf(log_inverse_slack):  # delta_slack = 0: only the first term is finite
        return count * epsilon
    return min(
        count * epsilon,
        count * epsilon * math.tanh(epsilon / 2.0) + epsilon * math.sqrt(2.0 * count * log_inverse_slack),
        count * epsilon**2 / 2.0 + epsilon * math.sqrt(count * log_inverse_slack / 2.0),
    )


def replace_from_add_remove(epsilon: float, delta: float) -> tuple[float, float]:
    """An (eps, delta)-DP statement under add/remove neighbours, restated under replace: (2 eps, (1 + e^eps) delta).

    Derivation (group privacy for the two steps of a replacement). Replacing one user's row turns D into
    D' through D_mid = D without that row: D ~ D_mid ~ D' are add/remove neighbours. For every output set S,
        P(S) <= e^eps P_mid(S) + delta <= e^eps (e^eps P'(S) + delta) + delta = e^{2 eps} P'(S) + (1 + e^eps) delta,
    and symmetrically from D' to D. (Dwork & Roth 2014, Theorem 2.2, is the pure-DP case.) Applied to a
    whole adaptive run it needs the run's add/remove statement; applied per query it needs that query's.
    A delta of 0 stays 0; a huge eps gives delta = inf times delta, i.e. no statement.
    """
    epsilon = checks.non_negative("epsilon", epsilon)
    delta = _closed_unit("delta", delta)
    if delta == 0:
        return 2.0 * epsilon, 0.0
    factor = 1.0 + math.exp(epsilon) if epsilon < _LOG_MAX_FLOAT else math.inf
    return 2.0 * epsilon, factor * delta


def solve_per_query(total: float, compose: Callable[[float], float], lo: float, hi: float) -> float:
    """Largest x in [lo, hi] with ``compose(x) <= total``, for a non-decreasing ``compose``.

    Bisection on log x, down to adjacent floats or a relative width of 1e-12, keeping ``compose(lo) <=
    total`` true at every step -- so the returned x satisfies the inequality exactly in floating point.
    Typical use: the per-query epsilon whose composed epsilon over a run meets a target; ``compose`` may
    return +inf for "no valid statement". ``ValueError`` (naming the target) when even ``lo`` composes
    above ``total``; ``ValueError`` when ``hi`` already meets it (the bracket must contain the boundary).
    """
    total = checks.positive("total", total)
    lo, hi = checks.positive("lo", lo), checks.positive("hi", hi)
    if not lo < hi:
        raise ValueError(f"need lo < hi, got lo={lo!r}, hi={hi!r}")
    at_lo = compose(lo)
    if not at_lo <= total:
        raise ValueError(f"target total={total!r} is unreachable: the smallest value lo={lo!r} composes to {at_lo!r}")
    at_hi = compose(hi)
    if at_hi <= total:
        raise ValueError(f"hi={hi!r} composes to {at_hi!r} <= total={total!r}: the bracket must end above the solution")
    while hi / lo - 1.0 > 1e-12:
        middle = math.sqrt(lo) * math.sqrt(hi)  # the geometric midpoint, without underflow
        if middle <= lo or middle >= hi:  # adjacent floats
            break
        if compose(middle) <= total:
            lo = middle
        else:
            hi = middle
    return lo
