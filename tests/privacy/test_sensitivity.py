"""Sensitivities: the documented values, and brute force over every neighbour on small instances."""

import itertools
import math

import numpy as np
import pytest

from pate.privacy.sensitivity import (
    RELATIONS,
    check_relation,
    clipped_vote_l1_sensitivity,
    clipped_vote_l2_sensitivity,
    count_l2_sensitivity,
    count_selection_range,
    gap_sensitivity,
    stability_distance_sensitivity,
)


def _votes(num_labels):
    return [np.array(bits, dtype=float) for bits in itertools.product((0, 1), repeat=num_labels)]


def _clip(vote, tau, norm):
    size = np.abs(vote).sum() if norm == "l1" else math.sqrt((vote**2).sum())
    limit = tau if norm == "l1" else math.sqrt(tau)
    return vote if size <= limit else vote * (limit / size)


def _differences(votes, neighbors):
    """Every change of the histogram one teacher can cause under the relation."""
    if neighbors == "add_remove":
        return list(votes)  # +-v; the norms are symmetric
    return [new - old for old in votes for new in votes]


@pytest.mark.parametrize("neighbors", RELATIONS)
@pytest.mark.parametrize("num_labels", [1, 4, 40])
def test_count_l2_sensitivity_is_sqrt_labels(num_labels, neighbors):
    assert count_l2_sensitivity(num_labels, neighbors) == pytest.approx(math.sqrt(num_labels), rel=1e-15)


@pytest.mark.parametrize("neighbors", RELATIONS)
def test_count_l2_sensitivity_matches_brute_force(neighbors):
    worst = max(np.linalg.norm(d) for d in _differences(_votes(4), neighbors))
    assert worst == pytest.approx(count_l2_sensitivity(4, neighbors))


@pytest.mark.parametrize(("neighbors", "expected"), [("replace", 2.0), ("add_remove", 1.0)])
def test_gap_sensitivity_values(neighbors, expected):
    assert gap_sensitivity(neighbors) == expected


def _worst_move(neighbors, statistic):
    """The largest move of ``statistic(sorted counts)`` over every histogram in {0..3}^3 and every
    single-teacher change under the relation."""
    changes = _differences(_votes(3), neighbors)
    if neighbors == "add_remove":
        changes = changes + [-d for d in changes]
    worst = 0.0
    for hist in itertools.product(range(4), repeat=3):
        h = np.array(hist, dtype=float)
        for change in changes:
            moved = h + change
            if moved.min() >= 0:
                worst = max(worst, np.abs(statistic(np.sort(moved)[::-1]) - statistic(np.sort(h)[::-1])).max())
    return worst


@pytest.mark.parametrize("neighbors", RELATIONS)
def test_stability_distance_sensitivity_matches_brute_force(neighbors):
    """d = floor((gap - 1) / s) with s the relation's gap sensitivity moves by at most 1, and 1 is attained."""
    s = gap_sensitivity(neighbors)
    worst = _worst_move(neighbors, lambda top: np.floor((-np.diff(top) - 1) / s))
    assert worst == stability_distance_sensitivity(neighbors) == 1.0


@pytest.mark.parametrize("neighbors", RELATIONS)
def test_gap_sensitivity_matches_brute_force(neighbors):
    """Every histogram in {0..3}^3 and every single-teacher change: the largest move of any gap."""
    assert _worst_move(neighbors, lambda top: -np.diff(top)) == gap_sensitivity(neighbors)


# (num_labels, tau, norm, neighbors, L2 sensitivity, L1 sensitivity)
CLIPPED = [
    (40, 3.0, "l1", "add_remove", math.sqrt(3), 3.0),
    (40, 3.0, "l1", "replace", math.sqrt(6), 6.0),
    (40, 3.0, "l2", "add_remove", math.sqrt(3), math.sqrt(120)),
    (40, 3.0, "l2", "replace", math.sqrt(6), math.sqrt(240)),
    (4, 3.0, "l1", "replace", 2.0, 4.0),  # capped by sqrt(L) and L
    (4, 3.0, "l2", "replace", 2.0, 4.0),
    (5, 1.0, "l1", "add_remove", 1.0, 1.0),
    (5, 5.0, "l1", "add_remove", math.sqrt(5), 5.0),
]


