"""Noise calibration through the cost events: the least noise that meets a target (epsilon, delta).

``calibrate(event_of, target_epsilon, delta, count)`` is the one search: ``event_of(m)`` is the cost event of one
release with its noise multiplied by m (a pure-epsilon parameter divided by m), priced by the accountant over
``count`` adaptive releases. Every calibration of the project goes through it: a configured mechanism's noise
(``calibrate_noise``, which scales the mechanism with its ``scale_noise`` and reads its ``dp_event``), and a cost
that is not a configured mechanism (DP-SGD's noise multiplier over its steps, say) by its event alone. The papers'
closed-form budgets of the top-k baselines (``for_budget`` with their own accountant: zCDP for EM-CDP, pure DP for
PNF and JOINT, LD's and TS's theorems) reproduce those papers and are not calibrations by this accountant; their
``accountant="rdp"`` variants call ``calibrate_noise``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from pate.privacy import checks
from pate.privacy.events import DpEvent
from pate.privacy.ledger import Ledger, check_accountant, event_of
from pate.privacy.orders import DEFAULT_ORDERS

__all__ = ["calibrate", "calibrate_noise"]

# Search range for the noise multiplier. Beyond 1e6 times the configured noise a target is treated as
# unreachable (the epsilon left there is a floor, e.g. log(m)/(alpha-1) for report-noisy-max).
_MIN_MULTIPLIER = 1e-6
_MAX_MULTIPLIER = 1e6


def calibrate(
    event_of: Callable[[float], DpEvent],
    target_epsilon: float,
    delta: float,
    count: int = 1,
    orders=DEFAULT_ORDERS,
    rtol: float = 1e-4,
    neighbors: str | None = None,
    accountant: str = "rdp",
    group_size: int = 1,
) -> float:
    """Smallest noise multiplier m with epsilon(count x event_of(m), delta) <= target_epsilon.

    Epsilon is what ``Ledger(orders, group_size=group_size).compose_event(event_of(m), count, neighbors=neighbors)``
    (a group of ``group_size`` records priced at once by group privacy where it is above 1) reports by
    ``accountant``: ``"rdp"``, the RDP bound (``Ledger.get_epsilon(delta, "rdp")``), or ``"tightest"``, the least valid epsilon
    (``Ledger.get_epsilon(delta)``: the exact GDP profile or the PLD where the events have one); assumed
    non-increasing in m. Search: double or halve m from 1 to bracket the target between m_lo
    (too little noise) and m_hi (enough), then bisect in log m until the epsilon at m_hi lies within
    [target_epsilon * (1 - rtol), target_epsilon] (or the bracket can no longer shrink, where epsilon jumps). The
    returned multiplier always meets the target.

    Raises ValueError, naming target_epsilon, delta, count and the bound, when the target cannot be met: delta <=
    the releases' own approximate-RDP delta (no delta left for the conversion), epsilon at m = 1e6 still exceeds
    the target, or even m = 1e-6 (a millionth of the configured noise) stays below it, so that the run would
    silently spend less than the target it names.
    """
    target_epsilon = checks.positive("target_epsilon", target_epsilon)
    delta = checks.open_unit("delta", delta)
    count = checks.positive_int("count", count)
    rtol = checks.open_unit("rtol", rtol)
    check_accountant(accountant)

    def unreachable(floor: str) -> ValueError:
        return ValueError(
            f"target_epsilon={target_epsilon!r} at delta={delta!r} over count={count} queries is unreachable: {floor}"
        )

    def beyond_reach(epsilon: float) -> ValueError:
        return ValueError(
            f"target_epsilon={target_epsilon!r} at delta={delta!r} over count={count} queries is beyond "
            f"the calibration's reach: even {_MIN_MULTIPLIER:g} times the noise gives epsilon = "
            f"{epsilon:.6g}; ask for at most that (or configure less noise)"
        )

    def ledger_at(multiplier: float) -> Ledger:
        ledger = Ledger(orders, group_size=group_size).compose_event(event_of(multiplier), count, neighbors=neighbors)
        if delta <= ledger.delta_t:
            raise unreachable(f"the queries' own delta count * delta_per_query = {ledger.delta_t!r} >= delta")
        return ledger

    if accountant == "rdp":
        return _least_multiplier(
            lambda m: ledger_at(m).get_epsilon(delta, "rdp").epsilon, target_epsilon, rtol, unreachable, beyond_reach
        )
    # The tightest epsilon never exceeds the RDP bound, so RDP's multiplier meets the target: the search starts
    # there and only goes down, in steps of 10% (a PLD costs up to seconds where RDP costs milliseconds). Where no
    # tighter accountant prices the events, RDP's multiplier is the answer.
    # A PLD is the costly one: its search interpolates (below); the exact GDP profile costs milliseconds and bisects.
    start = calibrate(event_of, target_epsilon, delta, count, orders, rtol, neighbors, "rdp", group_size)
    tightest = functools.cache(lambda m: ledger_at(m).get_epsilon(delta))  # the search prices start again
    if tightest(start).accountant == "rdp":
        return start
    return _least_multiplier(
        lambda m: tightest(m).epsilon,
        target_epsilon,
        rtol,
        unreachable,
        beyond_reach,
        start=start,
        step=0.9,
        interpolate=tightest(start).accountant == "pld",
    )


def _least_multiplier(
    epsilon_at: Callable[[float], float],
    target_epsilon: float,
    rtol: float,
    unreachable: Callable[[str], ValueError],
    beyond_reach: Callable[[float], ValueError],
    start: float = 1.0,
    step: float = 0.5,
    interpolate: bool = False,
) -> float:
    """The search of :func:`calibrate` (its docstring): bracket the target by multiplying m from ``start`` by
    1 / ``step`` or by ``step``, then shrink the bracket until the epsilon at its upper end lies in the window
    [target (1 - rtol), target]: by bisection in log m, or, with ``interpolate``, by regula falsi on log epsilon
    against log m aimed at the window's middle (the Illinois rule halves the value of an end kept twice, so neither
    end stalls; a point within 1% of the bracket's width from an end is bisected instead), which needs a third of
    the evaluations where each is a PLD. ``unreachable(floor)`` is the error where even the most noise misses the
    target, ``beyond_reach(epsilon)`` where even the least noise stays below it."""
    # Bracket: eps(lo) > target >= eps(hi).
    hi, hi_eps, lo, lo_eps = start, epsilon_at(start), None, math.inf
    while hi_eps > target_epsilon:
        if hi >= _MAX_MULTIPLIER:
            raise unreachable(f"even {_MAX_MULTIPLIER:g} times the noise leaves epsilon = {hi_eps:.6g} (its floor)")
        lo, lo_eps, hi = hi, hi_eps, min(hi / step, _MAX_MULTIPLIER)
        hi_eps = epsilon_at(hi)
    while lo is None:
        if hi <= _MIN_MULTIPLIER:
            raise beyond_reach(hi_eps)
        candidate = max(hi * step, _MIN_MULTIPLIER)
        eps = epsilon_at(candidate)
        if eps > target_epsilon:
            lo, lo_eps = candidate, eps
        else:
            hi, hi_eps = candidate, eps

    # Shrink in log m; the upper end always meets the target.
    aim = math.log(target_epsilon * (1.0 - rtol / 2))
    weight_lo = weight_hi = 1.0  # the Illinois rule's halvings of each end's value
    kept = None
    while hi_eps < target_epsilon * (1.0 - rtol) and hi / lo > 1.0 + 1e-12:
        mid = math.sqrt(lo * hi)
        if interpolate and math.isfinite(lo_eps) and hi_eps > 0:
            f_lo, f_hi = weight_lo * (math.log(lo_eps) - aim), weight_hi * (math.log(hi_eps) - aim)
            x_lo, x_hi = math.log(lo), math.log(hi)
            x = x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo)
            margin = 0.01 * (x_hi - x_lo)
            if x_lo + margin <= x <= x_hi - margin:
                mid = math.exp(x)
        eps = epsilon_at(mid)
        if eps > target_epsilon:
            lo, lo_eps, weight_lo = mid, eps, 1.0
            weight_hi, kept = (weight_hi / 2 if kept == "lo" else weight_hi), "lo"
        else:
            hi, hi_eps, weight_hi = mid, eps, 1.0
            weight_lo, kept = (weight_lo / 2 if kept == "hi" else weight_lo), "hi"
    return hi


def calibrate_noise(
    mechanism,
    target_epsilon: float,
    delta: float,
    count: int,
    orders=DEFAULT_ORDERS,
    rtol: float = 1e-4,
    accountant: str = "rdp",
):
    """``calibrate`` for a configured mechanism: ``mechanism.scale_noise(m)`` must return the same mechanism with
    every noise scale multiplied by m (a pure-epsilon parameter divided by m), priced under its ``neighbors`` by
    its ``dp_event`` (or, for an object with only ``rdp`` and ``delta_per_query``, by the curve it reports, as
    ``Ledger.compose`` records it), by ``accountant`` (see :func:`calibrate`). Returns (the calibrated mechanism,
    m)."""
    # getattr: .neighbors is optional, as for Ledger.compose (any object with .rdp and .delta_per_query)
    multiplier = calibrate(
        lambda m: event_of(mechanism.scale_noise(m), orders),
        target_epsilon,
        delta,
        count,
        orders,
        rtol,
        neighbors=getattr(mechanism, "neighbors", None),
        accountant=accountant,
    )
    return mechanism.scale_noise(multiplier), multiplier
