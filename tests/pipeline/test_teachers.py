"""The teacher components, constructed at the edge (``pate.pipeline.teachers.teacher_component``): their settings
are built from the config and checked before any data is read, and the teachers and votes stages are keyed by
exactly the dicts the config gave them before the settings existed (so cached teachers stay valid)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pate.artifacts import Stage
from pate.pipeline.checks import UserError
from pate.pipeline.graph import Dataset, plain
from pate.pipeline.teachers import HeadTeachers, NetworkTeachers, teacher_component

UPSTREAM = Stage("partition", {"any": 0}, lambda work, up: None)
DATA = Dataset(SimpleNamespace(images=None, labels=None), {})


def _configs(teachers: HeadTeachers | NetworkTeachers) -> tuple[list, list]:
    """The teachers and votes stages' configs, in their order (the key hashes canonical JSON, but the dicts must be
    the same)."""
    built, votes = teachers.stages(DATA, UPSTREAM, UPSTREAM, UPSTREAM)
    return list(built.config.items()), list(votes.config.items())


def test_head_teachers_are_keyed_by_their_node_and_the_accuracy_images(tiny_cfg):
    cfg = tiny_cfg("teacher.accuracy_images=7", "teacher.chunk_size=3")
    teachers = teacher_component(cfg)
    assert isinstance(teachers, HeadTeachers) and teachers.reads_features
    assert teachers.settings.lambdas == tuple(cfg.teacher.lambdas) and teachers.settings.chunk_size == 3
    assert teachers.progress == cfg.progress
    assert _configs(teachers) == ([("teacher", plain(cfg.teacher))], [("accuracy_images", 7)])


def test_network_teachers_are_keyed_by_their_node_and_the_precision(tiny_cnn_cfg):
    cfg = tiny_cnn_cfg("teacher.seed=4")
    teachers = teacher_component(cfg)
    assert isinstance(teachers, NetworkTeachers) and not teachers.reads_features
    assert teachers.settings.seed == 4 and teachers.settings.recipe.batch_size == cfg.teacher.batch_size
    assert teachers.settings.adamw.lr == cfg.teacher.optimizer.lr  # small_cnn's optimizer is plain AdamW
    assert teachers.trainer.precision == cfg.trainer.precision
    assert _configs(teachers) == ([("teacher", plain(cfg.teacher)), ("precision", str(cfg.trainer.precision))], [])


@pytest.mark.parametrize(
    ("make", "overrides", "match"),
    [
        (
            "tiny_cfg",
            ["teacher.lambdas=[0.1,-1]"],
            r"^teacher.lambdas=\[0.1, -1.0\]; expected a non-empty list of finite L2 strengths > 0$",
        ),
        ("tiny_cfg", ["teacher.chunk_size=0"], r"^teacher.chunk_size must be an integer >= 1, got 0$"),
        ("tiny_cfg", ["teacher.accuracy_images=-3"], r"^teacher.accuracy_images must be an integer >= 1, got -3$"),
        ("tiny_cfg", ["teacher_shard=0/2"], "teacher_shard is for CNN teachers"),
        ("tiny_cnn_cfg", ["teacher.seed=-1"], r"^teacher.seed must be an integer >= 0, got -1$"),
        ("tiny_cnn_cfg", ["teacher.max_epochs=0"], r"^teacher.max_epochs must be a positive integer, got 0$"),
        ("tiny_cnn_cfg", ["teacher.model.width=0"], "teacher.model.width"),
        ("tiny_cnn_cfg", ["trainer.precision=foo"], "trainer.precision='foo'"),
        (
            "tiny_cfg",
            ["teacher.component._target_=pate.pipeline.students.HeadStudent"],
            "teacher.component._target_='pate.pipeline.students.HeadStudent' is not a TeacherEnsemble",
        ),
    ],
)
def test_a_bad_setting_is_refused_at_construction_naming_its_key(request, make, overrides, match):
    with pytest.raises(UserError, match=match):
        teacher_component(request.getfixturevalue(make)(*overrides))
