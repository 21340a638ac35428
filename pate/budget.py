"""The privacy budget of private data: every release drawn with secret noise on it, kept in one ledger, and the total
that any one private record has been exposed to.

A guarantee protects the data, not a run. Two releases of the same private data, each (epsilon, delta)-DP, are
together only as private as their composition: whoever sees both sees the data through two independent noise draws.
So every release drawn with secret noise (``privacy.noise=secure``, or ``auto`` on a user's data) is recorded here
before its noise is drawn, and a run prices the total beside its own epsilon.

* **Records by their file.** A private record is identified by its file's name without its directory
  (``private_records``): not by its decoded pixels, its row, its path's spelling or its labels, which a decode
  setting (``data.image_size``), a library upgrade, another ``data.root`` or a relabelling would change. Two
  different images of one name share a record: that can only merge budgets, never split one. A release's private
  split is stored once as the sorted 64-bit hashes of its records (``records/<dataset id>.npy``; the dataset id is
  the SHA-256 of that array, ``private_data_id``).
* **The total of a run** (``BudgetLedger.total``) composes every recorded release whose private split shares at
  least one record with the run's: that bounds what any record of the run's data has been exposed to, since a
  record's releases are among those (sequential composition of adaptive mechanisms: Dwork & Roth 2014, Thm 3.16;
  Mironov 2017, Prop. 1 for RDP; the PLD and GDP accountants compose the same events). It is priced by the run's
  accountant at the run's delta. Releases under another relation or level (PATE under add_remove is teacher-level)
  cannot be composed with the run's: the total is then not priced (``BudgetTotal.priced`` None) and says so.
* **Written once, atomically.** One file per release, ``entries/<id>.json``, written to a temporary name, flushed to
  the disk and renamed into place, its directory flushed too. A crash mid-write leaves a temporary file that is
  never read as an entry (and no noise was drawn: the entry is written first). Each entry holds a SHA-256 of its own
  content and its place in the sequence of entries, and ``head.json`` (rewritten under the lock after each append)
  their count: a truncated or edited entry, a gap in the sequence, a lost last entry, a foreign file or a missing
  records file is refused in one line naming the file (``BudgetDamaged``), never read as zero. This catches
  accidental damage; a whole ledger restored from an older copy, or rewritten by someone who recomputes its
  checksums, cannot be told from the real one. Concurrent runs write different files; the check of
  a cap and the append that follows hold one exclusive lock (``BudgetLedger.locked``), which must be taken: a ledger
  that cannot be locked is refused, never used unlocked.

An entry holds the release's cost events (``pate.privacy.CostEvent``), its time, its stage and key, the definition
of the released quantity (``pate.artifacts.Stage.definition``: the key without the code), its relation and level,
and the run's privacy settings; nothing secret (no noise, no seed, no label). The records file is a function of
every private record: like the cache, the ledger is private and is never published.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import secrets
import time
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from pate.data.labelled_images import LabelledImages
from pate.errors import UserError
from pate.privacy import Ledger as CostLedger
from pate.privacy.events import CostEvent
from pate.privacy.ledger import PricedEpsilon

__all__ = [
    "BudgetDamaged",
    "BudgetEntry",
    "BudgetLedger",
    "BudgetTotal",
    "default_budget_dir",
    "private_data_id",
    "private_records",
]

ENTRY_FORMAT = 2
# an entry's file name: its id, <UTC time to the microsecond>-<12 random hex digits>.json (ids sort by time)
_ENTRY_NAME = re.compile(r"^(\d{8}T\d{12}Z-[0-9a-f]{12})\.json$")
_DATASET_ID = re.compile(r"^[0-9a-f]{24}$")


class BudgetDamaged(UserError):
    """A file of a budget ledger that cannot be read or fails its checksum: the release it stood for cannot be
    priced, so nothing is added to that ledger until it is restored."""


def default_budget_dir() -> Path:
    """``$PATE_BUDGET_DIR``, else ``$XDG_DATA_HOME/pate/budget`` (``~/.local/share/pate/budget``): one ledger per
    user, shared by every clone, cache and ``PROJECT_ROOT`` on the machine. On a cluster, point PATE_BUDGET_DIR
    (or ``paths.budget_dir``) at a file system every node shares."""
    if os.environ.get("PATE_BUDGET_DIR"):
        return Path(os.environ["PATE_BUDGET_DIR"])
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "pate" / "budget"


def private_records(arrays: LabelledImages) -> np.ndarray:
    """The private split's records as sorted unique uint64: per training row (split code 0), the first 8 bytes of
    the BLAKE2b of its file's name without its directory, in Unicode NFC and case-folded. Invariant to row order,
    decoding, labels and the path's spelling (``./img/0.png``, ``img//0.png``, ``IMG\\0.PNG`` and ``0.png`` under
    another root are one record)."""
    names = {
        unicodedata.normalize("NFC", PurePosixPath(arrays.filenames[row].replace("\\", "/")).name).casefold()
        for row in arrays.indices("train")
    }
    return np.unique(
        np.array(
            [int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little") for name in names],
            dtype=np.uint64,
        )
    )


def private_data_id(records: np.ndarray) -> str:
    """SHA-256 (24 hex digits) of ``private_records``' array: the id of one private split."""
    return hashlib.sha256(np.ascontiguousarray(records, dtype="<u8").tobytes()).hexdigest()[:24]


