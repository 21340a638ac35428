"""Noise calibration: the least noise that meets a target (epsilon, delta) over a number of queries."""

from __future__ import annotations

import math

from pate.privacy import checks
from pate.privacy.ledger import Ledger
from pate.privacy.orders import DEFAULT_ORDERS

__all__ = ["calibrate_noise"]

# Search range for the noise multiplier. Beyond 1e6 times the configured noise a target is treated as
# unreachable (the epsilon left there is a floor, e.g. log(m)/(alpha-1) for report-noisy-max).
_MIN_MULTIPLIER = 1e-6
_MAX_MULTIPLIER = 1e6


def calibrate_noise(mechanism, target_epsilon: float, delta: float, count: int, orders=DEFAULT_ORDERS, rtol: float = 1e-4):
    """Smallest noise multiplier m with epsilon(count x mechanism.scale_noise(m), delta) <= target_epsilon.

    ``mechanism.scale_noise(m)`` must return a new mechanism whose every noise scale is multiplied by
    m (a pure-epsilon parameter divided by m); epsilon is assumed non-increasing in m. Epsilon is what
    ``Ledger(orders).compose(mechanism.scale_noise(m), count).epsilon(delta)[0]`` reports.

    Search: double or halve m from 1 to bracket the target between m_lo (too little noise) and m_hi (enough),
    then bisect in log m until the epsilon at m_hi lies within [target_epsilon * (1 - rtol), target_epsilon] (or
    the bracket can no longer shrink, where epsilon jumps). The returned multiplier always meets the target. If
    even m = 1e-6 meets it, m = 1e-6 is returned (the search range's end).

    Returns (calibrated mechanism, m). Raises ValueError, naming target_epsilon, delta, count and the
    floor, when the target cannot be met: delta <= count * delta_per_query (no delta left for the
    conversion), or epsilon at m = 1e6 still exceeds the target.
    """
    target_epsilon = checks.positive("target_epsilon", target_epsilon)
    delta = checks.open_unit("delta", delta)
    count = checks.positive_int("count", count)
    rtol = checks.open_unit("rtol", rtol)

    def unreachable(floor: str) -> ValueError:
        return ValueError(
            f"target_epsilon={target_epsilon!r} at delta={delta!r} over count={count} queries is unreachable: {floor}"
        )

    def epsilon_at(multiplier: float) -> tuple[object, float]:
        candidate = mechanism.scale_noise(multiplier)
        ledger = Ledger(orders).compose(candidate, count)
        if delta <= ledger.delta_t:
            raise unreachable(f"the queries' own delta count * delta_per_query = {ledger.delta_t!r} >= delta")
        return candidate, ledger.epsilon(delta)[0]

    # Bracket: eps(lo) > target >= eps(hi).
    hi, (hi_mechanism, hi_eps) = 1.0, epsilon_at(1.0)
    lo = None
    while hi_eps > target_epsilon:
        if hi >= _MAX_MULTIPLIER:
            raise unreachable(f"even {_MAX_MULTIPLIER:g} times the noise leaves epsilon = {hi_eps:.6g} (its floor)")
        lo, hi = hi, min(2.0 * hi, _MAX_MULTIPLIER)
        hi_mechanism, hi_eps = epsilon_at(hi)
    while lo is None:
        if hi <= _MIN_MULTIPLIER:
            return hi_mechanism, hi
        candidate_m = max(hi / 2.0, _MIN_MULTIPLIER)
        candidate, eps = epsilon_at(candidate_m)
        if eps > target_epsilon:
            lo = candidate_m
        else:
            hi, hi_mechanism, hi_eps = candidate_m, candidate, eps

    # Bisect in log m; the upper end always meets the target.
    while hi_eps < target_epsilon * (1.0 - rtol) and hi / lo > 1.0 + 1e-12:
        mid = math.sqrt(lo * hi)
        candidate, eps = epsilon_at(mid)
        if eps > target_epsilon:
            lo = mid
        else:
            hi, hi_mechanism, hi_eps = mid, candidate, eps
    return hi_mechanism, hi
