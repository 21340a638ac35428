"""Where a run's data, cache and logs go: under ``PROJECT_ROOT`` when it is set, else under the clone the code runs
from (the folder that holds train.py and conf/), else -- an installed package has no clone -- under the working
directory.

conf/paths/default.yaml reads ``${oc.env:PROJECT_ROOT,.}``; the entry points call :func:`settle_project_root`
before Hydra composes, so the variable is always set by then (and inherited by launched jobs). An empty value (as
``export PROJECT_ROOT=$SCRATCH`` leaves it when ``$SCRATCH`` is unset) would put everything under ``/``: refused.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from pate.locations import default_project_root
from pate.pipeline.checks import UserError

__all__ = ["settle_project_root"]


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
        raise UserError(f"PROJECT_ROOT={value!r} is set but empty: data, cache and logs would go under /; set it to "
                        f"a directory (a cluster's scratch space) or unset it to use {default}")
    return value
