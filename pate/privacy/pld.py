"""Privacy loss distributions (PLD) of cost events, by dp-accounting: an epsilon tighter than the RDP bound's where
an event's dominating pair is known.

Each event becomes the PLD of a dominating pair of output distributions (Zhu, Dong & Wang 2022, "Optimal
accounting of differential privacy via characteristic function"; Doroshenko, Ghazi, Kamath, Kumar & Manurangsi
2022, "Connect the dots" for the discretisation), built by ``dp_accounting.pld.privacy_loss_distribution``, and
composition is the convolution of the privacy losses (``compose``, ``self_compose``):

* ``GaussianDpEvent(m)``: N(0, m^2) against N(1, m^2), m = sigma / D. D already is the L2 distance between the
  outputs on neighbouring inputs under the run's relation (``pate.privacy.sensitivity``), so the pair is the shifted
  one under either relation (dp-accounting's ``ADD_OR_REMOVE_ONE`` form; its ``REPLACE_ONE`` would double D again).
* ``LaplaceDpEvent(m)``: Lap(0, m) against Lap(1, m), m = b / D, the same reading of D.
* ``PureDpEvent(epsilon)``: the pair of randomized response, dominating every epsilon-DP release
  (``from_privacy_parameters``).
* ``PoissonSampledDpEvent(q, GaussianDpEvent(m))`` and ``ReplaceSampledGaussianEvent(q, m)``: dp-accounting's
  Poisson-subsampled Gaussian of noise multiplier m and rate q, under ``ADD_OR_REMOVE_ONE`` (both directions are
  kept) or ``REPLACE_ONE``.
* ``SelfComposedDpEvent`` and ``ComposedDpEvent`` of these.

Every other event (bounded-range picks, PTR's approximate events, report-noisy-max, zCDP, tabulated or data-dependent
curves) has no PLD here: :func:`pld_epsilon` answers None and the RDP bound stands. The discretisation is
pessimistic (the PLD's epsilon is an upper bound on the true one) with the stated ``interval`` between privacy-loss
values; the tails dropped by composition (``tail_mass_truncation`` 1e-15) are counted into delta by dp-accounting.

Composition is by fast Fourier transforms, whose round-off leaves an error of either sign in every bin of the
composed distributions: left unbounded, it prints an epsilon below the true one (10,000 pure-DP events at delta
1e-14; 100,000 full-batch Gaussian steps at delta 1e-12). So the round-off is bounded
(:func:`fft_error_bound`) and spent out of delta: the epsilon is read at delta - E, E bounding the error of the
hockey-stick divergence, and where E reaches half of delta the PLD is not used (None: the RDP bound stands).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pate.privacy import checks
from pate.privacy.events import DpEvent, PureDpEvent, ReplaceSampledGaussianEvent, dpa

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = ["DEFAULT_INTERVAL", "fft_error_bound", "pld_epsilon", "pld_profile", "privacy_loss_distribution"]

DEFAULT_INTERVAL = 1e-4  # between discretised privacy-loss values: an epsilon within ~1e-3 relative of the exact one


UNIT_ROUNDOFF = 2.0**-53  # float64
# c in ||fl(FFT x) - FFT x||_2 <= c u log2(n) ||FFT x||_2: Higham's theorem gives ~6.7 for radix-2 Cooley-Tukey;
# scipy's FFTs are mixed-radix (and real in fftconvolve), for which 16 is taken, not proven (the composed round-off
# measures about 1e5 times below the whole bound)
FFT_CONSTANT = 16.0


@dataclass(frozen=True)
class _Bounded:
    """A composed PLD and bounds on the floating-point error e in either of its PMFs (computed minus exact), in three
    parts by where they arose:

    * ``hockey``: sup over epsilon of |H_eps(e)|, H_eps(v) = sum_l (1 - e^(eps - l))_+ v_l the hockey-stick functional
      delta is read from, for the error of the hockey-stick values a one-step PMF is built from (a PMF built from
      them reproduces them, so their error reaches delta as it is, however large it is bin by bin);
    * ``l1``: the 1-norm of the arithmetic's rounding in building the one-step PMFs' bins;
    * ``l2``: the 2-norm of the FFTs' round-off.

    A convolution with a vector y multiplies each by at most ||y||_1: H_eps(e * y) = sum_l y_l H_(eps - l)(e), and
    ||e * y||_p <= ||e||_p ||y||_1."""

    pld: PrivacyLossDistribution
    hockey: float
    l1: float
    l2: float

    def scaled(self, factor: float) -> _Bounded:
        return _Bounded(self.pld, self.hockey * factor, self.l1 * factor, self.l2 * factor)


def fft_error_bound(length: int, count: int, input_norm: float, mass: float) -> float:
    """A bound on the 2-norm of the round-off that one FFT composition adds: ``count``-fold self-composition of a
    computed PMF x of 2-norm ``input_norm`` and 1-norm ``mass`` (with ``count`` = 2, the convolution of two PMFs,
    ``input_norm`` the larger 2-norm and ``mass`` the larger 1-norm), at FFT length at most ``length`` n:

        E <= (count m^(count - 1) + m^(count - 1)) (c u log2 n + u) ||x||_2,    m = max(1, ``mass``)

    u the unit round-off, c ``FFT_CONSTANT``. Derivation: a forward FFT in floating point errs by at most
    c u log2(n) ||X||_2 in the 2-norm (Higham 2002, "Accuracy and Stability of Numerical Algorithms", Theorem 24.2,
    whose c is ~6.7 for radix 2), with ||X||_2 = sqrt(n) ||x||_2; every |X_k| <= ||x||_1, so the spectrum's power
    errs by at most count m^(count - 1) (c u log2(n) + u) sqrt(n) ||x||_2; the scaled inverse FFT divides that
    2-norm by sqrt(n) and adds (c u log2(n) + u) ||z||_2 of its own, ||z||_2 <= m^(count - 1) ||x||_2."""
    per_pass = UNIT_ROUNDOFF * (FFT_CONSTANT * math.log2(max(int(length), 2)) + 1.0)
    power = max(1.0, mass) ** (count - 1)
    return (count + 1) * power * per_pass * input_norm


def _dense_pmfs(pld: PrivacyLossDistribution) -> list:
    """The PLD's PMFs as dense ones (dp-accounting keeps one per direction; the same object when symmetric)."""
    pmfs = [getattr(pld, name, None) for name in ("_pmf_remove", "_pmf_add")]
    if any(pmf is None for pmf in pmfs):
        raise RuntimeError(
            "dp-accounting's PrivacyLossDistribution no longer has _pmf_remove/_pmf_add: the FFT "
            "round-off bound of pate.privacy.pld reads each PMF's probabilities"
        )
    return [pmf.to_dense_pmf() for pmf in pmfs]


