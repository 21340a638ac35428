"""The accountant: prices a cost event as an RDP curve on given orders and an approximate-RDP delta.

``price(event, orders) -> Price(curve, delta)`` dispatches on the event's type (``functools.singledispatch``):
one function per kind of mathematics, each with its formula and source, built from ``pate.privacy.curves``.
The release described by the event is ``delta``-approximately (alpha, curve(alpha))-RDP at every order given
(Zhu & Wang 2022, Definition 15; delta = 0 is plain RDP, Mironov 2017).

:class:`PricedByEvent` gives a mechanism ``rdp(orders)`` and ``delta_per_query`` from its per-query
``dp_event``, so the curve a mechanism reports and the curve a replayed ledger prices are one computation.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from pate.privacy import checks
from pate.privacy.curves import (
    exponential_mechanism_rdp,
    gaussian_rdp,
    laplace_rdp,
    poisson_sampled_gaussian_rdp,
    poisson_sampled_gaussian_replace_rdp,
    pure_dp_rdp,
    report_noisy_max_rdp,
)
from pate.privacy.events import (
    ApproximateEvent,
    BoundedRangeEvent,
    DpEvent,
    PureDpEvent,
    RdpAtOrderEvent,
    RdpCurveEvent,
    ReplaceSampledGaussianEvent,
    ReportNoisyMaxEvent,
    TightestOfEvent,
    dpa,
)

__all__ = ["Price", "PricedByEvent", "price"]


class Price(NamedTuple):
    """The event is ``delta``-approximately (alpha, ``curve``[i])-RDP at alpha = orders[i]."""

    curve: np.ndarray
    delta: float


@functools.singledispatch
def price(event: DpEvent, orders) -> Price:
    """RDP curve on ``orders`` and approximate-RDP delta of ``event`` (see the module docstring)."""
    raise ValueError(f"the accountant has no rule for cost events of type {type(event).__name__}")


@price.register
def _(event: dpa.GaussianDpEvent, orders) -> Price:
    """alpha / (2 m^2) for noise multiplier m = sigma / sensitivity (Mironov 2017, Proposition 7)."""
    return Price(gaussian_rdp(orders, event.noise_multiplier, 1.0), 0.0)


@price.register
def _(event: dpa.LaplaceDpEvent, orders) -> Price:
    """Mironov 2017, Proposition 6 (``laplace_rdp``) at scale m and sensitivity 1."""
    return Price(laplace_rdp(orders, event.noise_multiplier, 1.0), 0.0)


@price.register
def _(event: PureDpEvent, orders) -> Price:
    """The randomized-response curve of epsilon-DP (Bun & Steinke 2016, Proposition 3.3; ``pure_dp_rdp``)."""
    return Price(pure_dp_rdp(orders, event.epsilon), 0.0)


@price.register
def _(event: BoundedRangeEvent, orders) -> Price:
    """min(pure_dp_rdp(eps), alpha eps^2 / 8) (Cesar & Rogers 2021, Lemma 17; ``exponential_mechanism_rdp``)."""
    return Price(exponential_mechanism_rdp(orders, event.epsilon), 0.0)


@price.register
def _(event: dpa.ZCDpEvent, orders) -> Price:
    """xi + alpha rho (Bun & Steinke 2016, Definition 1.1)."""
    return Price(event.xi + checks.orders_array(orders) * event.rho, 0.0)


@price.register
def _(event: dpa.PoissonSampledDpEvent, orders) -> Price:
    """The sampled Gaussian mechanism's curve under add / remove (Mironov, Talwar & Zhang 2019;
    ``poisson_sampled_gaussian_rdp``)."""
    if not isinstance(event.event, dpa.GaussianDpEvent):
        raise ValueError(f"the accountant prices a Poisson-sampled Gaussian only, got {event.event!r:.200}")
    return Price(poisson_sampled_gaussian_rdp(orders, event.sampling_probability, event.event.noise_multiplier), 0.0)


@price.register
def _(event: ReplaceSampledGaussianEvent, orders) -> Price:
    """The sampled Gaussian mechanism's curve under replace (the dominating pair of dp-accounting's PLD for
    REPLACE_ONE, and joint convexity; ``poisson_sampled_gaussian_replace_rdp``)."""
    return Price(poisson_sampled_gaussian_replace_rdp(orders, event.sampling_probability, event.noise_multiplier), 0.0)


@price.register
def _(event: RdpAtOrderEvent, orders) -> Price:
    """epsilon at every order <= the event's (monotonicity of Renyi divergence in the order), +inf above."""
    orders = checks.orders_array(orders)
    return Price(np.where(orders <= event.order, event.epsilon, np.inf), 0.0)


