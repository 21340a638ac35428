"""Any multi-label image data: a directory of images and one CSV file of their labels (``data=multilabel_folder``).

The CSV file (UTF-8, comma-separated, one header line)::

    file,cat,dog,outdoor[,split]
    img/0001.png,1,0,1[,train]
    ...

* the first column names each image by its path relative to the image directory (any header; subdirectories
  allowed; an absolute path is refused). Each path is resolved -- normalised, symlinks followed -- before any
  image is read (``pate.data.image_files``): one that leads outside the directory is refused, and so are two rows
  that are one file (``img/a.png`` and ``./img/a.png``, a symlink, a hard link): one image is one record;
* every other column is one label, named by its header: values 0/1 or -1/1 (also +1), one convention per file
  (a file holding both 0 and -1, as CheXpert's "uncertain" -1 would, is refused rather than guessed);
* an optional column headed ``split`` places each image: ``train`` (private: the teachers' parts), ``val``
  (public, unlabelled use only: the feature extractor's fit images) or ``test`` (public: the student's pool and
  queries, and the evaluation images), or CelebA's codes 0 / 1 / 2. Without it, a seeded permutation of the rows
  splits them by ``split_fractions``;
* with ``person_column`` set, the column of that header names the person each image shows (any non-empty text;
  not a label). A split column must then keep each person's images in one split, and without one the seeded
  permutation is of the people, so the split cuts between them (``pate.data.people``).

Rows keep the CSV's order: precomputed features (``features=precomputed``) are read in that order. Every error
names the file, the line and the column, before any image is decoded. Images are decoded as CelebA's are
(``pate.data.tensor_cache``): grayscale and RGBA images are converted to RGB, 16-bit images scaled to 8 bits, and
the decode says so once.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pate.data.celeba import content_fingerprint
from pate.data.labelled_images import SPLITS, LabelledImages
from pate.data.celeba_layouts import check_label_names
from pate.data.image_files import ImageFiles, resolve_image_files
from pate.data.people import check_one_split_per_person, split_by_person
from pate.data.tensor_cache import check_decode_args, decoded_images
from pate.io import read_text

__all__ = [
    "LabelTable",
    "MultilabelFolder",
    "check_split_fractions",
    "read_label_names",
    "read_label_table",
    "seeded_split",
]

SPLIT_COLUMN = "split"
_SPLIT_VALUES = {**SPLITS, **{str(code): code for code in SPLITS.values()}}
_POSITIVE, _NEGATIVES = ("1", "+1"), ("0", "-1")


@dataclass(frozen=True)
class LabelTable:
    """The CSV file as read: file names (row order), label names, labels uint8 [N, L], the split codes (int8
    [N], or None when the file has no split column), the (1-based) line of each row, for errors, and each row's
    person (str [N], or None without a person column)."""

    filenames: tuple[str, ...]
    label_names: tuple[str, ...]
    labels: np.ndarray
    split: np.ndarray | None
    lines: tuple[int, ...]
    person: np.ndarray | None = None


@dataclass(frozen=True)
class _Header:
    """The CSV header read: the label names and the 0-based indices of the split and person columns (or None)."""

    names: tuple[str, ...]
    split_at: int | None
    person_at: int | None


def _header(path: Path, header: list[str], person_column: str | None) -> _Header:
    """The label names and the split and person columns of the CSV header (``person_column``: the person
    column's header, or None)."""
    if len(header) < 2:
        raise ValueError(
            f"{path}, line 1: expected a header 'file,<label>,...' with at least one label column, "
            f"found {','.join(header)!r}"
        )
    columns = [name.strip() for name in header[1:]]
    split_at = columns.index(SPLIT_COLUMN) + 1 if SPLIT_COLUMN in columns else None
    person_at = None
    if person_column is not None:
        if person_column == SPLIT_COLUMN or columns.count(person_column) != 1:
            raise ValueError(
                f"data.person_column={person_column!r} but {path}, line 1, has {columns.count(person_column)} "
                f"columns of that name; expected one column naming each image's person, other than "
                f"{SPLIT_COLUMN!r} (the header: {','.join(header)!r})"
            )
        person_at = columns.index(person_column) + 1
    names = tuple(name for name in columns if name not in (SPLIT_COLUMN, person_column))
    if not names:
        raise ValueError(f"{path}, line 1: expected at least one label column besides {SPLIT_COLUMN!r}")
    if columns.count(SPLIT_COLUMN) > 1:
        raise ValueError(f"{path}, line 1: the column {SPLIT_COLUMN!r} appears {columns.count(SPLIT_COLUMN)} times")
    if "" in names:
        raise ValueError(f"{path}, line 1, column {columns.index('') + 2}: a label column without a name")
    return _Header(check_label_names(path, 1, names, None), split_at, person_at)


def read_header(path: str | os.PathLike, person_column: str | None = None) -> _Header:
    """The CSV file's header (label names, split and person columns), read without its rows."""
    path = Path(path)
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        header = next(csv.reader([handle.readline()]), [])
    return _header(path, header, person_column)


def read_label_names(path: str | os.PathLike, person_column: str | None = None) -> tuple[str, ...]:
    """The label names of the CSV file's header, read without its rows."""
    return read_header(path, person_column).names


def read_label_table(path: str | os.PathLike, person_column: str | None = None) -> LabelTable:
    """The CSV file (module docstring), read strictly: ``ValueError`` naming the file, the (1-based) line and
    column for a short row, a value that is not 0/1 or -1/1, a file mixing 0 and -1, a bad split, an empty
    person, an empty or absolute file name, or a file without rows. Whether the names are distinct files inside
    the directory is the file system's to say: ``MultilabelFolder.image_files``."""
    path = Path(path)
    lines = read_text(path, "the label CSV file").splitlines()
    rows = [
        (number, row)
        for number, row in enumerate(csv.reader(lines), start=1)
        if row and any(cell.strip() for cell in row)
    ]
    if not rows or rows[0][0] != 1:
        raise ValueError(
            f"{path}, line 1: expected a header 'file,<label>,...', found "
            f"{'an empty file' if not rows else 'a blank line'}"
        )
    header = _header(path, rows[0][1], person_column)
    names, split_at, person_at = header.names, header.split_at, header.person_at
    body = rows[1:]
    if not body:
        raise ValueError(f"{path}: the header names {len(names)} labels but no image follows it")
    width = len(rows[0][1])
    for number, row in body:
        if len(row) != width:
            raise ValueError(
                f"{path}, line {number}: expected {width} comma-separated fields (a file name, "
                f"{len(names)} labels{' and the split' if split_at else ''}"
                f"{' and the person' if person_at else ''}), found {len(row)}"
            )
    table = np.array([[cell.strip() for cell in row] for _, row in body], dtype=str)
    numbers = [number for number, _ in body]

    headers = ["file", *(name.strip() for name in rows[0][1][1:])]

    def fail(r: int, c: int, expected: str) -> ValueError:
        return ValueError(
            f"{path}, line {numbers[r]}, column {c + 1} ({headers[c]}): {str(table[r, c])!r}; expected {expected}"
        )

    label_columns = [c for c in range(1, width) if c not in (split_at, person_at)]
    values = table[:, label_columns]
    valid = np.isin(values, (*_POSITIVE, *_NEGATIVES))
    if not valid.all():
        r, c = np.argwhere(~valid)[0]
        raise fail(int(r), label_columns[c], "0 or 1 (or -1 and 1)")
    zeros, minus = (values == "0").ravel(), (values == "-1").ravel()
    if zeros.any() and minus.any():  # the negative seen first (row by row) sets the file's convention
        first, other = ("0", minus) if np.argmax(zeros) < np.argmax(minus) else ("-1", zeros)
        r, c = divmod(int(np.argmax(other)), values.shape[1])
        raise fail(
            r,
            label_columns[c],
            f"the file's negative value {first!r} (seen first): one convention per "
            f"file, 0/1 or -1/1 (is -1 an 'uncertain' label? map it first)",
        )
    labels = np.isin(values, _POSITIVE).astype(np.uint8)

    split = None
    if split_at is not None:
        known = np.isin(table[:, split_at], list(_SPLIT_VALUES))
        if not known.all():
            raise fail(int(np.flatnonzero(~known)[0]), split_at, "train, val or test (or 0, 1, 2)")
        split = np.array([_SPLIT_VALUES[value] for value in table[:, split_at]], dtype=np.int8)

    person = None
    if person_at is not None:
        person = table[:, person_at]
        if not np.all(person != ""):
            raise fail(int(np.flatnonzero(person == "")[0]), person_at, "the person the image shows (not empty)")

    filenames = table[:, 0].tolist()
    for r, name in enumerate(filenames):
        if not name or Path(name).is_absolute():
            raise fail(r, 0, "a path relative to the image directory, inside it")
    return LabelTable(tuple(filenames), names, labels, split, tuple(numbers), person)


def check_split_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    """``data.split_fractions`` as three floats; ``ValueError`` unless they are non-negative and sum to 1."""
    try:
        values = tuple(float(f) for f in fractions)
    except (TypeError, ValueError):
        values = ()
    if len(values) != 3 or min(values) < 0 or abs(sum(values) - 1) > 1e-9:
        raise ValueError(
            f"data.split_fractions={list(fractions) if isinstance(fractions, Sequence) else fractions!r};"
            f" expected three non-negative fractions (train, val, test) summing to 1"
        )
    return values


def seeded_split(num_rows: int, fractions: Sequence[float], seed: int) -> np.ndarray:
    """int8 [num_rows] split codes: a permutation of the rows seeded by ``seed``, cut into train / val / test by
    ``fractions`` (``check_split_fractions``; floor(f * N) rows for train and for val, the rest test)."""
    train_share, val_share, _ = check_split_fractions(fractions)
    order = np.random.default_rng(int(seed)).permutation(num_rows)
    train, val = int(train_share * num_rows), int(val_share * num_rows)
    split = np.full(num_rows, SPLITS["test"], dtype=np.int8)
    split[order[:train]] = SPLITS["train"]
    split[order[train : train + val]] = SPLITS["val"]
    return split


@dataclass(frozen=True)
class MultilabelFolder:
    """Images under ``root`` and their labels in the CSV file ``labels_file`` (relative to ``root`` unless
    absolute); module docstring for the format. Without a split column, ``split_fractions`` and ``split_seed``
    split the rows. Images are cropped to their central square and resized to ``image_size``; ``num_workers``
    processes decode them."""

    root: str
    image_size: int
    labels_file: str = "labels.csv"
    num_workers: int = 0
    split_fractions: Sequence[float] = field(default=(0.8, 0.1, 0.1))
    split_seed: int = 0
    person_column: str | None = None

    @property
    def csv_path(self) -> Path:
        return Path(self.root).expanduser() / Path(self.labels_file).expanduser()

    def check(self) -> None:
        root = Path(self.root).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(
                f"data.root={self.root!r} is not a directory; expected the directory of the "
                f"images (data=multilabel_folder data.root=/path/to/images)"
            )
        if not self.csv_path.is_file():
            raise FileNotFoundError(
                f"{self.csv_path}: no such label file; expected a CSV file 'file,<label>,...' "
                f"(data.labels_file, relative to data.root unless absolute)"
            )
        check_decode_args(self.image_size, self.num_workers)
        check_split_fractions(self.split_fractions)

    def label_names(self) -> tuple[str, ...]:
        return read_label_names(self.csv_path, self.person_column)

    def has_people(self) -> bool:
        """Whether the rows name their people (``person_column``): then the privacy unit can be a person."""
        return self.person_column is not None

    def people_hint(self) -> str:
        return "a column of the label file naming each image's person: data.person_column=<its header>"

    def draws_split(self) -> bool:
        """Whether the rows are split by a seeded permutation of all of them (no split column): then one row added
        or removed moves thousands of others between the private and public splits, so the split is no record's
        own, and a record-level add_remove guarantee cannot hold (``pate.pipeline.runner.check_split_source``)."""
        self.check()
        return read_header(self.csv_path, self.person_column).split_at is None

    def image_files(self, table: LabelTable) -> ImageFiles:
        """The table's files, resolved and checked before any is read (``pate.data.image_files``): each inside
        ``root``, each a different file."""
        root = Path(self.root).expanduser()
        return resolve_image_files(table.filenames, root, root, self.csv_path, table.lines, ", column 1 (file)")

    def load(
        self, cache_dir: Path, progress: bool = True, check_splits: Callable[[np.ndarray], None] | None = None
    ) -> LabelledImages:
        self.check()
        table = read_label_table(self.csv_path, self.person_column)
        split = self._split(table)
        if check_splits is not None:
            check_splits(split)
        files = self.image_files(table)
        root = Path(self.root).expanduser().resolve()
        stat = self.csv_path.stat()
        source = {"labels_file": str(self.csv_path.resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        images, checksum = decoded_images(
            "folder", str(root), files, int(self.image_size), cache_dir, source, int(self.num_workers), progress
        )
        return LabelledImages(
            images=images,
            labels=table.labels,
            split=split,
            filenames=table.filenames,
            label_names=table.label_names,
            fingerprint=content_fingerprint(table.labels, split, table.filenames, checksum, table.person),
            paths=files.paths,
            person=table.person,
        )

    def _split(self, table: LabelTable) -> np.ndarray:
        """The rows' split codes: the split column's (each person's images in one split, where the file names
        people), or drawn by ``split_seed``: a permutation of the rows, or of the people where the file names
        them."""
        if table.split is not None:
            if table.person is not None:
                check_one_split_per_person(table.person, table.split, self.csv_path, table.lines)
            return table.split
        if table.person is not None:
            return split_by_person(table.person, check_split_fractions(self.split_fractions), self.split_seed)
        return seeded_split(len(table.filenames), self.split_fractions, self.split_seed)
