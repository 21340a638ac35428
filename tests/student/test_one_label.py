"""Any number of labels from one (docs/your-data.md): with L = 1 every score is computed (torchmetrics' multilabel metrics
refuse one label; the binary ones give the same numbers) and a folder with one label column runs end to end, while
an aggregator setting one label cannot satisfy (TauPATE's tau > L) is refused before anything is built."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from pate.evaluation import label_metrics, majority_class_accuracy, student_scores
from teachers.training.label_metrics import accuracy_metric, f1_metric, macro_f1, per_label_accuracy
from teachers.training.module import MultiLabelModule
from tests.cli import run_cli
from tests.data.folder_data import write_folder


def _predictions(num_rows: int = 50, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Probabilities and 0/1 truth [num_rows, 1], the truth with both values."""
    rng = np.random.default_rng(seed)
    truth = torch.from_numpy((rng.random((num_rows, 1)) < 0.4).astype(np.int64))
    return torch.from_numpy(rng.random((num_rows, 1))).float(), truth


def test_one_label_scores_equal_the_multilabel_scores_of_that_label():
    """The multilabel scores of two copies of one label are that label's: L = 1 must give the same numbers."""
    probs, truth = _predictions()
    twice_probs, twice_truth = probs.repeat(1, 2), truth.repeat(1, 2)
    np.testing.assert_allclose(
        per_label_accuracy(probs, truth).numpy(), per_label_accuracy(twice_probs, twice_truth).numpy()[:1]
    )
    assert float(macro_f1(probs, truth)) == pytest.approx(float(macro_f1(twice_probs, twice_truth)))
    predicted = probs > 0.5
    tp = int((predicted & truth.bool()).sum())
    assert float(macro_f1(probs, truth)) == pytest.approx(2 * tp / (int(predicted.sum()) + int(truth.sum())))


def test_the_student_json_scores_have_one_entry_per_label():
    probs, truth = _predictions()
    scores = student_scores(probs, truth.numpy())
    expected = float(((probs > 0.5).long() == truth).float().mean())
    assert scores["student_accuracy"] == pytest.approx(expected)
    assert scores["student_per_attribute_accuracy"] == [pytest.approx(expected)] and 0 <= scores["student_f1"] <= 1


def test_the_lightning_module_and_its_metrics_take_one_label():
    probs, truth = _predictions()
    module = MultiLabelModule(nn.Flatten(), num_labels=1)
    for metric in (accuracy_metric(1), f1_metric(1), accuracy_metric(1, per_label=True)):
        metric.update(probs, truth)
    assert module.metrics["test_acc"](probs, truth) == pytest.approx(float(per_label_accuracy(probs, truth)[0]))
    module.test_acc_per_attribute.update(probs, truth)
    module.on_test_epoch_end()
    assert module.test_per_attribute_accuracy.shape == (1,)


def test_the_released_labels_and_the_floor_are_scored_with_one_label():
    truth = np.array([[1], [0], [1], [1]], dtype=np.uint8)
    released = np.array([[1], [1], [0], [1]], dtype=bool)
    metrics = label_metrics(released, np.ones(4, dtype=bool), truth)
    assert metrics == {"label_f1": pytest.approx(2 / 3), "label_accuracy": 0.5}
    assert majority_class_accuracy(truth) == 0.75


@pytest.fixture(scope="module")
def one_label_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("one_label") / "folder"
    write_folder(root, 1, split_column=True)
    return root


def _run(folder: Path, root: Path, *overrides: str):
    # GaussianPATE unless the test picks another aggregator
    return run_cli(
        "train.py",
        [
            "debug=tiny",
            "aggregator=gaussian_pate",
            "data=multilabel_folder",
            f"data.root={folder}",
            *overrides,
            f"paths.root_dir={root}",
            f"hydra.run.dir={root / 'run'}",
        ],
    )


@pytest.mark.slow  # a heavy computation
def test_a_one_label_folder_runs_end_to_end(one_label_folder, tmp_path):
    done = _run(one_label_folder, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["num_labels"] == 1 and metrics["answered"] == 40
    assert 0 <= metrics["student_accuracy"] <= 1 and 0 <= metrics["student_f1"] <= 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides",
    [
        ["aggregator=tau_pate", "aggregator.tau=1"],
        ["aggregator=stable_topk_paper"],
        ["aggregator=binary_voting"],
        ["method=dp_sgd", "method.expected_batch_size=64"],
        ["debug=tiny_cnn"],
    ],
    ids=lambda o: o[0],
)
def test_every_aggregator_family_method_and_the_cnn_student_take_one_label(one_label_folder, tmp_path, overrides):
    done = _run(one_label_folder, tmp_path, *overrides)
    assert done.returncode == 0, done.stdout + done.stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["num_labels"] == 1 and "student_accuracy" in metrics


def test_tau_above_one_label_is_refused_before_anything_is_built(one_label_folder, tmp_path):
    """A tau of 10 cannot cap one label's votes: one line naming aggregator.tau and num_labels (the default tau is
    min(10, num_labels))."""
    done = _run(one_label_folder, tmp_path, "aggregator=tau_pate", "aggregator.tau=10.0")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith(
        "error: aggregator.tau must be a number in [1, num_labels=1], got 10.0: tau caps the labels"
    ), lines
    assert not (tmp_path / "cache" / "aggregate").exists() and not (tmp_path / "cache" / "tensors").exists()
