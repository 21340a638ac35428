"""The student stage: a builder for ``pate.artifacts.Stage`` (wired in ``train.py``).

The student sees the public queries' images and the labels released for the answered ones -- nothing
else: it is handed the public query indices and the released labels, never the partition.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pate.artifacts import atomic_write_json
from student.train import train_student


def build_student(work: Path, student_cfg, trainer_cfg, images, labels, query_indices: np.ndarray,
                  released: np.ndarray, answered: np.ndarray, eval_indices: np.ndarray, seed: int,
                  log_dir: Path, progress: bool = True) -> None:
    """Train on the answered public queries with their released labels; evaluate on ``eval_indices``.
    Writes ``student.json`` with the student's metrics; when no query was answered there is nothing to
    train on, and the metrics are null (not a made-up score) with a note saying why."""
    if not answered.any():
        atomic_write_json(work / "student.json", {
            "student_accuracy": None, "student_f1": None, "student_per_attribute_accuracy": None,
            "student_train_size": 0, "note": "no public query was answered, so no student was trained"})
        return
    metrics = train_student(student_cfg, trainer_cfg, images, query_indices[answered], released[answered],
                            eval_indices, labels[eval_indices], seed=seed, log_dir=log_dir, progress=progress)
    atomic_write_json(work / "student.json", metrics)
