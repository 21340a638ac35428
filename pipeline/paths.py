"""Where a run's data, cache and logs go: under ``PROJECT_ROOT`` when it is set, else under this checkout (the
directory that holds train.py and conf/), never under whatever directory the command was started from.

conf/paths/default.yaml reads ``${oc.env:PROJECT_ROOT,.}``; the entry points call :func:`settle_project_root`
before Hydra composes, so the variable is always set by then (and inherited by launched jobs). An empty value (as
``export PROJECT_ROOT=$SCRATCH`` leaves it when ``$SCRATCH`` is unset) would put everything under ``/``: refused.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

from pipeline.checks import UserError

__all__ = ["CHECKOUT", "settle_project_root"]

CHECKOUT = Path(__file__).resolve().parents[1]


def settle_project_root(environ: MutableMapping[str, str] = os.environ) -> str:
    """``PROJECT_ROOT`` as the run will use it: set to :data:`CHECKOUT` when absent; a set but blank value raises
    :class:`UserError` naming the variable."""
    value = environ.get("PROJECT_ROOT")
    if value is None:
        environ["PROJECT_ROOT"] = str(CHECKOUT)
        return str(CHECKOUT)
    if not value.strip():
        raise UserError(f"PROJECT_ROOT={value!r} is set but empty: data, cache and logs would go under /; set it to "
                        f"a directory (a cluster's scratch space) or unset it to use this checkout, {CHECKOUT}")
    return value
