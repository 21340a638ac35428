"""Who sees what: the private training split cut into teacher parts, the held-out split into the student's
public pool (the queries and the unlabeled images) and the evaluation records. The partition and queries
artifacts (builder, file format, reader) live here too.

The privacy analysis (docs/architecture.md, section 1) relies on the teacher parts being disjoint: a training
record lives in exactly one part, so changing it changes at most one teacher's votes. ``partition_teachers``
guarantees that by construction (one permutation cut into contiguous pieces).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pate.data.labelled_images import SPLITS
from pate.data.people import person_draws

if TYPE_CHECKING:
    from pate.data.labelled_images import LabelledImages


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


def deal_people(person: np.ndarray, num_teachers: int, seed: int, records_per_teacher: int = 1) -> np.ndarray:
    """int64 [N]: the teacher of each private record, whose person is ``person[i]``, dealt by
    :func:`teacher_of_person`; refused in one line naming the key where the partition by person cannot hold: fewer
    people than teachers, a person holding more records than a teacher's share, ceil(N / num_teachers), or a
    teacher dealt fewer than ``records_per_teacher`` records. The run calls it before any compute, the partition
    stage to cut its parts."""
    people, codes, counts = np.unique(np.asarray(person), return_inverse=True, return_counts=True)
    if not _is_int(num_teachers) or not 1 <= num_teachers <= len(people):
        raise ValueError(
            f"partition.num_teachers={num_teachers!r} but the private training split shows {len(people)} "
            f"people; expected 1 <= num_teachers <= {len(people)}: partitioned by person, every teacher needs a "
            f"person of its own"
        )
    share = -(-len(person) // int(num_teachers))
    if counts.max() > share:
        biggest = int(np.argmax(counts))
        raise ValueError(
            f"person {str(people[biggest])!r} has {int(counts[biggest])} of the {len(person)} private training "
            f"records, more than one teacher's share of {share} (partition.num_teachers={num_teachers}); expected "
            f"fewer teachers, or the data without that person"
        )
    teachers = teacher_of_person(people, int(num_teachers), seed)
    loads = np.bincount(teachers, weights=counts, minlength=num_teachers)
    if loads.min() < records_per_teacher:
        raise ValueError(
            f"partition.num_teachers={num_teachers} by person with partition.seed={seed}: teacher "
            f"{int(np.argmin(loads))} is dealt {int(loads.min())} record(s) of the {len(person)}, fewer than the "
            f"{records_per_teacher} a teacher needs (each person goes to a teacher drawn for them alone); expected "
            f"fewer teachers (about {len(people) // 20} give each about 20 people), or another partition.seed"
        )
    return teachers[codes]


def teacher_of_person(people: np.ndarray, num_teachers: int, seed: int) -> np.ndarray:
    """int64 [P]: the teacher of each of ``people`` (distinct identifiers), drawn for each person alone: a keyed
    BLAKE2b hash of the identifier (key: ``seed``) modulo ``num_teachers`` (bias at most num_teachers / 2^64). No
    person's teacher depends on any other person, so adding, removing or changing one person moves no one else."""
    return (person_draws(people, seed, b"partition") % np.uint64(num_teachers)).astype(np.int64)


def partition_teachers_by_person(
    indices: np.ndarray, person: np.ndarray, num_teachers: int, seed: int, records_per_teacher: int = 1
) -> list[np.ndarray]:
    """Split ``indices`` into ``num_teachers`` disjoint, covering, sorted parts that keep each person whole:
    ``person[i]`` names the person of record ``indices[i]``; all of a person's records go to one teacher,
    :func:`teacher_of_person`'s. Each person's teacher is drawn for them alone, so any change to one person -- their
    records changed, added or removed, or the person added or removed -- changes that one teacher's part and no
    other: at most one teacher's vote moves. The price: the parts are balanced in expectation, not exactly (a part's
    record count has mean N / T and variance (1/T)(1 - 1/T) sum_p c_p^2 over the people's counts c_p, T the
    teachers), since any rule that balanced them exactly would deal the others by this person's count.
    ``ValueError`` where :func:`deal_people` refuses."""
    arr = _as_index_array(indices, "indices")
    _check_seed(seed)
    person = np.asarray(person)
    if person.shape != arr.shape:
        raise ValueError(f"person has shape {person.shape}; expected one person per record, shape {arr.shape}")
    owner = deal_people(person, num_teachers, seed, records_per_teacher)
    return [np.sort(arr[owner == teacher]) for teacher in range(int(num_teachers))]


