"""The benchmarks use the project as its users do: every import of ``pate``, ``teachers`` or ``student`` in
``benchmarks/**/*.py`` names a public entry point, so a refactoring of the internals never breaks a benchmark
unnoticed, and a name a benchmark needs is exported (and documented) where users find it.

Public, for an import:

* a name listed in the ``__all__`` of a *package*'s ``__init__.py`` (``from pate.aggregators import StableTopK``);
* a command-line entry point of ``[project.scripts]`` in pyproject.toml: its module (``import pate.cache``,
  ``from pate.pipeline import train``) or its function (``from pate.cache import main``).

Anything else fails, with its file and line: a plain ``import pate.x`` of a package (whose internals its attribute
access would reach), a module that is not a package (``from pate.votes import ...``), a name missing from
``__all__``, a leading underscore. The files are parsed, never run; the ``__all__`` lists are read from the
``__init__.py`` sources, which must spell them as literals.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pate", "teachers", "student")


def entry_points(root: Path) -> dict[str, str]:
    """Module -> function of every ``[project.scripts]`` entry of ``root``'s pyproject.toml."""
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"].get("scripts", {})
    return dict(target.split(":", 1) for target in scripts.values())


def package_all(root: Path, module: str) -> list[str] | None:
    """The literal ``__all__`` of package ``module`` (dotted) under ``root``; None if ``module`` is no package (a
    plain module or nothing). An ``__init__.py`` without ``__all__`` exports nothing."""
    init = root.joinpath(*module.split("."), "__init__.py")
    if not init.is_file():
        return None
    for node in ast.parse(init.read_text(), str(init)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:
                pytest.fail(f"{init.relative_to(root)}:{node.lineno}: __all__ must be a literal list for this check")
    return []


def _is_public(root: Path, entries: dict[str, str], module: str, name: str | None) -> bool:
    """Whether ``import module`` (name None) or ``from module import name`` is public (module docstring)."""
    if name is None:
        return module in entries
    if entries.get(module) == name or f"{module}.{name}" in entries:
        return True
    exported = package_all(root, module)
    return not name.startswith("_") and exported is not None and name in exported


def private_imports(root: Path) -> list[str]:
    """``file:line: statement`` for every import of the project's packages in ``root/benchmarks`` that is not
    public."""
    entries, found = entry_points(root), []
    for path in sorted((root / "benchmarks").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):  # imports inside functions count too
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                pairs = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in pairs:
                if module.split(".")[0] in PACKAGES and not _is_public(root, entries, module, name):
                    statement = f"import {module}" if name is None else f"from {module} import {name}"
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {statement}")
    return found


def test_the_benchmarks_import_only_public_names():
    bad = private_imports(ROOT)
    assert not bad, (
        "benchmarks may import only names in a package's __all__ or a [project.scripts] entry point "
        "(tests/test_benchmark_imports.py); export the name from its package or use a public one:\n" + "\n".join(bad)
    )


def test_a_private_import_is_caught(tmp_path):
    """The checker on a throw-away project: each kind of non-public import is reported, the public ones are not."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[project.scripts]\nx-run = "pate.tool:main"\n')
    (tmp_path / "pate" / "agg").mkdir(parents=True)
    (tmp_path / "pate" / "__init__.py").write_text("")
    (tmp_path / "pate" / "agg" / "__init__.py").write_text('__all__ = ["Public"]\n')
    (tmp_path / "pate" / "agg" / "impl.py").write_text("")
    (tmp_path / "pate" / "tool.py").write_text("")
    (tmp_path / "benchmarks" / "sub").mkdir(parents=True)
    (tmp_path / "benchmarks" / "ok.py").write_text(
        "import numpy\nfrom pate.agg import Public\nfrom pate.tool import main\nimport pate.tool\nfrom pate import tool\n"
    )
    (tmp_path / "benchmarks" / "sub" / "bad.py").write_text(
        "from pate.agg.impl import Public\nfrom pate.agg import Hidden\nimport pate.agg\n"
        "def f():\n    from student.x import _y\n"
    )
    assert private_imports(tmp_path) == [
        "benchmarks/sub/bad.py:1: from pate.agg.impl import Public",
        "benchmarks/sub/bad.py:2: from pate.agg import Hidden",
        "benchmarks/sub/bad.py:3: import pate.agg",
        "benchmarks/sub/bad.py:5: from student.x import _y",
    ]
