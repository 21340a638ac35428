"""The audit's neighbours are the relations' definitions (DESIGN.md, section 2), checked on small cases by hand."""

import numpy as np

from tests.audit.neighbours import count_neighbours, ensemble_neighbours


def _moves(x, neighbours):
    return {(tuple(np.subtract(y, x[0]).tolist()), t - x[1]) for y, t in neighbours}


def test_replace_keeps_the_ensemble_and_moves_each_count_by_at_most_one():
    x = ((0, 40), 40)
    assert _moves(x, ensemble_neighbours(x, "replace")) == {((1, 0), 0), ((1, -1), 0), ((0, -1), 0)}


def test_add_remove_adds_or_removes_a_teacher_and_its_vote():
    """(0, 40) of 40 teachers: the configured ensemble's one-directional moves that stay in [0, 40]; a 41st
    teacher with any vote; a teacher removed, whose vote must hold label 2 (40 of 39 is impossible) and not
    label 1 (no vote to take)."""
    x = ((0, 40), 40)
    assert _moves(x, ensemble_neighbours(x, "add_remove")) == {
        ((1, 0), 0),
        ((0, -1), 0),
        ((0, 0), 1),
        ((1, 0), 1),
        ((0, 1), 1),
        ((1, 1), 1),
        ((0, -1), -1),
    }


def test_a_single_teacher_is_not_removed():
    assert all(t == 1 or t == 2 for _, t in ensemble_neighbours(((1,), 1), "add_remove"))


def test_the_fixed_ensemble_part_is_count_neighbours():
    x = ((2, 3, 0), 5)
    for relation in ("replace", "add_remove"):
        fixed = {y for y, t in ensemble_neighbours(x, relation) if t == 5}
        assert fixed == {tuple(y) for y in count_neighbours(np.array(x[0]), relation, 5).tolist()}
