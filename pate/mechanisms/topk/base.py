"""The batch protocol of the private top-k mechanisms on plain histograms.

A top-k mechanism is an immutable configured object with

* ``k`` (how many indices it is asked for), ``neighbors`` (the relation its cost is stated for), ``name``;
* ``__call__(histograms, rng) -> TopKResult`` for a batch ``[B, d]`` of non-negative integer histograms
  and one numpy Generator, with no Python loop over bins (and none over histograms where the work per
  histogram is the same);
* its privacy cost for ``queries`` adaptive queries, in exactly one of two forms:

  - RDP (EM-CDP, PNF peeling, JOINT, StableTopK with a fixed k): ``rdp(orders)`` and
    ``delta_per_query``, which ``pate.privacy.Ledger`` composes;
  - an (epsilon, delta) statement where the paper gives no RDP analysis (Limited Domain, Top Stable):
    ``dp_statement(queries, delta_slack) -> DPStatement``, composed by that mechanism's own theorem.

  Either way ``spent(queries, delta)`` returns the epsilon of ``queries`` such queries at ``delta``,
  so every mechanism of an experiment can be checked against the same target.

Histograms here count users, not teachers: user i contributes x_i in {0, 1}^d and h = sum_i x_i.
The relations of ``pate.privacy.sensitivity`` carry over word for word with "user" for "teacher":
``add_remove`` (one user's row added or removed: every count moves by at most 1, all in the same
direction; the relation of Durfee & Rogers 2019, Carvalho et al. 2020 and Zhu & Wang 2022, whose users
may touch every bin, "unrestricted sensitivity") and ``replace`` (one user's row replaced: every count
moves by at most 1, either way).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from pate.privacy import checks
from pate.privacy.accountant import PricedByEvent
from pate.privacy.calibration import calibrate_noise
from pate.privacy.ledger import Ledger
from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = [
    "DPStatement",
    "PureEpsilonCost",
    "StatementCost",
    "TopKResult",
    "check_histograms",
    "check_k",
    "check_max_k",
    "check_max_k_fits",
    "sorted_order",
    "top_k_recall",
]


@dataclass(frozen=True, eq=False)
class TopKResult:
    """Indices released for a batch of B histograms.

    indices int64 ``[B, k]``: the released indices, in an order that is itself part of the private output
            (the noisy rank order of peeling, LD and JOINT) or data-independent (StableTopK: by bin
            index; TS: random) -- never the true rank order, which the set releases do not protect;
            -1 fills the slots a mechanism left empty (Limited Domain, Top Stable and StableTopK may
            return fewer than k). Released indices are distinct within a row.
    """

    indices: np.ndarray

    @property
    def returned(self) -> np.ndarray:
        """int64 ``[B]``: how many indices each row released."""
        return (self.indices >= 0).sum(axis=1)


@dataclass(frozen=True)
class DPStatement:
    """An (epsilon, delta)-DP guarantee under ``neighbors``, with the theorem it comes from."""

    epsilon: float
    delta: float
    neighbors: NeighboringRelation | str
    source: str

    def __post_init__(self):
        checks.non_negative("epsilon", self.epsilon)
        if not 0.0 <= self.delta <= 1.0:
            raise ValueError(f"delta must lie in [0, 1], got {self.delta!r}")
        checks.set_fields(self, neighbors=check_relation(self.neighbors))

    def __str__(self) -> str:
        return f"({self.epsilon:.4g}, {self.delta:.3g})-DP under {self.neighbors} ({self.source})"


class PureEpsilonCost(PricedByEvent):
    """Cost protocol of a mechanism with one pure-DP parameter, named by ``_epsilon_field``, and no delta.

    Gives ``accounting``, ``rdp`` and ``delta_per_query`` (0) from the class's ``dp_event``, ``noise_parameters``, ``scale_noise`` (the parameter
    divided by the multiplier, for ``calibrate_noise``), ``spent`` and ``_calibrated`` (switch between a
    paper's closed-form calibration and the ledger's). The class supplies ``dp_event`` and ``pure_epsilon``
    (its per-query pure-DP epsilon).
    """

    _epsilon_field = "epsilon"
    accounting = "pure DP: the smaller of basic composition and the RDP ledger"

    def noise_parameters(self) -> dict[str, float]:
        return {self._epsilon_field: getattr(self, self._epsilon_field)}

    def scale_noise(self, multiplier: float):
        """The same mechanism with its epsilon divided by ``multiplier``."""
        epsilon = getattr(self, self._epsilon_field) / checks.positive("multiplier", multiplier)
        return dataclasses.replace(self, **{self._epsilon_field: epsilon})

    def spent(self, queries: int, delta: float) -> float:
        """Epsilon of ``queries`` adaptive queries at ``delta``: the smaller of two valid bounds.

        The RDP ledger's tight conversion, and basic composition of the pure guarantee, queries x
        ``pure_epsilon`` (Dwork & Roth 2014, Theorem 3.16; it holds at delta = 0, so at every delta). The
        second wins for a few queries: a finite grid of orders converts a pure curve to slightly more
        than its epsilon.
        """
        ledger = Ledger(neighbors=self.neighbors).compose(self, queries).get_epsilon(delta, "rdp").epsilon
        return min(ledger, queries * self.pure_epsilon)

    def _calibrated(self, accountant: str, closed_form: str, epsilon: float, delta: float, queries: int):
        """``self`` (calibrated by the paper's ``closed_form`` rule) or, for ``accountant="rdp"``, the
        largest parameter the RDP ledger allows for ``queries`` queries at (epsilon, delta)."""
        if accountant not in (closed_form, "rdp"):
            raise ValueError(f"accountant must be {closed_form!r} or 'rdp', got {accountant!r}")
        checks.open_unit("delta", delta)
        return self if accountant == closed_form else calibrate_noise(self, epsilon, delta, queries)[0]


class StatementCost:
    """``spent`` for a mechanism stated as (epsilon, delta)-DP: the class supplies ``_epsilon_at(queries, delta)``
    (the statement's epsilon at the best split of the total ``delta``, +inf when the queries' own delta
    terms leave no room) and ``_theorems``; ``accounting`` names them."""

    _theorems: str  # the paper's theorems the statement comes from
    _replace_note = "replace = remove + add (group privacy)"

    @property
    def accounting(self) -> str:
        """The theorems behind the statement, and how replace neighbours are covered (the papers analyse
        add_remove only; a replacement is a removal then an addition)."""
        return self._theorems if self.neighbors == "add_remove" else f"{self._theorems}; {self._replace_note}"

    def spent(self, queries: int, delta: float) -> float:
        """Epsilon of ``queries`` adaptive queries at total ``delta``; ``ValueError`` if delta leaves no room."""
        epsilon = self._epsilon_at(queries, checks.open_unit("delta", delta))
        if math.isinf(epsilon):
            raise ValueError(
                f"delta={delta!r} leaves no room for a statement: the {queries} queries' own delta "
                f"terms use it up ({self.accounting})"
            )
        return epsilon


def check_histograms(histograms, name: str = "histograms", k: int | None = None) -> np.ndarray:
    """Validate a batch of histograms: 2-D ``[B, d]``, integer-valued, >= 0; returned as int64.

    Floats holding whole numbers are accepted (and converted); anything else raises ``ValueError``
    naming ``name`` -- nothing is rounded or clipped. With ``k``, also that k < d (``check_k``).
    """
    array = np.asarray(histograms)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] < 2:
        raise ValueError(f"{name} must be a 2-D array [batch >= 1, bins >= 2], got shape {array.shape}")
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f"{name} must hold integer counts, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            bad = array[~(np.isfinite(array) & (array == np.round(array)))].ravel()[:5]
            raise ValueError(f"{name} must hold integer counts, got non-integer values such as {bad.tolist()}")
    if np.any(array < 0):
        raise ValueError(f"{name} must be >= 0, got a minimum of {array.min()!r}")
    if k is not None:
        check_k(k, array.shape[1])
    return array.astype(np.int64, copy=False)


def check_k(k, num_bins: int | None = None, name: str = "k") -> int:
    """``k`` as an int in [1, num_bins - 1] (the top-k of d bins is only a question for k < d)."""
    k = checks.positive_int(name, k)
    if num_bins is not None and k >= num_bins:
        raise ValueError(f"{name} must be < the number of bins d={num_bins}, got {k}")
    return k


def check_max_k(max_k, k: int, name: str = "max_k") -> int:
    """The unknown-domain cut-off kbar: an int >= k (the mechanism reads only the top kbar + 1 counts)."""
    max_k = checks.positive_int(name, max_k)
    if max_k < k:
        raise ValueError(f"{name} must be >= k={k}, got {max_k}")
    return max_k


def check_max_k_fits(max_k: int, num_bins: int) -> int:
    """kbar must leave a (kbar + 1)-th count to compare with: kbar <= d - 1."""
    if max_k > num_bins - 1:
        raise ValueError(f"max_k must be <= d - 1 = {num_bins - 1} for histograms of {num_bins} bins, got {max_k}")
    return max_k


def sorted_order(histograms: np.ndarray, depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the ``depth`` largest counts per row in decreasing order, and those counts.

    Ties are broken by the smaller index (a data-independent rule, as the papers require). ``depth``
    defaults to all d bins; a smaller depth costs O(d + depth log depth) per row instead of O(d log d).
    Returns (order int64 ``[B, depth]``, counts int64 ``[B, depth]``).
    """
    num_bins = histograms.shape[1]
    depth = num_bins if depth is None else min(int(depth), num_bins)
    if histograms.size and int(histograms.max()) >= (2**62) // num_bins:
        # Counts so large that the packed key below could overflow int64: sort on two keys instead.
        index = np.broadcast_to(np.arange(num_bins), histograms.shape)
        order = np.lexsort((index, -histograms), axis=1)[:, :depth]
        return order, np.take_along_axis(histograms, order, 1)
    # Sort key: decreasing count, then increasing index; as one int64 so a single (arg)partition works.
    key = -histograms * num_bins + np.arange(num_bins)
    if depth < num_bins:
        candidates = np.argpartition(key, depth - 1, axis=1)[:, :depth]
        order = np.take_along_axis(candidates, np.argsort(np.take_along_axis(key, candidates, 1), axis=1), 1)
    else:
        order = np.argsort(key, axis=1)
    return order, np.take_along_axis(histograms, order, 1)


def top_k_recall(histograms, indices: np.ndarray, k: int) -> np.ndarray:
    """Fraction of the true top-k returned, per row: |{returned i : h_i >= h_(k)}| / k.

    With ties at the k-th count every tied bin counts as a true top-k bin (the true top-k *set* is then
    not unique, and no tie-breaking rule is privileged). Empty slots (-1) count as misses. This is the
    "proportion of true top-k" of Carvalho et al. 2020 (Section 5) and the recall of Zhu & Wang 2022.
    """
    histograms = check_histograms(histograms, k=k)
    kth = -np.partition(-histograms, k - 1, axis=1)[:, k - 1]
    safe = np.where(indices >= 0, indices, 0)
    hits = (np.take_along_axis(histograms, safe, 1) >= kth[:, None]) & (indices >= 0)
    return hits.sum(axis=1) / k
