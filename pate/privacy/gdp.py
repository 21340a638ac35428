"""The exact privacy profile of composed Gaussian mechanisms, by Gaussian differential privacy (GDP).

A Gaussian mechanism of L2 sensitivity D and noise standard deviation sigma is mu-GDP with mu = D / sigma, and that
is its exact privacy profile: for every epsilon >= 0 the smallest delta such that it is (epsilon, delta)-DP is

    delta(epsilon) = Phi(-epsilon / mu + mu / 2) - e^epsilon Phi(-epsilon / mu - mu / 2)

(Balle & Wang 2018, Theorem 8, "the analytic Gaussian mechanism"; Dong, Roth & Su 2019, Corollary 2.13). The
adaptive composition of mu_i-GDP releases is sqrt(sum_i mu_i^2)-GDP (Dong, Roth & Su 2019, Corollary 3.3), and a
composition of Gaussian mechanisms attains it (the pair N(0, I) against N(mu, I) is its worst case), so a release
made of Gaussian cost events only has an exact epsilon. It is never above the RDP bound's, which converts a curve
that over-approximates the same profile. Poisson-sampled, approximate (PTR) and data-dependent events have no such
closed form: :func:`gaussian_mu` answers None for them.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from pate.privacy import checks
from pate.privacy.events import DpEvent, dpa

__all__ = ["gaussian_mu", "gdp_delta", "gdp_epsilon"]


def _mu_squared(event: DpEvent) -> float | None:
    if isinstance(event, dpa.GaussianDpEvent):
        return (1.0 / event.noise_multiplier) ** 2
    if isinstance(event, dpa.SelfComposedDpEvent):
        inner = _mu_squared(event.event)
        return None if inner is None else event.count * inner
    if isinstance(event, dpa.ComposedDpEvent):
        parts = [_mu_squared(part) for part in event.events]
        return None if any(part is None for part in parts) else math.fsum(parts)
    return None


def gaussian_mu(events: list[tuple[DpEvent, int]]) -> float | None:
    """mu of the composition of ``count`` runs of each ``event`` when every one is a Gaussian mechanism (or a
    composition of them): sqrt(sum count * (D / sigma)^2) (Dong, Roth & Su 2019, Corollary 3.3); None when any is
    not, since then no closed form gives the exact profile."""
    total = []
    for event, count in events:
        if checks.non_negative_int("count", count) == 0:
            continue  # nothing released: no closed form needed (the PLD skips it too)
        part = _mu_squared(event)
        if part is None:
            return None
        total.append(count * part)
    return math.sqrt(math.fsum(total))


def gdp_delta(mu: float, epsilon: float) -> float:
    """The smallest delta such that a mu-GDP release is (epsilon, delta)-DP (module docstring; Dong, Roth & Su 2019,
    Corollary 2.13), computed in log space so that neither term underflows before their difference."""
    mu = checks.positive("mu", mu)
    epsilon = checks.non_negative("epsilon", epsilon)
    first = log_ndtr(-epsilon / mu + mu / 2)
    second = epsilon + log_ndtr(-epsilon / mu - mu / 2)
    return float(np.exp(first) * -np.expm1(second - first)) if second < first else 0.0


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon >= 0 such that a mu-GDP release is (epsilon, delta)-DP, rounded up: the root of
    ``gdp_delta(mu, epsilon) = delta`` (decreasing in epsilon) by Brent's method, then raised by ``_MARGIN``
    (relative) until ``gdp_delta`` is at most ``delta`` there. The margin absorbs the floating-point error of the
    profile's two nearly equal terms when mu is small (the unrounded root lies up to 1e-6 relative below the true
    epsilon at mu = 1e-8, delta = 1e-300), so the epsilon returned is a valid bound."""
    mu = checks.positive("mu", mu)
    delta = checks.open_unit("delta", delta)
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    upper = 1.0
    while gdp_delta(mu, upper) > delta:
        upper *= 2
    root = brentq(lambda eps: gdp_delta(mu, eps) - delta, 0.0, upper, xtol=1e-14, rtol=1e-15)
    margin = _MARGIN
    while gdp_delta(mu, root * (1 + margin)) > delta:
        margin *= 10
    return float(root * (1 + margin))


_MARGIN = 1e-5  # relative: 7.506 stays 7.506; a hundred times the error measured at the extremes
