"""JOINT against its exact distribution: a closed form, brute-force enumeration of all k-sequences,
batches of different histograms, the RDP closed form and argument checks. Seeds are fixed; frequency
tests are chi-square fits at p > 1e-3 (deterministic given the seed)."""

import itertools
import math

import numpy as np
import pytest

from pate.mechanisms.topk import joint as joint_module
from pate.mechanisms.topk.joint import Joint
from pate.privacy import Ledger, calibrate_noise
from tests.mechanisms.closed_forms import ORDERS, chi_square_pvalue, exponential_mechanism

DRAWS = 200_000


def exact_distribution(histogram, k: int, eta: float) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """All k-sequences of distinct bins and Pr[s] proportional to exp(-eta max_i (c_(i) - h_{s_i})), by enumeration."""
    histogram = np.asarray(histogram, dtype=np.int64)
    ordered = np.sort(histogram)[::-1]
    sequences = list(itertools.permutations(range(len(histogram)), k))
    cost = np.array([max(int(ordered[i]) - int(histogram[s[i]]) for i in range(k)) for s in sequences], float)
    weights = np.exp(-eta * (cost - cost.min()))
    return sequences, weights / weights.sum()


def sequence_frequencies(indices: np.ndarray, sequences) -> np.ndarray:
    """How often each of ``sequences`` (all k-sequences of distinct bins of some d) occurs among the rows."""
    shape = (max(max(s) for s in sequences) + 1,) * indices.shape[1]
    counts = np.bincount(np.ravel_multi_index(indices.T, shape), minlength=math.prod(shape))
    observed = counts[np.ravel_multi_index(np.array(sequences).T, shape)]
    assert observed.sum() == len(indices)  # no row repeats a bin
    return observed


def sample(mechanism: Joint, histogram, draws: int, seed: int) -> np.ndarray:
    return mechanism(np.tile(histogram, (draws, 1)), np.random.default_rng(seed)).indices


@pytest.mark.parametrize("neighbors, eta_per_epsilon", [("add_remove", 0.5), ("replace", 0.25)])
@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_closed_form_on_two_tied_leaders(neighbors, eta_per_epsilon, epsilon):
    """[10, 10, 5], k = 2: utility 0 for (0, 1), (1, 0) and -5 for the four sequences using bin 2."""
    sequences = list(itertools.permutations(range(3), 2))
    low = math.exp(-5 * eta_per_epsilon * epsilon)
    expected = np.array([1.0 if set(s) == {0, 1} else low for s in sequences]) / (2 + 4 * low)
    observed = sequence_frequencies(sample(Joint(2, epsilon, neighbors), [10, 10, 5], DRAWS, seed=1), sequences)
    assert chi_square_pvalue(observed, expected) > 1e-3


def test_closed_form_rejects_the_other_relations_eta():
    """Power check: add_remove draws at epsilon 0.5 reject the replace distribution (eta halved)."""
    sequences = list(itertools.permutations(range(3), 2))
    observed = sequence_frequencies(sample(Joint(2, 0.5), [10, 10, 5], DRAWS, seed=2), sequences)
    _, replace = exact_distribution([10, 10, 5], 2, 0.5 / 4)
    assert chi_square_pvalue(observed, replace) < 1e-12


# Ties everywhere, no ties, k = d - 1, k = 1, zeros: the cases of the counting argument.
BRUTE_FORCE_CASES = [
    ([3, 3, 3, 3, 3], 3, 1.0, "add_remove"),
    ([2, 2, 1, 1, 0, 0], 3, 1.5, "add_remove"),
    ([5, 1, 4, 1, 5, 0], 2, 0.8, "add_remove"),
    ([0, 0, 0, 1], 3, 2.0, "add_remove"),
    ([7, 3, 3, 8, 1], 4, 0.7, "add_remove"),
    ([4, 2, 9, 0, 6, 1], 3, 1.2, "add_remove"),
    ([1, 0, 1, 0, 1, 0], 1, 1.0, "add_remove"),
    ([6, 6, 2, 2, 2, 9], 3, 2.0, "replace"),
    ([0, 5, 5, 4], 2, 4.0, "replace"),
]


