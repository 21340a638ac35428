"""The documentation cannot go stale silently: the site builds with ``mkdocs build --strict`` (a broken link, a
page missing from the nav or a broken API reference fails), every link of README.md points to a file, and the
commands the pages show run as written."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _images(html: Path) -> list[Path]:
    """The files the <img> tags of a built page point to (their src, relative to the page)."""
    return [(html.parent / src).resolve() for src in re.findall(r'<img [^>]*src="([^"]+)"', html.read_text())]


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    site = tmp_path.resolve() / "site"  # resolved, as the images' paths are
    result = _build(ROOT / "mkdocs.yml", site)
    assert result.returncode == 0, result.stdout + result.stderr
    api = (site / "api" / "index.html").read_text()
    assert "sampled_gaussian_steps" in api and "check_record" in api  # the references were rendered
    # the findings pages of benchmarks/results/ are on the site (docs/hooks.py), their plots shown as images
    eps_sweep = _images(site / "results" / "eps_sweep" / "index.html")
    for relation in ("replace", "add_remove"):
        assert site / "results" / f"eps_sweep_{relation}" / "accuracy_vs_epsilon.png" in eps_sweep
    findings = sorted((ROOT / "benchmarks" / "results").glob("*.md"))
    shown = [image for page in findings for image in _images(site / "results" / page.stem / "index.html")]
    assert len(shown) > 20 and all(image.suffix == ".png" and image.is_file() for image in shown), shown
    # docs/reports.md links the findings pages, written as repository paths, to their pages on the site
    assert 'href="../results/eps_sweep/"' in (site / "reports" / "index.html").read_text()


@pytest.mark.slow
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


def _documented_commands() -> list[str]:
    """The `python train.py ...` lines the "add a ..." pages show, as written."""
    return [
        line.strip()
        for page in sorted((ROOT / "docs").glob("add-*.md"))
        for line in page.read_text().splitlines()
        if line.startswith("    python train.py ")
    ]


def test_the_pages_show_their_commands():
    assert len(_documented_commands()) == 3  # add a method, an aggregator, a dataset


@pytest.mark.parametrize("command", _documented_commands(), ids=lambda c: c.split()[-1])
def test_every_documented_command_runs_as_written(command, shared_root, tmp_path):
    """Run from the repository root, as a reader would, with data and cache under the session's root (the command
    line in this process: tests/cli.py)."""
    script, *args = command.split()[1:]
    result = run_cli(script, [*args, f"paths.root_dir={shared_root}", f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "results" in result.stdout + result.stderr and (tmp_path / "run" / "metrics.json").is_file()


def test_the_report_command_names_its_kind(tmp_path):
    """`python -m pate.report <dir> --kind NAME` (docs/add-a-report.md, docs/reports.md) writes that kind."""
    from pate.report.__main__ import main
    from tests.report.conftest import build_sweep

    sweep = build_sweep(tmp_path / "sweep")
    assert main([str(sweep), "--kind", "accuracy_vs_epsilon", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "report.md").read_text().startswith("# ")
    assert main([str(sweep), "--kind", "vibes"]) == 2


def _cluster_resume_command() -> list[str]:
    """The overrides of the time-limited submitit sweep docs/celeba-and-clusters.md shows (its first line), joined."""
    text = (ROOT / "docs" / "celeba-and-clusters.md").read_text()
    first = "python train.py -m hydra/launcher=slurm trainer=gpu experiment=paper_celeba data.root=/data/celeba \\\n"
    start = text.index(first + "    hydra.launcher.timeout_min")
    lines = text[start:].splitlines()[:3]
    return " ".join(line.split("#")[0].strip().rstrip("\\") for line in lines).split()[3:]


def test_the_documented_cluster_resume_sweep_and_weights_key_compose():
    """The resubmitted SLURM sweep (GPU, SLURM and real data: composed with its Hydra config, every job's
    teacher_shard among them) and `features.extractor.weights_path`, the key the docs name for offline weights."""
    from hydra import compose, initialize_config_dir

    overrides = _cluster_resume_command()
    assert overrides[0] == "hydra/launcher=slurm" and overrides[-1].startswith("teacher_shard=0/16,1/16,")
    shards = overrides[-1].split("=", 1)[1].split(",")
    assert shards == [f"{i}/16" for i in range(16)]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            config_name="train", overrides=[*overrides[:-1], f"teacher_shard={shards[-1]}"], return_hydra_config=True
        )
        assert cfg.hydra.launcher.timeout_min == 240 and cfg.teacher_shard == "15/16"
        features = compose(
            config_name="train", overrides=["features=torchvision", "features.extractor.weights_path=/w/resnet50.pth"]
        )
        assert features.features.extractor.weights_path == "/w/resnet50.pth"
