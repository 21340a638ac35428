"""Limited Domain (LD): top-k from the true top-kbar with a noisy threshold (Durfee & Rogers 2019).

Algorithm 1 (LimitDom_{k, kbar}). Sort h_(1) >= h_(2) >= ... (ties by the smaller index) and read only
the top kbar + 1 counts (the "unknown domain" property: no other count is ever touched). Set

    h_bot = h_(kbar+1) + 1 + ln(min{kbar, d - kbar} / delta) / eps,

add i.i.d. Gumbel(1/eps) noise to h_(1), ..., h_(kbar) and to h_bot, sort the kbar + 1 noisy values and
return the indices ranked above the noisy h_bot, at most k of them, in rank order (-1 fills the rest).
The paper's min also holds Delta, a bound on the bins one user may touch; no relation of the project bounds it
(one user may move every count, DESIGN.md), so Delta = d here. (A smaller Delta would break the delta stated:
at d = 100, kbar = 50, Delta = 1, eps 1, delta 1e-3, a user added to 50 empty bins shuts bins 50..99 out, which
the other histogram releases with probability 0.048 against the delta 0.002 stated.)

The "+1" in h_bot is the largest change of h_i - h_(kbar+1) between add/remove neighbours
(``gap_sensitivity("add_remove")``): an index in the top-kbar of h but not of a neighbour h' has
h_i - h_(kbar+1) <= h'_i - h'_(kbar+1) + 1 <= 1 (Lemma 5.2 of the full version), so its noisy count beats
the noisy threshold with probability at most delta / min{kbar, d - kbar}, and at most that many
indices can leave the top-kbar (Lemma 5.3): the delta of Theorem 1.

Privacy (add/remove neighbours, the relation of the paper's analysis):

* Algorithm 1 is k rounds of exponential-mechanism peeling over the limited domain plus bot (Lemma 4.2:
  one-shot Gumbel top-k = peeling). The counts are a monotone quality score under add/remove, so each
  round with Gumbel(1/eps) is eps-bounded-range (Lemma 4.3; ``count_selection_range("add_remove")`` = 1).
  Theorem 1: (eps', delta + delta')-DP for every delta' >= 0, eps' = ``bounded_range_composition(eps, k,
  delta')`` (eq. (2) is Lemma 4.4 with k mechanisms).
* Theorem 2 (pay-what-you-get, Algorithm 2 multiLimitDom_{k*, l*}): adaptive calls, stopped when the
  outcomes released (bot included) reach k* or the calls reach l*, are (eps*, 2 l* delta + delta')-DP
  with eps* = ``bounded_range_composition(eps, k*, delta')``. ``dp_statement(queries)`` takes
  k* = queries k and l* = queries (every call then fits: |o_i| <= k); ``PayWhatYouGet`` keeps the
  books of Algorithm 2 for a smaller k*.
* Under ``neighbors="replace"`` the mechanism is unchanged and its run is stated through
  ``replace_from_add_remove`` (a replacement is a removal then an addition): (2 eps*, (1 + e^eps*) delta_ar),
  with delta_ar the add/remove delta of the whole run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pate.mechanisms.topk.base import (
    DPStatement,
    StatementCost,
    TopKResult,
    check_histograms,
    check_k,
    check_max_k,
    check_max_k_fits,
    sorted_order,
)
from pate.mechanisms.topk.peeling import gumbel_peel
from pate.privacy import checks
from pate.privacy.composition import bounded_range_composition, replace_from_add_remove, solve_per_query
from pate.privacy.sensitivity import NeighboringRelation, check_relation, count_selection_range, gap_sensitivity

__all__ = ["LimitedDomain", "PayWhatYouGet"]

ANALYSED_RELATION = "add_remove"  # the relation of Durfee & Rogers' proofs; replace goes through group privacy
# Slack values tried by ``spent`` (fractions of the room left), refined by bisection: see ``_largest_slack``.
_SLACK_FRACTIONS = np.geomspace(1e-12, 1.0, 241)


@dataclass(frozen=True)
class LimitedDomain(StatementCost):
    """LimitDom_{k, kbar} at per-pick bounded-range epsilon ``epsilon`` and threshold delta ``delta``.

    ``max_k`` is kbar (>= k, < d). ``epsilon`` is the
    eps of Algorithm 1 (one peeling round), ``delta`` its delta; ``for_budget`` sets both from a total.
    """

    _theorems = "Durfee & Rogers 2019, Theorem 2 with Lemma 4.4"

    k: int
    max_k: int
    epsilon: float
    delta: float
    neighbors: NeighboringRelation | str = "add_remove"

    def __post_init__(self):
        checks.set_fields(
            self,
            k=check_k(self.k),
            max_k=check_max_k(self.max_k, self.k),
            epsilon=checks.positive("epsilon", self.epsilon),
            delta=checks.open_unit("delta", self.delta),
            neighbors=check_relation(self.neighbors),
        )

    @classmethod
    def for_budget(
        cls,
        k: int,
        max_k: int,
        epsilon: float,
        delta: float,
        queries: int = 1,
        neighbors: str = "add_remove",
    ) -> "LimitedDomain":
        """LD within (epsilon, delta)-DP over ``queries`` adaptive queries (Theorem 2 with k* = queries k).

        Split of delta. The add/remove delta of the run, delta_ar, is ``delta`` (add_remove) or
        delta / (1 + e^{epsilon / 2}) (replace: the statement is (2 eps*, (1 + e^eps*) delta_ar) and
        2 eps* <= epsilon). Half of delta_ar goes to Theorem 2's 2 l* delta term (per-query delta =
        delta_ar / (4 queries)), the other half is left to the composition slack delta'; then the
        per-pick epsilon is the largest with ``spent(queries, delta) <= epsilon`` (``solve_per_query``).
        """
        epsilon = checks.positive("epsilon", epsilon)
        delta = checks.open_unit("delta", delta)
        queries = checks.positive_int("queries", queries)
        check_relation(neighbors)
        k = check_k(k)
        run_delta = delta if neighbors == ANALYSED_RELATION else delta / (1.0 + math.exp(epsilon / 2.0))
        query_delta = run_delta / (4.0 * queries)

        def spent_at(pick_epsilon: float) -> float:
            mechanism = cls(k, max_k, pick_epsilon, query_delta, neighbors)
            return mechanism._epsilon_at(queries, delta)

        # Bracket. lo: queries k picks at lo compose to <= epsilon / 4 (<= epsilon / 2 under replace).
        # hi: every term of bounded_range_composition is >= eps min(1, sqrt(ln(1/delta') / 2)) and
        # delta' < delta, so at hi the run costs >= 2 epsilon.
        lo = epsilon / (4.0 * queries * k)
        hi = 2.0 * epsilon / min(1.0, math.sqrt(math.log(1.0 / delta) / 2.0))
        pick_epsilon = solve_per_query(epsilon, spent_at, lo, hi)
        return cls(k, max_k, pick_epsilon, query_delta, neighbors)

    @property
    def name(self) -> str:
        return (
            f"LD(k={self.k}, kbar={self.max_k}, eps={self.epsilon:.4g}, delta={self.delta:.3g}, "
            f"neighbors={self.neighbors})"
        )

    @property
    def noise_scale(self) -> float:
        """Gumbel scale 1/eps: one peeling round is eps-bounded-range for the monotone counts (Lemma 4.3)."""
        return count_selection_range(ANALYSED_RELATION) / self.epsilon

    def threshold_offset(self, num_bins: int) -> float:
        """h_bot - h_(kbar+1) = 1 + ln(min{kbar, d - kbar} / delta) / eps (Algorithm 1, Delta = d)."""
        leaving = min(self.max_k, num_bins - self.max_k)  # indices that can leave the top-kbar
        return gap_sensitivity(ANALYSED_RELATION) + math.log(leaving / self.delta) / self.epsilon

    def __call__(self, histograms, rng: np.random.Generator) -> TopKResult:
        counts = check_histograms(histograms, k=self.k)
        num_queries, num_bins = counts.shape
        check_max_k_fits(self.max_k, num_bins)
        kbar = self.max_k
        order, top = sorted_order(counts, depth=kbar + 1)
        scores = top.astype(np.float64)
        scores[:, kbar] += self.threshold_offset(num_bins)  # column kbar holds h_bot
        # Peeling k rounds over the kbar counts and bot; everything from bot on is not released.
        picked = gumbel_peel(scores, np.full(num_queries, self.k), self.noise_scale, rng)
        after_bot = np.cumsum(picked == kbar, axis=1) > 0
        return TopKResult(np.where(after_bot, -1, np.take_along_axis(order, picked, 1)))

    def dp_statement(self, queries: int, delta_slack: float, items: int | None = None) -> DPStatement:
        """Theorem 2 for ``queries`` adaptive calls (l*) releasing at most ``items`` outcomes (k*, default queries k).

        add_remove: (bounded_range_composition(eps, k*, delta'), 2 l* delta + delta'); replace: that
        statement through ``replace_from_add_remove``. ``items`` below queries k is the pay-what-you-get
        regime, valid only if the calls stop as Algorithm 2 says (``PayWhatYouGet``). One query is stated
        by Theorem 2 too (2 delta + delta'; Theorem 1 would give delta + delta'): one rule for every count.
        """
        epsilon, delta = self._composed(queries, delta_slack, items)
        return DPStatement(epsilon, delta, self.neighbors, self.accounting)

    def _composed(self, queries: int, delta_slack: float, items: int | None = None) -> tuple[float, float]:
        queries = checks.positive_int("queries", queries)
        items = queries * self.k if items is None else checks.positive_int("items", items)
        epsilon = bounded_range_composition(self.epsilon, items, delta_slack)
        delta = 2.0 * queries * self.delta + delta_slack
        if self.neighbors == ANALYSED_RELATION:
            return epsilon, delta
        return replace_from_add_remove(epsilon, delta)

    def _epsilon_at(self, queries: int, delta: float) -> float:
        """Epsilon of the statement at the largest slack whose total delta fits ``delta`` (+inf if none)."""
        room = delta - 2.0 * queries * self.delta
        if room <= 0:
            return math.inf
        slack = _largest_slack(lambda value: self._composed(queries, value)[1], delta, room)
        return math.inf if slack is None else self._composed(queries, slack)[0]


def _largest_slack(total_delta, delta: float, room: float) -> float | None:
    """The largest slack s in (0, room] with ``total_delta(s) <= delta`` (None if none on the grid).

    The statement's epsilon decreases in the slack, so the largest feasible slack is the best. Under
    add_remove total_delta(s) = 2 l* delta + s and the answer is the room itself (up to rounding); under
    replace total_delta(s) = (1 + e^{eps*(s)}) (2 l* delta + s) need not be monotone, so the slack is
    searched on a geometric grid of ``room`` and refined by bisection between the last feasible grid point
    and the next: a continuous choice (what ``for_budget``'s solver needs) that is always feasible.
    """
    grid = room * _SLACK_FRACTIONS
    feasible = np.array([total_delta(value) <= delta for value in grid])
    if not feasible.any():
        return None
    last = int(np.flatnonzero(feasible)[-1])
    if last == len(grid) - 1:
        return float(grid[-1])
    return solve_per_query(delta, total_delta, float(grid[last]), float(grid[last + 1]))


@dataclass(frozen=True)
class PayWhatYouGet:
    """The budget of Algorithm 2 (multiLimitDom_{k*, l*}): ``items`` = k* outcomes and ``queries`` = l* calls left.

    A call with parameter k releases |o| outcomes: its indices plus bot when fewer than k came back,
    k otherwise (bot is an outcome of the peeling and is paid for). A call may start only while
    k <= the items left and a call is left. The statement of a run that obeys these rules is
    ``LimitedDomain.dp_statement(queries=l*, delta_slack, items=k*)`` for the budget it started with.
    """

    items: int
    queries: int

    def __post_init__(self):
        checks.non_negative_int("items", self.items)
        checks.non_negative_int("queries", self.queries)

    def remaining_after(self, result: TopKResult) -> "PayWhatYouGet":
        """The budget after the calls of ``result`` (one per row, in order); ``ValueError`` if one was not allowed."""
        k = result.indices.shape[1]
        returned = result.returned
        cost = np.where(returned < k, returned + 1, k)
        spent_before = np.cumsum(cost) - cost
        if len(cost) > self.queries:
            raise ValueError(f"{len(cost)} calls exceed the {self.queries} calls left (l*)")
        refused = np.flatnonzero(self.items - spent_before < k)
        if refused.size:
            raise ValueError(
                f"call {refused[0]} (k={k}) starts with {self.items - spent_before[refused[0]]} "
                f"items left (k*): Algorithm 2 does not run it"
            )
        return PayWhatYouGet(self.items - int(cost.sum()), self.queries - len(cost))
