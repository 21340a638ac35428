"""Progress bars: tqdm, one per long stage. On a terminal a bar redraws in place; elsewhere (a cluster job's
log file, CI) every redraw is appended, so there a bar redraws at most every ``LOG_INTERVAL`` seconds and a
long stage adds a handful of updates to the log, not hundreds."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm

LOG_INTERVAL = 30.0


def progress_bar(iterable=None, **kwargs) -> tqdm:
    """``tqdm(iterable, **kwargs)``, with ``mininterval=LOG_INTERVAL`` unless stderr is a terminal."""
    if not sys.stderr.isatty():
        kwargs.setdefault("mininterval", LOG_INTERVAL)
    return tqdm(iterable, **kwargs)


__all__ = ["LOG_INTERVAL", "progress_bar"]
