"""End to end on an easy synthetic signal: trained teachers and a trained student beat the majority baseline."""

from __future__ import annotations

import numpy as np
import pytest

from pate.pipeline.settings import build_recipe, network_student_settings, network_teacher_settings, trainer_settings
from student.train import train_student
from teachers.ensemble import train_teachers
from teachers.predict import predict_votes
from tests.conftest import brightness_task, compose_config, majority_baseline

pytestmark = pytest.mark.slow  # end-to-end runs: not in the fast loop (-m 'not slow')

LEARN = [
    "~aggregator",
    "teacher=small_cnn",
    "student=small_cnn",
    "teacher.max_epochs=10",
    "teacher.batch_size=32",
    "teacher.model.width=8",
    "student.max_epochs=10",
    "student.batch_size=32",
    "student.model.width=8",
]


def test_teachers_and_student_learn_an_easy_signal(tmp_path):
    cfg = compose_config(LEARN)
    images, labels = brightness_task(num_images=700, size=16, seed=0)
    train, query, evaluate = np.arange(0, 400), np.arange(400, 500), np.arange(500, 700)
    baseline = majority_baseline(labels[train], labels[evaluate])

    paths = train_teachers(
        network_teacher_settings(cfg.teacher),
        trainer_settings(cfg),
        images,
        labels,
        [train[:200], train[200:]],
        tmp_path,
        progress=False,
    )
    votes, teacher_accuracy = predict_votes(
        paths,
        build_recipe(cfg.teacher),
        trainer_settings(cfg),
        images,
        query,
        evaluate,
        labels[evaluate],
        progress=False,
    )
    assert baseline < 0.75
    assert (teacher_accuracy > baseline + 0.1).all(), (teacher_accuracy, baseline)

    # The student learns from the teachers' majority vote on the queries (a noiseless stand-in for an aggregator).
    consensus = votes.sum(axis=1) * 2 > votes.shape[1]
    result = train_student(
        network_student_settings(cfg.student),
        trainer_settings(cfg),
        images[query],
        consensus,
        images[:0],  # no unlabeled images: the supervised student
        images[evaluate],
        labels[evaluate],
        seed=0,
        log_dir=tmp_path / "student",
        progress=False,
    )
    assert result["student_accuracy"] > baseline + 0.05, (result["student_accuracy"], baseline)
