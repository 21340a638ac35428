"""How released labels and students are scored: label quality on the public queries, the majority-class floor."""

from __future__ import annotations

import numpy as np

__all__ = ["label_metrics", "majority_class_accuracy"]


def label_metrics(released: np.ndarray, answered: np.ndarray, truth: np.ndarray,
                  mask: np.ndarray | None = None) -> dict[str, float | None]:
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
