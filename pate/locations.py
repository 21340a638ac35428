"""Where this copy of the code runs from: a clone of the repository or an installed package (``pip install .``).

A clone is the folder that holds ``pate/``, ``teachers/``, ``student/``, ``conf/`` and ``train.py``: its configs
are ``conf/``, and a run's data, cache and logs go under it unless ``PROJECT_ROOT`` says otherwise. An installed
package has no such folder: its configs are the copy of ``conf/`` shipped inside it as ``pate/conf/`` (the wheel
maps one to the other, pyproject.toml), and data, cache and logs go under ``PROJECT_ROOT`` or the working directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["CHECKOUT", "CONFIG_DIR", "PACKAGE_ROOT", "TOP_LEVEL_PACKAGES", "command_name", "default_project_root"]

# The project's top-level import names (pyproject.toml installs these and nothing else).
TOP_LEVEL_PACKAGES = ("pate", "teachers", "student")
# The folder holding the top-level packages: the clone, or site-packages when installed.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
CHECKOUT: Path | None = (
    PACKAGE_ROOT if (PACKAGE_ROOT / "train.py").is_file() and (PACKAGE_ROOT / "conf").is_dir() else None
)
CONFIG_DIR = CHECKOUT / "conf" if CHECKOUT is not None else Path(__file__).resolve().parent / "conf"


def default_project_root() -> Path:
    """Where data, cache and logs go when ``PROJECT_ROOT`` is unset: the clone, else (an installed package) the
    working directory."""
    return CHECKOUT or Path.cwd()


def command_name(script: str, module: str) -> str:
    """The name a usage line gives the running command: the console script ``script`` (``pate-report``) when that
    is what ran, else ``python -m <module>``."""
    return script if Path(sys.argv[0]).name == script else f"python -m {module}"
