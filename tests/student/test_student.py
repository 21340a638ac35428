"""Student training: it trains on exactly the images and released labels it is handed, reproducibly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pate.pipeline.settings import network_student_settings, trainer_settings
from student.train import student_loader, train_student

TRAIN = np.array([40, 3, 17, 25, 8, 33, 1, 12, 29])
EVAL = np.arange(41, 60)


def released(n, seed=0):
    """Stand-in for aggregator output: bool labels, one row per answered query."""
    return np.random.default_rng(seed).random((n, 40)) < 0.3


def test_loader_holds_exactly_the_given_images(cfg, tiny_data):
    images, _ = tiny_data
    labels = released(len(TRAIN))
    loader = student_loader(network_student_settings(cfg.student), trainer_settings(cfg), images[TRAIN], labels, seed=0)
    assert len(loader.dataset) == len(TRAIN)
    batches = list(loader)  # one epoch (each pass over the loader reshuffles)
    seen_images = torch.cat([b[0] for b in batches]).numpy()
    seen_labels = torch.cat([b[1] for b in batches]).numpy()
    # Every row served once, image together with its released label row.
    order = [int(np.flatnonzero((images[TRAIN] == im).all(axis=(1, 2, 3)))[0]) for im in seen_images]
    assert sorted(order) == list(range(len(TRAIN)))
    assert np.array_equal(seen_labels, labels[order].astype(np.float32))


def test_train_student_reports_and_is_reproducible(cfg, tiny_data, tmp_path):
    images, labels = tiny_data
    args = (
        network_student_settings(cfg.student),
        trainer_settings(cfg),
        images[TRAIN],
        released(len(TRAIN)),
        images[:0],
        images[EVAL],
        labels[EVAL],
    )
    first = train_student(*args, seed=7, log_dir=tmp_path / "a", progress=False)
    second = train_student(*args, seed=7, log_dir=tmp_path / "b", progress=False)
    assert first == second
    assert set(first) == {
        "student_accuracy",
        "student_f1",
        "student_per_attribute_accuracy",
        "student_train_size",
        "student_semi",
        "student_unlabeled_size",
        "student_pseudo_labelled_fraction",
    }
    assert first["student_train_size"] == len(TRAIN)
    assert len(first["student_per_attribute_accuracy"]) == 40
    assert first["student_accuracy"] == pytest.approx(np.mean(first["student_per_attribute_accuracy"]), abs=1e-6)
    assert 0 <= first["student_f1"] <= 1
    assert list((tmp_path / "a").rglob("metrics.csv"))


@pytest.mark.parametrize(
    ("train", "evaluate", "match"),
    [
        (np.array([], dtype=np.int64), EVAL, "no public query was answered"),
        (TRAIN, np.array([], dtype=np.int64), "eval_images must be non-empty"),
    ],
)
def test_bad_inputs_are_rejected(cfg, tiny_data, tmp_path, train, evaluate, match):
    images, labels = tiny_data
    with pytest.raises(ValueError, match=match):
        train_student(
            network_student_settings(cfg.student),
            trainer_settings(cfg),
            images[train],
            released(len(train)),
            images[:0],
            images[evaluate],
            labels[evaluate],
            seed=0,
            log_dir=tmp_path,
            progress=False,
        )