@dataclass(frozen=True)
class BudgetEntry:
    """One release recorded in the ledger: ``id`` (its file's name), ``time`` (UTC, ISO 8601), the ``dataset`` it
    was drawn on (``private_data_id``), the release stage's ``stage`` name and ``key``, the ``definition`` of what
    it released (its key without the code), ``neighbors`` and ``record_level`` (whether its epsilon is about one
    record: PATE under add_remove is teacher-level), its cost ``events``, the privacy ``config`` it was asked
    under, and its place in the ledger's sequence (``sequence``: the number of entries before it, set by
    ``BudgetLedger.append``)."""

    id: str
    time: str
    dataset: str
    stage: str
    key: str
    definition: str
    neighbors: str
    record_level: bool
    events: tuple[CostEvent, ...]
    config: Mapping[str, Any] = field(default_factory=dict)
    sequence: int = -1

    @classmethod
    def new(
        cls,
        dataset: str,
        stage: str,
        key: str,
        definition: str,
        cost: CostLedger,
        record_level: bool,
        config: Mapping[str, Any],
    ) -> BudgetEntry:
        """An entry for a release about to be drawn, with a fresh id; ``cost`` holds its cost events."""
        if cost.neighbors is None:
            raise ValueError("cost: a release's cost events must name their neighbouring relation")
        now = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now % 1 * 1e6):06d}Z"
        return cls(
            f"{stamp}-{secrets.token_hex(6)}",
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            dataset,
            stage,
            key,
            definition,
            cost.neighbors.value,
            bool(record_level),
            cost.history,
            dict(config),
        )

    def body(self) -> dict[str, Any]:
        """The entry as JSON, without its checksum."""
        return {
            "format": ENTRY_FORMAT,
            "id": self.id,
            "time": self.time,
            "dataset": self.dataset,
            "stage": self.stage,
            "key": self.key,
            "definition": self.definition,
            "neighbors": self.neighbors,
            "record_level": self.record_level,
            "events": [event.to_dict() for event in self.events],
            "config": dict(self.config),
            "sequence": self.sequence,
        }

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> BudgetEntry:
        return cls(
            str(body["id"]),
            str(body["time"]),
            str(body["dataset"]),
            str(body["stage"]),
            str(body["key"]),
            str(body["definition"]),
            str(body["neighbors"]),
            bool(body["record_level"]),
            tuple(CostEvent.from_dict(event) for event in body["events"]),
            dict(body["config"]),
            int(body["sequence"]),
        )


@dataclass(frozen=True)
class BudgetTotal:
    """What the ledger adds up to for one private split at ``delta`` under ``neighbors`` at one level
    (``record_level``): the ``releases`` on splits that share a record with it (over ``datasets`` distinct
    splits), ``priced`` by the accountant (None when there is nothing to price, or when ``other_relations`` of
    them were recorded under another relation or level and cannot be composed with these)."""

    releases: int
    datasets: int
    other_relations: int
    neighbors: str
    record_level: bool
    delta: float
    priced: PricedEpsilon | None

    @property
    def epsilon(self) -> float | None:
        """The total epsilon; None where it cannot be priced (``other_relations``)."""
        if self.other_relations:
            return None
        return 0.0 if self.priced is None else self.priced.epsilon

    def describe(self) -> str:
        """One line: the total, its delta, relation, level and accountant, and what it covers."""
        level = "record-level" if self.record_level else "teacher-level"
        scope = f"{self.releases} release(s) on this private data" + (
            f" or data sharing records with it ({self.datasets} private splits)" if self.datasets > 1 else ""
        )
        if self.other_relations:
            return (
                f"NOT PRICED: {self.other_relations} of the {self.releases + self.other_relations} release(s) on "
                f"this private data were drawn under another relation or level than {self.neighbors} "
                f"({level}), and no epsilon composes them with the others; `pate-cache budget` lists them"
            )
        return (
            f"epsilon = {self.epsilon:.4g} at delta = {self.delta:g} (neighbours: {self.neighbors}, {level}) over "
            f"{scope}" + (f" by the {self.priced.accountant} accountant" if self.priced is not None else "")
        )


