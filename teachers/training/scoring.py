"""How a student (or a released model) is scored on the evaluation images: the keys of ``student.json``."""

from __future__ import annotations

import numpy as np
import torch
from torchmetrics.functional.classification import multilabel_accuracy, multilabel_f1_score

__all__ = ["student_scores"]


def student_scores(probs: torch.Tensor, truth) -> dict:
    """Mean per-label accuracy, macro F1 and per-label accuracy of the predictions ``probs`` > 1/2 ([R, L]) against
    ``truth`` [R, L] in {0, 1}."""
    truth = torch.from_numpy(np.asarray(truth, dtype=np.int64))
    num_labels = truth.shape[1]
    per_label = multilabel_accuracy(probs, truth, num_labels=num_labels, average="none")
    return {"student_accuracy": float(per_label.mean()),
            "student_f1": float(multilabel_f1_score(probs, truth, num_labels=num_labels, average="macro")),
            "student_per_attribute_accuracy": per_label.tolist()}
