"""How released labels and students are scored: label quality on the public queries, a student's (or a released
model's) scores on the evaluation images, the majority-class floor."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["label_metrics", "majority_class_accuracy", "student_scores"]


def label_metrics(
    released: np.ndarray, answered: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None
) -> dict[str, float | None]:
    """Quality of the released label sets against the truth of the public queries, over answered queries.

    ``label_f1`` is the micro-averaged F1 over all (query, label) pairs, ``label_accuracy`` the fraction of
    correct (query, label) pairs. With ``mask`` (bool [Q, L]: the labels actually released, where a confident
    selection leaves some out) only the released pairs count. Both are None when nothing was released.
    """
    mask = np.repeat(answered[:, None], released.shape[1], axis=1) if mask is None else mask.astype(bool)
    if not mask.any():
        return {"label_f1": None, "label_accuracy": None}
    pred, true = released[mask].astype(bool), truth[mask].astype(bool)
    tp = np.sum(pred & true)
    denom = pred.sum() + true.sum()
    return {
        "label_f1": float(2 * tp / denom) if denom else 1.0,
        "label_accuracy": float(np.mean(pred == true)),
    }


def majority_class_accuracy(eval_labels: np.ndarray) -> float:
    """Mean per-attribute accuracy of the best constant predictor on the evaluation split (each attribute's
    majority value there): the floor any useful student must clear. Computed on held-out labels so that
    reporting it reveals nothing about the private training split."""
    majority = eval_labels.mean(axis=0) > 0.5
    return float(np.mean(eval_labels.astype(bool) == majority))


def student_scores(probs: torch.Tensor, truth) -> dict:
    """Mean per-label accuracy, macro F1 and per-label accuracy of the predictions ``probs`` > 1/2 (float [R, L])
    against ``truth`` [R, L] in {0, 1}: the scores of a student (or of a released model) on the evaluation images.

    The arithmetic is torchmetrics' ``multilabel_accuracy`` (``average="none"``) and ``multilabel_f1_score``
    (``average="macro"``, an F1 of 0 for a label neither predicted nor present), in float32 as there, written out
    because the library imports no torchmetrics (pyproject.toml's import contracts); tests/test_evaluation.py
    checks it against torchmetrics. With one label these are its accuracy and F1, as torchmetrics' binary metrics
    give them.
    """
    truth = torch.from_numpy(np.asarray(truth, dtype=np.int64))
    if probs.is_floating_point() and not bool(((probs >= 0) & (probs <= 1)).all()):
        probs = probs.sigmoid()  # torchmetrics reads scores outside [0, 1] (or NaN) as logits; so do the scores here
    predicted, present, absent = probs > 0.5, truth == 1, truth == 0
    tp, fp = (predicted & present).sum(0), (predicted & absent).sum(0)
    fn, tn = (~predicted & present).sum(0), (~predicted & absent).sum(0)
    per_label = _safe_divide(tp + tn, tp + tn + fp + fn)
    macro_f1 = (_safe_divide(2 * tp, 2 * tp + fn + fp) / truth.shape[1]).sum()
    return {
        "student_accuracy": float(per_label.mean()),
        "student_f1": float(macro_f1),
        "student_per_attribute_accuracy": per_label.tolist(),
    }


def _safe_divide(num: torch.Tensor, denom: torch.Tensor) -> torch.Tensor:
    """float32 ``num / denom`` of two count tensors, 0 where ``denom`` is 0."""
    num, denom = num.float(), denom.float()
    return torch.where(denom != 0, num / denom, torch.zeros((), dtype=num.dtype))
