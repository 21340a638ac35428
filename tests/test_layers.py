"""The layering of docs/architecture.md, enforced: import-linter's contracts in pyproject.toml hold, and the
checker does catch an upward import (shown on a throw-away project with the same contract shape)."""

import os
import sys
import textwrap
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def _lint(config: Path, cwd: Path) -> int:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return lint_imports(config_filename=str(config), no_cache=True, no_logo=True)
    finally:
        os.chdir(old)


def test_the_project_keeps_every_import_contract():
    assert _lint(ROOT / "pyproject.toml", ROOT) == 0


def test_an_upward_import_and_a_lightning_import_break_the_contracts(tmp_path, monkeypatch, capsys):
    """A library module that imports the pipeline above it, and one that imports Lightning: both are reported."""
    for package in ("lib", "app"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "app" / "run.py").write_text("import lib.core\n")
    (tmp_path / "lib" / "core.py").write_text("import app.run\n")
    (tmp_path / "lib" / "fit.py").write_text("import pytorch_lightning\n")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.importlinter]
        root_packages = ["lib", "app"]
        include_external_packages = true

        [[tool.importlinter.contracts]]
        name = "app over lib"
        type = "layers"
        layers = ["app", "lib"]

        [[tool.importlinter.contracts]]
        name = "lib imports no Lightning"
        type = "forbidden"
        source_modules = ["lib"]
        forbidden_modules = ["pytorch_lightning"]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if name.split(".")[0] in ("lib", "app")]:
        monkeypatch.delitem(sys.modules, name)
    assert _lint(tmp_path / "pyproject.toml", tmp_path) != 0
    out = capsys.readouterr().out
    assert "app over lib BROKEN" in out and "lib imports no Lightning BROKEN" in out
