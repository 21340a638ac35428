"""Small file primitives shared by the cache, the data layer and the report: atomic writes, file hashes,
and an exclusive lock for builds that parallel jobs share."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def create_temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path`` (``.<name>.<random>.tmp``), opened for writing: (fd, its path). Created
    with mode 0666 less the umask, like any file the process creates, so a cache shared by a group stays readable
    by the group (``tempfile.mkstemp`` would make it 0600 whatever the umask)."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), str(tmp)
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file beside {path}")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write to a temporary file in the same directory, then ``os.replace`` it over ``path``: a reader
    sees the old file or the new one, never half of one; the temporary file is removed on failure. The file
    follows the umask (``create_temp_beside``)."""
    path = Path(path)
    fd, tmp = create_temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def open_npy_for_writing(path: str | os.PathLike, dtype, shape: tuple[int, ...]) -> np.memmap:
    """``np.lib.format.open_memmap(path, "w+", dtype, shape)`` with the file's blocks reserved first
    (``posix_fallocate``), so that a full disk fails here, as an ``OSError`` (ENOSPC) naming the file, the bytes it
    needs and the bytes free, instead of killing the process with SIGBUS when a write through the mapping finds no
    block. Where the file system cannot reserve blocks, its free space is compared with the file's size instead."""
    path = Path(path)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    needed = path.stat().st_size
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, needed)
        return out
    except OSError as err:
        if err.errno in (errno.EOPNOTSUPP, errno.EINVAL) and shutil.disk_usage(path.parent).free >= needed:
            return out
        del out
        path.unlink(missing_ok=True)
        if err.errno in (errno.ENOSPC, errno.EOPNOTSUPP, errno.EINVAL):
            free = shutil.disk_usage(path.parent).free
            raise OSError(
                errno.ENOSPC,
                f"no space left on the device: writing {path.name} needs {needed:,} bytes, {free:,} are free",
                str(path.parent),
            ) from None
        raise
    finally:
        os.close(fd)


def move_aside(path: Path) -> Path:
    """Rename ``path`` (a file or a folder) to ``<stem>.previous-<n><suffix>`` beside it, ``n`` the first number
    free, and return the new path: an earlier result kept, never overwritten."""
    n = 0
    while (aside := path.with_name(f"{path.stem}.previous-{n}{path.suffix}")).exists():
        n += 1
    os.replace(path, aside)
    return aside


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
        raise ValueError(
            f"{path}, line {line}: byte {raw[err.start]:#04x} at offset {err.start} is not UTF-8 text; expected {what}"
        ) from None


def read_text(path: str | os.PathLike, what: str) -> str:
    """The UTF-8 text of ``path`` (:func:`decode_text`)."""
    return decode_text(path, Path(path).read_bytes(), what)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


# Errors that mean "this directory is not ours to write": another user's read-only cache, a read-only mount.
NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)
LOCK_REPORT_SECONDS = 30.0


@contextmanager
def exclusive_lock(path: str | os.PathLike, report_every: float = LOCK_REPORT_SECONDS) -> Iterator[None]:
    """Hold ``flock`` on ``path`` so that parallel jobs build a shared file once (the others wait, then reuse).

    The holder writes its pid and host into the lock file; a process that has to wait says so at once and every
    ``report_every`` seconds, naming the holder (a lock is released when its holder dies, so only a live process,
    perhaps a stopped one, can make it wait). Where the lock file cannot be opened for writing (another user's
    read-only cache, a read-only mount), nothing can be built there, so there is nothing to wait for: the body
    runs without the lock, reuses what is complete, and a write it attempts fails naming the directory."""
    path = Path(path)
    try:
        fh = open(path, "a+")
    except OSError as err:
        if err.errno not in NOT_WRITABLE:
            raise
        log.debug("%s is not writable (%s): reading without a lock", path, err.strerror)
        yield
        return
    with fh:
        _acquire(fh, path, report_every)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
            fh.flush()
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _acquire(fh, path: Path, report_every: float) -> None:
    """flock(LOCK_EX) on ``fh``, saying who holds it while waiting."""
    waited, next_report = 0.0, 0.0
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if waited:
                log.info("got the lock %s after %.0f s", path, waited)
            return
        except BlockingIOError:
            pass
        if waited >= next_report:
            holder = path.read_text(errors="replace").strip() or "another process"
            log.warning(
                "waiting for %s, held by %s, to finish what it builds (%.0f s so far); a stopped holder must "
                "be resumed or killed",
                path,
                holder,
                waited,
            )
            next_report += report_every
        time.sleep(0.2)
        waited += 0.2
