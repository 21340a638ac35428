"""How a student (or a released model) is scored on the evaluation images: the keys of ``student.json``."""

from __future__ import annotations

import numpy as np
import torch
from teachers.training.label_metrics import macro_f1, per_label_accuracy

__all__ = ["student_scores"]


def student_scores(probs: torch.Tensor, truth) -> dict:
    """Mean per-label accuracy, macro F1 and per-label accuracy of the predictions ``probs`` > 1/2 ([R, L]) against
    ``truth`` [R, L] in {0, 1}."""
    truth = torch.from_numpy(np.asarray(truth, dtype=np.int64))
    per_label = per_label_accuracy(probs, truth)
    return {"student_accuracy": float(per_label.mean()),
            "student_f1": float(macro_f1(probs, truth)),
            "student_per_attribute_accuracy": per_label.tolist()}
