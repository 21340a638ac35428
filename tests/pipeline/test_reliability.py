"""Shared, read-only and full caches, and where a run writes: files follow the umask, a read-only cache is reused
without a lock, a waiting run names the lock's holder, a full disk or an unwritable directory is one line, an empty
PROJECT_ROOT is refused and the paths do not follow the working directory. The command lines run in this process
(``tests.cli.run_cli``) except the one that signals a whole process group."""

from __future__ import annotations

import builtins
import errno
import json
import logging
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from pate.artifacts import ArtifactStore, Stage
from pate.io import atomic_write_json, exclusive_lock, open_npy_for_writing
from pate.pipeline.cli import command_line_errors
from pate.privacy import Ledger, gaussian_event
from tests.cli import Completed, run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def umask():
    def set_(mask: int) -> None:
        os.umask(mask)

    old = os.umask(0o022)
    yield set_
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_cache_files_follow_the_umask(tmp_path, umask, mask, expected):
    """An artifact (its outputs, its manifest written atomically, its ledger) gets 0666 less the umask, so a
    group sharing the cache under umask 022 or 002 can read every file."""
    umask(mask)
    store = ArtifactStore(tmp_path / "cache")

    def build(work: Path, _) -> None:
        np.save(work / "x.npy", np.arange(3))
        Ledger().compose_event(gaussian_event(1.0, 1.0)).save(work / "ledger.json")
        atomic_write_json(work / "meta.json", {"a": 1})

    art = store.get(Stage("demo", {"v": 1}, build))
    for name in ("x.npy", "ledger.json", "meta.json", "manifest.json"):
        assert _mode(art.path / name) == expected, name


def test_a_read_only_cache_is_reused_without_its_lock(tmp_path, monkeypatch):
    """A complete artifact in a cache this process cannot write (another user's, a read-only mount): reused, and
    the lock that a build would need is never created."""
    calls = []

    def build(work: Path, _) -> None:
        calls.append(1)
        (work / "out.txt").write_text("hello")

    stage = Stage("demo", {"v": 2}, build)
    ArtifactStore(tmp_path).get(stage)
    real_open = builtins.open

    def read_only_open(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wa+x"):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", read_only_open)
    art = ArtifactStore(tmp_path).get(stage)
    assert (art.path / "out.txt").read_text() == "hello" and calls == [1]
    with exclusive_lock(tmp_path / "demo" / "never.lock"):  # unwritable: nothing to wait for, no lock file
        pass
    monkeypatch.undo()
    assert not (tmp_path / "demo" / "never.lock").exists()


def test_a_waiting_run_names_the_holder_of_the_lock(tmp_path, caplog):
    held = threading.Event()

    def hold() -> None:
        with exclusive_lock(tmp_path / "x.lock"):
            held.set()
            time.sleep(1.2)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    with caplog.at_level(logging.INFO, logger="pate.io"):
        with exclusive_lock(tmp_path / "x.lock", report_every=0.5):
            pass
    holder.join()
    waits = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waiting for")]
    assert len(waits) >= 2 and f"held by pid {os.getpid()} on " in waits[0]
    assert any(r.getMessage().startswith("got the lock") for r in caplog.records)


