"""Where CelebA's files are, in the layouts people have: the original archive's, torchvision's and Kaggle's.

* original: ``root/img_align_celeba/``, ``root/list_attr_celeba.txt``, ``root/list_eval_partition.txt`` and,
  where present, ``root/identity_CelebA.txt`` (the person each image shows);
* torchvision (``datasets.CelebA(root, download=True)``): the same files under ``root/celeba/``;
* Kaggle ("CelebFaces Attributes (CelebA) Dataset"): ``root/list_attr_celeba.csv`` (``image_id`` and one column per
  attribute, values 1 / -1), ``root/list_eval_partition.csv`` (``image_id,partition``) and the images in
  ``root/img_align_celeba/img_align_celeba/`` (or directly in ``root/img_align_celeba/``).

``find_celeba_layout(root)`` returns the first that matches; a directory that matches none raises
``FileNotFoundError`` listing what was looked for and what is there. The CSV readers hold Kaggle's files to the
same standard as the text readers of ``pate.data.celeba``: an error names the file and the line.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pate.io import read_text

__all__ = [
    "CelebALayout",
    "check_label_names",
    "check_unique",
    "find_celeba_layout",
    "read_csv_attributes",
    "read_csv_label_names",
    "read_csv_splits",
]

IMAGE_DIR = "img_align_celeba"
TEXT_FILES = ("list_attr_celeba.txt", "list_eval_partition.txt")
CSV_FILES = ("list_attr_celeba.csv", "list_eval_partition.csv")
IDENTITY_FILE = "identity_CelebA.txt"  # '<file name> <person>' per line: the original and torchvision layouts
_HOW_TO_POINT = "pass data=celeba data.root=/path/to/celeba"


@dataclass(frozen=True)
class CelebALayout:
    """The files of one CelebA copy: ``kind`` is "original", "torchvision" or "kaggle"; ``csv`` says whether the
    attribute and partition files are Kaggle's CSV files; ``identity`` is the identity file where the copy has one
    (Kaggle's has none), else None."""

    kind: str
    images: Path
    attributes: Path
    partition: Path
    identity: Path | None = None

    @property
    def csv(self) -> bool:
        return self.attributes.suffix == ".csv"


def _text_layout(kind: str, base: Path) -> CelebALayout | None:
    attributes, partition = (base / name for name in TEXT_FILES)
    if (base / IMAGE_DIR).is_dir() and attributes.is_file() and partition.is_file():
        identity = base / IDENTITY_FILE
        return CelebALayout(kind, base / IMAGE_DIR, attributes, partition, identity if identity.is_file() else None)
    return None


def _kaggle_layout(base: Path) -> CelebALayout | None:
    attributes, partition = (base / name for name in CSV_FILES)
    nested = base / IMAGE_DIR / IMAGE_DIR  # Kaggle's archive unpacks the images one directory deeper
    images = nested if nested.is_dir() else base / IMAGE_DIR
    if images.is_dir() and attributes.is_file() and partition.is_file():
        return CelebALayout("kaggle", images, attributes, partition)
    return None


def find_celeba_layout(root: str | os.PathLike) -> CelebALayout:
    """The CelebA files under ``root`` (module docstring), checked to exist; ``FileNotFoundError`` otherwise,
    listing the three layouts looked for and the entries found in ``root``."""
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"CelebA root {str(path)!r} does not exist or is not a directory; {_HOW_TO_POINT}")
    for layout in (_text_layout("original", path), _text_layout("torchvision", path / "celeba"), _kaggle_layout(path)):
        if layout is not None:
            return layout
    found = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in path.iterdir())
    shown = ", ".join(found[:12]) + (f" and {len(found) - 12} more" if len(found) > 12 else "") or "nothing"
    lacks = [
        str(path / name)
        for name, present in (
            (IMAGE_DIR, (path / IMAGE_DIR).is_dir()),
            *((name, (path / name).is_file()) for name in TEXT_FILES),
        )
        if not present
    ]
    raise FileNotFoundError(
        f"CelebA root {str(path)!r} lacks {', '.join(lacks)} and matches none of the layouts looked for: "
        f"{IMAGE_DIR}/ with {' and '.join(TEXT_FILES)} (the original archive), the same under celeba/ (torchvision), "
        f"or {IMAGE_DIR}/[{IMAGE_DIR}/] with {' and '.join(CSV_FILES)} (Kaggle); found {shown}; {_HOW_TO_POINT}"
    )


