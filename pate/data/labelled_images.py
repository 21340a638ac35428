"""The labelled images every dataset loads into (CelebA, the built-in synthetic set, a folder of images), and
the split codes they share.

The codes are CelebA's own (``list_eval_partition.txt``: 0 train, 1 val, 2 test); a folder's split column and
``data.split_fractions`` use the same three.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPLITS: dict[str, int] = {"train": 0, "val": 1, "test": 2}  # the split codes (CelebA's list_eval_partition codes)


@dataclass(frozen=True)
class LabelledImages:
    """A decoded dataset, whatever its source (CelebA, the synthetic set, a folder of images): the images share
    row order with the labels, split codes and file names; ``label_names`` names the label columns."""

    images: np.memmap  # uint8 [N, 3, S, S], read-only
    labels: np.ndarray  # uint8 [N, L], 1 where the label is present (L = len(label_names))
    split: np.ndarray  # int8 [N], split codes (SPLITS)
    filenames: tuple[str, ...]
    label_names: tuple[str, ...]
    # SHA-256 (16 hex digits) of the content: labels, split and file names as read, and the decoded images'
    # checksum. Stage keys use it, so data edited in place is never mistaken for the data a cache was built on.
    fingerprint: str = ""
    # The image files, resolved (absolute paths, row order), where the data came from files; () otherwise. Not part
    # of the fingerprint: moving the data keeps its cache. A kept model lists its evaluation images by them.
    paths: tuple[str, ...] = ()
    # The person each image shows (str [N]), where the data name people (a folder's data.person_column); None
    # otherwise. Part of the fingerprint where present.
    person: np.ndarray | None = None

    def indices(self, split_name: str) -> np.ndarray:
        """Row indices (int64, ascending) of one of the splits: 'train', 'val' or 'test'."""
        if split_name not in SPLITS:
            raise ValueError(f"split_name={split_name!r}; expected one of {sorted(SPLITS)}")
        return np.flatnonzero(self.split == SPLITS[split_name])

    def __len__(self) -> int:
        return len(self.filenames)


__all__ = ["SPLITS", "LabelledImages"]