class BudgetLedger:
    """The budget ledger under ``root`` (module docstring): ``entries/`` and ``records/``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._records: dict[str, np.ndarray] = {}

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the ledger's exclusive lock, which must be taken: a check of the total and the append that follows
        it are one step for every process that shares the ledger."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            handle = os.fdopen(os.open(self.root / "ledger.lock", os.O_RDWR | os.O_CREAT, 0o666), "r+")
        except OSError as err:
            raise UserError(
                f"the privacy budget ledger {self.root} cannot be locked ({err.strerror}): no release is "
                f"drawn without it; make the directory and its ledger.lock writable for everyone who "
                f"runs on this data (a group-writable directory), or set paths.budget_dir"
            ) from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def entries(self) -> list[BudgetEntry]:
        """Every release recorded, in the order recorded; ``BudgetDamaged`` names the first entry that cannot be
        read or fails its checksum, a foreign file among them, a gap in their sequence, or a count that does not
        match ``head.json`` (one entry past the head is a write whose head a crash cut short: it is counted)."""
        folder = self.root / "entries"
        if not folder.is_dir():
            count = self._head() if (self.root / "records").is_dir() else 0  # a ledger that recorded something
            if count:
                raise BudgetDamaged(
                    _damaged(self.root / "head.json", ValueError(f"it counts {count} entries, 0 are there"))
                )
            return []
        foreign = [p for p in folder.iterdir() if not _ENTRY_NAME.match(p.name) and not p.name.endswith(".tmp")]
        if foreign:
            raise BudgetDamaged(_damaged(foreign[0], ValueError("it is no entry of the ledger")))
        entries = sorted(
            (_read_entry(path) for path in folder.iterdir() if _ENTRY_NAME.match(path.name)),
            key=lambda entry: entry.sequence,
        )
        for expected, entry in enumerate(entries):
            if entry.sequence != expected:
                raise BudgetDamaged(
                    _damaged(
                        folder / f"{entry.id}.json",
                        ValueError(f"it is entry number {entry.sequence}, but entry number {expected} is missing"),
                    )
                )
        count = self._head()
        if not count <= len(entries) <= count + 1:
            raise BudgetDamaged(
                _damaged(self.root / "head.json", ValueError(f"it counts {count} entries, {len(entries)} are there"))
            )
        return entries

    def _head(self) -> int:
        """The count of entries in ``head.json``, verified."""
        path = self.root / "head.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("sha256") != _checksum({"count": record["count"]}):
                raise ValueError("its checksum does not match its content")
            return int(record["count"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise BudgetDamaged(_damaged(path, err)) from None

    def leftovers(self) -> list[Path]:
        """Temporary files of writes a crash cut short: never entries (the release they were for drew no noise)."""
        return sorted(
            p
            for folder in (self.root, self.root / "entries", self.root / "records")
            if folder.is_dir()
            for p in folder.iterdir()
            if p.name.endswith(".tmp")
        )

    def _write_head(self, count: int) -> None:
        _write_atomically(
            self.root / "head.json",
            lambda handle: json.dump({"count": count, "sha256": _checksum({"count": count})}, handle),
            "w",
        )

    def records(self, dataset: str) -> np.ndarray:
        """The private split ``dataset`` (sorted uint64 record hashes), verified against its id."""
        if dataset not in self._records:
            path = self.root / "records" / f"{dataset}.npy"
            try:
                records = np.load(path, allow_pickle=False)
                if records.dtype != np.uint64 or records.ndim != 1 or private_data_id(records) != dataset:
                    raise ValueError("its content does not hash to its name")
            except (OSError, ValueError) as err:
                raise BudgetDamaged(_damaged(path, err)) from None
            self._records[dataset] = records
        return self._records[dataset]

    def add_records(self, records: np.ndarray) -> str:
        """Store a private split once (content-addressed); returns its id. The ledger's first write also writes
        its head (count 0): from then on a ledger whose entries and head are gone is refused, not read as new."""
        records = np.asarray(records, dtype=np.uint64)
        if not (self.root / "head.json").exists() and not self.entries():
            self.root.mkdir(parents=True, exist_ok=True)
            self._write_head(0)
        dataset = private_data_id(records)
        path = self.root / "records" / f"{dataset}.npy"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(path, lambda handle: np.save(handle, np.ascontiguousarray(records, "<u8")), "wb")
        self._records[dataset] = records
        return dataset

    def append(self, entry: BudgetEntry) -> Path:
        """Write ``entry`` as the next file of the ledger, then the head that counts it; call it under
        :meth:`locked` after checking the total."""
        entries = self.entries()
        if len(entries) > self._head():  # a crash between an entry and its head: the head catches up first
            self._write_head(len(entries))
        entry = dataclasses.replace(entry, sequence=len(entries))
        target = self.root / "entries" / f"{entry.id}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            raise FileExistsError(f"budget entry {target} exists already")
        body = entry.body()
        record = {**body, "sha256": _checksum(body)}
        _write_atomically(
            target, lambda handle: json.dump(record, handle, indent=1, sort_keys=True, allow_nan=False), "w"
        )
        self._write_head(entry.sequence + 1)
        return target

    def sharing(self, records: np.ndarray, entries: Sequence[BudgetEntry]) -> list[BudgetEntry]:
        """The entries whose private split shares at least one record with ``records``."""
        records = np.asarray(records, dtype=np.uint64)
        overlaps = {
            dataset: bool(np.intersect1d(self.records(dataset), records, assume_unique=True).size)
            for dataset in {entry.dataset for entry in entries}
        }
        return [entry for entry in entries if overlaps[entry.dataset]]

    def total(
        self,
        records: np.ndarray,
        delta: float,
        neighbors: str,
        record_level: bool,
        accountant: str = "tightest",
        entries: Sequence[BudgetEntry] | None = None,
        planned: CostLedger | None = None,
    ) -> BudgetTotal:
        """The composition of every recorded release on data sharing a record with ``records`` (and of
        ``planned``, a release about to be drawn on them, when given), priced at ``delta`` by ``accountant`` under
        ``neighbors`` at the level ``record_level``."""
        shared = self.sharing(records, self.entries() if entries is None else entries)
        same = [entry for entry in shared if (entry.neighbors, entry.record_level) == (neighbors, record_level)]
        events = [event for entry in same for event in entry.events] + list(planned.history if planned else ())
        other = len(shared) - len(same)
        priced = None
        if not other and any(event.count for event in events):
            priced = CostLedger.replay(events, neighbors=neighbors).get_epsilon(delta, accountant)
        datasets = len({entry.dataset for entry in shared} | ({private_data_id(records)} if planned else set()))
        return BudgetTotal(len(same) + (planned is not None), datasets, other, neighbors, record_level, delta, priced)


def _checksum(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _damaged(path: Path, err: Exception) -> str:
    return (
        f"the privacy budget ledger's file {path} is damaged or missing ({str(err).splitlines()[0][:160]}): the "
        f"release it records cannot be priced, so no release on this data is drawn until it is restored from a "
        f"copy (back the ledger up with the data); `pate-cache budget` lists the ledger"
    )


def _read_entry(path: Path) -> BudgetEntry:
    """The entry in ``path``, its checksum and file name verified; ``BudgetDamaged`` (one line) otherwise."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        body = {name: value for name, value in record.items() if name != "sha256"}
        if record.get("sha256") != _checksum(body):
            raise ValueError("its checksum does not match its content")
        if record.get("format") != ENTRY_FORMAT or f"{record['id']}.json" != path.name:
            raise ValueError(f"it is not a format-{ENTRY_FORMAT} entry named by its id")
        if not _DATASET_ID.match(str(record["dataset"])):
            raise ValueError(f"dataset={record['dataset']!r} is not a dataset id")
        return BudgetEntry.from_body(body)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise BudgetDamaged(_damaged(path, err)) from None


def _write_atomically(path: Path, write, mode: str) -> None:
    """``write(handle)`` into ``path``: a temporary file beside it, flushed to the disk, renamed into place, and the
    directory flushed too, so that after a crash the file is either whole or absent."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, mode) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