def _size(pld: PrivacyLossDistribution) -> int:
    """The number of bins of the larger of the PLD's two PMFs."""
    return max(pmf.size for pmf in _dense_pmfs(pld))


def _max_abs_loss(pld: PrivacyLossDistribution) -> float:
    """The largest |privacy loss| on the grid of either of the PLD's PMFs."""
    return max(
        max(abs(pmf._lower_loss), abs(pmf._lower_loss + pmf.size - 1)) * pmf._discretization for pmf in _dense_pmfs(pld)
    )


def _norms(pld: PrivacyLossDistribution) -> tuple[float, float]:
    """(the larger 2-norm, the larger 1-norm) of the PLD's computed PMFs: what its next FFT transforms."""
    probs = [np.asarray(pmf._probs, dtype=np.float64) for pmf in _dense_pmfs(pld)]
    return max(float(np.linalg.norm(p)) for p in probs), max(float(np.abs(p).sum()) for p in probs)


def _self_composed(inner: _Bounded, count: int) -> _Bounded:
    """``inner`` composed ``count`` times, with its error: the computed x~ = x + e composed exactly differs from x's
    composition by sum_j x^(*j) * e * x~^(*(count - 1 - j)) (telescoping), so each error part grows by at most
    count m^(count - 1), m = max(1, ||x~||_1) (``_Bounded``); plus this FFT's own (:func:`fft_error_bound`)."""
    composed = inner.pld.self_compose(count)
    norm, mass = _norms(inner.pld)
    size = max(_size(composed), _size(inner.pld))
    grown = inner.scaled(count * max(1.0, mass) ** (count - 1))
    return _Bounded(composed, grown.hockey, grown.l1, grown.l2 + fft_error_bound(2 * size, count, norm, mass))


