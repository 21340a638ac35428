"""Who sees what: the private training split cut into teacher parts, the held-out split into public queries
and evaluation records.

The privacy analysis (docs/architecture.md, section 1) relies on the teacher parts being disjoint: a training record lives
in exactly one part, so changing it changes at most one teacher's votes. ``partition_teachers`` guarantees
that by construction (one permutation cut into contiguous pieces).
"""

from __future__ import annotations

import numpy as np


def _as_index_array(indices: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(indices)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise ValueError(
            f"{name} must be a 1-D integer array of record indices, got dtype {arr.dtype} shape {arr.shape}"
        )
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} holds repeated record indices; expected each record once")
    return arr.astype(np.int64, copy=False)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_seed(seed: int) -> None:
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed={seed!r}; expected a non-negative integer")


def partition_teachers(indices: np.ndarray, num_teachers: int, seed: int) -> list[np.ndarray]:
    """Split ``indices`` into ``num_teachers`` disjoint, covering, sorted parts whose sizes differ by at most one.

    The records are shuffled with ``np.random.default_rng(seed).permutation`` and cut into contiguous pieces
    (the first ``len % num_teachers`` pieces get one extra record), so the result depends only on the
    records, ``num_teachers`` and ``seed``.
    """
    arr = _as_index_array(indices, "indices")
    _check_seed(seed)
    if not _is_int(num_teachers) or not 1 <= num_teachers <= arr.size:
        raise ValueError(
            f"num_teachers={num_teachers!r} with {arr.size} records; expected an integer with "
            f"1 <= num_teachers <= {arr.size} (every teacher needs at least one record)"
        )
    shuffled = arr[np.random.default_rng(seed).permutation(arr.size)]
    return [np.sort(part) for part in np.array_split(shuffled, int(num_teachers))]


def split_public(heldout_indices: np.ndarray, num_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(query_indices, evaluation_indices): a random ``num_queries`` of the held-out records become the
    student's unlabeled public queries, the rest evaluate it. Disjoint and covering, each sorted; the choice
    is ``np.random.default_rng(seed).permutation`` of the held-out records.
    """
    arr = _as_index_array(heldout_indices, "heldout_indices")
    _check_seed(seed)
    if not _is_int(num_queries) or not 1 <= num_queries < arr.size:
        raise ValueError(
            f"num_queries={num_queries!r} with {arr.size} held-out records; expected an integer with "
            f"1 <= num_queries < {arr.size} so that at least one record is left to evaluate the student"
        )
    shuffled = arr[np.random.default_rng(seed).permutation(arr.size)]
    return np.sort(shuffled[:num_queries]), np.sort(shuffled[num_queries:])


__all__ = ["partition_teachers", "split_public"]
