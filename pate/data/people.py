"""The people in a dataset: which person each image shows, where the data say so (a folder's person column,
CelebA's identity file, the synthetic set with ``images_per_person`` > 1).

A person is the unit a person-level guarantee protects, so the splits must keep each person's images together:
one person's images in the private split and in the public ones would put that person in both the teachers' data
and the student's. ``check_one_split_per_person`` refuses such a split column; ``split_by_person`` draws a split
that cuts between people, never through one, each person's split drawn for them alone (``person_draws``), which
the partition by person draws its teachers from too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pate.data.labelled_images import SPLITS

__all__ = ["check_one_split_per_person", "most_images_per_person", "person_draws", "split_by_person"]

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


def person_draws(people: np.ndarray, seed: int, purpose: bytes) -> np.ndarray:
    """uint64 [P]: for each of ``people`` (identifiers), a draw that depends on that identifier alone: the keyed
    BLAKE2b hash (key: ``seed``; ``purpose``, up to 16 bytes, separates the draws of the split and the partition)
    of the identifier's text. Whatever rule reads it, no person's outcome depends on another person."""
    key = int(seed).to_bytes(8, "little")
    digests = [
        hashlib.blake2b(str(who).encode(), digest_size=8, key=key, person=purpose).digest() for who in people.tolist()
    ]
    return np.frombuffer(b"".join(digests), dtype="<u8").copy()


def split_by_person(person: np.ndarray, fractions: Sequence[float], seed: int) -> np.ndarray:
    """int8 split codes of the rows of ``person``, drawn for each person alone: a keyed BLAKE2b hash of the
    identifier (key: ``seed``) read as a uniform u in [0, 1) puts the person in train where u < f_train, in val
    where u < f_train + f_val, else in test (``fractions``, already checked). Every person's images share one split,
    each split holds its share of the people in expectation, and no person's split depends on any other person:
    one person added, removed or changed moves no one else between the private and the public splits."""
    people, codes = np.unique(person, return_inverse=True)
    draws = person_draws(people, seed, b"split").astype(np.float64) / 2.0**64
    train_share, val_share = float(fractions[0]), float(fractions[1])
    person_split = np.full(len(people), SPLITS["test"], dtype=np.int8)
    person_split[draws < train_share + val_share] = SPLITS["val"]
    person_split[draws < train_share] = SPLITS["train"]
    return person_split[codes]


def most_images_per_person(person: np.ndarray) -> int:
    """The most rows one person holds in ``person`` (0 for no rows): the group size a record-level guarantee
    would have to stretch to, and what a person-level one covers at once."""
    return int(np.unique(person, return_counts=True)[1].max()) if len(person) else 0
