"""The student components, constructed at the edge (``pate.pipeline.students.student_component``): their settings
are built from the config and checked before any data is read, and the student stage is keyed by exactly the dict
the config gives it."""

from __future__ import annotations

import pytest

from pate.artifacts import Artifact, Stage
from pate.pipeline.checks import UserError
from pate.pipeline.graph import Dataset, plain
from pate.pipeline.students import HeadStudent, NetworkStudent, student_component
from student.stages import SCORES_FILE, read_student_scores, write_student_scores

UPSTREAM = Stage("aggregate", {"labels": "any"}, lambda work, up: None)


def _config(student: HeadStudent | NetworkStudent) -> list:
    """The student stage's config, in its order (the key hashes canonical JSON, but the dict must be the same)."""
    stage = student.stage(Dataset(None, {}), UPSTREAM, UPSTREAM, UPSTREAM)
    return list(stage.config.items())


def test_the_head_student_is_keyed_by_its_node_and_the_seed(tiny_cfg):
    cfg = tiny_cfg("student.semi.method=consistency", "seed=5")
    student = student_component(cfg)
    assert isinstance(student, HeadStudent) and student.reads_features and student.needs_views
    assert student.settings.lambdas == tuple(cfg.student.lambdas)
    assert _config(student) == [("student", plain(cfg.student)), ("seed", 5)]
    assert not student_component(tiny_cfg()).needs_views


def test_the_network_student_is_keyed_by_its_node_the_precision_and_the_seed(tiny_cnn_cfg):
    cfg = tiny_cnn_cfg("seed=6")
    student = student_component(cfg)
    assert isinstance(student, NetworkStudent) and not student.reads_features and not student.needs_views
    assert student.settings.recipe.batch_size == cfg.student.batch_size
    assert student.trainer.precision == cfg.trainer.precision
    assert _config(student) == [("student", plain(cfg.student)), ("precision", str(cfg.trainer.precision)), ("seed", 6)]


@pytest.mark.parametrize(
    ("make", "overrides", "message"),
    [
        ("tiny_cfg", ["student.lambdas=[0.1,-1]"], "student.lambdas=[0.1, -1.0]; expected a non-empty list"),
        ("tiny_cfg", ["student.semi.method=fixmatch"], "student.semi.method='fixmatch'; expected one of"),
        ("tiny_cfg", ["+student.semi.rounds_=2"], "student.semi has unknown keys ['rounds_']"),
        ("tiny_cnn_cfg", ["student.batch_size=0"], "student.batch_size must be a positive integer, got 0"),
        (
            "tiny_cnn_cfg",
            ["student.semi.keep_fraction=0"],
            "student.semi.keep_fraction=0.0; expected a number in (0, 1]",
        ),
        (
            "tiny_cfg",
            ["student.component._target_=builtins.dict"],
            "student.component._target_='builtins.dict' is not a "
            "Student: expected a subclass of "
            "pate.pipeline.students.Student",
        ),
        (
            "tiny_cfg",
            ["+student.component.lambdas=[1.0]"],
            "student.component.lambdas: student.component holds only its _target_",
        ),
    ],
)
def test_a_bad_student_setting_is_refused_at_construction_naming_its_key(make, overrides, message, request):
    cfg = request.getfixturevalue(make)(*overrides)
    with pytest.raises(UserError) as refused:
        student_component(cfg)
    assert str(refused.value).startswith(message), str(refused.value)


def test_the_scores_file_is_read_back_as_written(tmp_path):
    scores = {"student_accuracy": 0.75, "student_f1": None, "student_per_attribute_accuracy": [0.5, 1.0]}
    write_student_scores(tmp_path, scores)
    assert (tmp_path / SCORES_FILE).is_file()
    assert read_student_scores(Artifact("student", "key", tmp_path)) == scores
