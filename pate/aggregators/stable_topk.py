"""StableTopK (Zhu & Wang 2022, Algorithm 2 and Example 14): adaptive-k multi-label PATE.

Per query: sort the vote counts, pad them with the public constants T (front) and 0 (back) so that
k = 0 (no label) and k = L (every label) are possible (``pate.mechanisms.gaps``); choose k by
report-noisy-max over the L + 1 gaps (``GapSelection``: gumbel, gaussian or laplace); then run
propose-test-release on the chosen gap (``GapTest``: gaussian or laplace) and, if it passes, release
the top-k label set exactly, without noise.

Cost per query: the composition (Zhu & Wang 2022, Lemma 16) of the selection's RDP curve and the
test's delta_t-approximate RDP curve, eps(alpha) = eps_select(alpha) + eps_test(alpha), with
``delta_per_query = delta_t``. ``conf/aggregator/stable_topk_paper.yaml`` is the paper's CelebA
setting (RNM-Gaussian sigma_1 = 50, PTR-Gaussian sigma = 60, delta_t = 1e-9).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from dp_accounting import ComposedDpEvent

from pate.aggregators.base import AggregationResult, Aggregator, check_rng
from pate.mechanisms.gap_selection import GapSelection, check_selection
from pate.mechanisms.gaps import count_gaps, sorted_padded_counts, top_k_labels
from pate.mechanisms.noise import noise_parameter
from pate.mechanisms.ptr import GapTest, check_test
from pate.privacy import checks
from pate.privacy.accountant import PricedByEvent
from pate.privacy.sensitivity import NeighboringRelation
from pate.votes import check_vote_counts

__all__ = ["StableTopK", "StableTopKResult"]

# Scores per block in ``StableTopK.__call__`` (queries x (L + 1) float64, 1 MiB): a block stays in cache.
_BLOCK_SCORES = 1 << 17


@dataclass(frozen=True, eq=False)
class StableTopKResult(AggregationResult):
    """``AggregationResult`` plus ``selected_k`` int ``[Q]``: the k chosen by the private selection, answered or not.

    Releasing it costs nothing extra: it is part of what the selection's RDP curve pays for.
    """

    selected_k: np.ndarray


@dataclass(frozen=True)
class StableTopK(PricedByEvent, Aggregator):
    """StableTopK aggregator. Keywords (= ``conf/aggregator/stable_topk_*.yaml`` keys):

    num_labels, num_teachers: L and T (counts lie in [0, T]).
    selection: "gumbel" (takes ``eps_select``), "gaussian" or "laplace" (take ``sigma_select``: the
        Gaussian standard deviation or the Laplace scale on the gaps). Giving the other one raises.
    test: "gaussian" (takes ``sigma_test``) or "laplace" (takes ``eps_test``).
    delta_t: the PTR failure probability in (0, 1), also the per-query approximate-RDP delta.
    neighbors: "replace" (default) or "add_remove"; sets the gap sensitivity s (2 or 1).
    regularizer: optional public r(j), j = 0..L (length L + 1), added to the gap scores; -inf excludes j.
    max_k: optional kbar in [1, L]: only k <= kbar can be chosen (unknown-domain restriction).

    ``__call__(votes, rng)`` takes vote counts int ``[Q, L]`` (numpy, or a torch tensor, converted at
    the boundary with ``.cpu().numpy()``) and returns a ``StableTopKResult``; ``k`` is -1 where a query
    is unanswered.
    """

    num_labels: int
    num_teachers: int
    selection: str
    sigma_select: float | None = None
    eps_select: float | None = None
    test: str = "gaussian"
    sigma_test: float | None = None
    eps_test: float | None = None
    delta_t: float | None = None
    neighbors: NeighboringRelation | str = "replace"
    regularizer: tuple[float, ...] | None = None
    max_k: int | None = None
    _selection: GapSelection = field(init=False, repr=False, compare=False)
    _test: GapTest = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        # Validated once: the two parts check the arguments they share with this signature, under the same names,
        # and their normal forms are copied back. Only the noise is named differently here (sigma_select /
        # eps_select, sigma_test / eps_test), so it is checked here, under these names, before the parts exist.
        check_selection(self.selection)
        select_value = noise_parameter(
            self.selection == "gumbel",
            self.sigma_select,
            self.eps_select,
            "sigma_select",
            "eps_select",
            f"selection={self.selection!r}",
        )
        check_test(self.test)
        test_value = noise_parameter(
            self.test == "laplace", self.sigma_test, self.eps_test, "sigma_test", "eps_test", f"test={self.test!r}"
        )
        checks.set_fields(
            self,
            **{
                "eps_select" if self.selection == "gumbel" else "sigma_select": select_value,
                "eps_test" if self.test == "laplace" else "sigma_test": test_value,
            },
        )
        selection = GapSelection(
            num_labels=self.num_labels,
            num_teachers=self.num_teachers,
            selection=self.selection,
            sigma=self.sigma_select,
            epsilon=self.eps_select,
            neighbors=self.neighbors,
            regularizer=self.regularizer,
            max_k=self.max_k,
        )
        test = GapTest(
            test=self.test,
            delta_t=self.delta_t,
            sigma=self.sigma_test,
            epsilon=self.eps_test,
            neighbors=selection.neighbors,
        )
        checks.set_fields(
            self,
            num_labels=selection.num_labels,
            num_teachers=selection.num_teachers,
            neighbors=selection.neighbors,
            regularizer=selection.regularizer,
            max_k=selection.max_k,
            delta_t=test.delta_t,
            _selection=selection,
            _test=test,
        )

    # ------------------------------------------------------------ components
    @property
    def selection_mechanism(self) -> GapSelection:
        """The k-selection step (its own ``rdp``; compose it alone to see its share of the cost)."""
        return self._selection

    @property
    def test_mechanism(self) -> GapTest:
        """The PTR step (``reliable_gap`` tells which gaps are answered with probability >= 1 - delta_t)."""
        return self._test

    # ------------------------------------------------------------------ cost
    @property
    def dp_event(self) -> ComposedDpEvent:
        """One query: the selection, then the test (composition, Lemma 16); delta_t-approximate."""
        return ComposedDpEvent([self._selection.dp_event, self._test.dp_event])

    @property
    def name(self) -> str:
        select = (
            f"eps_select={self.eps_select:g}" if self.selection == "gumbel" else f"sigma_select={self.sigma_select:g}"
        )
        test = f"sigma_test={self.sigma_test:g}" if self.test == "gaussian" else f"eps_test={self.eps_test:g}"
        extra = ("" if self.max_k is None else f", max_k={self.max_k}") + (
            "" if self.regularizer is None else ", regularized"
        )
        return (
            f"StableTopK(selection={self.selection}, {select}, test={self.test}, {test}, delta_t={self.delta_t:g}"
            f"{extra}, neighbors={self.neighbors})"
        )

    def noise_parameters(self) -> dict[str, float]:
        select = {"eps_select": self.eps_select} if self.selection == "gumbel" else {"sigma_select": self.sigma_select}
        test = {"sigma_test": self.sigma_test} if self.test == "gaussian" else {"eps_test": self.eps_test}
        return {**select, **test}

    def scale_noise(self, multiplier: float) -> "StableTopK":
        """Every noise scale times ``multiplier``: sigma_select, sigma_test multiplied; eps_select, eps_test divided."""
        multiplier = checks.positive("multiplier", multiplier)
        scaled = {
            name: value * multiplier if name.startswith("sigma") else value / multiplier
            for name, value in self.noise_parameters().items()
        }
        return dataclasses.replace(self, **scaled)

    # ------------------------------------------------------------- mechanism
    def __call__(self, votes, rng: np.random.Generator) -> StableTopKResult:
        counts = check_vote_counts(votes, self.num_labels, self.num_teachers)
        check_rng(rng)
        num_queries = counts.shape[0]
        labels = np.empty((num_queries, self.num_labels), dtype=bool)
        answered = np.empty(num_queries, dtype=bool)
        selected_k = np.empty(num_queries, dtype=np.int64)
        size = np.empty(num_queries, dtype=np.int64)
        # Blocks of queries that fit in cache: every step is one vectorised pass over a block.
        block_size = max(1, _BLOCK_SCORES // (self.num_labels + 1))
        blocks = [slice(start, min(start + block_size, num_queries)) for start in range(0, num_queries, block_size)]
        for block, (select_noise, test_noise) in zip(blocks, self._noise_in_order(blocks, rng)):
            self._answer_block(
                counts[block], select_noise, test_noise, labels[block], answered[block], selected_k[block], size[block]
            )
        return StableTopKResult(labels=labels, answered=answered, k=size, selected_k=selected_k)

    def _draw(self, block: slice, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        num_queries = block.stop - block.start
        return self._selection.draw_noise(num_queries, rng), self._test.draw_noise(num_queries, rng)

    def _noise_in_order(self, blocks: list[slice], rng: np.random.Generator):
        """Yield each block's (selection, test) noise, drawn from ``rng`` strictly in block order.

        Drawing the noise is the most expensive step. With several blocks, block i + 1's noise is drawn
        in one helper thread while block i is processed (numpy releases the GIL while it fills arrays);
        only that thread touches ``rng`` and it draws in the same order as a sequential loop, so the
        results are exactly those of ``agg(votes[block], rng)`` called block after block.
        """
        if len(blocks) < 2:
            yield from (self._draw(block, rng) for block in blocks)
            return
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(self._draw, blocks[0], rng)
            for following in blocks[1:]:
                noise = pending.result()
                pending = pool.submit(self._draw, following, rng)
                yield noise
            yield pending.result()

    def _answer_block(self, counts, select_noise, test_noise, labels, answered, selected_k, size) -> None:
        """Run the mechanism on one block of validated counts with its noise, writing into the output slices."""
        padded = sorted_padded_counts(counts, self.num_teachers)
        gaps = count_gaps(padded)
        k = self._selection.select(gaps, select_noise)
        gap_at_k = gaps[np.arange(counts.shape[0]), self.num_labels - k]
        passed = self._test.passes_given_noise(gap_at_k, test_noise)
        top_k_labels(counts, padded, np.where(passed, k, 0), out=labels)  # k = 0: the empty set
        answered[...] = passed
        selected_k[...] = k
        # The released set has exactly k labels when q_k > 0. A set is released with q_k = 0 (ties across
        # position k, so more than k labels reach h_(k)) only on the test's delta_t failure event: count those.
        size[...] = np.where(passed, k, -1)
        ties = passed & (gap_at_k == 0) & (k > 0)
        if ties.any():
            size[ties] = np.count_nonzero(labels[ties], axis=1)
