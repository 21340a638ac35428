"""Small file primitives shared by the cache, the data layer and the report: atomic writes, file hashes,
and an exclusive lock for builds that parallel jobs share."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write to a temporary file in the same directory, then ``os.replace`` it over ``path``: a reader
    sees the old file or the new one, never half of one; the temporary file is removed on failure."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | os.PathLike, obj: Any, default: Callable[[Any], Any] | None = None) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=default) + "\n")


def decode_text(path: str | os.PathLike, raw: bytes, what: str) -> str:
    """``raw`` (the bytes of ``path``) as UTF-8 text; a file that is not text raises ``ValueError`` naming the
    file, the line and the byte, and ``what`` the file was expected to be."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}, line {line}: byte {raw[err.start]:#04x} at offset {err.start} is not UTF-8 text; "
                         f"expected {what}") from None


def read_text(path: str | os.PathLike, what: str) -> str:
    """The UTF-8 text of ``path`` (:func:`decode_text`)."""
    return decode_text(path, Path(path).read_bytes(), what)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextmanager
def exclusive_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold ``flock`` on ``path`` so that parallel jobs build a shared file once (the others wait, then reuse)."""
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
