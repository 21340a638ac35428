"""How train.py ends when it cannot finish: a mistake in the config or the data is one line on stderr (exit 2);
Ctrl-C, SIGTERM (SLURM's time limit and preemption, ``scancel``, ``docker stop``, ``kill``) and SIGHUP say what was
saved and how to resume, and exit with 128 + the signal's number (130, 143, 129), never 0. Tracebacks are for bugs
(and for ``verbose=true``)."""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from omegaconf import DictConfig

from pate.pipeline.checks import EXIT_USER_ERROR, UserError
from pate.pipeline.paths import settle_project_root

EXIT_INTERRUPTED = 130
# What a file system says when a run cannot write where it was told to: one line naming the place, not a traceback.
_WHERE_TO_WRITE = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}
# The signals that end a run as an interruption (the shell's convention: exit status 128 + the signal's number).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RESEND_SECONDS = 10.0  # longer than Lightning takes to shut a fit down after the first one


@contextmanager
def command_line_errors(cfg: DictConfig) -> Iterator[None]:
    """Run the body; turn a :class:`UserError` or a stop signal into a short message and an exit status.

    Each of ``STOP_SIGNALS`` is recorded and raised as KeyboardInterrupt. Inside ``fit`` Lightning calls this
    handler too (it composes its own SIGTERM handler with the one installed before it), catches the
    KeyboardInterrupt, shuts down and calls ``exit(1)``; the signal recorded first makes that exit an interruption,
    where Lightning alone would end a SIGTERM with a SystemExit that reads as success."""
    interrupted: list[int] = []
    ending = threading.Event()  # set once the body's interruption is being handled
    retries: list[threading.Timer] = []

    def on_signal(signum, frame):
        if ending.is_set():
            return
        interrupted.append(signum)
        # Python drops an exception raised where it ignores exceptions (an at-fork hook, a __del__): a run would then
        # carry on and exit 0. Until the interruption is being handled, the signal is sent again.
        retries.append(threading.Timer(RESEND_SECONDS, os.kill, (os.getpid(), signum)))
        retries[-1].daemon = True
        retries[-1].start()
        raise KeyboardInterrupt

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    try:
        yield
    except UserError as err:
        if cfg.get("verbose") is True:
            raise
        print(f"error: {sweep_job()}{err}{sweep_report_hint()}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    except OSError as err:
        if err.errno not in _WHERE_TO_WRITE or cfg.get("verbose") is True:
            raise
        where = err.filename or "a file"
        print(
            f"error: cannot write {where}: {_WHERE_TO_WRITE[err.errno]} ({err.strerror}); every finished stage is "
            f"kept under {os.path.abspath(cfg.paths.cache_dir)}: free space, or point PROJECT_ROOT or "
            f"paths.cache_dir / paths.log_dir elsewhere, and run the same command again",
            file=sys.stderr,
        )
        sys.exit(EXIT_USER_ERROR)
    except (KeyboardInterrupt, SystemExit):
        if not interrupted:
            raise
        ending.set()
        name = signal.Signals(interrupted[0]).name
        print(
            f"interrupted: {name} received; every finished stage, and every finished teacher, is saved under "
            f"{os.path.abspath(cfg.paths.cache_dir)}; run the same command again to resume from there",
            file=sys.stderr,
        )
        sys.exit(128 + interrupted[0])
    finally:
        ending.set()
        for retry in retries:
            retry.cancel()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def sweep_job() -> str:
    """The prefix ``job N (its overrides) of the sweep in DIR: `` when this run is a job of a multirun, else "": a
    job's error must say which job, or a sweep over data or settings cannot be mended."""
    hydra = _multirun()
    if hydra is None:
        return ""
    return (
        f"job {hydra.job.num} ({' '.join(hydra.overrides.task) or 'no overrides'}) of the sweep in {hydra.sweep.dir}: "
    )


def sweep_report_hint() -> str:
    """The end of a job's error line in a multirun, else "": the sweep ends with the job (Hydra's basic launcher stops
    at the first failure) and writes no report, so the line says how to get one naming the jobs that finished,
    failed and never started."""
    hydra = _multirun()
    if hydra is None:
        return ""
    return f" (the sweep stops here; `python -m pate.report {hydra.sweep.dir}` reports its jobs)"


def _multirun():
    """Hydra's config of this run when it is a job of a multirun, else None."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return None
    return HydraConfig.get()


def start(main: Callable[[], object]) -> None:
    """A Hydra script's command line (train.py, topk.py): ``PROJECT_ROOT`` settled first (``settle_project_root``:
    data, cache and logs under it or the checkout, never the working directory; a blank one is one line, exit 2),
    then ``main()``, which parses the arguments. A mistake Hydra finds while it composes the config (a key that is
    not there, a value of the wrong type, an option a group does not have, an override it cannot parse) is one line
    too, exit 2 (:func:`composition_error`): Hydra alone prints several lines and exits 1, a bug's exit status."""
    try:
        settle_project_root()
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    from hydra.errors import CompactHydraException  # here: --help and the checks above never need it

    if os.environ.get("HYDRA_FULL_ERROR"):  # the user asked for Hydra's own report, traceback included
        main()
        return
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises instead of printing, so the mistake can be said in one line
    try:
        main()
    except CompactHydraException as err:
        print(f"error: {composition_error(err)}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    finally:
        del os.environ["HYDRA_FULL_ERROR"]


def composition_error(err: BaseException) -> str:
    """Hydra's message for a config it could not compose, and OmegaConf's reason under it, in one line: its lines
    joined, a list of options (Hydra's tab-indented lines) joined by commas, the key named (``full_key``)."""
    message = str(err).split("Config search path:")[0]  # where Hydra looked: not the user's mistake
    lines = [line for line in message.splitlines() if line.strip()]
    head = [line.strip() for line in lines if not line.startswith((" ", "\t"))]
    options = [line.strip() for line in lines if line.startswith("\t")]
    text = " ".join(head) + (f" {', '.join(options)}" if options else "")
    override = getattr(err, "override", None)  # an override Hydra could not parse
    if override:
        text = f"{override}: {text}"
    cause = err.__cause__
    if cause is not None and str(cause).strip():
        reason = str(cause).strip().splitlines()[0]
        key = getattr(cause, "full_key", None)
        text += f": {reason}" + (f" (key: {key})" if key else "")
    return text


__all__ = ["EXIT_INTERRUPTED", "EXIT_USER_ERROR", "STOP_SIGNALS", "command_line_errors", "composition_error", "start"]
