"""Where a run's data, cache and logs go: under ``PROJECT_ROOT`` when it is set, else under the clone the code runs
from (the folder that holds train.py and conf/), else -- an installed package has no clone -- under the working
directory.

conf/paths/default.yaml reads ``${oc.env:PROJECT_ROOT,.}``; the entry points call :func:`settle_project_root`
before Hydra composes, so the variable is always set by then (and inherited by launched jobs). An empty value (as
``export PROJECT_ROOT=$SCRATCH`` leaves it when ``$SCRATCH`` is unset) would put everything under ``/``: refused.

Where a run writes is checked before anything is written (:func:`check_locations`, and the Hydra callback
:class:`LocationChecks` for the run and sweep directories, which Hydra creates itself before train.py's code runs):
a directory setting that names a file or a symbolic link to nothing, or a ``task_name`` that is not a plain name
(``../x`` would put the logs outside ``PROJECT_ROOT``), is one line and exit 2.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pate.locations import default_project_root
from pate.pipeline.checks import EXIT_USER_ERROR, UserError

__all__ = ["LocationChecks", "check_directory", "check_locations", "settle_project_root"]


def settle_project_root(environ: MutableMapping[str, str] = os.environ) -> str:
    """``PROJECT_ROOT`` as the run will use it: set to ``pate.locations.default_project_root()`` (the clone, or for an
    installed package the working directory) when absent; a set but blank value raises :class:`UserError` naming the
    variable."""
    default = str(default_project_root())
    value = environ.get("PROJECT_ROOT")
    if value is None:
        environ["PROJECT_ROOT"] = default
        return default
    if not value.strip():
        raise UserError(
            f"PROJECT_ROOT={value!r} is set but empty: data, cache and logs would go under /; set it to "
            f"a directory (a cluster's scratch space) or unset it to use {default}"
        )
    return value


def check_directory(key: str, value: Any) -> None:
    """Refuse a directory setting that cannot become one: ``value``, or the nearest part of it that exists, is a file
    or a symbolic link that does not resolve (a cache linked to a scratch space that was cleaned). Caught later, it
    would be a traceback from Hydra or an error after the data load."""
    path = Path(str(value)).expanduser()
    existing = next(part for part in (path, *path.parents) if os.path.lexists(part))
    if existing.is_dir():
        return
    what = "a symbolic link that does not resolve" if existing.is_symlink() else "a file"
    where = "it" if existing == path else str(existing)
    raise UserError(
        f"{key}={str(value)!r}: {where} is {what}; expected a directory, or a path where one can be created"
    )


def check_task_name(name: Any) -> None:
    """``task_name`` is the directory of the runs under ``paths.log_dir``: a plain name keeps them there."""
    plain = (
        isinstance(name, str)
        and name.strip() == name
        and name not in ("", ".", "..")
        and not set(name) & {"/", "\\", "\0"}
    )
    if not plain:
        raise UserError(
            f"task_name={name!r}; expected a plain name (no '/', not '.' or '..'): the runs' directory "
            f"under paths.log_dir"
        )


def check_locations(cfg: DictConfig) -> None:
    """``task_name`` and ``paths.cache_dir`` of a run, before any data is read (``check_directory``)."""
    if "task_name" in cfg:
        check_task_name(cfg.task_name)
    check_directory("paths.cache_dir", cfg.paths.cache_dir)


class LocationChecks(Callback):
    """Checks where a run or a sweep writes before Hydra creates its directory (module docstring); registered
    first in conf/hydra/default.yaml."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_or_exit(config, "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_or_exit(config, "hydra.sweep.dir")


def _check_or_exit(config: DictConfig, key: str) -> None:
    """``check_locations`` and the directory Hydra is about to create (``key``); a mistake is one line on stderr and
    ``EXIT_USER_ERROR``, as train.py ends on any :class:`UserError`."""
    try:
        check_locations(config)
        check_directory(key, OmegaConf.select(config, key))
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    except OmegaConfBaseException:
        return  # a setting that does not resolve: Hydra's own error says which
