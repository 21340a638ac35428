"""The partition by person: each person's records in one teacher's part, parts balanced in records."""

from __future__ import annotations

import numpy as np
import pytest

from pate.data.partition import partition_teachers, partition_teachers_by_person


def _people(num_people: int, seed: int, low: int = 1, high: int = 36) -> np.ndarray:
    """A person per record, ``low`` to ``high - 1`` records each (CelebA: about 20 a person, up to 35), shuffled."""
    counts = np.random.default_rng(seed).integers(low, high, num_people)
    return np.random.default_rng(seed + 1).permutation(np.repeat([f"id{j}" for j in range(num_people)], counts))


@pytest.mark.parametrize("num_people,num_teachers,seed", [(600, 40, 0), (1500, 100, 1), (400, 25, 2), (1000, 7, 3)])
def test_every_person_is_in_exactly_one_part_and_the_parts_are_balanced_in_expectation(num_people, num_teachers, seed):
    person = _people(num_people, seed)
    indices = np.random.default_rng(seed).permutation(3 * len(person))[: len(person)]  # any record indices
    parts = partition_teachers_by_person(indices, person, num_teachers, seed)
    assert len(parts) == num_teachers and all(len(part) for part in parts)
    together = np.concatenate(parts)
    assert sorted(together.tolist()) == sorted(indices.tolist())  # disjoint and covering
    owner = {}
    position = {int(record): i for i, record in enumerate(indices)}
    for teacher, part in enumerate(parts):
        assert (np.diff(part) > 0).all()  # sorted
        for record in part:
            assert owner.setdefault(person[position[int(record)]], teacher) == teacher
    # a part's size: mean N / T, variance (1/T)(1 - 1/T) sum of squared counts; 5 sd is 1 in 1.7 million a part
    counts = np.unique(person, return_counts=True)[1]
    sd = np.sqrt((1 / num_teachers) * (1 - 1 / num_teachers) * (counts.astype(float) ** 2).sum())
    sizes = np.array([len(part) for part in parts])
    assert np.abs(sizes - len(person) / num_teachers).max() < 5 * sd
    again = partition_teachers_by_person(indices, person, num_teachers, seed)
    assert all((a == b).all() for a, b in zip(parts, again))
    other = partition_teachers_by_person(indices, person, num_teachers, seed + 10)
    assert any(len(a) != len(b) or (a != b).any() for a, b in zip(parts, other))


def _teachers(person: np.ndarray, num_teachers: int = 40) -> dict[str, int]:
    parts = partition_teachers_by_person(np.arange(len(person)), person, num_teachers, 0)
    return {str(person[record]): teacher for teacher, part in enumerate(parts) for record in part}


@pytest.mark.parametrize("change", ["removed", "fewer_images", "more_images", "renamed", "added"])
def test_one_persons_change_moves_no_other_person(change):
    """The neighbours of a person-level relation, built on the input the partition takes (one person per
    record): every other person keeps their teacher, whatever happens to one person."""
    person = _people(600, 7)
    target = person[0]
    rows = person == target
    changed = {
        "removed": person[~rows],
        "fewer_images": np.concatenate([person[~rows], person[rows][:1]]),
        "more_images": np.concatenate([person, [target] * 5]),
        "renamed": np.where(rows, "someone_else", person),
        "added": np.concatenate([person, ["newcomer"] * 12]),
    }[change]
    before, after = _teachers(person), _teachers(changed)
    others = set(before) - {target}
    assert all(after[who] == before[who] for who in others & set(after))


def test_a_partition_by_record_splits_people_that_one_by_person_keeps_whole():
    """The weakening a person-level guarantee must not have: cut by record, a person's records land with several
    teachers, so changing that person changes several votes."""
    person = _people(200, 5, low=15, high=30)
    indices = np.arange(len(person))
    by_record = partition_teachers(indices, 20, 0)
    teachers_of = {}
    for teacher, part in enumerate(by_record):
        for record in part:
            teachers_of.setdefault(person[record], set()).add(teacher)
    assert max(len(t) for t in teachers_of.values()) >= 5


@pytest.mark.parametrize(
    "person,num_teachers,message",
    [
        (np.array(["a", "a", "b", "b", "c"]), 4, r"partition.num_teachers=4 but the private training split shows 3"),
        (np.array([f"p{i}" for i in range(8)]), 8, r"teacher \d+ is dealt 0 record\(s\) of the 8, fewer than the 1"),
        (np.array(["a"] * 6 + ["b", "c", "d", "e"]), 4, r"person 'a' has 6 of the 10 private training records"),
        (np.array(["a", "b"]), 0, r"partition.num_teachers=0"),
    ],
    ids=["fewer_people_than_teachers", "an_empty_teacher", "a_person_over_a_teachers_share", "no_teacher"],
)
def test_a_partition_by_person_that_cannot_be_balanced_is_refused(person, num_teachers, message):
    with pytest.raises(ValueError, match=message):
        partition_teachers_by_person(np.arange(len(person)), person, num_teachers, 0)
