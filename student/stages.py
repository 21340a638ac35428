"""The student stage: builders for ``pate.artifacts.Stage`` (wired by the student components,
``pate/pipeline/students.py``), and the stage's output, ``student.json`` (:data:`SCORES_FILE`): its writer and its
reader, also used by a method that releases a model and writes that model's scores in its place (DP-SGD).

Sealed off from private data by its signature: it is handed the public query images (or their features), the
labels released for them, the public pool's unlabeled images (or features) and the evaluation images and
labels -- arrays, never the dataset, its indices or the partition.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from pate.artifacts import Artifact, atomic_write_json
from pate.model_files import write_model
from student.head import train_head_student
from student.settings import HeadStudentSettings, NetworkStudentSettings
from teachers.training import TrainerSettings

SCORES_FILE = "student.json"
HEAD_NODE = {"_target_": "pate.features.RidgeHead"}  # the kept head's node, with its dim and num_labels

_NOTHING_ANSWERED = {
    "student_accuracy": None,
    "student_f1": None,
    "student_per_attribute_accuracy": None,
    "student_train_size": 0,
    "note": "no public query was answered, so no student was trained",
}


def write_student_scores(work: Path, scores: dict) -> None:
    """Write ``scores`` (a student's metrics, or a released model's) as the stage's :data:`SCORES_FILE`."""
    atomic_write_json(work / SCORES_FILE, scores)


def read_student_scores(artifact: Artifact) -> dict:
    """The scores that :func:`write_student_scores` wrote into ``artifact``."""
    return json.loads(artifact.file(SCORES_FILE).read_text())


def build_student(
    work: Path,
    settings: NetworkStudentSettings,
    trainer: TrainerSettings,
    query_images: np.ndarray,
    released: np.ndarray,
    answered: np.ndarray,
    unlabeled_images: np.ndarray,
    eval_images: np.ndarray,
    eval_labels: np.ndarray,
    seed: int,
    log_dir: Path,
    progress: bool = True,
    mask: np.ndarray | None = None,
    network: dict | None = None,
) -> None:
    """Train on the answered public queries (``query_images[answered]``) with their released labels and, with
    ``settings.semi``, on ``unlabeled_images`` (the pool's other images, unanswered queries included); evaluate
    on (``eval_images``, ``eval_labels``). Writes ``student.json`` with the student's metrics; when no query was
    answered there is nothing to train on, and the metrics are null (not a made-up score) with a note saying
    why. ``mask`` (bool [Q, L]): the labels released where a confident selection left some out; the others are
    missing in the student's loss. The trained network is kept beside its scores (``pate.model_files``), with
    ``network``, the ``_target_`` node it was built from."""
    if not answered.any():
        write_student_scores(work, _NOTHING_ANSWERED)
        return
    from student.train import train_student  # Lightning: imported where a network student is trained

    metrics = train_student(
        settings,
        trainer,
        query_images[answered],
        released[answered],
        unlabeled_images,
        eval_images,
        eval_labels,
        seed=seed,
        log_dir=log_dir,
        progress=progress,
        train_mask=None if mask is None else mask[answered],
        keep=None
        if network is None
        else lambda net: write_model(work, net, network, "images", batch_size=settings.recipe.batch_size),
    )
    write_student_scores(work, metrics)


def build_head_student(
    work: Path,
    settings: HeadStudentSettings,
    query_features: torch.Tensor,
    released: np.ndarray,
    answered: np.ndarray,
    unlabeled_features: torch.Tensor,
    eval_features: torch.Tensor,
    eval_labels: np.ndarray,
    strong_features: torch.Tensor | None = None,
    mask: np.ndarray | None = None,
) -> None:
    """``student=head``: a ridge head on the public features of the answered queries with their released labels
    (and, with ``settings.semi``, the unlabeled pool's features, and for ``consistency`` the features of their
    strong views; ``mask`` as in :func:`build_student`), scored on the evaluation features; writes
    ``student.json`` like :func:`build_student`, and keeps the head beside it (:class:`pate.features.RidgeHead`)."""
    if answered.sum() < 2:
        write_student_scores(
            work,
            {
                **_NOTHING_ANSWERED,
                "student_train_size": int(answered.sum()),
                "note": "fewer than 2 public queries were answered: no student",
            },
        )
        return
    metrics = train_head_student(
        settings,
        query_features[torch.from_numpy(answered)],
        released[answered],
        unlabeled_features,
        eval_features,
        eval_labels,
        strong_features,
        None if mask is None else mask[answered],
        keep=lambda head: write_model(
            work,
            head,
            HEAD_NODE | {"dim": head.weights.shape[1], "num_labels": head.weights.shape[2]},
            "features",
            batch_size=None,
        ),
    )
    write_student_scores(work, metrics)


__all__ = ["SCORES_FILE", "build_head_student", "build_student", "read_student_scores", "write_student_scores"]