def _small_tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs (needs the right to mount: root, as on CI's machine; skipped with the reason elsewhere)."""
    mount = tmp_path / "small"
    if not _small_tmpfs(mount, "1m"):
        pytest.skip("cannot mount a small tmpfs here (not root, or no mount in this container)")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_large_array_that_does_not_fit_fails_before_it_is_written(full_disk):
    """The features or tensor file's blocks are reserved first: ENOSPC naming the bytes, never SIGBUS later."""
    with pytest.raises(OSError, match=r"needs 4,000,128 bytes, [\d,]+ are free") as err:
        open_npy_for_writing(full_disk / "features.npy", np.uint8, (4000, 1000))
    assert err.value.errno == errno.ENOSPC and not list(full_disk.iterdir())
    small = open_npy_for_writing(full_disk / "ok.npy", np.uint8, (100, 100))
    small[:] = 7
    del small
    assert np.load(full_disk / "ok.npy").sum() == 7 * 10_000


@pytest.mark.slow
def test_a_full_disk_ends_the_run_in_one_line(full_disk):
    """train.py with its data, cache and logs on a full 1 MiB disk: one line, exit 2, no traceback."""
    done = run_cli("train.py", ["debug=tiny"], cwd=full_disk.parent, env={"PROJECT_ROOT": str(full_disk)})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert lines[-1].startswith("error: cannot write ") and "the disk is full" in lines[-1], lines[-1]


@pytest.mark.parametrize(
    "code, says", [(errno.ENOSPC, "the disk is full"), (errno.EROFS, "read-only"), (errno.EACCES, "permission denied")]
)
def test_an_unwritable_place_is_one_line_naming_it(code, says, capsys, tmp_path):
    cfg = OmegaConf.create({"paths": {"cache_dir": str(tmp_path)}})
    with pytest.raises(SystemExit) as stop, command_line_errors(cfg):
        raise OSError(code, os.strerror(code), "/scratch/cache/votes/abc")
    assert stop.value.code == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: cannot write /scratch/cache/votes/abc") and says in line and "\n" not in line
    with pytest.raises(OSError), command_line_errors(cfg):  # any other OSError is a bug: its traceback stays
        raise OSError(errno.EBADF, "Bad file descriptor")


def _compose_paths(cwd: Path, project_root: str | None) -> str:
    done = run_cli("train.py", ["--cfg", "job", "--resolve"], cwd=cwd, env={"PROJECT_ROOT": project_root})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_paths_follow_project_root_or_the_checkout_never_the_working_directory(tmp_path):
    assert f"cache_dir: {ROOT}/cache" in _compose_paths(tmp_path, None)
    assert f"cache_dir: {tmp_path}/scratch/cache" in _compose_paths(tmp_path, str(tmp_path / "scratch"))


@pytest.mark.slow
def test_an_empty_project_root_is_refused(tmp_path):
    done = run_cli("train.py", ["debug=tiny"], cwd=tmp_path, env={"PROJECT_ROOT": ""})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and lines[0].startswith("error: PROJECT_ROOT='' is set but empty")
    assert not list(tmp_path.iterdir())


def _train(args: list[str], cwd: Path) -> Completed:
    return run_cli("train.py", [*args, f"paths.root_dir={cwd}"], cwd=cwd)


@pytest.mark.slow
def test_every_job_of_a_sweep_is_checked_before_the_first_starts(tmp_path):
    """-m privacy.target_epsilon=100,nan,200: one line naming job 1 and its value; job 0 never ran."""
    done = _train(
        ["-m", "debug=tiny", "privacy.target_epsilon=100,nan,200", f"hydra.sweep.dir={tmp_path / 'sweep'}"], tmp_path
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert lines[-1].startswith("error: job 1 (") and "privacy.target_epsilon=nan" in lines[-1], lines[-1]
    assert not list(tmp_path.rglob("metrics.json")) and not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_a_sweep_directory_holding_earlier_results_is_refused(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "0").mkdir(parents=True)
    (sweep / "0" / "metrics.json").write_text("{}")
    done = _train(["-m", "debug=tiny", "seed=0,1", f"hydra.sweep.dir={sweep}"], tmp_path)
    assert done.returncode == 2 and "already holds the results of 1 job(s)" in done.stderr.splitlines()[-1]
    assert not (sweep / "1").exists() and (sweep / "0" / "metrics.json").read_text() == "{}"


def test_a_run_directory_used_again_keeps_the_earlier_result_aside(tiny_cfg, tmp_path):
    from pate.pipeline.runner import run

    run(tiny_cfg(), output_dir=tmp_path)
    first = (tmp_path / "metrics.json").read_text()
    run(tiny_cfg("seed=5"), output_dir=tmp_path)
    assert (tmp_path / "metrics.previous-0.json").read_text() == first
    assert json.loads((tmp_path / "metrics.json").read_text())["seed"] == 5


@pytest.mark.slow
def test_sigterm_to_the_whole_process_group_ends_generation_in_one_line(tmp_path):
    """SLURM and Ctrl-C signal every process of a job: the generator's workers die quietly, and the run says what is
    saved and exits 143 -- not 0 (a signal raised inside an at-fork hook used to be dropped and the run carried
    on), and not with a traceback per worker."""
    cmd = [
        sys.executable,
        str(ROOT / "train.py"),
        "debug=tiny",
        "data.synthetic.num_images=30000",
        "data.num_workers=2",
        f"paths.root_dir={tmp_path}",
    ]
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        process = subprocess.Popen(cmd, cwd=tmp_path, stdout=out, stderr=err, start_new_session=True)
        deadline = time.time() + 120
        while "data under" not in (tmp_path / "out.txt").read_text():  # the run's first line: its handlers are set
            assert time.time() < deadline and process.poll() is None, "the generation never started"
            time.sleep(0.2)
        time.sleep(2.0)
        os.killpg(process.pid, 15)
        assert process.wait(timeout=60) == 143
    lines = [line for line in (tmp_path / "err.txt").read_text().splitlines() if line.strip()]
    assert lines and lines[-1].startswith("interrupted: SIGTERM received"), lines
    assert "Traceback" not in (tmp_path / "err.txt").read_text() and len(lines) <= 2, lines