def check_label_names(path: Path, line: int, names: tuple[str, ...], expected: Sequence[str] | None) -> tuple[str, ...]:
    """``names`` (read from ``path`` at ``line``) if non-empty, distinct and, with ``expected``, equal to it."""
    if not names:
        raise ValueError(f"{path}, line {line}: expected the label names, found none")
    if expected is not None and names != tuple(expected):
        raise ValueError(
            f"{path}, line {line}: expected the label names {tuple(expected)}, in that order, found {names}"
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{path}, line {line}: label names must be distinct, found {repeated} more than once")
    return names


def check_unique(filenames: Sequence[str], path: Path, first_line: int) -> None:
    """``ValueError`` naming ``path`` and the line of the first file name listed twice (row i on line
    ``first_line + i``)."""
    if len(set(filenames)) == len(filenames):
        return
    seen: set[str] = set()
    for i, name in enumerate(filenames):
        if name in seen:
            raise ValueError(f"{path}, line {i + first_line}: image {name!r} listed twice")
        seen.add(name)


def _rows(path: Path, first_column: str) -> list[list[str]]:
    rows = [row for row in csv.reader(read_text(path, "a CSV file").splitlines()) if row]
    if not rows or rows[0][0].strip() != first_column:
        found = rows[0][0] if rows else "an empty file"
        raise ValueError(f"{path}, line 1: expected a header starting with {first_column!r}, found {found!r}")
    return rows


def read_csv_label_names(path: Path, expected: Sequence[str] | None = None) -> tuple[str, ...]:
    """The label names of Kaggle's ``list_attr_celeba.csv``: its header after ``image_id``."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        header = next(csv.reader([handle.readline()]), [])
    if not header or header[0].strip() != "image_id":
        raise ValueError(f"{path}, line 1: expected a header starting with 'image_id', found {header[:1]}")
    return check_label_names(path, 1, tuple(name.strip() for name in header[1:]), expected)


def read_csv_attributes(path: Path, expected: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
    """(filenames, labels uint8 [N, L]) from Kaggle's ``list_attr_celeba.csv``: 1 (or +1) -> 1, -1 -> 0; every row a
    file name and L values; anything else raises ``ValueError`` naming the file and the line."""
    rows = _rows(path, "image_id")
    names = check_label_names(path, 1, tuple(name.strip() for name in rows[0][1:]), expected)
    body = rows[1:]
    short = [i for i, row in enumerate(body) if len(row) != 1 + len(names)]
    if short:
        raise ValueError(
            f"{path}, line {short[0] + 2}: expected a file name and {len(names)} values, found "
            f"{len(body[short[0]])} fields"
        )
    values = np.array([[value.strip() for value in row[1:]] for row in body], dtype=str).reshape(len(body), len(names))
    valid = np.isin(values, ("1", "+1", "-1"))
    if not valid.all():
        r, c = np.argwhere(~valid)[0]
        raise ValueError(f"{path}, line {r + 2}: value {str(values[r, c])!r} for {names[c]}; expected 1 (or +1) or -1")
    filenames = [row[0].strip() for row in body]
    check_unique(filenames, path, first_line=2)
    return filenames, (values != "-1").astype(np.uint8)


def read_csv_splits(path: Path) -> dict[str, int]:
    """{file name: split code} from Kaggle's ``list_eval_partition.csv`` (``image_id,partition``, codes 0/1/2)."""
    codes: dict[str, int] = {}
    for i, row in enumerate(_rows(path, "image_id")[1:]):
        if len(row) != 2 or row[1].strip() not in ("0", "1", "2"):
            raise ValueError(
                f"{path}, line {i + 2}: expected '<file name>,<code>' with code in ['0', '1', '2'], "
                f"found {','.join(row)!r}"
            )
        if row[0].strip() in codes:
            raise ValueError(f"{path}, line {i + 2}: image {row[0].strip()!r} listed twice")
        codes[row[0].strip()] = int(row[1])
    return codes
