"""The worker pool that decodes and renders images (the CelebA reader and the synthetic generator share it)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import signal
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["process_pool"]


@contextmanager
def process_pool(num_workers: int) -> Iterator[multiprocessing.pool.Pool | None]:
    """A process pool of ``num_workers`` (None for in-process work when 0).

    Fork where the platform has it: the workers only decode or draw with PIL and numpy (no torch, no
    OpenMP), which is safe in a forked child even when the parent runs torch threads, and unlike spawn or
    forkserver it does not re-import the caller's main module (a script without an ``if __name__ ==
    "__main__"`` guard would otherwise run again in every worker).
    """
    if num_workers == 0:
        yield None
        return
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(num_workers, initializer=_quiet_worker) as pool:
        yield pool


def _quiet_worker() -> None:
    """A worker leaves stopping to the parent: Ctrl-C (sent to the whole process group) is ignored, and SIGTERM or
    SIGHUP end it quietly, with no traceback; the parent says what was saved (pate/pipeline/cli.py) and terminates the
    pool. Forked workers would otherwise inherit the parent's handler and print a traceback each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
