"""The student stage: train on the released labels of the answered public queries, evaluate on held-out data.

The student shares the teachers' building blocks in :mod:`teachers.training` -- the model zoo, the LightningModule, the
datasets and loaders, the Trainer factory -- so that a student and a teacher of the same config differ only in
what they are trained on. By construction of the
signatures below the student never receives the dataset, an index or a private label: it is handed the images
of the public queries that were answered, the labels the aggregator released for them, and the evaluation
images and labels.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from student.consistency import ConsistencyModule, consistency_loaders
from student.semi import confident_pseudo_labels
from student.settings import NetworkStudentSettings
from teachers.training import (
    IndexedImages,
    TrainerSettings,
    build_trainer,
    check_images,
    check_labels,
    expected_warnings_hidden,
    fit,
    make_loader,
    predict_logits,
    quiet_lightning,
)


def student_loader(
    student: NetworkStudentSettings,
    trainer: TrainerSettings,
    images: np.ndarray,
    labels: np.ndarray,
    seed: int,
    mask: np.ndarray | None = None,
) -> DataLoader:
    """Shuffled loader over ``images`` with ``labels`` (one row each) and, optionally, the loss ``mask``."""
    check_images(images)
    labels = check_labels(labels, images.shape[0], "train_labels")
    dataset = IndexedImages(images, np.arange(images.shape[0]), labels, mask)
    return make_loader(dataset, student.recipe.batch_size, shuffle=True, seed=seed, num_workers=trainer.num_workers)


def _fit(
    student: NetworkStudentSettings,
    trainer: TrainerSettings,
    images,
    labels,
    seed: int,
    log_dir: Path,
    progress: bool,
    mask=None,
    unlabeled: np.ndarray | None = None,
    desc: str = "student",
):
    """A fresh student (seeded) fitted on ``images`` with ``labels`` (and the loss ``mask``) and, given the
    ``unlabeled`` images, FixMatch's unlabeled loss on them (student/consistency.py); returns (module, trainer)."""
    recipe, semi = student.recipe, student.semi
    loader = student_loader(student, trainer, images, labels, seed, mask)
    pl.seed_everything(seed, workers=True, verbose=False)
    if unlabeled is None:
        module = recipe.module()
    else:
        module = ConsistencyModule(recipe, semi, seed)
        with expected_warnings_hidden():  # CombinedLoader flattens its dict with torch's deprecated LeafSpec
            loader = consistency_loaders(loader, unlabeled, semi.unlabeled_ratio, seed, trainer.num_workers)
    with quiet_lightning(not trainer.verbose):  # no accelerator banners or library tips
        lightning = build_trainer(trainer, recipe.max_epochs, log_dir=log_dir, progress=progress, desc=desc)
        fit(lightning, module, loader)
    return module, lightning


def _checked_inputs(num_labels: int, train_images, eval_images, eval_labels) -> np.ndarray:
    """``eval_labels`` as uint8 after checking every input, before any training."""
    check_images(train_images)
    if train_images.shape[0] == 0:
        raise ValueError(
            "train_images is empty: no public query was answered, so there is nothing to train the student on"
        )
    check_images(eval_images)
    if eval_images.shape[0] == 0:
        raise ValueError("eval_images must be non-empty: the student is evaluated on them")
    eval_labels = check_labels(eval_labels, eval_images.shape[0], "eval_labels")
    if eval_labels.shape[1] != num_labels:
        raise ValueError(f"eval_labels have {eval_labels.shape[1]} labels but student.model.num_labels is {num_labels}")
    return eval_labels


def _pseudo_label_round(
    module,
    student: NetworkStudentSettings,
    trainer: TrainerSettings,
    train_images,
    labels,
    train_mask,
    unlabeled_images,
    seed,
    log_dir: Path,
    progress,
    round_,
):
    """One round of pseudo-labelling: the current student labels the unlabeled images, and a fresh student (same
    seed) is fitted on the released labels and the confident pseudo-labels, the unconfident entries masked out.
    Returns the new (module, trainer) and the fraction of pseudo-labelled entries kept."""
    module.eval()
    probs = torch.sigmoid(predict_logits(module.net, torch.from_numpy(unlabeled_images), 512))
    hard, confident = confident_pseudo_labels(probs, student.semi.keep_fraction)
    images = np.concatenate([train_images, unlabeled_images])
    targets = np.concatenate([labels, hard.numpy().astype(np.uint8)])
    mask = np.concatenate([train_mask, confident.numpy().astype(np.uint8)])
    module, lightning = _fit(
        student,
        trainer,
        images,
        targets,
        seed,
        log_dir,
        progress,
        mask=mask,
        desc=f"student (pseudo-label round {round_ + 1})",
    )
    return module, lightning, float(confident.double().mean())


