"""Ensemble training: one file per teacher, deterministic per teacher, resumable, damage detected."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

import teachers.ensemble as ensemble
from pate.pipeline.settings import network_teacher_settings, trainer_settings
from teachers.ensemble import teacher_seed, train_teachers

PARTITION = [np.arange(0, 12), np.arange(12, 24), np.arange(24, 36)]


def settings(cfg, teacher=None):
    """(the teachers' settings, the trainer's) of ``cfg``, or of the teacher node ``teacher``."""
    return network_teacher_settings(cfg.teacher if teacher is None else teacher), trainer_settings(cfg)


@pytest.fixture(scope="module")
def trained(cfg, tiny_data, tmp_path_factory):
    """Three tiny teachers trained once; tests copy the directory before touching it."""
    images, labels = tiny_data
    work_dir = tmp_path_factory.mktemp("teachers")
    paths = train_teachers(*settings(cfg), images, labels, PARTITION, work_dir, progress=False)
    return work_dir, paths


@pytest.fixture()
def work_copy(trained, tmp_path):
    work_dir, _ = trained
    copy = tmp_path / "teachers"
    shutil.copytree(work_dir, copy)
    return copy


@pytest.fixture()
def record_training(monkeypatch):
    """Records which teachers _train_one is called for (and still trains them)."""
    calls = []
    original = ensemble._train_one

    def recording(recipe, trainer, images, labels, indices, identity, work_dir):
        calls.append(identity["teacher"])
        original(recipe, trainer, images, labels, indices, identity, work_dir)

    monkeypatch.setattr(ensemble, "_train_one", recording)
    return calls


def state(path):
    return torch.load(path, weights_only=True)["state_dict"]


def same_weights(a, b):
    sa, sb = state(a), state(b)
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_writes_one_file_per_teacher_with_meta(trained, cfg):
    work_dir, paths = trained
    assert paths == [work_dir / f"teacher_{i:04d}.pt" for i in range(3)]
    for i, path in enumerate(paths):
        meta = torch.load(path, weights_only=True)["meta"]
        assert meta["teacher"] == i and meta["num_train"] == 12
        assert meta["seed"] == teacher_seed(cfg.teacher.seed, i)
        assert meta["config"] == OmegaConf.to_container(cfg.teacher, resolve=True)  # what resume compares
        assert (work_dir / "logs" / f"teacher_{i:04d}").is_dir()
    assert not same_weights(paths[0], paths[1])
    assert not list(work_dir.glob(".*tmp*"))  # no temporary file left behind


def test_diverged_teacher_raises_instead_of_saving(cfg, tiny_data, tmp_path, monkeypatch):
    images, labels = tiny_data

    def diverge(trainer, module, loader):
        with torch.no_grad():
            next(module.net.parameters()).fill_(float("nan"))

    monkeypatch.setattr(ensemble, "fit", diverge)
    with pytest.raises(RuntimeError, match="teacher 0 diverged"):
        train_teachers(*settings(cfg), images, labels, PARTITION, tmp_path, teacher_ids=[0], progress=False)
    assert not list(tmp_path.glob("*.pt"))


def test_rerun_trains_nothing(cfg, tiny_data, work_copy, record_training):
    images, labels = tiny_data
    mtimes = {p: p.stat().st_mtime_ns for p in work_copy.glob("*.pt")}
    paths = train_teachers(*settings(cfg), images, labels, PARTITION, work_copy, progress=False)
    assert record_training == []
    assert {p: p.stat().st_mtime_ns for p in paths} == mtimes


def test_deleted_teacher_alone_is_retrained_identically(cfg, tiny_data, trained, work_copy, record_training):
    images, labels = tiny_data
    os.remove(work_copy / "teacher_0001.pt")
    train_teachers(*settings(cfg), images, labels, PARTITION, work_copy, progress=False)
    assert record_training == [1]
    assert same_weights(work_copy / "teacher_0001.pt", trained[1][1])


def flip_one_weight(path):
    """A file that still loads but whose data changed (torch.load does not check a record's CRC)."""
    payload = torch.load(path, weights_only=True)
    weight = next(v for v in payload["state_dict"].values() if v.is_floating_point())
    weight.view(-1)[0] = -weight.view(-1)[0]
    torch.save(payload, path)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "changed_weight"])
