"""How train.py ends when it cannot finish: a mistake in the config or the data is one line on stderr (exit 2);
Ctrl-C says what was saved and how to resume (exit 130). Tracebacks are for bugs (and for ``verbose=true``)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from omegaconf import DictConfig

from pipeline.checks import UserError

EXIT_USER_ERROR, EXIT_INTERRUPTED = 2, 130


@contextmanager
def command_line_errors(cfg: DictConfig) -> Iterator[None]:
    """Run the body; turn a :class:`UserError` or an interrupt into a short message and an exit status.

    Lightning catches KeyboardInterrupt inside ``fit``, shuts down and calls ``exit(1)``; the SIGINT handler
    installed here records the interrupt first, so that exit is recognised as one."""
    interrupted = []

    def on_sigint(signum, frame):
        interrupted.append(signum)
        signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except UserError as err:
        if cfg.get("verbose") is True:
            raise
        print(f"error: {err}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    except (KeyboardInterrupt, SystemExit):
        if not interrupted:
            raise
        print(f"interrupted: every finished stage, and every finished teacher, is saved under "
              f"{os.path.abspath(cfg.paths.cache_dir)}; run the same command again to resume from there",
              file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGINT, previous)


__all__ = ["EXIT_INTERRUPTED", "EXIT_USER_ERROR", "command_line_errors"]
