"""The documentation cannot go stale silently: the site builds with ``mkdocs build --strict`` (a broken link, a
page missing from the nav or a broken API reference fails), and every link of README.md points to a file."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=config.parent, capture_output=True, text=True, timeout=300, env=env)


def test_the_site_builds_strictly(tmp_path):
    result = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "PoissonSampledGaussianEvent" in api and "check_record" in api  # the references were rendered


def test_a_broken_link_fails_the_strict_build(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nnav:\n  - Home: index.md\n")
    result = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0 and "missing.md" in result.stdout + result.stderr


def test_every_readme_link_points_to_a_file():
    links = re.findall(r"\]\(([^)#]+)\)", (ROOT / "README.md").read_text())
    assert links, "README.md links to the docs"
    assert [link for link in links if not (ROOT / link).is_file()] == []
