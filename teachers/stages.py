"""The teacher and vote stages: builders for ``pate.artifacts.Stage`` (wired in ``train.py``).

teachers: one checkpoint per teacher, written as each finishes, so a killed build resumes (the artifact
cache hands the same ``.partial`` directory back). votes: every teacher's prediction on every public query,
packed to bits, with the per-label counts the aggregators read, and each teacher's accuracy on the
evaluation split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pate.votes import count_votes, pack_votes
from teachers.ensemble import teacher_path, train_teachers
from teachers.votes import predict_votes


def build_teachers(work: Path, teacher_cfg, trainer_cfg, images, labels, parts: list[np.ndarray],
                   progress: bool = True) -> None:
    """Train every teacher on its own part of the private training split into ``work``."""
    train_teachers(teacher_cfg, trainer_cfg, images, labels, parts, work, progress=progress)


def build_votes(work: Path, teacher_dir: Path, num_teachers: int, teacher_cfg, trainer_cfg, images, labels,
                query_indices: np.ndarray, eval_indices: np.ndarray, progress: bool = True) -> None:
    """Write ``votes.npz``: ``bits`` (packed per-teacher votes [Q, T, ceil(L/8)]), ``counts`` int32 [Q, L],
    ``query_indices`` [Q] and ``teacher_accuracy`` [T] (mean per-attribute accuracy on the evaluation split)."""
    votes, accuracy = predict_votes(
        [teacher_path(teacher_dir, i) for i in range(num_teachers)], teacher_cfg, trainer_cfg, images,
        query_indices, eval_indices, labels[eval_indices], progress=progress,
    )
    np.savez(work / "votes.npz", bits=pack_votes(votes), counts=count_votes(votes).astype(np.int32),
             query_indices=query_indices, teacher_accuracy=accuracy)
