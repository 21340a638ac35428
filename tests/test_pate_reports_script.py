"""benchmarks/pate_reports.sh resumes: a sweep finished at this commit is kept, an interrupted one is moved aside
and run again, a report of another commit is refused, and the reports are copied only when all sweeps ended.

The script runs in a throw-away git repository holding only itself; `PY` is a stand-in for python that writes
what a sweep writes (report.md naming the commit, results.csv, a plot), or fails when the sweep directory's name
is in $FAIL_SWEEP, as a session's end does, leaving a job behind."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pate.locations import CHECKOUT

SCRIPT = CHECKOUT / "benchmarks" / "pate_reports.sh"

FAKE_PYTHON = """#!/usr/bin/env bash
set -eu
out=${@: -1}; out=${out#hydra.sweep.dir=}
echo "$out" >> "$CALLS"
mkdir -p "$out/0"
echo '{}' > "$out/0/metrics.json"
case " ${FAIL_SWEEP:-} " in *" $(basename "$out") "*) exit 1 ;; esac
printf -- "- Versions: git %s; pate 0.1.0.\\n" "$(git rev-parse --short=12 HEAD)" > "$out/report.md"
echo "job,accuracy" > "$out/results.csv"
echo png > "$out/accuracy.png"
"""


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "benchmarks").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "benchmarks" / "pate_reports.sh")
    (root / ".gitignore").write_text("logs/\nfake_python\ncalls\n")
    fake = root / "fake_python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(git + ["add", "-A"], cwd=root, check=True)
    subprocess.run(git + ["commit", "-qm", "one"], cwd=root, check=True)
    return root


def run(repo: Path, only: str, fail: str = "", land: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PY=str(repo / "fake_python"),
        CALLS=str(repo / "calls"),
        FAIL_SWEEP=fail,
        **({"LAND_DIR": str(land)} if land else {}),
    )
    return subprocess.run(
        ["bash", "benchmarks/pate_reports.sh", only], cwd=repo, env=env, capture_output=True, text=True
    )


def calls(repo: Path) -> list[str]:
    path = repo / "calls"
    return path.read_text().split() if path.exists() else []


def test_an_interrupted_run_resumes_where_it_stopped(repo):
    first = run(repo, "eps_sweep", fail="eps_sweep_add_remove")
    assert first.returncode != 0
    assert calls(repo) == ["logs/reports/eps_sweep_replace", "logs/reports/eps_sweep_add_remove"]
    assert not (repo / "benchmarks" / "results").exists()  # nothing copied before every sweep ended

    second = run(repo, "eps_sweep")
    assert second.returncode == 0, second.stderr
    # the finished sweep is kept, the interrupted one runs again after its directory is moved aside
    assert calls(repo)[2:] == ["logs/reports/eps_sweep_add_remove"]
    assert "eps_sweep_replace: finished at" in second.stdout
    aside = list((repo / "logs" / "reports").glob("eps_sweep_add_remove.interrupted-*"))
    assert len(aside) == 1 and (aside[0] / "0" / "metrics.json").is_file()
    for name in ("eps_sweep_replace", "eps_sweep_add_remove"):
        copied = repo / "benchmarks" / "results" / name
        assert sorted(p.name for p in copied.iterdir()) == ["accuracy.png", "report.md", "results.csv"]


def test_a_report_of_another_commit_is_refused(repo):
    assert run(repo, "eps_sweep_replace").returncode == 0
    # the copied report is committed: a new commit, and the sweep directory still holds the old one's report
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "commit", "-qm", "two"],
        cwd=repo,
        check=True,
    )
    again = run(repo, "eps_sweep_replace")
    assert again.returncode == 1
    assert "holds a report of another commit" in again.stderr and "move it away" in again.stderr
    assert calls(repo) == ["logs/reports/eps_sweep_replace"]


def test_a_dirty_tree_is_refused(repo):
    (repo / "benchmarks" / "new.txt").write_text("uncommitted")
    refused = run(repo, "eps_sweep_replace")
    assert refused.returncode == 1 and "uncommitted changes" in refused.stderr
    assert calls(repo) == []


def test_land_dir_keeps_each_finished_sweep_when_a_later_one_is_cut_short(repo, tmp_path):
    land = tmp_path / "landed"
    cut = run(repo, "eps_sweep", fail="eps_sweep_add_remove", land=land)
    assert cut.returncode != 0
    assert sorted(p.name for p in (land / "eps_sweep_replace").iterdir()) == [
        "accuracy.png",
        "report.md",
        "results.csv",
    ]
    assert not (land / "eps_sweep_add_remove").exists()
    assert not (repo / "benchmarks" / "results").exists()  # the tree stays clean for the next sweep


def test_a_land_dir_inside_the_tree_is_refused(repo):
    refused = run(repo, "eps_sweep_replace", land=repo / "landed")
    assert refused.returncode == 1 and "inside the working tree" in refused.stderr
    assert calls(repo) == []