def _composed_pair(first: _Bounded, second: _Bounded) -> _Bounded:
    """The composition of two bounded PLDs: x~ * y~ - x * y = e_x * y~ + x * e_y, so the first's error grows by at
    most ||y~||_1 and the second's by ||x||_1 <= 1; plus this FFT's own. dp-accounting then folds the convolution's
    tails, n1 + n2 - 1 bins, into its first bin and its infinity mass (``_truncate_tails``), which is no convolution:
    the 2-norm part becomes a 1-norm one there, ||e||_1 <= sqrt(n1 + n2 - 1) ||e||_2 over the bins before folding."""
    full_length = _size(first.pld) + _size(second.pld) - 1
    composed = first.pld.compose(second.pld)
    (norm_first, mass_first), (norm_second, mass_second) = _norms(first.pld), _norms(second.pld)
    grown = first.scaled(max(1.0, mass_second))
    own = fft_error_bound(2 * full_length, 2, max(norm_first, norm_second), max(mass_first, mass_second))
    folded = math.sqrt(full_length) * (grown.l2 + second.l2 + own)
    return _Bounded(composed, grown.hockey + second.hockey, grown.l1 + second.l1 + folded, 0.0)


def _base(pld: PrivacyLossDistribution, interval: float) -> _Bounded:
    """A one-step PMF as dp-accounting builds it (Connect the Dots, Doroshenko et al. 2022, Algorithm 1): from the
    mechanism's hockey-stick values delta_i on a grid of step d = ``interval``, each bin
    ((delta_(i+1) - delta_i) - e^d (delta_i - delta_(i-1))) / (e^d - 1). Its errors:

    * the values delta_i themselves, each a difference of distribution functions in [0, 1], one scaled by e^eps
      through its logarithm, taken as accurate to 4 u (1 + |eps|) (measured: at most 2.8 u for a Gaussian of
      mu <= 5 and 143 u at mu = 200, where eps reaches 20,000): a PMF built from them reproduces them at
      every grid point and is linear in e^eps between, so they reach its delta as they are (``hockey``);
    * the rounding of the bins' arithmetic: at most 2 u (|numerator| / (e^d - 1) + |bin|) each, plus u for each of
      the differences delta_(i+1) - delta_i where it is inexact, and the numerators sum to at most (1 + e^d) times
      the total variation of the monotone delta_i, at most 1: ``l1`` = 4 u ((1 + e^d) / (e^d - 1) + 1), twice what
      the bins' division alone needs (for d = 1e-4 about 8.9e-12).

    A pure-DP event's two-point PMF is built directly, its probabilities to 4 u in all."""
    arithmetic = 4.0 * UNIT_ROUNDOFF * ((1.0 + math.exp(interval)) / math.expm1(interval) + 1.0)
    return _Bounded(pld, 4.0 * UNIT_ROUNDOFF * (1.0 + _max_abs_loss(pld)), arithmetic, 0.0)


def privacy_loss_distribution(event: DpEvent, interval: float = DEFAULT_INTERVAL) -> PrivacyLossDistribution | None:
    """The pessimistic PLD of ``event`` (module docstring), or None where the event has none here."""
    bounded = _bounded(event, interval)
    return None if bounded is None else bounded.pld