@price.register
def _(event: RdpCurveEvent, orders) -> Price:
    """The tabulated curve, read at ``orders``; every order asked for must be one it was tabulated at (an RDP
    curve cannot be interpolated safely)."""
    orders = checks.orders_array(orders)
    table = dict(zip(event.orders, event.epsilons))
    missing = [float(order) for order in orders.ravel() if float(order) not in table]
    if missing:
        raise ValueError(
            f"the RDP curve of {event.source or 'a tabulated event'} was tabulated at other orders than "
            f"the ledger's: it has no value at alpha = {missing[:5]}"
        )
    return Price(np.array([table[float(order)] for order in orders.ravel()]).reshape(orders.shape), event.delta)


@price.register
def _(event: ReportNoisyMaxEvent, orders) -> Price:
    """eps_scalar(alpha) + log(m) / (alpha - 1) (Zhu & Wang 2022, Theorem 8)."""
    scalar = price(event.scalar, orders)
    if scalar.delta:
        raise ValueError("report-noisy-max's Theorem 8 needs a pure RDP scalar mechanism, got an approximate one")
    return Price(report_noisy_max_rdp(orders, scalar.curve, event.num_candidates), 0.0)


@price.register
def _(event: TightestOfEvent, orders) -> Price:
    """Pointwise minimum of valid pure RDP curves of one release."""
    prices = [price(bound, orders) for bound in event.bounds]
    if any(part.delta for part in prices):
        raise ValueError("the tightest of several bounds is only taken over pure RDP bounds (delta = 0)")
    return Price(functools.reduce(np.minimum, (part.curve for part in prices)), 0.0)


@price.register
def _(event: ApproximateEvent, orders) -> Price:
    """The inner curve at delta + the inner delta (Zhu & Wang 2022, Lemma 18 for PTR; Lemma 16 for the sum)."""
    inner = price(event.event, orders)
    return Price(inner.curve, inner.delta + event.delta)


@price.register
def _(event: dpa.ComposedDpEvent, orders) -> Price:
    """Sum of the curves and of the deltas (Mironov 2017, Proposition 1; Zhu & Wang 2022, Lemma 16)."""
    curve = np.zeros_like(checks.orders_array(orders))
    delta = 0.0
    for part in event.events:
        priced = price(part, orders)
        curve = curve + priced.curve
        delta += priced.delta
    return Price(curve, delta)


@price.register
def _(event: dpa.SelfComposedDpEvent, orders) -> Price:
    """count x the curve, count x the delta (composition); count = 0 costs nothing (never 0 x inf = NaN)."""
    inner = price(event.event, orders)
    if event.count == 0:
        return Price(np.zeros_like(inner.curve), 0.0)
    return Price(event.count * inner.curve, event.count * inner.delta)


class PricedByEvent:
    """``rdp(orders)`` and ``delta_per_query`` of a mechanism from its per-query ``dp_event`` property."""

    def rdp(self, orders) -> np.ndarray:
        """Per-query RDP curve: the accountant's price of ``dp_event``."""
        return price(self.dp_event, orders).curve

    @property
    def delta_per_query(self) -> float:
        """Per-query approximate-RDP delta of ``dp_event`` (0 for a pure RDP mechanism)."""
        return price(self.dp_event, (2.0,)).delta
