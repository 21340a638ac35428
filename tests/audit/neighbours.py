"""Neighbouring inputs, made by applying each relation's definition to the input the code takes (DESIGN.md,
section 2): never from a mechanism's sensitivity function or from a model of what it computes.

On a count vector h (one query, L labels, T teachers configured, 0 <= h <= T):
    replace:     h' - h in {-1, 0, 1}^L;
    add_remove:  h' - h in {0, 1}^L or in {-1, 0}^L;
and h' must stay in [0, T]. A histogram of users (the top-k mechanisms) has no T: only h' >= 0.
A count vector cannot tell its T, so add_remove also has the reading where the ensemble's size follows: a teacher
added, (h, T) -> (h + d, T + 1), or removed, (h, T) -> (h - d, T - 1), d in {0, 1}^L, the neighbour run by the
aggregator built for its own T (its threshold T / 2, its padding at T, its cost table up to T): ``ensemble_neighbours``.
On per-teacher vote bits v [T, L] (T fixed by the configuration): replace changes one teacher's row to any row;
add_remove adds or removes one teacher's vote, i.e. one teacher's row goes from all-zero to any row or back
(the counts then move all in one direction, as above).
On a record set: add_remove adds or removes one record; replace swaps one record for another.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = [
    "count_grid",
    "count_moves",
    "count_neighbours",
    "ensemble_neighbours",
    "row_neighbours",
    "record_neighbours",
]


def count_moves(num_labels: int, relation: str) -> np.ndarray:
    """int [M, L]: every nonzero move d = h' - h the relation allows on L counts (its definition, above)."""
    cube = np.array(list(itertools.product((-1, 0, 1), repeat=num_labels)))
    cube = cube[np.any(cube != 0, axis=1)]
    if relation == "replace":
        return cube
    if relation == "add_remove":
        return cube[np.all(cube >= 0, axis=1) | np.all(cube <= 0, axis=1)]
    raise ValueError(f"unknown relation {relation!r}")


def count_neighbours(h: np.ndarray, relation: str, num_teachers: int | None) -> np.ndarray:
    """int [M', L]: the neighbours h + d of one count vector h that stay in [0, T] (T None: only >= 0)."""
    moved = np.asarray(h)[None, :] + count_moves(len(h), relation)
    keep = np.all(moved >= 0, axis=1)
    if num_teachers is not None:
        keep &= np.all(moved <= num_teachers, axis=1)
    return moved[keep]


def ensemble_neighbours(x: tuple, relation: str) -> list[tuple]:
    """The neighbours of x = (h, T), a count vector (a tuple) of an ensemble of T teachers: (h', T) for every
    ``count_neighbours(h, relation, T)`` (T stays: the configured aggregator), and under add_remove also a teacher
    added, (h + d, T + 1), or removed, (h - d, T - 1) with h - d in [0, T - 1] and T - 1 >= 1, for every
    d in {0, 1}^L (the new or removed teacher's vote; d = 0 a teacher voting for no label)."""
    h, num_teachers = np.asarray(x[0]), x[1]
    out = [(tuple(y.tolist()), num_teachers) for y in count_neighbours(h, relation, num_teachers)]
    if relation == "add_remove":
        votes = np.array(list(itertools.product((0, 1), repeat=len(h))))
        out += [(tuple(y.tolist()), num_teachers + 1) for y in h[None, :] + votes]
        if num_teachers > 1:
            removed = h[None, :] - votes
            keep = np.all((removed >= 0) & (removed <= num_teachers - 1), axis=1)
            out += [(tuple(y.tolist()), num_teachers - 1) for y in removed[keep]]
    return out


def count_grid(num_labels: int, num_teachers: int, values=None) -> np.ndarray:
    """int [G, L]: every vector with entries in ``values`` (default 0..T): ties, near-unanimity, T / 2, 0 and T."""
    values = range(num_teachers + 1) if values is None else values
    return np.array(list(itertools.product(sorted(set(values)), repeat=num_labels)))


def row_neighbours(rows: tuple, relation: str, num_labels: int) -> list[tuple]:
    """The neighbours of a multiset of T per-teacher vote rows (a sorted tuple of L-bit tuples): one row replaced
    by any row (replace), or one teacher added (T + 1 rows, the new one any row) or removed (T - 1 rows) under
    add_remove, as the relation defines it. (Until an outside audit, add_remove here kept T fixed and zeroed a row,
    a model of the mechanism that missed the threshold T / 2 moving with the ensemble.)"""
    every_row = list(itertools.product((0, 1), repeat=num_labels))
    out = set()
    if relation == "replace":
        for position, row in enumerate(rows):
            for new in every_row:
                if new != row:
                    out.add(tuple(sorted(rows[:position] + (new,) + rows[position + 1 :])))
        return sorted(out)
    for new in every_row:
        out.add(tuple(sorted(rows + (new,))))
    if len(rows) > 1:
        for position in range(len(rows)):
            out.add(rows[:position] + rows[position + 1 :])
    return sorted(out)


def record_neighbours(records: tuple, candidates: tuple, relation: str) -> list[tuple]:
    """The neighbours of a record set (a tuple of records, in index order): one candidate inserted at any index
    (add) or one record dropped (remove) under add_remove; one record swapped in place for a candidate under
    replace. The index matters where a mechanism breaks ties by it."""
    if relation == "add_remove":
        return [
            records[:i] + (candidate,) + records[i:] for candidate in candidates for i in range(len(records) + 1)
        ] + [records[:i] + records[i + 1 :] for i in range(len(records))]
    return [
        records[:i] + (candidate,) + records[i + 1 :]
        for i in range(len(records))
        for candidate in candidates
        if candidate != records[i]
    ]