def _loss_mask(train_mask, labels: np.ndarray) -> np.ndarray:
    """uint8 [n, L]: 1 where a label was released (every entry without ``train_mask``), checked against the labels."""
    mask = np.ones_like(labels) if train_mask is None else np.asarray(train_mask).astype(np.uint8)
    if mask.shape != labels.shape:
        raise ValueError(f"train_mask must have the shape of train_labels {labels.shape}, got {mask.shape}")
    return mask


def train_student(
    student: NetworkStudentSettings,
    trainer: TrainerSettings,
    train_images: np.ndarray,
    train_labels: np.ndarray,
    unlabeled_images: np.ndarray,
    eval_images: np.ndarray,
    eval_labels: np.ndarray,
    seed: int,
    log_dir: Path,
    progress: bool = True,
    train_mask: np.ndarray | None = None,
    keep: Callable[[torch.nn.Module], None] | None = None,
) -> dict:
    """Train the student on (``train_images``, ``train_labels``) and, with ``student.semi``, on
    ``unlabeled_images`` (student/semi.py); test it on (``eval_images``, ``eval_labels``).

    Pseudo-labelling with a CNN: a supervised student predicts the unlabeled images; a fresh student (same seed)
    is then fitted on the released labels and the confident pseudo-labels, the unconfident entries masked out of
    the loss; ``rounds`` times. Consistency (FixMatch): one fit whose every step adds the unlabeled loss of
    student/consistency.py.

    Returns ``student_accuracy`` (mean over labels of the per-label accuracy), ``student_f1`` (macro F1),
    ``student_per_attribute_accuracy`` (list, one per label), ``student_train_size`` and what was used of the
    unlabeled images. Initialisation, batch order and augmentation are seeded from ``seed``. ``train_mask`` (bool
    like ``train_labels``): the labels that were released; the others are missing and add nothing to the loss.
    ``keep``, when given, is called with the trained network (the one that is scored).
    """
    eval_labels = _checked_inputs(student.recipe.num_labels, train_images, eval_images, eval_labels)
    semi = student.semi
    labels = np.asarray(train_labels).astype(np.uint8)
    mask = _loss_mask(train_mask, labels)
    if semi.uses_unlabeled and len(unlabeled_images):
        check_images(unlabeled_images)
    consistency = semi.method == "consistency" and len(unlabeled_images) > 0
    module, lightning = _fit(
        student,
        trainer,
        train_images,
        labels,
        seed,
        Path(log_dir),
        progress,
        mask=None if mask.all() else mask,
        unlabeled=unlabeled_images if consistency else None,
    )
    pseudo_fraction = module.confident_fraction if consistency else 0.0
    if semi.method == "pseudo_label" and len(unlabeled_images):
        for round_ in range(semi.rounds):
            module, lightning, pseudo_fraction = _pseudo_label_round(
                module,
                student,
                trainer,
                train_images,
                labels,
                mask,
                unlabeled_images,
                seed,
                Path(log_dir) / f"pseudo_{round_}",
                progress,
                round_,
            )
    eval_loader = make_loader(
        IndexedImages(eval_images, np.arange(eval_images.shape[0]), eval_labels),
        student.recipe.batch_size,
        shuffle=False,
        seed=seed,
        num_workers=trainer.num_workers,
    )
    with expected_warnings_hidden(), quiet_lightning(not trainer.verbose):
        scores = lightning.test(module, eval_loader, verbose=False)[0]
    if keep is not None:
        keep(module.net)
    return {
        "student_accuracy": float(scores["test/acc"]),
        "student_f1": float(scores["test/f1"]),
        "student_per_attribute_accuracy": module.test_per_attribute_accuracy.tolist(),
        "student_train_size": int(train_images.shape[0]),
        "student_semi": semi.method,
        "student_unlabeled_size": int(len(unlabeled_images)) if semi.uses_unlabeled else 0,
        "student_pseudo_labelled_fraction": pseudo_fraction,
    }


__all__ = ["student_loader", "train_student"]
