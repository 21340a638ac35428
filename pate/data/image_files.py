"""The image files a label file lists, resolved before anything is read: one record is one file.

A label file names each image by a path under ``data.root``. Several spellings (``img/a.png``, ``./img/a.png``,
``img//a.png``, ``img/../img/a.png``), a symlink or a hard link can name one file; listed on two rows, that file
would be one record in two places -- a private training image among the public queries and evaluation images,
which voids the privacy unit (one training record, in exactly one teacher's part). So every path is resolved
(normalised, symlinks followed) and stat'ed before any image is decoded, and any of these is refused in one line:

* two rows that are one file: the same resolved path, or the same (device, inode), i.e. hard links -- naming both
  rows and both spellings;
* a path that resolves outside ``data.root`` (``..``, or a symlink leading out) -- naming the row and where it leads;
* a path that names no file, or something that is not a regular file -- naming the row.

The stats taken here (size, modification time) are the ones the tensor cache keys on, so each file is stat'ed once,
and the cache decodes the resolved paths: what is read is what was checked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ImageFiles", "resolve_image_files"]


@dataclass(frozen=True)
class ImageFiles:
    """Resolved image paths (absolute, as strings) in row order, and their stats: int64 [N, 2], byte size and
    modification time (ns)."""

    paths: tuple[str, ...]
    stats: np.ndarray


def _resolve(path: str, parents: dict[str, str]) -> str:
    """``os.path.realpath(path)``, resolving each directory once: a listing of 200,000 files in one directory costs
    one ``lstat`` per file, not one per path component (strings, not ``Path``: pathlib's parsing would cost more
    than the system calls)."""
    head, tail = os.path.split(path.rstrip("/"))
    if tail in ("", ".", ".."):
        return os.path.realpath(path)
    parent = parents.get(head)
    if parent is None:
        parent = parents[head] = os.path.realpath(head)
    candidate = os.path.join(parent, tail)
    try:
        if stat.S_ISLNK(os.lstat(candidate).st_mode):
            return os.path.realpath(candidate)
    except OSError:  # absent (or unreadable): os.stat reports it, naming the row
        pass
    return candidate


def resolve_image_files(
    names: Sequence[str],
    base: str | os.PathLike,
    root: str | os.PathLike,
    listed_in: str | os.PathLike,
    lines: Sequence[int],
    column: str = "",
) -> ImageFiles:
    """The files ``names`` (relative to ``base``, a directory under ``root``) resolved and checked as the module
    docstring says. ``listed_in`` is the label file, ``lines[i]`` the (1-based) line of row i in it and ``column``
    what errors add after the line (e.g. ", column 1 (file)"); ``root`` is ``data.root``. ``ValueError`` on the
    first problem, before any file is opened."""
    root = str(Path(root).expanduser().resolve())
    inside = root if root.endswith(os.sep) else root + os.sep
    base = str(Path(base).expanduser())
    parents: dict[str, str] = {}
    paths: list[str] = []
    stats = np.zeros((len(names), 2), dtype=np.int64)
    first_row: dict[tuple[int, int], int] = {}  # (st_dev, st_ino) -> the row that listed it first
    missing: list[int] = []
    for i, name in enumerate(names):
        where = f"{listed_in}, line {lines[i]}{column}: {name!r}"
        path = _resolve(os.path.join(base, name), parents)
        paths.append(path)
        if path != root and not path.startswith(inside):  # root itself: not a file, said below
            raise ValueError(
                f"{where} leads to {path}, outside data.root={root!r}; expected a file inside it "
                f"(a '..' or a symlink that leaves it is refused; data.root may itself be a symlink)"
            )
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            missing.append(i)
            continue
        except OSError as err:
            raise ValueError(f"{where}: cannot read {path} ({err.strerror}); expected a readable image file") from None
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{where} is {path}, not a file; expected an image file")
        seen = first_row.setdefault((st.st_dev, st.st_ino), i)
        if seen != i:
            raise ValueError(
                _one_file_twice(listed_in, column, (lines[seen], names[seen], paths[seen]), (lines[i], name, path))
            )
        stats[i] = st.st_size, st.st_mtime_ns
    if missing:
        raise ValueError(
            f"{paths[missing[0]]}: no such image file, listed in {listed_in} on line "
            f"{lines[missing[0]]}{column} ({len(missing)} of the {len(names)} listed images are missing)"
        )
    return ImageFiles(tuple(paths), stats)


def _one_file_twice(
    listed_in: str | os.PathLike, column: str, first: tuple[int, str, str], again: tuple[int, str, str]
) -> str:
    """The error for two rows that are one file: both lines, both spellings, and why it is refused."""
    (line_a, name_a, path_a), (line_b, name_b, path_b) = first, again
    same = f"one file, {path_a}" if path_a == path_b else f"hard links to one file ({path_a} and {path_b})"
    return (
        f"{listed_in}, lines {line_a} and {line_b}{column}: {name_a!r} and {name_b!r} are {same}; expected "
        f"each image listed once (one image is one record: listed twice, it could be private and public at once)"
    )
