"""The teacher and vote stages: builders for ``pate.artifacts.Stage`` (wired by the teacher components,
``pate/pipeline/teachers.py``).

teachers: one checkpoint per teacher, written as each finishes, so a killed build resumes (the artifact
cache hands the same ``.partial`` directory back). votes: every teacher's prediction on every public query,
packed to bits, with the per-label counts the aggregators read, and each teacher's accuracy on the
evaluation split (``pate.votes.write_votes``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pate.artifacts import Artifact
from pate.votes import write_votes
from teachers.heads import head_votes, train_head_teachers
from teachers.settings import HeadTeacherSettings, NetworkTeacherSettings
from teachers.training.trainer import TrainerSettings


def build_teachers(
    work: Path,
    settings: NetworkTeacherSettings,
    trainer: TrainerSettings,
    images,
    labels,
    parts: list[np.ndarray],
    progress: bool = True,
) -> None:
    """Train every teacher on its own part of the private training split into ``work``."""
    from teachers.ensemble import train_teachers  # Lightning: imported where networks are trained

    train_teachers(settings, trainer, images, labels, parts, work, progress=progress)


def build_head_teachers(
    work: Path, settings: HeadTeacherSettings, features, labels, parts: list[np.ndarray], progress: bool = True
) -> None:
    """``teacher=heads``: fit every teacher's ridge head on the public features of its own part into ``work``."""
    train_head_teachers(settings, features, labels, parts, work, progress=progress)


def build_head_votes(
    work: Path,
    teachers: Artifact,
    settings: HeadTeacherSettings,
    features,
    parts: list[np.ndarray],
    labels,
    query_indices: np.ndarray,
    eval_indices: np.ndarray,
    progress: bool = True,
) -> None:
    """``votes.npz`` as :func:`build_votes` writes it, from the teacher heads. Teacher accuracy (a diagnostic)
    is measured on the first ``settings.accuracy_images`` evaluation images: scoring all T heads on all of them
    would cost more than fitting the heads."""
    rows = eval_indices[: settings.accuracy_images]
    votes, accuracy = head_votes(
        settings, teachers, features, parts, query_indices, rows, labels[rows], progress=progress
    )
    write_votes(work, votes, query_indices, accuracy)


def build_votes(
    work: Path,
    teachers: Artifact,
    num_teachers: int,
    settings: NetworkTeacherSettings,
    trainer: TrainerSettings,
    images,
    labels,
    query_indices: np.ndarray,
    eval_indices: np.ndarray,
    progress: bool = True,
) -> None:
    """Write ``votes.npz`` (``pate.votes.write_votes``): every teacher's votes on the queries and its mean
    per-attribute accuracy on the evaluation split. Each checkpoint is opened through the teachers artifact's
    manifest (``Artifact.file``)."""
    from teachers.ensemble import teacher_path  # Lightning: imported where network teachers vote
    from teachers.predict import predict_votes

    votes, accuracy = predict_votes(
        [teachers.file(teacher_path(Path(), i).name) for i in range(num_teachers)],
        settings.recipe,
        trainer,
        images,
        query_indices,
        eval_indices,
        labels[eval_indices],
        progress=progress,
    )
    write_votes(work, votes, query_indices, accuracy)
