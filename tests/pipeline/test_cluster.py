"""The cluster path, on this machine: teacher shards as separate processes through hydra-submitit-launcher's
local launcher (the same plugin and code path as hydra/launcher=slurm), then the sealing run. Its votes must
equal those of an unsharded run."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.cli import Completed, run_cli

pytestmark = pytest.mark.slow  # command lines, end-to-end runs or heavy computations: not in the fast loop

ROOT = Path(__file__).resolve().parents[2]


def _train(root: Path, *args: str, multirun: bool = False) -> Completed:
    """train.py's command line in this process (tests/cli.py); submitit's job processes unpickle the task function,
    so they import it from train.py: the checkout is on their PYTHONPATH."""
    flags = ["-m"] if multirun else []
    done = run_cli(
        "train.py",
        [*flags, "debug=tiny_cnn", f"paths.root_dir={root}", *args],
        cwd=root,
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _votes(root: Path) -> np.ndarray:
    (path,) = (root / "cache" / "votes").glob("*/votes.npz")
    with np.load(path) as z:
        return z["counts"]


def test_sharded_teachers_through_the_submitit_local_launcher_vote_like_unsharded_ones(tmp_path):
    sharded, single = tmp_path / "sharded", tmp_path / "single"
    sharded.mkdir(), single.mkdir()
    _train(
        sharded,
        "hydra/launcher=submitit_local",
        "teacher_shard=0/2,1/2",
        f"hydra.sweep.dir={sharded / 'sweep'}",
        multirun=True,
    )
    teachers = list((sharded / "cache" / "teachers").glob("*.partial/teacher_*.pt"))
    assert len(teachers) == 4, "the two shard jobs did not train two teachers each"
    assert not list((sharded / "cache" / "votes").glob("*")), "a shard job went past the teachers"
    seal = _train(sharded, f"hydra.run.dir={sharded / 'run'}")
    assert "4 of 4 requested already trained, 0 to train" in seal.stdout + seal.stderr
    _train(single, f"hydra.run.dir={single / 'run'}")
    np.testing.assert_array_equal(_votes(sharded), _votes(single))