@pytest.mark.parametrize("histogram, k, epsilon, neighbors", BRUTE_FORCE_CASES)
def test_frequencies_match_brute_force_enumeration(histogram, k, epsilon, neighbors):
    mechanism = Joint(k, epsilon, neighbors)
    sequences, expected = exact_distribution(histogram, k, mechanism.eta)
    observed = sequence_frequencies(sample(mechanism, histogram, 100_000, seed=3), sequences)
    assert chi_square_pvalue(observed, expected) > 1e-3


def test_counts_too_large_for_the_packed_sort_key_take_the_lexsort_path():
    """Costs spanning 2^62: (cost span) k V overflows int64, so the entries are lexsorted; same distribution."""
    histogram = [2**61, 2**61 - 2, 0]
    cost = histogram[0] - np.array([[histogram[0], histogram[1], 0], [histogram[1], histogram[1], 0]])
    assert (int(cost.max()) - int(cost.min()) + 1) * 2 * 3 > np.iinfo(np.int64).max
    mechanism = Joint(2, 1.0)
    sequences, expected = exact_distribution(histogram, 2, mechanism.eta)
    observed = sequence_frequencies(sample(mechanism, histogram, 50_000, seed=4), sequences)
    assert chi_square_pvalue(observed, expected) > 1e-3
    assert expected[sequences.index((0, 1))] == pytest.approx(1 / (1 + math.exp(-2 * mechanism.eta)))


@pytest.mark.parametrize("budget", [joint_module._ENTRY_BUDGET, 1000])
def test_each_row_of_a_mixed_batch_gets_its_own_distribution(monkeypatch, budget):
    """Rows with 1 and 5 distinct counts interleaved (padding of V), in one chunk or in many small ones."""
    monkeypatch.setattr(joint_module, "_ENTRY_BUDGET", budget)
    flat, spread = [3, 3, 3, 3, 3], [4, 2, 9, 0, 6]
    mechanism = Joint(2, 1.0)
    indices = mechanism(np.array([flat, spread] * 30_000), np.random.default_rng(5)).indices
    for histogram, rows in ((flat, indices[0::2]), (spread, indices[1::2])):
        sequences, expected = exact_distribution(histogram, 2, mechanism.eta)
        assert chi_square_pvalue(sequence_frequencies(rows, sequences), expected) > 1e-3


def test_large_batch_returns_distinct_in_range_indices_and_exact_top_k_under_huge_gaps():
    rng = np.random.default_rng(6)
    num_bins, k = 3000, 20
    histograms = rng.poisson(50, size=(200, num_bins))
    histograms[7] = 0
    histograms[7, [5, 2, 7]] = [30_000, 20_000, 10_000]  # every other sequence costs >= 10^4: exp(-5000)
    indices = Joint(k, 1.0)(histograms, rng).indices
    assert indices.shape == (200, k) and indices.dtype == np.int64
    assert np.all((indices >= 0) & (indices < num_bins))
    ordered = np.sort(indices, axis=1)
    assert np.all(ordered[:, 1:] != ordered[:, :-1])
    top3 = Joint(3, 1.0)(histograms, rng).indices
    np.testing.assert_array_equal(top3[7], [5, 2, 7])


def test_position_zero_is_uniform_on_an_all_zero_histogram():
    indices = Joint(3, 1.0)(np.zeros((60_000, 8), dtype=np.int64), np.random.default_rng(7)).indices
    assert chi_square_pvalue(np.bincount(indices[:, 0], minlength=8), np.full(8, 1 / 8)) > 1e-3


@pytest.mark.parametrize("neighbors", ["add_remove", "replace"])
def test_privacy_cost_is_the_exponential_mechanism_curve(neighbors):
    mechanism = Joint(5, 0.9, neighbors)
    np.testing.assert_allclose(mechanism.rdp(ORDERS), exponential_mechanism(ORDERS, 0.9), rtol=1e-10)
    assert mechanism.delta_per_query == 0.0
    assert mechanism.eta == pytest.approx(0.9 / {"add_remove": 2, "replace": 4}[neighbors])
    ledger = Ledger(neighbors=neighbors).compose(mechanism, 40)
    assert mechanism.spent(40, 1e-6) == ledger.get_epsilon(1e-6, "rdp").epsilon
    assert mechanism.spent(1, 1e-6) <= 0.9 * (1 + 1e-4)  # pure 0.9-DP, up to the ledger's finite order grid
    assert 0.9 < mechanism.spent(40, 1e-6) < 40 * 0.9  # RDP composition beats basic composition


