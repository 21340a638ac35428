"""``student=head``: a ridge head on the public features, trained on the released labels of the answered queries
(and, with ``student.semi``, on the pool's unlabeled images).

It reads exactly what the CNN student reads -- the answered public queries (here their public features) with
their released labels, the unlabeled pool images' features and the evaluation split -- and picks its L2
strength per attribute by leave-one-out (post-processing of released data and public images, so free of
privacy cost).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from pate.evaluation import student_scores
from pate.features import RidgeHead, fit_ridge_heads, head_scores, head_weights
from student.semi import confident_pseudo_labels
from student.settings import HeadStudentSettings


def _fit(lambdas: tuple[float, ...], features: torch.Tensor, targets: torch.Tensor):
    """A ridge head (L2 strength per attribute by leave-one-out over ``lambdas``) on ``features`` [n, D],
    ``targets`` [n, L]; returns (weights [1, D, L], bias [1, L])."""
    x = features[None]
    heads = fit_ridge_heads(x, targets[None], lambdas)
    return head_weights(x, heads.beta, heads.ybar)


def _fit_released(lambdas: tuple[float, ...], features: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor):
    """``_fit`` where only the entries of ``mask`` [n, L] (bool) were released: each attribute's head is the ridge fit
    on the rows that released it (one fit per attribute, a loop over L, not over queries), so a missing label
    adds nothing to its attribute's fit. An attribute released on fewer than 2 rows (leave-one-out needs 2) gets
    the constant score of its released targets' mean (0 when none), hence predicts absent unless they were
    mostly present."""
    if bool(mask.all()):
        return _fit(lambdas, features, targets)
    weights = torch.zeros(1, features.shape[1], targets.shape[1])
    bias = torch.zeros(1, targets.shape[1])
    for label in range(targets.shape[1]):
        rows = mask[:, label]
        if int(rows.sum()) < 2:
            bias[0, label] = targets[rows, label].mean() if bool(rows.any()) else 0.0
            continue
        w, b = _fit(lambdas, features[rows], targets[rows, label : label + 1])
        weights[0, :, label], bias[0, label] = w[0, :, 0], b[0, 0]
    return weights, bias


def train_head_student(
    settings: HeadStudentSettings,
    train_features: torch.Tensor,
    train_labels: np.ndarray,
    unlabeled_features: torch.Tensor,
    eval_features: torch.Tensor,
    eval_labels: np.ndarray,
    strong_features: torch.Tensor | None = None,
    train_mask: np.ndarray | None = None,
    keep: Callable[[RidgeHead], None] | None = None,
) -> dict:
    """Fit on (``train_features`` [n, D], ``train_labels`` [n, L]) and, with ``settings.semi``, on the unlabeled
    images (student/semi.py); score on the evaluation split. Returns the same metrics as the CNN student (mean
    per-attribute accuracy, macro F1, per-attribute accuracy, n) and what was used of the unlabeled images.

    Self-training with a ridge head: every unlabeled image joins the refit; a confident entry gets its hard
    pseudo-label as target, an unconfident one its current score (a neutral target: the refit is anchored to
    the current head there rather than pulled towards a guess), so all attributes share one kernel and one
    leave-one-out fit. ``pseudo_label`` refits on ``unlabeled_features`` [U, D] themselves; ``consistency``
    (FixMatch) takes the pseudo-labels from them (the weak view) but refits on ``strong_features`` [U, D], the
    features of a strongly augmented view of the same U images, row for row. ``train_mask`` (bool like
    ``train_labels``): the labels that were released; a missing one adds nothing to the first fit
    (``_fit_released``) and, in a self-training refit, is a neutral target like an unconfident pseudo-label.
    ``keep``, when given, is called with the final head (a :class:`RidgeHead`, the one that is scored).
    """
    semi = settings.semi
    if semi.method == "consistency" and (strong_features is None or strong_features.shape != unlabeled_features.shape):
        raise ValueError(
            f"student.semi.method=consistency needs strong_features with the unlabeled features' shape "
            f"{tuple(unlabeled_features.shape)}, got "
            f"{None if strong_features is None else tuple(strong_features.shape)}"
        )
    if len(train_features) < 2:
        raise ValueError(f"student=head needs at least 2 answered queries (leave-one-out), got {len(train_features)}")
    if len(train_features) != len(train_labels) or len(eval_features) != len(eval_labels):
        raise ValueError(
            f"features and labels must have one row per image: {len(train_features)} vs "
            f"{len(train_labels)} (train), {len(eval_features)} vs {len(eval_labels)} (eval)"
        )
    labels = torch.from_numpy(np.asarray(train_labels, dtype=np.float32))
    mask = (
        torch.ones(labels.shape, dtype=torch.bool)
        if train_mask is None
        else torch.from_numpy(np.asarray(train_mask, dtype=bool))
    )
    if mask.shape != labels.shape:
        raise ValueError(
            f"train_mask must have the shape of train_labels {tuple(labels.shape)}, got {tuple(mask.shape)}"
        )
    weights, bias = _fit_released(settings.lambdas, train_features, labels, mask)
    pseudo_fraction = 0.0
    if semi.uses_unlabeled and len(unlabeled_features):
        refit_on = strong_features if semi.method == "consistency" else unlabeled_features
        for _ in range(semi.rounds):
            scores = head_scores(unlabeled_features, weights, bias)[0]
            hard, confident = confident_pseudo_labels(scores, semi.keep_fraction)
            refit_scores = scores if refit_on is unlabeled_features else head_scores(refit_on, weights, bias)[0]
            targets = torch.where(confident, hard, refit_scores)
            released = torch.where(mask, labels, head_scores(train_features, weights, bias)[0])
            weights, bias = _fit(
                settings.lambdas, torch.cat([train_features, refit_on]), torch.cat([released, targets.float()])
            )
            pseudo_fraction = float(confident.double().mean())
    head = RidgeHead.of(weights, bias)
    if keep is not None:
        keep(head)
    with torch.no_grad():
        probs = head(eval_features).sigmoid()  # > 1/2 exactly where the score > 1/2
    return {
        **student_scores(probs, eval_labels),
        "student_train_size": int(len(train_features)),
        "student_semi": semi.method,
        "student_unlabeled_size": int(len(unlabeled_features)) if semi.uses_unlabeled else 0,
        "student_pseudo_labelled_fraction": pseudo_fraction,
    }


__all__ = ["train_head_student"]