def test_damaged_teacher_is_detected_and_retrained(cfg, tiny_data, trained, work_copy, record_training, damage):
    images, labels = tiny_data
    path = work_copy / "teacher_0002.pt"
    blob = path.read_bytes()
    if damage == "changed_weight":
        flip_one_weight(path)
    else:
        path.write_bytes({"truncate": blob[: len(blob) // 2], "garbage": os.urandom(len(blob)), "empty": b""}[damage])
    with pytest.warns(UserWarning, match="teacher_0002.pt is not usable"):
        train_teachers(*settings(cfg), images, labels, PARTITION, work_copy, progress=False)
    assert record_training == [2]
    assert same_weights(path, trained[1][2])


def test_teacher_of_another_partition_or_config_is_retrained(cfg, tiny_data, work_copy, record_training):
    images, labels = tiny_data
    moved = [PARTITION[0], np.arange(36, 48), PARTITION[2]]
    with pytest.warns(UserWarning, match="indices_sha256"):
        train_teachers(*settings(cfg), images, labels, moved, work_copy, progress=False)
    assert record_training == [1]
    other = cfg.teacher.copy()
    other.optimizer.lr = 0.5
    with pytest.warns(UserWarning, match="config"):
        train_teachers(*settings(cfg, other), images, labels, moved, work_copy, teacher_ids=[0], progress=False)
    assert record_training == [1, 0]


def test_shard_trains_only_its_teachers_and_matches_the_full_run(cfg, tiny_data, trained, tmp_path, record_training):
    images, labels = tiny_data
    paths = train_teachers(*settings(cfg), images, labels, PARTITION, tmp_path, teacher_ids=[2, 0], progress=False)
    assert record_training == [0, 2]
    assert len(paths) == 3
    assert [p.exists() for p in paths] == [True, False, True]
    assert same_weights(paths[0], trained[1][0]) and same_weights(paths[2], trained[1][2])


def test_missing_requested_teacher_raises(cfg, tiny_data, tmp_path, monkeypatch):
    images, labels = tiny_data
    monkeypatch.setattr(ensemble, "_train_one", lambda *args: None)
    with pytest.raises(RuntimeError, match=r"teachers \[1\] were requested but are missing"):
        train_teachers(*settings(cfg), images, labels, PARTITION, tmp_path, teacher_ids=[1], progress=False)


@pytest.mark.parametrize(
    ("partition", "teacher_ids", "match"),
    [
        (PARTITION, [3], r"teacher_ids must lie in \[0, 3\), got \[3\]"),
        (PARTITION, [-1], "teacher_ids"),
        ([np.arange(5), np.array([], dtype=np.int64)], None, r"partition parts \[1\] are empty"),
        ([np.arange(5), np.array([59, 60])], None, r"partition\[1\] must lie in \[0, 60\)"),
        ([], None, "at least one part"),
    ],
)
def test_bad_arguments_are_rejected_before_training(
    cfg, tiny_data, tmp_path, monkeypatch, partition, teacher_ids, match
):
    images, labels = tiny_data
    monkeypatch.setattr(ensemble, "_train_one", lambda *args: pytest.fail("trained despite bad input"))
    with pytest.raises(ValueError, match=match):
        train_teachers(*settings(cfg), images, labels, partition, tmp_path, teacher_ids=teacher_ids, progress=False)


def test_teacher_seeds_are_distinct_and_stable():
    seeds = [teacher_seed(0, i) for i in range(1000)]
    assert len(set(seeds)) == 1000
    assert seeds[:3] == [teacher_seed(0, 0), teacher_seed(0, 1), teacher_seed(0, 2)]
    assert teacher_seed(1, 0) != teacher_seed(0, 0)
    with pytest.raises(ValueError, match="teacher.seed"):
        teacher_seed(-1, 0)