@dataclass(frozen=True)
class PublicSplit:
    """The held-out split, cut in three (each sorted, int64): ``queries`` (labelled by the aggregator) lie in
    ``pool`` (every image the student may train on: the queries and the unlabeled rest), and ``evaluation``
    (never trained on, not even without labels) is disjoint from the pool."""

    pool: np.ndarray
    queries: np.ndarray
    evaluation: np.ndarray

    def unlabeled(self, answered: np.ndarray) -> np.ndarray:
        """Pool images the student may use without a label (sorted): every pool image that is not an answered
        query (``answered``: bool [len(queries)]); an unanswered query joins them as an image, never as a label
        set of zeros."""
        return np.setdiff1d(self.pool, self.queries[np.asarray(answered, dtype=bool)])


def split_public(heldout_indices: np.ndarray, pool_size: int, num_queries: int, seed: int) -> PublicSplit:
    """Cut the held-out records into the student's pool (``pool_size`` records, ``num_queries`` of them the
    public queries) and the evaluation records (the rest). One ``np.random.default_rng(seed).permutation`` of
    the held-out records: its first ``num_queries`` are the queries, its first ``pool_size`` the pool, so the
    queries of a smaller ``num_queries`` are a subset of those of a larger one and the evaluation records do
    not depend on ``num_queries``.
    """
    arr = _as_index_array(heldout_indices, "heldout_indices")
    _check_seed(seed)
    if not _is_int(pool_size) or not 1 <= pool_size < arr.size:
        raise ValueError(
            f"public pool size {pool_size!r} with {arr.size} held-out records; expected an integer with "
            f"1 <= pool size < {arr.size} so that at least one record is left to evaluate the student "
            f"(data.pool_fraction sets it)"
        )
    if not _is_int(num_queries) or not 1 <= num_queries <= pool_size:
        raise ValueError(
            f"data.num_queries={num_queries!r} with a public pool of {pool_size} records; expected an integer "
            f"with 1 <= num_queries <= {pool_size} (raise data.pool_fraction for more)"
        )
    shuffled = arr[np.random.default_rng(seed).permutation(arr.size)]
    return PublicSplit(
        pool=np.sort(shuffled[:pool_size]),
        queries=np.sort(shuffled[:num_queries]),
        evaluation=np.sort(shuffled[pool_size:]),
    )


def pool_size(num_heldout: int, pool_fraction: float) -> int:
    """``round(pool_fraction * num_heldout)``; ``pool_fraction`` must lie in (0, 1)."""
    if not isinstance(pool_fraction, (int, float)) or isinstance(pool_fraction, bool) or not 0 < pool_fraction < 1:
        raise ValueError(
            f"data.pool_fraction={pool_fraction!r}; expected a number in (0, 1): the share of the "
            f"held-out split that forms the student's public pool (the rest evaluates it)"
        )
    return int(round(pool_fraction * num_heldout))