@pytest.mark.parametrize(("num_labels", "tau", "norm", "neighbors", "l2", "l1"), CLIPPED)
def test_clipped_vote_sensitivity_values(num_labels, tau, norm, neighbors, l2, l1):
    assert clipped_vote_l2_sensitivity(num_labels, tau, norm, neighbors) == pytest.approx(l2, rel=1e-14)
    assert clipped_vote_l1_sensitivity(num_labels, tau, norm, neighbors) == pytest.approx(l1, rel=1e-14)


@pytest.mark.parametrize("neighbors", RELATIONS)
@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("tau", [1.0, 1.5, 2.0, 3.0, 4.0])
def test_clipped_vote_sensitivity_bounds_brute_force(tau, norm, neighbors):
    """Over every pair of clipped binary votes with L = 4: the bound holds, and is attained when stated tight."""
    num_labels = 4
    votes = [_clip(v, tau, norm) for v in _votes(num_labels)]
    diffs = _differences(votes, neighbors)
    worst_l2 = max(np.linalg.norm(d) for d in diffs)
    worst_l1 = max(np.abs(d).sum() for d in diffs)
    bound_l2 = clipped_vote_l2_sensitivity(num_labels, tau, norm, neighbors)
    bound_l1 = clipped_vote_l1_sensitivity(num_labels, tau, norm, neighbors)
    assert worst_l2 <= bound_l2 + 1e-12
    assert worst_l1 <= bound_l1 + 1e-12
    if tau.is_integer():
        # a vote with exactly tau ones (against 0, or against a disjoint one, or 0 vs 1) attains the L2 bound
        assert worst_l2 == pytest.approx(bound_l2)
    if norm == "l2" and neighbors == "add_remove":
        # the all-ones vote scaled to norm sqrt(tau) attains sqrt(L tau)
        assert worst_l1 == pytest.approx(bound_l1)


@pytest.mark.parametrize("neighbors", RELATIONS)
def test_count_selection_range_matches_brute_force(neighbors):
    """The range sup_{i,j} (h_i - h'_i) - (h_j - h'_j) over every single-row change of 3 counts."""
    changes = _differences(_votes(3), neighbors)
    if neighbors == "add_remove":
        changes = changes + [-d for d in changes]
    worst = max(change.max() - change.min() for change in changes)
    assert worst == count_selection_range(neighbors)


def test_check_relation_accepts_known_relations():
    assert [check_relation(r) for r in RELATIONS] == list(RELATIONS)


@pytest.mark.parametrize("bad", ["swap", "Replace", "", None, 1])
def test_unknown_relation_raises(bad):
    with pytest.raises(ValueError, match="neighbors"):
        check_relation(bad)
    with pytest.raises(ValueError, match="neighbors"):
        gap_sensitivity(bad)
    with pytest.raises(ValueError, match="neighbors"):
        count_selection_range(bad)
    with pytest.raises(ValueError, match="neighbors"):
        count_l2_sensitivity(4, bad)
    with pytest.raises(ValueError, match="neighbors"):
        clipped_vote_l2_sensitivity(4, 2.0, "l1", bad)


@pytest.mark.parametrize("tau", [0.5, 0.999, 4.001, 41.0, float("nan"), True, "2"])
@pytest.mark.parametrize("function", [clipped_vote_l2_sensitivity, clipped_vote_l1_sensitivity])
def test_tau_outside_one_to_labels_raises(function, tau):
    with pytest.raises(ValueError, match="tau"):
        function(4, tau, "l1", "replace")


@pytest.mark.parametrize("function", [clipped_vote_l2_sensitivity, clipped_vote_l1_sensitivity])
def test_unknown_norm_raises(function):
    with pytest.raises(ValueError, match="norm"):
        function(4, 2.0, "linf", "replace")


@pytest.mark.parametrize("num_labels", [0, -3, 2.0, True])
def test_bad_num_labels_raises(num_labels):
    with pytest.raises(ValueError, match="num_labels"):
        count_l2_sensitivity(num_labels, "replace")
