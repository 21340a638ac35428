"""Per-label accuracy and macro F1 for any number of labels L >= 1.

torchmetrics' multilabel metrics refuse ``num_labels=1`` ("an integer larger than 1"), yet a data set may have one
label (docs/your-data.md: any number of labels). With one label, the multilabel numbers are the binary ones: the accuracy of
that label, and its F1 (the macro average of one F1). So L = 1 takes torchmetrics' binary metrics, which read
predictions and targets [N, 1] as N binary decisions, and every L > 1 the multilabel ones, unchanged. Predictions
are probabilities; a label is predicted present when its probability is above 1/2.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric
from torchmetrics.classification import BinaryAccuracy, BinaryF1Score, MultilabelAccuracy, MultilabelF1Score
from torchmetrics.functional.classification import (
    binary_accuracy,
    binary_f1_score,
    multilabel_accuracy,
    multilabel_f1_score,
)

__all__ = ["accuracy_metric", "f1_metric", "macro_f1", "per_label_accuracy"]


def accuracy_metric(num_labels: int, per_label: bool = False) -> Metric:
    """The mean over labels of each label's accuracy (``per_label``: the accuracy of each label; with one label its
    ``compute()`` is a scalar, which ``reshape(-1)`` makes the [1] of every other L)."""
    if num_labels == 1:
        return BinaryAccuracy()
    return MultilabelAccuracy(num_labels=num_labels, average=None if per_label else "macro")


def f1_metric(num_labels: int) -> Metric:
    """The macro F1 over labels."""
    return BinaryF1Score() if num_labels == 1 else MultilabelF1Score(num_labels=num_labels, average="macro")


def per_label_accuracy(predictions: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """float [L]: the accuracy of each label of ``predictions`` (probabilities or 0/1, [N, L]) against ``truth``."""
    num_labels = truth.shape[1]
    if num_labels == 1:
        return binary_accuracy(predictions, truth).reshape(1)
    return multilabel_accuracy(predictions, truth, num_labels=num_labels, average="none")


def macro_f1(predictions: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """The macro F1 (a scalar tensor) of ``predictions`` (probabilities or 0/1, [N, L]) against ``truth``."""
    num_labels = truth.shape[1]
    if num_labels == 1:
        return binary_f1_score(predictions, truth)
    return multilabel_f1_score(predictions, truth, num_labels=num_labels, average="macro")
