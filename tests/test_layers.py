"""The layering of docs/architecture.md, enforced: import-linter's contracts in pyproject.toml hold, and the
checker does catch an upward import (shown on a throw-away project with the same contract shape)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _lint(config: Path, cwd: Path) -> subprocess.CompletedProcess:
    """import-linter in its own process: it reconfigures logging, which would silence later tests' caplog."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True, no_logo=True))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_the_project_keeps_every_import_contract():
    result = _lint(ROOT / "pyproject.toml", ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_upward_import_and_a_lightning_import_break_the_contracts(tmp_path):
    """A library module that imports the pipeline above it, and one that imports Lightning: both are reported."""
    for package in ("lib", "app"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "app" / "run.py").write_text("import lib.core\n")
    (tmp_path / "lib" / "core.py").write_text("import app.run\n")
    (tmp_path / "lib" / "fit.py").write_text("import pytorch_lightning\n")
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""
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
    """)
    )
    result = _lint(tmp_path / "pyproject.toml", tmp_path)
    assert result.returncode != 0
    assert "app over lib BROKEN" in result.stdout and "lib imports no Lightning BROKEN" in result.stdout


def _pate_modules() -> set[str]:
    """Every module and package directly under pate/ (``pate.x``)."""
    modules = {f"pate.{path.stem}" for path in (ROOT / "pate").glob("*.py") if path.stem != "__init__"}
    return modules | {f"pate.{path.parent.name}" for path in (ROOT / "pate").glob("*/__init__.py")}


def _contract(name_start: str) -> dict:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"].startswith(name_start)]
    return contract


def test_the_privacy_contract_forbids_every_other_module_of_pate():
    """The forbidden list is spelled out (import-linter has no "everything but"): a new module of pate must join it."""
    forbidden = set(_contract("pate.privacy imports nothing")["forbidden_modules"])
    assert _pate_modules() - {"pate.privacy"} <= forbidden, sorted(_pate_modules() - {"pate.privacy"} - forbidden)


def test_the_library_contract_covers_every_module_of_pate_but_the_pipeline():
    """The library's source list is spelled out too: a new module of pate is held to it unless it joins the
    pipeline or pate.predict, the parts of pate allowed above the teachers and the student."""
    sources = set(_contract("The library (pate but pate.pipeline)")["source_modules"])
    above = {"pate.pipeline", "pate.predict"}  # the entry points that rebuild the teachers' and student's networks
    assert sources == _pate_modules() - above, sorted(sources ^ (_pate_modules() - above))


def test_the_student_contract_forbids_every_module_of_teachers_but_the_shared_training():
    teachers = {f"teachers.{path.stem}" for path in (ROOT / "teachers").glob("*.py") if path.stem != "__init__"}
    forbidden = set(_contract("The student never runs the teachers' code")["forbidden_modules"])
    assert forbidden == teachers, sorted(forbidden ^ teachers)


def test_the_student_reaches_the_shared_training_only_through_its_package():
    modules = {
        f"teachers.training.{path.stem}"
        for path in (ROOT / "teachers" / "training").glob("*.py")
        if path.stem != "__init__"
    }
    contract = _contract("The student uses the shared training through the public names")
    assert set(contract["forbidden_modules"]) == modules, sorted(set(contract["forbidden_modules"]) ^ modules)
    assert contract["allow_indirect_imports"] is True  # the package's __init__ imports them, the student may not


def statement_lines(node) -> int:
    """The lines on which a statement of ``node`` starts: its size in a measure that the formatter leaves alone
    (``ruff format`` puts one argument per line where a call does not fit, which changes physical counts only)."""
    import ast

    return len({child.lineno for child in ast.walk(node) if isinstance(child, ast.stmt)})


@pytest.mark.slow
def test_no_source_file_over_300_statement_lines_and_no_function_over_50():
    """Small files with one purpose, functions that fit on a screen (the face renderer is in named parts)."""
    import ast

    long_files, long_functions = [], []
    for path in sorted(ROOT.glob("**/*.py")):
        if ".venv" in path.parts or "site-packages" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if statement_lines(tree) > 300:
            long_files.append(str(path.relative_to(ROOT)))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement_lines(node) > 50:
                long_functions.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert long_files == [] and long_functions == []


def test_statement_lines_ignore_layout_and_count_statements():
    one_line = "def f(a, b):\n    return g(a, b)\n"
    exploded = "def f(\n    a,\n    b,\n):\n    return g(\n        a,\n        b,\n    )\n"
    import ast

    assert statement_lines(ast.parse(one_line)) == statement_lines(ast.parse(exploded)) == 2
    assert statement_lines(ast.parse(one_line + "x = 1\ny = 2\n")) == 4
