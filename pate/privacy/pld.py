"""Privacy loss distributions (PLD) of cost events, by dp-accounting: an epsilon tighter than the RDP bound's where
an event's dominating pair is known.

Each event becomes the PLD of a dominating pair of output distributions (Zhu, Dong & Wang 2022, "Optimal
accounting of differential privacy via characteristic function"; Doroshenko, Ghazi, Kamath, Kumar & Manurangsi
2022, "Connect the dots" for the discretisation), built by ``dp_accounting.pld.privacy_loss_distribution``, and
composition is the convolution of the privacy losses (``compose``, ``self_compose``):

* ``GaussianEvent(sigma, D)``: N(0, sigma^2) against N(D, sigma^2). D already is the L2 distance between the
  outputs on neighbouring inputs under the run's relation (``pate.privacy.sensitivity``), so the pair is the shifted
  one under either relation (dp-accounting's ``ADD_OR_REMOVE_ONE`` form; its ``REPLACE_ONE`` would double D again).
* ``LaplaceEvent(b, D)``: Lap(0, b) against Lap(D, b), the same reading of D.
* ``PureDpEvent(epsilon)``: the pair of randomized response, dominating every epsilon-DP release
  (``from_privacy_parameters``).
* ``PoissonSampledGaussianEvent(q, m, steps, neighbors)``: dp-accounting's Poisson-subsampled Gaussian of noise
  multiplier m and rate q, under ``ADD_OR_REMOVE_ONE`` or ``REPLACE_ONE`` as the event's relation says (both
  directions of add_remove are kept), composed ``steps`` times.
* ``SelfComposedEvent`` and ``ComposedEvent`` of these.

Every other event (bounded-range picks, PTR's approximate events, report-noisy-max, zCDP, tabulated or data-dependent
curves) has no PLD here: :func:`pld_epsilon` answers None and the RDP bound stands. The discretisation is
pessimistic (the PLD's epsilon is an upper bound on the true one) with the stated ``interval`` between privacy-loss
values; the tails dropped by composition (``tail_mass_truncation`` 1e-15) are counted into delta by dp-accounting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pate.privacy import checks
from pate.privacy.events import (
    ComposedEvent,
    DpEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledGaussianEvent,
    PureDpEvent,
    SelfComposedEvent,
)

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = ["DEFAULT_INTERVAL", "pld_epsilon", "privacy_loss_distribution"]

DEFAULT_INTERVAL = 1e-4  # between discretised privacy-loss values: an epsilon within ~1e-3 relative of the exact one


def privacy_loss_distribution(event: DpEvent, interval: float = DEFAULT_INTERVAL) -> PrivacyLossDistribution | None:
    """The pessimistic PLD of ``event`` (module docstring), or None where the event has none here."""
    # imported here: dp-accounting takes half a second to import, which every run would pay for an accountant it
    # asks only when it prices a ledger by PLD
    from dp_accounting import NeighboringRelation as Relation
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    interval = checks.positive("interval", interval)
    if isinstance(event, GaussianEvent):
        return pld.from_gaussian_mechanism(event.sigma, sensitivity=event.sensitivity,
                                           value_discretization_interval=interval)
    if isinstance(event, LaplaceEvent):
        return pld.from_laplace_mechanism(event.scale, sensitivity=event.sensitivity,
                                          value_discretization_interval=interval)
    if isinstance(event, PureDpEvent):
        return pld.from_privacy_parameters(common.DifferentialPrivacyParameters(event.epsilon, 0.0),
                                           value_discretization_interval=interval)
    if isinstance(event, PoissonSampledGaussianEvent):
        if event.steps == 0:
            return pld.identity(interval)
        relation = Relation.REPLACE_ONE if event.neighbors == "replace" else Relation.ADD_OR_REMOVE_ONE
        one_step = pld.from_gaussian_mechanism(event.noise_multiplier, sampling_prob=event.sampling_rate,
                                               value_discretization_interval=interval, neighboring_relation=relation)
        return one_step.self_compose(event.steps)
    if isinstance(event, SelfComposedEvent):
        inner = privacy_loss_distribution(event.event, interval)
        if inner is None:
            return None
        return inner.self_compose(event.count) if event.count > 0 else pld.identity(interval)
    if isinstance(event, ComposedEvent):
        return _composed([(part, 1) for part in event.events], interval)
    return None


def _composed(events: list[tuple[DpEvent, int]], interval: float) -> PrivacyLossDistribution | None:
    from dp_accounting.pld.privacy_loss_distribution import identity

    total = identity(interval)
    for event, count in events:
        count = checks.non_negative_int("count", count)
        if count == 0:
            continue
        part = privacy_loss_distribution(event, interval)
        if part is None:
            return None
        total = total.compose(part.self_compose(count) if count > 1 else part)
    return total


def pld_epsilon(events: list[tuple[DpEvent, int]], delta: float, interval: float = DEFAULT_INTERVAL) -> float | None:
    """The smallest epsilon of the composition of ``count`` runs of each ``event`` at ``delta`` by their PLDs (an
    upper bound on the true one: pessimistic discretisation at ``interval``), or None when any event has no PLD
    here."""
    delta = checks.open_unit("delta", delta)
    total = _composed(events, interval)
    return None if total is None else max(0.0, float(total.get_epsilon_for_delta(delta)))