def test_scale_noise_and_calibration():
    mechanism = Joint(4, 2.0, "replace")
    assert mechanism.scale_noise(4.0) == Joint(4, 0.5, "replace")
    assert mechanism.noise_parameters() == {"epsilon": 2.0}
    assert mechanism.name == "JOINT(k=4, eps=2, neighbors=replace)"
    calibrated, _ = calibrate_noise(mechanism, 3.0, 1e-5, 100)
    assert calibrated.spent(100, 1e-5) == pytest.approx(3.0, rel=1e-3)
    assert calibrated.spent(100, 1e-5) <= 3.0


@pytest.mark.parametrize(
    "arguments, match",
    [
        ({"k": 0, "epsilon": 1.0}, "k"),
        ({"k": 2.0, "epsilon": 1.0}, "k"),
        ({"k": 2, "epsilon": 0.0}, "epsilon"),
        ({"k": 2, "epsilon": -1.0}, "epsilon"),
        ({"k": 2, "epsilon": math.inf}, "epsilon"),
        ({"k": 2, "epsilon": 1.0, "neighbors": "swap"}, "neighbors"),
    ],
)
def test_bad_configuration_raises(arguments, match):
    with pytest.raises(ValueError, match=match):
        Joint(**arguments)


@pytest.mark.parametrize(
    "histograms, match",
    [
        (np.array([[3, 2, 1]]), "k must be < the number of bins"),  # k = 3 = d
        (np.array([[3, -1, 1, 0]]), "histograms must be >= 0"),
        (np.array([[3.5, 1.0, 1.0, 0.0]]), "histograms must hold integer counts"),
        (np.array([3, 2, 1, 0]), "histograms must be a 2-D array"),
    ],
)
def test_bad_histograms_raise(histograms, match):
    with pytest.raises(ValueError, match=match):
        Joint(3, 1.0)(histograms, np.random.default_rng(0))


def test_for_budget_pure_and_rdp_calibrations():
    pure = Joint.for_budget(k=5, epsilon=1.0, delta=1e-6, queries=4)
    assert pure.epsilon == pytest.approx(0.25) and pure.spent(4, 1e-6) <= 1.0
    tight = Joint.for_budget(k=5, epsilon=1.0, delta=1e-6, queries=40, accountant="rdp")
    assert tight.epsilon > 1.0 / 40  # bounded range composes better than basic composition over many queries
    assert tight.spent(40, 1e-6) == pytest.approx(1.0, rel=1e-3) and tight.spent(40, 1e-6) <= 1.0
    with pytest.raises(ValueError, match="accountant"):
        Joint.for_budget(k=5, epsilon=1.0, delta=1e-6, accountant="zcdp")


def _neighbours(histogram, neighbors):
    """Every histogram one user's change can reach (counts stay >= 0)."""
    rows = [np.array(bits) for bits in itertools.product((0, 1), repeat=len(histogram))]
    if neighbors == "add_remove":
        moves = rows + [-row for row in rows]
    else:
        moves = [new - old for old in rows for new in rows]
    return [histogram + move for move in moves if (histogram + move).min() >= 0]


def _worst_log_ratio(neighbors, k, eta):
    worst = 0.0
    for counts in itertools.product(range(4), repeat=3):
        histogram = np.array(counts)
        _, p = exact_distribution(histogram, k, eta)
        for neighbour in _neighbours(histogram, neighbors):
            _, q = exact_distribution(neighbour, k, eta)
            worst = max(worst, np.abs(np.log(p) - np.log(q)).max())
    return worst


@pytest.mark.parametrize("neighbors", ["add_remove", "replace"])
def test_privacy_audit_on_every_neighbouring_pair(neighbors):
    """Exact distributions on all histograms in {0..3}^3 and all their neighbours: the log-ratio of any
    sequence's probabilities stays <= epsilon; under replace, add_remove's (twice larger) eta breaks it."""
    epsilon, k = 1.0, 2
    worst = _worst_log_ratio(neighbors, k, Joint(k=k, epsilon=epsilon, neighbors=neighbors).eta)
    assert 0.5 * epsilon <= worst <= epsilon + 1e-9  # the audit reaches the bound's order, so it can fail
    if neighbors == "replace":
        loose = Joint(k=k, epsilon=epsilon, neighbors="add_remove").eta
        assert _worst_log_ratio("replace", k, loose) > epsilon
