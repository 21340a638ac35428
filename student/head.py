"""``student=head``: a ridge head on the public features, trained on the released labels of the answered queries.

It reads exactly what the CNN student reads -- the answered public queries (here their public features) with
their released labels, and the evaluation split -- and picks its L2 strength per attribute by leave-one-out
over the released labels (post-processing of released data, so free of privacy cost).
"""

from __future__ import annotations

import numpy as np
import torch
from omegaconf import DictConfig
from torchmetrics.functional.classification import multilabel_accuracy, multilabel_f1_score

from pate.features import fit_ridge_heads, head_scores, head_weights


def train_head_student(student_cfg: DictConfig, train_features: torch.Tensor, train_labels: np.ndarray,
                       eval_features: torch.Tensor, eval_labels: np.ndarray) -> dict:
    """Fit on (``train_features`` [n, D], ``train_labels`` [n, L]); score on the evaluation split. Returns the
    same metrics as the CNN student (mean per-attribute accuracy, macro F1, per-attribute accuracy, n)."""
    if len(train_features) < 2:
        raise ValueError(f"student=head needs at least 2 answered queries (leave-one-out), got {len(train_features)}")
    if len(train_features) != len(train_labels) or len(eval_features) != len(eval_labels):
        raise ValueError(f"features and labels must have one row per image: {len(train_features)} vs "
                         f"{len(train_labels)} (train), {len(eval_features)} vs {len(eval_labels)} (eval)")
    x = train_features[None]
    heads = fit_ridge_heads(x, torch.from_numpy(np.asarray(train_labels, dtype=np.float32))[None], student_cfg.lambdas)
    weights, bias = head_weights(x, heads.beta, heads.ybar)
    probs = (head_scores(eval_features, weights, bias)[0] - 0.5).sigmoid()  # > 1/2 exactly where the score > 1/2
    truth = torch.from_numpy(np.asarray(eval_labels, dtype=np.int64))
    num_labels = truth.shape[1]
    per_attribute = multilabel_accuracy(probs, truth, num_labels=num_labels, average="none")
    return {
        "student_accuracy": float(per_attribute.mean()),
        "student_f1": float(multilabel_f1_score(probs, truth, num_labels=num_labels, average="macro")),
        "student_per_attribute_accuracy": per_attribute.tolist(),
        "student_train_size": int(len(train_features)),
    }


__all__ = ["train_head_student"]
