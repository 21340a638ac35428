"""Which artifacts the runs in progress hold, so that ``pate-cache prune`` never deletes one under a run.

A run registers every stage of its graph in ``<cache>/.runs/<pid>-<random>.json`` (a list of ``stage/key``) and
holds an exclusive ``flock`` on that file until it ends. The kernel drops the lock when the process dies, however it
dies, so a registration whose lock can be taken is a dead run's: ``held_artifacts`` removes it. Registering and
prune's scan-and-delete hold one lock (``<cache>/.runs/registry.lock``): a run registers either before prune scans,
and everything it reads is kept, or after prune is done, and it builds what is missing as any run does (a release
drawn from secret noise is then a new release, counted in the data's privacy budget).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pate.io import NOT_WRITABLE, exclusive_lock

log = logging.getLogger(__name__)

__all__ = ["HOLDS_DIR", "held_artifacts", "hold_stages", "registry_locked"]

HOLDS_DIR = ".runs"


@contextmanager
def registry_locked(cache_dir: str | os.PathLike) -> Iterator[Path]:
    """Hold the registry's lock (registering a run, or pruning): yields the registry's directory."""
    holds = Path(cache_dir) / HOLDS_DIR
    holds.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(holds / "registry.lock"):
        yield holds


@contextmanager
def hold_stages(cache_dir: str | os.PathLike, stages: Iterable[tuple[str, str]]) -> Iterator[None]:
    """Register ``stages`` ((stage name, key) pairs) as held by this process until the body ends. In a cache this
    process cannot write (another user's, a read-only mount) it registers nothing: it cannot prune there either,
    and a build there fails naming the directory."""
    try:
        with registry_locked(cache_dir) as holds:
            path = holds / f"{os.getpid()}-{secrets.token_hex(6)}.json"
            handle = open(path, "w")
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write(json.dumps(sorted(f"{name}/{key}" for name, key in stages)))
            handle.flush()
    except OSError as err:
        if err.errno not in NOT_WRITABLE:
            raise
        log.debug("%s is not writable (%s): this run is not registered in it", cache_dir, err.strerror)
        yield
        return
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        handle.close()


def held_artifacts(cache_dir: str | os.PathLike) -> set[str]:
    """``stage/key`` of every artifact a live run holds; the registrations of dead runs are removed. Call it under
    :func:`registry_locked` when the answer decides a deletion."""
    holds = Path(cache_dir) / HOLDS_DIR
    held: set[str] = set()
    if not holds.is_dir():
        return held
    for path in sorted(holds.glob("*.json")):
        with open(path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # a live run holds it
                held.update(json.loads(handle.read()))
                continue
            fcntl.flock(handle, fcntl.LOCK_UN)
        path.unlink(missing_ok=True)
    return held
