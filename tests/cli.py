"""The command line of train.py and topk.py, run in this process: the same ``cli()`` the script runs (PROJECT_ROOT,
Hydra's argument parsing and composition, the run's one-line errors and exit statuses), with ``sys.argv``, the
working directory and the environment set as a shell would set them, and stdout and stderr captured.

What it cannot show, and the tests that keep a fresh interpreter for it: signals (tests/pipeline/test_cli_errors.py),
process groups and locks between processes (tests/pipeline/test_reliability.py, test_integrity.py), the launchers
(tests/pipeline/test_cluster.py), and a sample of the error cases through the real interpreter. Starting an
interpreter that imports torch costs about 8 s on the 2-core machine; this costs the run itself.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import logging.config
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from hydra.core.global_hydra import GlobalHydra

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Completed:
    """What ``subprocess.run(..., capture_output=True, text=True)`` would return."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _handlers_left_open():
    """Hydra's logging set-up (``logging.config.dictConfig``) closes every handler that exists: in a real command
    line there are none, but in a test session there are, and absl's (imported with dp-accounting) closes its
    stream, which is pytest's capture of stderr. Here the existing handlers are flushed and dropped, not closed."""
    original = logging.config._clearExistingHandlers

    def clear() -> None:
        for ref in logging._handlerList[:]:
            handler = ref()
            if handler is not None:
                with contextlib.suppress(OSError, ValueError):
                    handler.flush()
        logging._handlers.clear()
        del logging._handlerList[:]

    logging.config._clearExistingHandlers = clear
    try:
        yield
    finally:
        logging.config._clearExistingHandlers = original


def run_cli(script: str, args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Completed:
    """``python <script> <args>`` in this process (``script``: "train.py" or "topk.py"), from ``cwd``, with ``env``
    replacing the environment's variables of the same names (a value of None removes one)."""
    module = importlib.import_module(Path(script).stem)
    out, err = io.StringIO(), io.StringIO()
    saved_env = {name: os.environ.get(name) for name in {*(env or {}), "PROJECT_ROOT"}}  # cli() may set it
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    root_logger = logging.getLogger()
    saved_handlers, saved_level = list(root_logger.handlers), root_logger.level
    code = 0
    try:
        for name, value in (env or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        os.chdir(cwd or ROOT)
        sys.argv = [str(ROOT / script), *args]
        GlobalHydra.instance().clear()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _handlers_left_open():
            try:
                module.cli()
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
                if isinstance(done.code, str):
                    print(done.code, file=sys.stderr)
    finally:
        GlobalHydra.instance().clear()
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for handler in root_logger.handlers:  # Hydra's job logging: its file and console handlers
            if handler not in saved_handlers:
                handler.close()
        root_logger.handlers[:] = saved_handlers
        root_logger.setLevel(saved_level)
    return Completed([script, *args], code, out.getvalue(), err.getvalue())


__all__ = ["Completed", "ROOT", "run_cli"]
