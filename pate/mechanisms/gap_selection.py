"""Private choice of k: report-noisy-max over the gaps of the sorted vote counts (Zhu & Wang 2022, Section 3.1).

For each query the candidates are j = 0..L (the padded gaps of ``pate.mechanisms.gaps``), scored
u(j) = q_j + r(j) with an optional public regulariser r, and the mechanism returns

    k = argmax_j  u(j) + Z_j,   Z_j i.i.d.

Each gap has sensitivity s = ``gap_sensitivity(neighbors)`` (2 replace, 1 add_remove); r is public,
so u has sensitivity s too, and neighbouring gaps may move in opposite directions (not monotone).

Noise and cost per query (every curve comes from ``pate.privacy.curves``):

* ``"gumbel"`` (Algorithm 1, the exponential mechanism with Pr[k = j] proportional to
  exp(eps u(j) / (2 s)), via the Gumbel-max trick): Z ~ Gumbel(2 s / eps). It is eps-bounded-range,
  hence eps-DP and eps^2/8-zCDP (Proposition 7): eps(alpha) = min(pure_dp_rdp(alpha, eps), alpha eps^2 / 8)
  (``exponential_mechanism_rdp``).
* ``"gaussian"`` (RNM-Gaussian, Theorem 8 / Corollary 9): Z ~ N(0, sigma^2). Theorem 8 bounds RNM by the
  RDP of the scalar noise-adding mechanism at sensitivity 2 s (the argmax can see candidate i move by
  +s while all others move by -s) plus log(m)/(alpha-1):
  eps(alpha) = alpha (2 s)^2 / (2 sigma^2) + log(m)/(alpha-1)  (= 2 alpha / sigma^2 + ... for s = 1).
* ``"laplace"`` (RNM-Laplace, the Laplace-noise variant the paper defers to its appendix): Z ~ Lap(b),
  b = ``sigma``. Two valid curves, and their pointwise minimum:
  (i) Theorem 8 with the Laplace mechanism at sensitivity 2 s: laplace_rdp(alpha, b, 2 s) + log(m)/(alpha-1);
  (ii) pure (2 s / b)-DP, converted by ``pure_dp_rdp``. Proof of (ii), the report-noisy-max argument
  of Dwork & Roth 2014, Claim 3.9, without its monotonicity assumption: fix the noise of every
  candidate but j; j wins on u iff Z_j > t := max_{i != j}(u_i + Z_i) - u_j, and on a neighbour
  t' <= t + 2 s (u_i' <= u_i + s, u_j' >= u_j - s). The Laplace survival function satisfies
  S(t + 2 s) >= exp(-2 s / b) S(t), so Pr'[j] >= exp(-2 s / b) Pr[j] after integrating over the
  other noises, and symmetrically.

m is the number of candidates: L + 1, or fewer with ``max_k`` (only j <= max_k, the unknown-domain
restriction of Section 3.1, which replaces m by kbar + 1 in Corollary 9) or with a regulariser that
is -inf somewhere (those j can never be chosen and are left out). The regulariser does not change any
curve: it is a public shift of the scores.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from pate.mechanisms.gaps import count_gaps, sorted_padded_counts
from pate.mechanisms.noise import noise_parameter, sample_noise
from pate.privacy import checks
from pate.privacy.accountant import PricedByEvent
from pate.privacy.events import (
    BoundedRangeEvent,
    DpEvent,
    PureDpEvent,
    ReportNoisyMaxEvent,
    TightestOfEvent,
    gaussian_event,
    laplace_event,
)
from pate.privacy.sensitivity import NeighboringRelation, check_relation, gap_sensitivity
from pate.votes import check_vote_counts

__all__ = ["SELECTIONS", "GapSelection", "check_max_k", "check_regularizer", "check_selection"]

SELECTIONS = ("gumbel", "gaussian", "laplace")


def check_selection(selection) -> str:
    """``selection`` if it is one of ``SELECTIONS``; ``ValueError`` naming it otherwise."""
    if not isinstance(selection, str) or selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    return selection


def check_regularizer(regularizer, num_labels: int) -> tuple[float, ...] | None:
    """A public regulariser r(j), j = 0..L, as a tuple of floats (None stays None).

    Finite values shift the scores; -inf excludes a candidate. NaN and +inf are refused, and at least
    one candidate must stay allowed.
    """
    if regularizer is None:
        return None
    try:
        values = np.asarray(list(regularizer), dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"regularizer must be a sequence of L + 1 = {num_labels + 1} numbers, got {regularizer!r}"
        ) from error
    if values.shape != (num_labels + 1,):
        raise ValueError(
            f"regularizer must have one value per k = 0..num_labels, i.e. length {num_labels + 1}, "
            f"got shape {values.shape}"
        )
    if np.any(np.isnan(values)) or np.any(values == np.inf):
        raise ValueError(f"regularizer must be finite or -inf (to exclude a k), got {values.tolist()!r}")
    if np.all(values == -np.inf):
        raise ValueError("regularizer excludes every k (all entries are -inf)")
    return tuple(float(value) for value in values)


def check_max_k(max_k, num_labels: int) -> int | None:
    """``max_k`` (kbar) in [1, num_labels], or None for no restriction."""
    if max_k is None:
        return None
    max_k = checks.positive_int("max_k", max_k)
    if max_k > num_labels:
        raise ValueError(f"max_k must be an integer in [1, num_labels={num_labels}], got {max_k!r}")
    return max_k


@dataclass(frozen=True)
class GapSelection(PricedByEvent):
    """Report-noisy-max over the padded gaps; returns the number k of labels to release, per query.

    Arguments: ``selection`` in {"gumbel", "gaussian", "laplace"}; ``epsilon`` (gumbel) or ``sigma``
    (gaussian: standard deviation; laplace: scale b) -- the other must be left None; ``neighbors``;
    optional ``regularizer`` (public r(j), length L + 1, -inf excludes j) and ``max_k`` (only j <= max_k).
    See the module docstring for the formulas and their sources.
    """

    num_labels: int
    num_teachers: int
    selection: str
    sigma: float | None = None
    epsilon: float | None = None
    neighbors: NeighboringRelation | str = "replace"
    regularizer: tuple[float, ...] | None = None
    max_k: int | None = None
    # Derived: candidate columns in the increasing layout of ``count_gaps`` (column i is j = L - i),
    # as a slice when they are contiguous, and the regulariser restricted to them.
    _columns: slice | np.ndarray = field(init=False, repr=False, compare=False)
    _offset: np.ndarray | None = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        checks.set_fields(
            self,
            num_labels=checks.positive_int("num_labels", self.num_labels),
            num_teachers=checks.positive_int("num_teachers", self.num_teachers),
        )
        check_selection(self.selection)
        value = noise_parameter(
            self.selection == "gumbel", self.sigma, self.epsilon, "sigma", "epsilon", f"selection={self.selection!r}"
        )
        checks.set_fields(self, **{"epsilon" if self.selection == "gumbel" else "sigma": value})
        checks.set_fields(
            self,
            neighbors=check_relation(self.neighbors),
            regularizer=check_regularizer(self.regularizer, self.num_labels),
            max_k=check_max_k(self.max_k, self.num_labels),
        )

        num_labels = self.num_labels
        allowed = np.ones(num_labels + 1, dtype=bool)  # indexed by j
        if self.max_k is not None:
            allowed[self.max_k + 1 :] = False
        if self.regularizer is not None:
            allowed &= np.isfinite(self.regularizer)
        if not allowed.any():
            raise ValueError(f"regularizer={self.regularizer!r} with max_k={self.max_k!r} leaves no k to choose from")
        columns = np.flatnonzero(allowed[::-1])  # column i <-> j = L - i
        contiguous = columns[-1] - columns[0] + 1 == columns.size
        checks.set_fields(self, _columns=slice(int(columns[0]), int(columns[-1]) + 1) if contiguous else columns)
        offset = None
        if self.regularizer is not None:
            offset = np.asarray(self.regularizer, dtype=np.float64)[::-1][columns]
            offset = None if not np.any(offset) else offset
        checks.set_fields(self, _offset=offset)

    # ------------------------------------------------------------------ facts
    @property
    def sensitivity(self) -> float:
        """Gap sensitivity s of the relation (``pate.privacy.gap_sensitivity``)."""
        return gap_sensitivity(self.neighbors)

    @property
    def num_candidates(self) -> int:
        """m: the number of k the mechanism can return."""
        columns = self._columns
        return columns.stop - columns.start if isinstance(columns, slice) else int(columns.size)

    @property
    def noise_scale(self) -> float:
        """Scale of Z: 2 s / eps (Gumbel), sigma (Gaussian standard deviation, Laplace b)."""
        if self.selection == "gumbel":
            return 2.0 * self.sensitivity / self.epsilon
        return self.sigma

    @property
    def name(self) -> str:
        parameter = f"eps={self.epsilon:g}" if self.selection == "gumbel" else f"sigma={self.sigma:g}"
        restriction = "" if self.max_k is None else f", max_k={self.max_k}"
        regularized = "" if self.regularizer is None else ", regularized"
        return (
            f"GapSelection({self.selection}, {parameter}, m={self.num_candidates}{restriction}{regularized}, "
            f"neighbors={self.neighbors})"
        )

    def noise_parameters(self) -> dict[str, float]:
        return {"epsilon": self.epsilon} if self.selection == "gumbel" else {"sigma": self.sigma}

    def scale_noise(self, multiplier: float) -> "GapSelection":
        """The same mechanism with its noise scale multiplied by ``multiplier`` (epsilon divided by it)."""
        multiplier = checks.positive("multiplier", multiplier)
        if self.selection == "gumbel":
            return dataclasses.replace(self, epsilon=self.epsilon / multiplier)
        return dataclasses.replace(self, sigma=self.sigma * multiplier)

    # ------------------------------------------------------------------- cost
    @property
    def dp_event(self) -> DpEvent:
        """One query's cost (module docstring): the exponential mechanism, or Theorem 8 (and pure DP for Laplace)."""
        if self.selection == "gumbel":
            return BoundedRangeEvent(self.epsilon)
        shift = 2.0 * self.sensitivity  # Theorem 8's scalar sensitivity
        if self.selection == "gaussian":
            return ReportNoisyMaxEvent(gaussian_event(self.sigma, shift), self.num_candidates)
        return TightestOfEvent(
            (
                ReportNoisyMaxEvent(laplace_event(self.sigma, shift), self.num_candidates),
                PureDpEvent(shift / self.sigma),
            )
        )

    # ------------------------------------------------------------ mechanism
    def draw_noise(self, num_queries: int, rng: np.random.Generator) -> np.ndarray:
        """The noise Z for ``num_queries`` queries: float64 ``[num_queries, m]``, already scaled."""
        return sample_noise(self.selection, self.noise_scale, (num_queries, self.num_candidates), rng)

    def select(self, gaps: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """k int64 ``[Q]`` = argmax over the candidates of q_j + r(j) + Z_j.

        ``gaps`` ``[Q, L+1]`` in the increasing layout of ``count_gaps``; ``noise`` from ``draw_noise``
        (overwritten).
        """
        scores = noise
        scores += gaps[:, self._columns]
        if self._offset is not None:
            scores += self._offset
        best = scores.argmax(axis=1)
        columns = self._columns
        column = best + columns.start if isinstance(columns, slice) else columns[best]
        return self.num_labels - column

    def select_from_gaps(self, gaps: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """k int64 ``[Q]`` from gaps ``[Q, L+1]`` in the increasing layout of ``count_gaps``."""
        return self.select(gaps, self.draw_noise(gaps.shape[0], rng))

    def __call__(self, votes, rng: np.random.Generator) -> np.ndarray:
        """k int64 ``[Q]`` for vote counts ``[Q, L]`` (validated as in the aggregators)."""
        counts = check_vote_counts(votes, self.num_labels, self.num_teachers)
        return self.select_from_gaps(count_gaps(sorted_padded_counts(counts, self.num_teachers)), rng)
