"""The people in a dataset: which person each image shows, where the data say so (a folder's person column).

A person is the unit a person-level guarantee protects, so the splits must keep each person's images together:
one person's images in the private split and in the public ones would put that person in both the teachers' data
and the student's. ``check_one_split_per_person`` refuses such a split column; ``split_by_person`` draws a split
that cuts between people, never through one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pate.data.labelled_images import SPLITS

__all__ = ["check_one_split_per_person", "most_images_per_person", "split_by_person"]

_SPLIT_NAMES = {code: name for name, code in SPLITS.items()}


def check_one_split_per_person(person: np.ndarray, split: np.ndarray, path: Path, lines: Sequence[int]) -> None:
    """Refuse, in one line naming the person, the file and two of its lines, a split that puts one person's images
    in two splits. ``person`` and ``split`` share the rows; ``lines`` gives each row's line in ``path``."""
    _, first, codes = np.unique(person, return_index=True, return_inverse=True)  # first: each person's first row
    moved = np.flatnonzero(split != split[first[codes]])
    if moved.size:
        row = int(moved[0])
        earlier = int(first[codes[row]])
        raise ValueError(
            f"{path}: person {str(person[row])!r} has images in two splits, "
            f"{_SPLIT_NAMES[int(split[earlier])]} (line {lines[earlier]}) and {_SPLIT_NAMES[int(split[row])]} "
            f"(line {lines[row]}); expected all of a person's images in one split, so that no person is both "
            f"private and public"
        )


def split_by_person(person: np.ndarray, fractions: Sequence[float], seed: int) -> np.ndarray:
    """int8 split codes of the rows of ``person``: the distinct people, in a permutation seeded by ``seed``, are
    cut into train / val / test where their running image count first reaches floor(f * N) for train and for val
    (``fractions``, already checked), so that every person's images share one split and each split holds about its
    share of the images (off by less than one person's image count)."""
    people, codes, counts = np.unique(person, return_inverse=True, return_counts=True)
    order = np.random.default_rng(int(seed)).permutation(len(people))
    running = np.cumsum(counts[order])
    train_share, val_share = float(fractions[0]), float(fractions[1])
    train_end = int(np.searchsorted(running, int(train_share * len(person)), side="left")) + 1
    val_end = int(np.searchsorted(running, int((train_share + val_share) * len(person)), side="left")) + 1
    if train_share == 0:
        train_end = 0
    if val_share == 0:
        val_end = train_end
    person_split = np.full(len(people), SPLITS["test"], dtype=np.int8)
    person_split[order[:train_end]] = SPLITS["train"]
    person_split[order[train_end:val_end]] = SPLITS["val"]
    return person_split[codes]


def most_images_per_person(person: np.ndarray) -> int:
    """The most rows one person holds in ``person`` (0 for no rows): the group size a record-level guarantee
    would have to stretch to, and what a person-level one covers at once."""
    return int(np.unique(person, return_counts=True)[1].max()) if len(person) else 0
