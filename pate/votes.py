"""Vote arrays: the contract between the vote stage and the aggregators.

Two forms exist (docs/architecture.md, section 2):

* per-teacher votes, bool ``[Q, T, L]`` (query, teacher, label), stored packed along the label axis
  as ``np.packbits(bits, axis=-1)`` (big bit order, zero padding) -- uint8 ``[Q, T, ceil(L / 8)]``;
  ``PackedVotes`` carries the packed bytes together with L, which the bytes alone do not determine;
* vote counts, integer ``[Q, L]``: how many teachers voted for each label, each in [0, T].

torch tensors are accepted wherever an array is: they are moved to the CPU and converted with
``.detach().cpu().numpy()`` at the boundary (``as_numpy``), and the result is a numpy array.
Everything here raises ``ValueError`` naming the argument and the offending value; nothing is
clipped or coerced silently.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pate.privacy.checks import set_fields

__all__ = [
    "VOTES_FILE",
    "read_votes",
    "write_votes",
    "PackedVotes",
    "as_numpy",
    "check_vote_bits",
    "check_vote_counts",
    "count_votes",
    "pack_votes",
    "packed_width",
    "unpack_votes",
]


def as_numpy(array, name: str = "votes") -> np.ndarray:
    """``array`` as a numpy array; torch tensors (anything with ``.detach().cpu().numpy()``) are copied to the CPU."""
    if hasattr(array, "detach") and hasattr(array, "cpu"):
        array = array.detach().cpu().numpy()
    try:
        return np.asarray(array)
    except Exception as error:  # e.g. ragged nested lists
        raise ValueError(f"{name} must be array-like, got {type(array).__name__}: {error}") from error


def packed_width(num_labels: int) -> int:
    """Bytes per packed vote vector: ceil(L / 8)."""
    return (num_labels + 7) // 8


def _describe(array: np.ndarray, mask: np.ndarray) -> str:
    """'value v at index i' for the first entry where mask holds (for error messages)."""
    index = tuple(int(i) for i in np.argwhere(mask)[0])
    return f"value {array[index].item()!r} at index {index}"


def check_vote_bits(bits, name: str = "votes") -> np.ndarray:
    """Per-teacher votes as a bool array: bool dtype, or an integer / float dtype holding only 0 and 1.

    Any shape with at least one label axis is accepted (``[..., L]``); callers check the shape.
    """
    bits = as_numpy(bits, name)
    if bits.dtype == np.bool_:
        return bits
    if not (np.issubdtype(bits.dtype, np.integer) or np.issubdtype(bits.dtype, np.floating)):
        raise ValueError(f"{name} must hold bool or 0/1 votes, got dtype {bits.dtype}")
    bad = (bits != 0) & (bits != 1)
    if np.any(bad):
        raise ValueError(f"{name} must hold only 0/1 votes, got {_describe(bits, bad)}")
    return bits.astype(np.bool_)


def pack_votes(bits) -> np.ndarray:
    """Pack per-teacher votes bool ``[..., L]`` along the label axis: uint8 ``[..., ceil(L/8)]`` (big bit order)."""
    bits = check_vote_bits(bits, "bits")
    if bits.ndim < 1 or bits.shape[-1] < 1:
        raise ValueError(f"bits must have a non-empty label axis, got shape {bits.shape}")
    return np.packbits(bits, axis=-1, bitorder="big")


def unpack_votes(packed, num_labels: int) -> np.ndarray:
    """Inverse of ``pack_votes``: bool ``[..., num_labels]``.

    The padding bits of the last byte must be zero (``np.packbits`` writes zeros); anything else means
    the bytes were not packed from ``num_labels`` labels, and raises rather than being dropped.
    """
    packed = _check_packed(packed, num_labels)
    return np.unpackbits(packed, axis=-1, count=num_labels, bitorder="big").view(np.bool_)


def _check_num_labels(num_labels) -> int:
    if not isinstance(num_labels, numbers.Integral) or isinstance(num_labels, (bool, np.bool_)) or num_labels < 1:
        raise ValueError(f"num_labels must be an integer >= 1, got {num_labels!r}")
    return int(num_labels)


def _check_packed(packed, num_labels) -> np.ndarray:
    num_labels = _check_num_labels(num_labels)
    packed = as_numpy(packed, "packed")
    if packed.dtype != np.uint8:
        raise ValueError(f"packed must be a uint8 array from np.packbits, got dtype {packed.dtype}")
    width = packed_width(num_labels)
    if packed.ndim < 1 or packed.shape[-1] != width:
        raise ValueError(
            f"packed must have last axis ceil(num_labels / 8) = {width} for num_labels={num_labels}, "
            f"got shape {packed.shape}"
        )
    padding = 8 * width - num_labels
    if padding and packed.size and np.any(packed[..., -1] & np.uint8((1 << padding) - 1)):
        raise ValueError(
            f"packed has non-zero padding bits in its last byte: it was not packed from num_labels={num_labels} labels"
        )
    return packed


@dataclass(frozen=True, eq=False)
class PackedVotes:
    """Per-teacher votes packed along the label axis: ``bits`` uint8 ``[Q, T, ceil(L/8)]`` and ``num_labels`` L."""

    bits: np.ndarray
    num_labels: int

    def __post_init__(self):
        packed = _check_packed(self.bits, self.num_labels)
        if packed.ndim != 3:
            raise ValueError(f"bits must be uint8 [queries, teachers, ceil(L/8)], got shape {packed.shape}")
        set_fields(self, bits=packed, num_labels=int(self.num_labels))

    @classmethod
    def from_bits(cls, bits) -> "PackedVotes":
        """Pack bool ``[Q, T, L]`` votes."""
        bits = check_vote_bits(bits, "bits")
        if bits.ndim != 3:
            raise ValueError(f"bits must be [queries, teachers, labels], got shape {bits.shape}")
        return cls(pack_votes(bits), bits.shape[-1])

    @property
    def shape(self) -> tuple[int, int, int]:
        """Shape of the unpacked votes, (Q, T, L)."""
        return (*self.bits.shape[:2], self.num_labels)

    def unpack(self) -> np.ndarray:
        """bool ``[Q, T, L]``."""
        return unpack_votes(self.bits, self.num_labels)


def count_votes(bits_or_packed, num_labels: int | None = None) -> np.ndarray:
    """Vote counts int32 ``[Q, L]`` from per-teacher votes ``[Q, T, L]``.

    Accepts a ``PackedVotes``; packed uint8 bytes ``[Q, T, ceil(L/8)]`` together with ``num_labels``
    (giving ``num_labels`` is what marks the bytes as packed); or bool / 0-1 votes ``[Q, T, L]``
    with ``num_labels`` omitted.
    """
    if isinstance(bits_or_packed, PackedVotes):
        if num_labels is not None and num_labels != bits_or_packed.num_labels:
            raise ValueError(f"num_labels={num_labels!r} contradicts the PackedVotes' {bits_or_packed.num_labels}")
        bits = bits_or_packed.unpack()
    elif num_labels is not None:
        bits = unpack_votes(bits_or_packed, num_labels)
    else:
        bits = check_vote_bits(bits_or_packed, "bits_or_packed")
    if bits.ndim != 3:
        raise ValueError(
            f"bits_or_packed must be per-teacher votes [queries, teachers, labels], got shape {bits.shape}"
        )
    return bits.sum(axis=1, dtype=np.int32)


def check_vote_counts(votes, num_labels: int, num_teachers: int) -> np.ndarray:
    """Validate vote counts ``[Q, num_labels]`` in [0, num_teachers]; return them as int32 (no copy if already).

    Integer dtypes are accepted; a float array is accepted only if every entry is a whole number
    (a lossless conversion), and a fractional, negative or too large count raises ``ValueError``
    naming ``votes``, the value and its index. Bool arrays are refused (one teacher's bits are not counts).
    """
    votes = as_numpy(votes, "votes")
    if votes.ndim != 2 or votes.shape[1] != num_labels:
        raise ValueError(
            f"votes must be vote counts of shape [queries, num_labels={num_labels}], got shape {votes.shape}"
        )
    numeric = np.issubdtype(votes.dtype, np.integer) or np.issubdtype(votes.dtype, np.floating)
    if votes.dtype == np.bool_ or not numeric:
        raise ValueError(f"votes must be integer vote counts, got dtype {votes.dtype}")
    if votes.size == 0:
        return votes.astype(np.int32)
    if np.issubdtype(votes.dtype, np.floating):
        bad = ~np.isfinite(votes) | (votes != np.round(votes))
        if np.any(bad):
            raise ValueError(f"votes must be whole-number counts, got fractional {_describe(votes, bad)}")
    low, high = votes.min(), votes.max()
    if low < 0:
        raise ValueError(f"votes must be counts >= 0, got negative {_describe(votes, votes < 0)}")
    if high > num_teachers:
        raise ValueError(
            f"votes must be counts <= num_teachers={num_teachers}, got {_describe(votes, votes > num_teachers)}"
        )
    return votes.astype(np.int32, copy=False)


# ---------------------------------------------------------------------------- the vote artifact
VOTES_FILE = "votes.npz"  # the vote artifact's one file, written by write_votes and read by read_votes


def write_votes(work: Path, votes, query_indices, teacher_accuracy) -> None:
    """Write the vote artifact into the directory ``work`` (the vote stage's): ``bits``, the per-teacher votes
    bool [Q, T, L] packed (uint8 [Q, T, ceil(L/8)]), their ``counts`` int32 [Q, L], the ``query_indices`` [Q] and
    each teacher's ``teacher_accuracy`` [T] (mean per-label accuracy on the evaluation rows)."""
    np.savez(
        Path(work) / VOTES_FILE,
        bits=pack_votes(votes),
        counts=count_votes(votes).astype(np.int32),
        query_indices=query_indices,
        teacher_accuracy=teacher_accuracy,
    )


def read_votes(art) -> dict[str, np.ndarray]:
    """The vote artifact (a ``pate.artifacts.Artifact``) as :func:`write_votes` wrote it: ``counts`` int32 [Q, L],
    ``bits`` packed uint8 [Q, T, ceil(L/8)], ``query_indices`` [Q], ``teacher_accuracy`` [T]."""
    with np.load(art.file(VOTES_FILE)) as z:
        return {name: z[name] for name in z.files}