# ------------------------------------------------------------------ the partition and queries artifacts
def check_partition_config(
    split: np.ndarray,
    num_teachers: int,
    num_queries: int,
    pool_fraction: float,
    records_per_teacher: int = 1,
    why: str = "",
) -> None:
    """Fail before any decode or training when the split sizes (``split``: CelebA's split code per image, as
    read from list_eval_partition.txt) cannot satisfy the config: every teacher's part (the parts differ by at most
    one record) must hold ``records_per_teacher`` records, what the teachers need to fit (``why``)."""
    sizes = {name: int(np.count_nonzero(np.asarray(split) == code)) for name, code in SPLITS.items()}
    for name in ("train", "test"):
        if sizes[name] == 0:
            raise ValueError(
                f"the {name} split is empty: no image has split code {SPLITS[name]} ({name}; CelebA's "
                f"list_eval_partition.txt, a folder's split column or data.split_fractions); the "
                f"pipeline needs private training records and held-out public records"
            )
    n_train = sizes["train"]
    most = n_train // records_per_teacher
    if most == 0:
        raise ValueError(
            f"the private training split holds {n_train} record{'s' if n_train != 1 else ''}, and even one teacher "
            f"needs {records_per_teacher} ({why}): no teacher can be trained, whatever partition.num_teachers; give "
            f"the training split more records (a split column or data.split_fractions), or a teacher that needs "
            f"fewer"
        )
    if not 1 <= num_teachers <= most:
        need = "one record" if records_per_teacher == 1 else f"{records_per_teacher} records: {why}"
        raise ValueError(
            f"partition.num_teachers={num_teachers} but the private training split holds {n_train} "
            f"record{'s' if n_train != 1 else ''}; "
            f"expected 1 <= num_teachers <= {most} (each teacher needs at least {need})"
        )
    n_test = sizes["test"]
    pool = pool_size(n_test, pool_fraction)
    if not 1 <= num_queries <= pool < n_test:
        raise ValueError(
            f"data.num_queries={num_queries} with data.pool_fraction={pool_fraction} of the held-out (test) split's "
            f"{n_test} records (a public pool of {pool}); expected 1 <= num_queries <= pool size < {n_test}, so "
            f"that the queries fit in the pool and some held-out records remain to evaluate the student"
        )


def build_partition(work: Path, data: LabelledImages, num_teachers: int, seed: int, by: str = "record") -> None:
    """Write ``partition.npz``: the teachers' disjoint parts of the private training split, concatenated,
    with offsets (part i is ``teacher_records[teacher_offsets[i]:teacher_offsets[i+1]]``). ``by``: ``record``
    (``partition_teachers``) or ``person`` (``partition_teachers_by_person``: each person's records in one part)."""
    train = data.indices("train")
    if by == "person":
        if data.person is None:
            raise ValueError("partition by person, but the data name no people (data.person_column)")
        parts = partition_teachers_by_person(train, data.person[train], num_teachers, seed)
    elif by == "record":
        parts = partition_teachers(train, num_teachers, seed)
    else:
        raise ValueError(f"by={by!r}; expected 'record' or 'person'")
    offsets = np.cumsum([0] + [len(p) for p in parts])
    np.savez(work / "partition.npz", teacher_records=np.concatenate(parts), teacher_offsets=offsets)


def read_teacher_parts(art: Artifact) -> list[np.ndarray]:
    """The teachers' parts (private training rows, one array per teacher) of a partition artifact."""
    with np.load(art.file("partition.npz")) as z:
        records, offsets = z["teacher_records"], z["teacher_offsets"]
    return [records[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


def build_queries(work: Path, data: LabelledImages, pool_fraction: float, num_queries: int, seed: int) -> None:
    """Write ``queries.npz``: the held-out test split cut into the student's public pool (``pool_indices``,
    ``pool_fraction`` of it), the public queries in it (``query_indices``) and the evaluation records
    (``eval_indices``, the rest). Its own stage, so that changing the queries keeps the teachers."""
    heldout = data.indices("test")
    split = split_public(heldout, pool_size(len(heldout), pool_fraction), num_queries, seed)
    np.savez(work / "queries.npz", query_indices=split.queries, pool_indices=split.pool, eval_indices=split.evaluation)


def read_queries(art: Artifact) -> PublicSplit:
    """The public pool, queries and evaluation records of a queries artifact."""
    with np.load(art.file("queries.npz")) as z:
        return PublicSplit(pool=z["pool_indices"], queries=z["query_indices"], evaluation=z["eval_indices"])


__all__ = [
    "PublicSplit",
    "build_partition",
    "build_queries",
    "check_partition_config",
    "deal_people",
    "partition_teachers",
    "partition_teachers_by_person",
    "teacher_of_person",
    "pool_size",
    "read_queries",
    "read_teacher_parts",
    "split_public",
]
