"""How to audit each discovered class: small instances built from its constructor, the inputs and neighbours
(``neighbours.py``), and the audit that fits its output space. A discovered class without an entry here fails
``test_discovery.py``; a class audited as part of another (the test inside an aggregator, the method around a
mechanism) names that one in ``COVERED_BY``.

``audit(relation, claim)`` returns the worst ``AuditResult`` over the recipe's instances; ``claim(mechanism)`` is
the object whose price is claimed (the mechanism itself, or a weakened claim in the power tests). ``weaken``: a
claim below what the mechanism draws (the same mechanism with twice its noise, or its epsilons halved).
``sensitivity``: (module, name) of the sensitivity function its price reads, for the halved-sensitivity test.
``slow``: the audit takes more than a few seconds (``@pytest.mark.slow``). ``caught_under``: the relations under
which the weakened claims are caught; left out where the audit cannot reach them: a Monte Carlo lower bound too
loose at these sizes, or a claim itself more than 4 times the measured divergence (Private-kNN under replace,
priced as two contributions of sqrt(L) where a swapped record moves each vote by at most 1).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import attr
import numpy as np
import torch

from pate.aggregators import BinaryVoting, DataDependentBinaryVoting, GaussianPATE, StableTopK, TauPATE
from pate.dp_sgd import linear_probe, train_dp_sgd
from pate.mechanisms import DistanceTest, GapSelection, GapTest, PrivateKNN, count_gaps, sorted_padded_counts
from pate.mechanisms.topk import EMPeeling, Joint, LimitedDomain, PNFPeeling, StableTopKFixed, TopStable
from pate.pipeline.methods import DPSGD, PATE, PrivateKNNMethod
from pate.privacy import Ledger, ReplaceSampledGaussianEvent, sampled_gaussian_steps
from tests.audit import laws
from tests.audit.audits import CONFIDENCE, AuditResult, exact_dp_audit, exact_rdp_audit, monte_carlo_audit
from tests.audit.divergence import epsilon_lower_bound
from tests.audit.neighbours import count_grid, count_neighbours, ensemble_neighbours, record_neighbours, row_neighbours

__all__ = ["COVERED_BY", "MONTE_CARLO", "RECIPES", "RELATIONS", "Recipe", "identity"]

RELATIONS = ("replace", "add_remove")
MIDDLE = (0, 1, 19, 20, 21, 39, 40)  # T = 40: the ends, near-unanimity and around T / 2
DELTA = 1e-5  # approximate mechanisms: above their per-query delta_t = 1e-6


def identity(mechanism):
    """The claim of the mechanism itself."""
    return mechanism


def _double_noise(mechanism):
    """The claim of the same mechanism with twice its noise (its epsilons halved)."""
    return mechanism.scale_noise(2.0)


@dataclass(frozen=True)
class Recipe:
    audit: Callable[[str, Callable], AuditResult]
    weaken: Callable = _double_noise
    sensitivity: tuple[str, str] | None = None
    slow: bool = False
    caught_under: tuple[str, ...] = RELATIONS


def _worst(results) -> AuditResult:
    return max(results, key=lambda result: result.ratio)


def _ensembles(grid: np.ndarray, num_teachers: int) -> list[tuple]:
    """The inputs (h, T) of ``neighbours.ensemble_neighbours``: every count vector of the grid, T teachers."""
    return [(tuple(h), num_teachers) for h in grid.tolist()]


def _on_ensemble(law: Callable, mechanism, x: tuple) -> dict:
    """``law`` of x = (h, T): the mechanism built for T teachers (all else as configured), on h."""
    return law(dataclasses.replace(mechanism, num_teachers=x[1]), np.array(x[0]))


# ---------------------------------------------------------------- vote counts [Q, L] with T configured
COUNT_SHAPES = [(1, 4, None), (2, 5, None), (3, 4, None), (1, 40, None), (2, 40, MIDDLE), (3, 40, MIDDLE)]


def _count_audit(cls, law, relation: str, claim: Callable, sigma: float = 1.0) -> AuditResult:
    """Exact Renyi audit of a per-label count aggregator on every grid of ``COUNT_SHAPES``, the neighbours of
    ``ensemble_neighbours`` (under add_remove also a teacher added or removed with the ensemble's threshold)."""
    results = []
    for num_labels, num_teachers, values in COUNT_SHAPES:
        agg = cls(num_labels, num_teachers, sigma, relation)
        results.append(
            exact_rdp_audit(
                functools.partial(_on_ensemble, law, agg),
                _ensembles(count_grid(num_labels, num_teachers, values), num_teachers),
                functools.partial(ensemble_neighbours, relation=relation),
                claim(agg),
            )
        )
    return _worst(results)


# ---------------------------------------------------------------- per-teacher vote bits [T, L]
def _tau_audit(relation: str, claim: Callable) -> AuditResult:
    """TauPATE on every multiset of T vote rows (T = 4), one teacher's row replaced, or a teacher added / removed
    (the ensemble's aggregator then has T + 1 or T - 1 teachers: ``laws.tau_pate_law``). With L <= 3 these
    cases cannot show the threshold's move (it outgrows sqrt(tau) only where L > 4 tau, and thresholding halves
    the divergence, by about 2 / pi at large noise); tests/aggregators/test_tau_pate.py builds that case at L = 40."""
    results = []
    for num_labels, tau, norm in [(2, 1.0, "l1"), (3, 1.5, "l2"), (3, 2.0, "l1"), (3, 3.0, "l2")]:
        agg = TauPATE(num_labels, 4, 1.0, tau, norm, relation)
        rows = list(itertools.product((0, 1), repeat=num_labels))
        inputs = list(itertools.combinations_with_replacement(rows, 4))
        results.append(
            exact_rdp_audit(
                functools.partial(laws.tau_pate_law, agg),
                inputs,
                lambda x: row_neighbours(x, relation, num_labels),
                claim(agg),
            )
        )
    return _worst(results)


# ---------------------------------------------------------------- records (Private-kNN)
QUERY = np.array([1.0, 0.0])
FEATURES = ((1.0, 0.0), (1.0, 1.0), (0.0, 1.0))  # cosine 1, 0.71, 0 to the query; equal features tie


def _knn_audit(relation: str, claim: Callable) -> AuditResult:
    """Private-kNN over tiny record sets: every record added at any index or removed (add_remove), or swapped
    (replace), among candidates at every distance with every label vector."""
    results = []
    for num_labels in (1, 2):
        mechanism = PrivateKNN(num_labels, 2, 0.9, 1.0, relation)
        label_vectors = list(itertools.product((0, 1), repeat=num_labels))
        candidates = tuple((f, y) for f in FEATURES for y in label_vectors)
        ones, zeros = (1,) * num_labels, (0,) * num_labels
        bases = [
            ((FEATURES[0], ones), (FEATURES[0], zeros), (FEATURES[1], ones), (FEATURES[2], zeros)),
            ((FEATURES[1], ones), (FEATURES[1], ones), (FEATURES[2], zeros)),
        ]

        @functools.lru_cache(maxsize=None)
        def votes_of(records, mechanism=mechanism):
            return laws.knn_votes(records, QUERY, mechanism.k, mechanism.num_labels)

        law = functools.partial(laws.knn_law, mechanism, votes_of=votes_of)
        results.append(
            exact_rdp_audit(law, bases, lambda x: record_neighbours(x, candidates, relation), claim(mechanism))
        )
    return _worst(results)


# ---------------------------------------------------------------- selection, test, StableTopK
def _selection_audit(relation: str, claim: Callable) -> AuditResult:
    results = []
    for num_labels, num_teachers, selection, noise in [
        (2, 5, "gaussian", {"sigma": 1.0}),
        (3, 4, "gaussian", {"sigma": 1.0}),
        (2, 5, "laplace", {"sigma": 1.0}),
        (2, 5, "gumbel", {"epsilon": 2.0}),
    ]:
        mechanism = GapSelection(num_labels, num_teachers, selection, neighbors=relation, **noise)
        results.append(
            exact_rdp_audit(
                functools.partial(_on_ensemble, laws.gap_selection_law, mechanism),
                _ensembles(count_grid(num_labels, num_teachers), num_teachers),
                functools.partial(ensemble_neighbours, relation=relation),
                claim(mechanism),
            )
        )
    return _worst(results)


def _gap_test_audit(relation: str, claim: Callable) -> AuditResult:
    """GapTest on the gap at every k of every count vector, against the gap at the same k of its neighbours
    (the relation applied to the counts by ``ensemble_neighbours``, the gaps by the code's ``count_gaps``, padded at
    each ensemble's own T)."""
    num_labels, num_teachers = 2, 5

    def gap(x):
        (h, teachers), k = x
        return count_gaps(sorted_padded_counts(np.array(h)[None], teachers))[0, num_labels - k]

    inputs = [
        (h, k) for h in _ensembles(count_grid(num_labels, num_teachers), num_teachers) for k in range(num_labels + 1)
    ]

    def neighbours(x):
        return [(y, x[1]) for y in ensemble_neighbours(x[0], relation)]

    results = []
    for test, noise in [("gaussian", {"sigma": 1.0}), ("laplace", {"epsilon": 1.0})]:
        mechanism = GapTest(test, 1e-6, neighbors=relation, **noise)
        results.append(
            exact_rdp_audit(lambda x, m=mechanism: laws.gap_test_law(m, gap(x)), inputs, neighbours, claim(mechanism))
        )
    return _worst(results)


STABLE_TOPK = [
    dict(selection="gaussian", sigma_select=1.0, sigma_test=1.0),
    dict(selection="gumbel", eps_select=2.0, test="laplace", eps_test=1.0),
    dict(selection="laplace", sigma_select=1.0, sigma_test=1.5),
]


def _stable_topk_audit(relation: str, claim: Callable) -> AuditResult:
    """StableTopK: exact Renyi divergence of (k, answered) -- covered by the curve without delta_t -- and the
    exact epsilon at delta of the whole output (k, answered, released set), on every count vector."""
    results = []
    for num_labels, num_teachers in [(1, 5), (2, 5)]:
        for noise in STABLE_TOPK:
            agg = StableTopK(num_labels, num_teachers, delta_t=1e-6, neighbors=relation, **noise)
            grid = _ensembles(count_grid(num_labels, num_teachers), num_teachers)
            neighbours = functools.partial(ensemble_neighbours, relation=relation)
            coarse = functools.partial(laws.stable_topk_law, coarse=True)
            results.append(exact_rdp_audit(functools.partial(_on_ensemble, coarse, agg), grid, neighbours, claim(agg)))
            results.append(
                exact_dp_audit(
                    functools.partial(_on_ensemble, laws.stable_topk_law, agg), grid, neighbours, claim(agg), DELTA
                )
            )
    return _worst(results)


def _dd_binary_voting_audit(relation: str, claim: Callable) -> AuditResult:
    """DataDependentBinaryVoting, one query: exact epsilon at delta of (per label: not released, 0, 1)."""
    results = []
    for num_labels, screen, values in [(1, None, None), (2, None, MIDDLE + (2, 3, 37, 38)), (1, 4.0, None)]:
        agg = DataDependentBinaryVoting(
            num_labels,
            40,
            2.0,
            order=8.0,
            test_sigma=0.5,
            test_delta=1e-6,
            rdp_budget=1.5 * num_labels,
            screen_sigma=screen,
            neighbors=relation,
        )
        results.append(
            exact_dp_audit(
                functools.partial(_on_ensemble, laws.data_dependent_binary_voting_law, agg),
                _ensembles(count_grid(num_labels, 40, values), 40),
                functools.partial(ensemble_neighbours, relation=relation),
                claim(agg),
                DELTA,
            )
        )
    return _worst(results)


def _smaller_proposal(agg):
    """The claim of the same release with the test's noise doubled and the proposal quartered."""
    return dataclasses.replace(agg, test_sigma=2.0 * agg.test_sigma, rdp_budget=agg.rdp_budget / 4.0)


# ---------------------------------------------------------------- top-k on histograms of users (Monte Carlo)
HISTOGRAMS = [np.array(h) for h in itertools.product(range(4), repeat=3)]
# Limited Domain and Top Stable answer only above a threshold of about log(1/delta) / epsilon: larger counts.
LARGE_HISTOGRAMS = [np.array(h) for h in itertools.product(range(0, 13, 3), repeat=3)]


def _topk_audit(
    build: Callable, relation: str, claim: Callable, delta: float = 1e-4, histograms: list = HISTOGRAMS
) -> AuditResult:
    """Monte Carlo lower bound over histograms of 3 bins (no T: only h' >= 0)."""
    mechanism = build(relation)

    def run(h, trials, rng):
        return mechanism(np.repeat(h[None], trials, axis=0), rng).indices

    return monte_carlo_audit(
        run,
        histograms,
        functools.partial(count_neighbours, relation=relation, num_teachers=None),
        claim(mechanism),
        delta,
        search_trials=4_000,
        confirm_trials=200_000,
        key=(mechanism, relation),
    )


def _halved_epsilon(mechanism):
    """A statement mechanism claiming the epsilons of twice the noise."""
    fields = {
        name: getattr(mechanism, name) / 2.0
        for name in ("epsilon", "em_epsilon", "fill_epsilon")
        if hasattr(mechanism, name)
    }
    return dataclasses.replace(mechanism, **fields)


def _stable_topk_monte_carlo(relation: str, claim: Callable) -> AuditResult:
    """StableTopK, Monte Carlo on the real code (selected k, answered, labels), L = 3, T = 4."""
    agg = StableTopK(3, 4, "gaussian", sigma_select=1.0, sigma_test=1.0, delta_t=1e-6, neighbors=relation)

    def run(h, trials, rng):
        result = agg(np.repeat(h[None], trials, axis=0), rng)
        return np.column_stack([result.selected_k, result.answered, result.labels])

    return monte_carlo_audit(
        run,
        list(count_grid(3, 4)),
        functools.partial(count_neighbours, relation=relation, num_teachers=4),
        claim(agg),
        1e-4,
        search_trials=2_000,
        confirm_trials=200_000,
        key=(agg, relation),
    )


# ---------------------------------------------------------------- DP-SGD (Monte Carlo on the real training)
@functools.lru_cache(maxsize=None)
def _dp_sgd_statistics(labels: tuple, rate: float, multiplier: float, trials: int, seed: int) -> np.ndarray:
    """``trials`` runs of the real ``train_dp_sgd``, one step of a zero-initialised linear probe on records with
    feature 1 and the given labels (clip norm C = 1/2, lr 1, no momentum; run t's batches seeded 2 (seed + t), its
    noise 2 (seed + t) + 1): per run the step's move along (1, 1) / sqrt(2) in units of C (the clipped sum divided by
    expected_batch_size 1, whatever the number of records). At zero initialisation a record's gradient is
    (1/2 - y)(1, 1), of norm 1/sqrt(2) > C, so every record contributes exactly C, with the sign of 1/2 - y."""
    inputs, targets = torch.ones(len(labels), 1), torch.tensor([[y] for y in labels], dtype=torch.uint8)
    moves = np.empty(trials)
    for trial in range(trials):
        model = linear_probe(1, 1)
        train_dp_sgd(
            model,
            inputs,
            targets,
            sampling_rate=rate,
            expected_batch_size=1,
            noise_multiplier=multiplier,
            clip_norm=0.5,
            steps=1,
            lr=1.0,
            momentum=0.0,
            batches=torch.Generator().manual_seed(2 * (seed + trial)),
            noise=torch.Generator().manual_seed(2 * (seed + trial) + 1),
        )
        moves[trial] = sum(parameter.item() for parameter in model.parameters()) / np.sqrt(2.0) / 0.5
    return moves


def _dp_sgd_audit(relation: str, claim: Callable, trials: int = 10_000, delta: float = 1e-3) -> AuditResult:
    """DP-SGD on a record set of one or two records, the relation applied to the records: replace swaps the one
    record's label 0 for 1 (rate 1: the sum moves by 2 C); add_remove adds a label-1 record to a label-0 one
    (rate 1/2). The event, fixed
    before sampling: the move exceeds 2 sigma (replace) or 1.5 sigma (add_remove) units of C. Clopper-Pearson
    at 99.9%, fresh seeds per side."""
    rate, (first, second), threshold = (1.0, ((0,), (1,)), 2.0) if relation == "replace" else (0.5, ((0,), (0, 1)), 1.5)
    event = sampled_gaussian_steps(rate, 1.0, 1, relation)
    below = _dp_sgd_statistics(first, rate, 1.0, trials, 0) > threshold
    above = _dp_sgd_statistics(second, rate, 1.0, trials, trials) > threshold
    bound = epsilon_lower_bound(int(above.sum()), int(below.sum()), trials, delta, CONFIDENCE)
    claimed = claim(event)
    epsilon = Ledger().compose_event(claimed, neighbors=relation).get_epsilon(delta, "rdp").epsilon
    return AuditResult(
        "epsilon lower bound",
        bound,
        float(epsilon),
        f"delta {delta:g}, move > {threshold:g} sigma C, {second} vs {first}, "
        f"{int(above.sum())} vs {int(below.sum())} of {trials}",
    )


def _double_multiplier(event):
    """The claim of the same training with twice its noise multiplier (``sampled_gaussian_steps``: its steps of
    one sampled Gaussian step, under either relation)."""
    step = event.event
    doubled = (
        attr.evolve(step, noise_multiplier=2.0 * step.noise_multiplier)
        if isinstance(step, ReplaceSampledGaussianEvent)
        else attr.evolve(step, event=attr.evolve(step.event, noise_multiplier=2.0 * step.event.noise_multiplier))
    )
    return attr.evolve(event, event=doubled)


RECIPES: dict[type, Recipe] = {
    GaussianPATE: Recipe(
        functools.partial(_count_audit, GaussianPATE, laws.gaussian_pate_law),
        sensitivity=("pate.aggregators.gaussian_pate", "count_l2_sensitivity"),
    ),
    BinaryVoting: Recipe(
        functools.partial(_count_audit, BinaryVoting, laws.binary_voting_law),
        sensitivity=("pate.aggregators.binary_voting", "binary_vote_l2_sensitivity"),
    ),
    TauPATE: Recipe(_tau_audit, sensitivity=("pate.aggregators.tau_pate", "clipped_threshold_l2_sensitivity")),
    PrivateKNN: Recipe(
        _knn_audit, sensitivity=("pate.mechanisms.private_knn", "knn_vote_l2_sensitivity"), caught_under=("add_remove",)
    ),
    GapSelection: Recipe(_selection_audit),
    GapTest: Recipe(_gap_test_audit),
    StableTopK: Recipe(_stable_topk_audit),
    DataDependentBinaryVoting: Recipe(_dd_binary_voting_audit, weaken=_smaller_proposal),
    EMPeeling: Recipe(functools.partial(_topk_audit, lambda r: EMPeeling(k=1, pick_epsilon=2.0, neighbors=r))),
    PNFPeeling: Recipe(functools.partial(_topk_audit, lambda r: PNFPeeling(k=1, pick_epsilon=2.0, neighbors=r))),
    Joint: Recipe(
        functools.partial(_topk_audit, lambda r: Joint(k=1, epsilon=3.0, neighbors=r)), slow=True, caught_under=()
    ),
    StableTopKFixed: Recipe(
        functools.partial(
            _topk_audit,
            lambda r: StableTopKFixed(
                k=1, select_epsilon=3.0, test_sigma=5.0, fill_rho=0.05, delta_t=1e-6, neighbors=r
            ),
        ),
        slow=True,
        caught_under=(),
    ),
    LimitedDomain: Recipe(
        functools.partial(
            _topk_audit,
            lambda r: LimitedDomain(k=1, max_k=2, epsilon=2.0, delta=1e-4, neighbors=r),
            delta=1e-2,
            histograms=LARGE_HISTOGRAMS,
        ),
        weaken=_halved_epsilon,
        slow=True,
    ),
    TopStable: Recipe(
        functools.partial(
            _topk_audit,
            lambda r: TopStable(k=1, max_k=2, epsilon=2.0, delta=1e-4, neighbors=r),
            delta=1e-2,
            histograms=LARGE_HISTOGRAMS,
        ),
        weaken=_halved_epsilon,
        slow=True,
        caught_under=(),
    ),
    DPSGD: Recipe(_dp_sgd_audit, weaken=_double_multiplier, slow=True, caught_under=("replace",)),
}

# Audited inside another: the class whose audit exercises it, end to end.
COVERED_BY: dict[type, type] = {
    DistanceTest: DataDependentBinaryVoting,  # the test of the data-dependent release, with the release
    PATE: GaussianPATE,  # the PATE method releases through the aggregators, each audited (and the ledger, below)
    PrivateKNNMethod: PrivateKNN,  # the method's votes and release are the mechanism's functions
}

# Deeper audits beside the exact ones: the real code sampled, end to end.
MONTE_CARLO: dict[type, Recipe] = {StableTopK: Recipe(_stable_topk_monte_carlo, slow=True)}
