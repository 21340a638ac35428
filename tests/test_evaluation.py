"""A student's scores (``pate.evaluation.student_scores``, written out because the library imports no torchmetrics)
are torchmetrics' numbers to the last bit: per-label accuracy and macro F1, with one label or many, with a label
neither predicted nor present, and with logits (which torchmetrics reads through a sigmoid)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchmetrics.functional.classification import (
    binary_accuracy,
    binary_f1_score,
    multilabel_accuracy,
    multilabel_f1_score,
)

from pate.evaluation import student_scores


def _torchmetrics(probs: torch.Tensor, truth: np.ndarray) -> dict:
    target = torch.from_numpy(truth.astype(np.int64))
    num_labels = target.shape[1]
    if num_labels == 1:
        per_label, f1 = binary_accuracy(probs, target).reshape(1), binary_f1_score(probs, target)
    else:
        per_label = multilabel_accuracy(probs, target, num_labels=num_labels, average="none")
        f1 = multilabel_f1_score(probs, target, num_labels=num_labels, average="macro")
    return {
        "student_accuracy": float(per_label.mean()),
        "student_f1": float(f1),
        "student_per_attribute_accuracy": per_label.tolist(),
    }


@pytest.mark.parametrize("seed", range(40))
def test_the_scores_are_torchmetrics_scores(seed):
    rng = np.random.default_rng(seed)
    rows, labels = int(rng.integers(1, 80)), [1, 2, 3, 40][seed % 4]
    probs = torch.from_numpy(rng.random((rows, labels))).float()
    truth = (rng.random((rows, labels)) < rng.random()).astype(np.uint8)
    if seed % 3 == 0:
        probs[:, 0], truth[:, 0] = 0.25, 0  # a label neither predicted nor present: its F1 is 0
    if seed % 5 == 0:
        probs[rows // 2 :] = 0.5  # exactly 1/2 is predicted absent
    assert student_scores(probs, truth) == _torchmetrics(probs, truth)


def test_logits_are_read_through_a_sigmoid_as_torchmetrics_reads_them():
    rng = np.random.default_rng(7)
    logits = torch.from_numpy(rng.normal(size=(30, 5))).float()
    truth = (rng.random((30, 5)) < 0.4).astype(np.uint8)
    assert student_scores(logits, truth) == _torchmetrics(logits, truth)
