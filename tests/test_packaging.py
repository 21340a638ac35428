"""The project as a library: ``pip install .`` (not editable) gives console scripts that run from any directory with
the configs shipped inside the package, a user's own config directory beside them, and only the layout's three
top-level import names; in a clone, the same code finds the clone's conf/ and puts data, cache and logs in it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomllib

from pate import locations
from pate.locations import CHECKOUT, CONFIG_DIR, TOP_LEVEL_PACKAGES, command_name
from pate.pipeline import paths
from pate.pipeline.checks import UserError

ROOT = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_the_wheel_lists_every_package_of_the_layout_and_every_config_group():
    """pyproject.toml spells the packages out (conf/ is mapped to pate.conf, which discovery cannot do): a new
    package or config group that is not listed would be missing from the wheel."""
    code = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for name in TOP_LEVEL_PACKAGES
        for path in (ROOT / name).glob("**/__init__.py")
    }
    groups = {
        ".".join(("pate.conf", *path.relative_to(ROOT / "conf").parts)).rstrip(".")
        for path in [ROOT / "conf", *(p for p in (ROOT / "conf").glob("**/*") if p.is_dir())]
    }
    assert sorted(_setuptools()["packages"]) == sorted(code | groups)
    assert _setuptools()["package-dir"] == {"pate.conf": "conf"}


def test_a_clone_uses_its_own_conf_and_its_own_folder():
    assert CHECKOUT == ROOT and CONFIG_DIR == ROOT / "conf"


def test_an_installed_package_puts_data_cache_and_logs_under_the_working_directory(monkeypatch, tmp_path):
    """No clone (``CHECKOUT`` None): PROJECT_ROOT defaults to the working directory; a set one still wins."""
    monkeypatch.setattr(locations, "CHECKOUT", None)
    monkeypatch.chdir(tmp_path)
    environ: dict[str, str] = {}
    assert paths.settle_project_root(environ) == str(tmp_path) == environ["PROJECT_ROOT"]
    assert paths.settle_project_root({"PROJECT_ROOT": "/scratch/me"}) == "/scratch/me"
    with pytest.raises(UserError, match=f"PROJECT_ROOT=' ' is set but empty.*unset it to use {tmp_path}"):
        paths.settle_project_root({"PROJECT_ROOT": " "})


@pytest.mark.parametrize(
    ("argv0", "expected"),
    [("/env/bin/pate-report", "pate-report"), ("/x/pate/report/__main__.py", "python -m pate.report")],
)
def test_a_usage_line_names_the_command_that_ran(monkeypatch, argv0, expected):
    monkeypatch.setattr(sys, "argv", [argv0])
    assert command_name("pate-report", "pate.report") == expected


def _install(tmp_path: Path) -> Path:
    """A fresh virtual environment with the wheel of this checkout installed into it, non-editably; its
    dependencies are this environment's (a .pth line: their files, not the editable install of this clone, whose
    own .pth files are not read from there)."""
    wheels, env, source = tmp_path / "wheels", tmp_path / "env", tmp_path / "source"
    # The wheel's sources, copied: setuptools builds inside the source tree (build/, *.egg-info).
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in (*TOP_LEVEL_PACKAGES, "conf"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (wheel,) = wheels.glob("*.whl")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return env


@pytest.mark.slow
def test_the_installed_console_script_runs_from_an_unrelated_directory_with_a_users_config_dir(tmp_path):
    env = _install(tmp_path)
    record = next((env / "lib").glob("python*/site-packages/pate_topk-*.dist-info/RECORD")).read_text()
    top_level = {line.split("/")[0] for line in record.splitlines() if not line.startswith("../")}
    assert {name for name in top_level if not name.endswith(".dist-info")} == set(TOP_LEVEL_PACKAGES)
    assert not (set(top_level) & {"pipeline", "training", "conf", "tests"})

    # A user's own config directory, added to Hydra's search path beside the shipped configs.
    work = tmp_path / "somewhere" / "else"
    (work / "my_conf" / "experiment").mkdir(parents=True)
    (work / "my_conf" / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 7\n")
    environ = {key: value for key, value in os.environ.items() if key not in ("PROJECT_ROOT", "PYTHONPATH")}
    result = subprocess.run(
        [str(env / "bin" / "pate-train"), "--config-dir", "my_conf", "debug=tiny", "experiment=mine", "progress=false"],
        cwd=work,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (metrics_file,) = (work / "logs" / "debug").glob("runs/*/metrics.json")  # logs, cache, data: in the cwd
    metrics = json.loads(metrics_file.read_text())
    assert metrics["seed"] == 7 and metrics["versions"]["git"] == "installed"
    assert (work / "cache").is_dir() and (work / "data").is_dir()
    assert not (ROOT / "pate" / "conf").exists()  # the clone was not written into
    # Every config ships, and every console script is there (pate-topk's configs: the same shipped folder).
    shipped = {line.split(",")[0] for line in record.splitlines() if line.startswith("pate/conf/")}
    configs = {f"pate/conf/{path.relative_to(ROOT / 'conf').as_posix()}" for path in (ROOT / "conf").rglob("*.yaml")}
    assert shipped == configs
    assert all((env / "bin" / name).is_file() for name in ("pate-train", "pate-topk", "pate-report", "pate-cache"))
