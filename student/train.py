"""The student stage: train on the released labels of the answered public queries, evaluate on held-out data.

The student reuses the teachers' building blocks -- the model zoo (:mod:`teachers.models`), the
LightningModule (:mod:`teachers.module`) and the datasets and loaders (:mod:`teachers.data`) -- so that a
student and a teacher of the same config differ only in what they are trained on. By construction of the
signatures below the student stage never receives private indices or private labels: it sees the images of
the public queries that were answered, the labels the aggregator released for them, and the evaluation split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytorch_lightning as pl
from omegaconf import DictConfig
from torch.utils.data import DataLoader

from teachers.data import IndexedImages, check_images, check_indices, check_labels, make_loader
from teachers.ensemble import build_trainer, expected_warnings_hidden, fit
from teachers.models import net_from_config
from teachers.module import module_from_config


def student_loader(
    student_cfg: DictConfig,
    trainer_cfg: DictConfig,
    images: np.ndarray,
    train_indices: np.ndarray,
    train_labels: np.ndarray,
    seed: int,
) -> DataLoader:
    """Shuffled loader over ``images[train_indices]`` with ``train_labels`` (aligned with ``train_indices``)."""
    check_images(images)
    train_indices = check_indices(train_indices, images.shape[0], "train_indices")
    train_labels = check_labels(train_labels, len(train_indices), "train_labels")
    dataset = IndexedImages(images, train_indices, train_labels)
    return make_loader(dataset, student_cfg.batch_size, shuffle=True, seed=seed, num_workers=trainer_cfg.num_workers)


def train_student(
    student_cfg: DictConfig,
    trainer_cfg: DictConfig,
    images: np.ndarray,
    train_indices: np.ndarray,
    train_labels: np.ndarray,
    eval_indices: np.ndarray,
    eval_labels: np.ndarray,
    seed: int,
    log_dir: Path,
    progress: bool = True,
) -> dict:
    """Train the student on (``images[train_indices]``, ``train_labels``) and test it on ``eval_indices``.

    Returns ``student_accuracy`` (mean over labels of the per-label accuracy), ``student_f1`` (macro F1),
    ``student_per_attribute_accuracy`` (list, one per label) and ``student_train_size``. Initialisation, batch
    order and augmentation are seeded from ``seed``.
    """
    check_images(images)
    train_indices = check_indices(train_indices, images.shape[0], "train_indices")
    if train_indices.size == 0:
        raise ValueError(
            "train_indices is empty: no public query was answered, so there is nothing to train the student on"
        )
    eval_indices = check_indices(eval_indices, images.shape[0], "eval_indices")
    if eval_indices.size == 0:
        raise ValueError("eval_indices must be non-empty: the student is evaluated on them")
    eval_labels = check_labels(eval_labels, len(eval_indices), "eval_labels")
    overlap = np.intersect1d(train_indices, eval_indices)
    if overlap.size:
        raise ValueError(
            f"train_indices and eval_indices must be disjoint, they share {overlap.size} row(s) "
            f"(e.g. {overlap[:5].tolist()})"
        )
    if eval_labels.shape[1] != student_cfg.model.num_labels:
        raise ValueError(
            f"eval_labels have {eval_labels.shape[1]} labels but student.model.num_labels is "
            f"{student_cfg.model.num_labels}"
        )

    loader = student_loader(student_cfg, trainer_cfg, images, train_indices, train_labels, seed)
    pl.seed_everything(seed, workers=True, verbose=False)
    module = module_from_config(student_cfg, net_from_config(student_cfg.model))
    trainer = build_trainer(trainer_cfg, student_cfg.max_epochs, log_dir=Path(log_dir), progress=progress)
    fit(trainer, module, loader)
    eval_loader = make_loader(
        IndexedImages(images, eval_indices, eval_labels),
        student_cfg.batch_size,
        shuffle=False,
        seed=seed,
        num_workers=trainer_cfg.num_workers,
    )
    with expected_warnings_hidden():
        scores = trainer.test(module, eval_loader, verbose=False)[0]
    return {
        "student_accuracy": float(scores["test/acc"]),
        "student_f1": float(scores["test/f1"]),
        "student_per_attribute_accuracy": module.test_per_attribute_accuracy.tolist(),
        "student_train_size": int(train_indices.size),
    }
