"""The code behind a stage's key, derived from its imports: the modules a builder imports, transitively, within
the repository (``code_closure``), and a fingerprint of their syntax trees (``code_fingerprint``).

Which imports are followed. ``import a.b.c`` and ``from a.b import c`` (c a submodule) follow module a.b.c;
``from a.b import name`` (name defined in a.b) follows a.b itself, re-exports included, since the code reads
a.b's namespace. The ``__init__.py`` of every enclosing package (a, a.b) is part of the fingerprint, since it
runs on import, but what it imports is followed only when the code reads its namespace: a stage that only uses
``pate.privacy.checks`` does not depend on the ledger that ``pate/privacy/__init__.py`` re-exports. Imports
inside functions count like any other; relative imports are refused (the project uses absolute ones), and so is
an import of a project module that has no file.

A project package is one of the layout's top-level packages (``pate``, ``teachers``, ``student``), found in the
folder that holds them (the clone, or site-packages when the project is installed: ``pate.locations.PACKAGE_ROOT``),
or the top-level package of an entry: a user's own method or extractor module, found where Python finds it (a
clone's ``tests``, a package beside the user's configs), so that editing it rebuilds what it built, installed or
not. Code under site-packages (other than the layout's) and the standard library is not fingerprinted: a stage's
key holds its settings, and the run records the versions.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import sysconfig
from pathlib import Path

from pate.locations import PACKAGE_ROOT, TOP_LEVEL_PACKAGES

__all__ = ["code_closure", "code_fingerprint", "module_file"]

# Code that pip installs or Python ships: keyed by its settings and the run's recorded versions, not fingerprinted.
_STANDARD_LIBRARY = {
    Path(path).resolve() for key in ("stdlib", "platstdlib") if (path := sysconfig.get_paths().get(key))
}


def _project_packages(entries: tuple[str, ...]) -> frozenset[str]:
    # Never every folder of root: installed, root is site-packages, and numpy's imports are not the project's code.
    return frozenset({*TOP_LEVEL_PACKAGES, *(entry.split(".")[0] for entry in entries)})


@functools.lru_cache(maxsize=None)
def _package_root(top: str) -> Path | None:
    """The folder holding top-level package (or module) ``top``: ``PACKAGE_ROOT`` for the layout's packages, where
    Python finds it for a user's own (a clone's ``tests``, a package beside the user's configs); None for a package
    under site-packages or the standard library, or one Python cannot find."""
    if top in TOP_LEVEL_PACKAGES:
        return PACKAGE_ROOT
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    file = Path(spec.origin).resolve()
    installed = {"site-packages", "dist-packages"} & set(file.parts)
    if installed or any(file.is_relative_to(lib) for lib in _STANDARD_LIBRARY):
        return None
    return file.parent.parent if spec.submodule_search_locations is not None else file.parent


def _locate(module: str, root: Path | None) -> tuple[Path, str] | None:
    """(file, its name relative to the folder holding its top-level package) of a project module, or None."""
    base_root = root if root is not None else _package_root(module.split(".")[0])
    if base_root is None:
        return None
    base = base_root.joinpath(*module.split("."))
    for file in (base / "__init__.py", base.with_suffix(".py")):
        if file.is_file():
            return file, file.relative_to(base_root).as_posix()
    return None


def module_file(module: str, root: Path | None = None) -> Path | None:
    """The file of a project module (``pkg/mod.py`` or ``pkg/mod/__init__.py``) under ``root``, or by default
    wherever its top-level package lives outside site-packages and the standard library; None if there is none."""
    located = _locate(module, root)
    return located[0] if located else None


@functools.lru_cache(maxsize=None)
def _syntax(text: str, filename: str) -> tuple[str, tuple[tuple[int, int, str | None, tuple[str, ...]], ...]]:
    """One parse of a file's ``text``: its syntax tree without docstrings, dumped (what the fingerprint hashes), and
    its import statements as (line, relative level, ``from`` module or None for ``import``, names). Keyed by the
    text, so a file edited in this process is parsed again, and one that many closures share is parsed once."""
    tree = ast.parse(text, filename=filename)
    imports = tuple(
        (node.lineno, node.level, node.module, tuple(alias.name for alias in node.names))
        if isinstance(node, ast.ImportFrom)
        else (node.lineno, 0, None, tuple(alias.name for alias in node.names))
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    )
    return ast.dump(_without_docstrings(tree), include_attributes=False), imports


def _imports(module: str, root: Path | None, packages: frozenset[str]) -> set[str]:
    """The project modules that ``module``'s own code follows (module docstring)."""
    file, name = _locate(module, root)
    followed: set[str] = set()
    for lineno, level, source, names in _syntax(file.read_text(encoding="utf-8"), str(file))[1]:
        if level:
            raise ValueError(
                f"{name} line {lineno}: relative import; the project's code fingerprint follows absolute imports only"
            )
        if source is None:
            targets = list(names)
        else:
            targets = [f"{source}.{alias}" if module_file(f"{source}.{alias}", root) else source for alias in names]
        for target in targets:
            if target.split(".")[0] not in packages:
                continue
            if module_file(target, root) is None:
                raise ValueError(
                    f"{name} line {lineno}: imports {target!r}, which has no file "
                    f"under {root or _package_root(target.split('.')[0])}"
                )
            followed.add(target)
    return followed


@functools.lru_cache(maxsize=None)
def code_closure(entries: tuple[str, ...], root: Path | None = None) -> tuple[str, ...]:
    """The files (relative to the folder holding their top-level package, sorted) of the project modules
    ``entries`` import, transitively, with the entries and the ``__init__.py`` of every enclosing package (module
    docstring). ``root``: look every module up under this one folder instead (tests)."""
    packages = _project_packages(entries)
    for entry in entries:
        if module_file(entry, root) is None:
            raise FileNotFoundError(
                f"code entry {entry!r} of a stage is no module under "
                f"{root or _package_root(entry.split('.')[0]) or PACKAGE_ROOT}"
            )
    followed: set[str] = set()
    pending = list(entries)
    while pending:
        module = pending.pop()
        if module not in followed:
            followed.add(module)
            pending.extend(_imports(module, root, packages))
    enclosing = {
        ".".join(module.split(".")[:depth]) for module in followed for depth in range(1, module.count(".") + 1)
    }
    return tuple(sorted(_locate(module, root)[1] for module in followed | enclosing))


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


@functools.lru_cache(maxsize=None)
def code_fingerprint(entries: tuple[str, ...], root: Path | None = None) -> str:
    """SHA-256 (16 hex digits) of the code of ``code_closure(entries)``: each file by its path and its syntax tree
    without docstrings, so comments, docstrings and formatting do not change the fingerprint; any change to what
    runs does."""
    digest = hashlib.sha256()
    for relative in code_closure(entries, root):
        file = (root or _package_root(relative.split("/")[0])) / relative
        digest.update(relative.encode() + b"\0")
        digest.update(_syntax(file.read_text(encoding="utf-8"), str(file))[0].encode() + b"\0")
    return digest.hexdigest()[:16]