def _bounded(event: DpEvent, interval: float) -> _Bounded | None:
    """The PLD of ``event`` with its round-off bound, or None where the event has none here."""
    # imported here: dp-accounting takes half a second to import, which every run would pay for an accountant it
    # asks only when it prices a ledger by PLD
    from dp_accounting import NeighboringRelation as Relation
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    interval = checks.positive("interval", interval)
    if isinstance(event, dpa.GaussianDpEvent):
        return _base(
            pld.from_gaussian_mechanism(event.noise_multiplier, value_discretization_interval=interval), interval
        )
    if isinstance(event, dpa.LaplaceDpEvent):
        return _base(
            pld.from_laplace_mechanism(event.noise_multiplier, value_discretization_interval=interval), interval
        )
    if isinstance(event, PureDpEvent):  # two bins, each probability computed directly: 4 u in all
        return _Bounded(
            pld.from_privacy_parameters(
                common.DifferentialPrivacyParameters(event.epsilon, 0.0), value_discretization_interval=interval
            ),
            0.0,
            4.0 * UNIT_ROUNDOFF,
            0.0,
        )
    if isinstance(event, (dpa.PoissonSampledDpEvent, ReplaceSampledGaussianEvent)):
        replace = isinstance(event, ReplaceSampledGaussianEvent)
        return _base(
            pld.from_gaussian_mechanism(
                event.noise_multiplier if replace else event.event.noise_multiplier,
                sampling_prob=event.sampling_probability,
                value_discretization_interval=interval,
                neighboring_relation=Relation.REPLACE_ONE if replace else Relation.ADD_OR_REMOVE_ONE,
            ),
            interval,
        )
    if isinstance(event, dpa.SelfComposedDpEvent):
        inner = _bounded(event.event, interval)
        if inner is None:
            return None
        if event.count == 0:
            return _Bounded(pld.identity(interval), 0.0, 0.0, 0.0)
        return _self_composed(inner, event.count) if event.count > 1 else inner
    if isinstance(event, dpa.ComposedDpEvent):
        return _composed([(part, 1) for part in event.events], interval)
    return None


def _composed(events: list[tuple[DpEvent, int]], interval: float) -> _Bounded | None:
    from dp_accounting.pld.privacy_loss_distribution import identity

    total = _Bounded(identity(interval), 0.0, 0.0, 0.0)
    for event, count in events:
        count = checks.non_negative_int("count", count)
        if count == 0:
            continue
        part = _bounded(event, interval)
        if part is None:
            return None
        total = _composed_pair(total, _self_composed(part, count) if count > 1 else part)
    return total


def delta_error_bound(bounded: _Bounded) -> float:
    """A bound on the error of the computed hockey-stick divergence delta(epsilon) of ``bounded``: H_eps of the
    error, at most ``hockey`` + ``l1`` + sqrt(n) ``l2`` (each bin weighted by a factor in [0, 1]; Cauchy-Schwarz over
    the n bins for the 2-norm), plus the rounding of dp-accounting's sum over the n bins, at most 2 n u (1 + L):
    its losses are counted down by repeated float subtraction, so each is off by at most n u L, L the largest
    |loss|, which moves its weight 1 - e^(eps - loss) by at most as much."""
    size = _size(bounded.pld)
    loop = 2.0 * size * UNIT_ROUNDOFF * (1.0 + _max_abs_loss(bounded.pld))
    return bounded.hockey + bounded.l1 + math.sqrt(size) * bounded.l2 + loop


def pld_epsilon(events: list[tuple[DpEvent, int]], delta: float, interval: float = DEFAULT_INTERVAL) -> float | None:
    """The smallest epsilon of the composition of ``count`` runs of each ``event`` at ``delta`` by their PLDs (an
    upper bound on the true one: pessimistic discretisation at ``interval``, the FFTs' round-off spent out of delta,
    module docstring), or None when any event has no PLD here or the round-off bound reaches half of ``delta``."""
    delta = checks.open_unit("delta", delta)
    total = _composed(events, interval)
    if total is None:
        return None
    margin = delta_error_bound(total)
    if margin >= delta / 2:
        return None
    return max(0.0, float(total.pld.get_epsilon_for_delta(delta - margin)))


def pld_profile(
    events: list[tuple[DpEvent, int]], interval: float = DEFAULT_INTERVAL
) -> Callable[[np.ndarray], np.ndarray] | None:
    """The privacy profile of the same composition, its PLD built once: a function from epsilons to delta(eps) by the
    PLD plus the FFTs' round-off bound (an upper bound on the true delta, at most 1); None when any event has no PLD
    here.

    Each epsilon is read by dp-accounting's one-epsilon sum (the sum of (1 - e^(eps - loss)) p over the losses
    above eps): its vectorised reading subtracts two nearly equal masses, whose round-off is not bounded here."""
    total = _composed(events, interval)
    if total is None:
        return None
    margin = delta_error_bound(total)

    def deltas(epsilons: np.ndarray) -> np.ndarray:
        read = [float(total.pld.get_delta_for_epsilon(float(eps))) for eps in np.asarray(epsilons, dtype=np.float64)]
        return np.minimum(np.asarray(read) + margin, 1.0)

    return deltas
