"""Teacher heads: each teacher sees only its own part; resume after a kill or a damaged chunk file."""

import hashlib
import json

import numpy as np
import pytest
from omegaconf import OmegaConf

from pate.features import FeatureTable
from pate.pipeline.settings import head_teacher_settings
from teachers.heads import _identity, fit_heads, head_votes, train_head_teachers
from teachers.settings import HeadTeacherSettings

NODE = OmegaConf.create({"kind": "heads", "lambdas": [0.1, 1.0, 10.0], "chunk_size": 2, "accuracy_images": 10})
SETTINGS = head_teacher_settings(NODE)


@pytest.fixture
def world():
    rng = np.random.default_rng(0)
    n, d = 60, 12
    table = FeatureTable(features=rng.normal(size=(n, d)).astype(np.float16), rows=np.arange(n), identity={})
    labels = (rng.random((n, 3)) < 0.5).astype(np.uint8)
    parts = [np.arange(0, 9), np.arange(9, 18), np.arange(18, 26), np.arange(26, 34), np.arange(34, 42)]
    return table, labels, parts


def test_a_teacher_depends_only_on_its_own_part(world):
    table, labels, parts = world
    before = fit_heads(table, labels, parts, [0, 1, 2], SETTINGS.lambdas)
    changed = labels.copy()
    changed[parts[1]] ^= 1  # every label of teacher 1's records flipped
    after = fit_heads(table, changed, parts, [0, 1, 2], SETTINGS.lambdas)
    rows = {i: slice(before["offsets"][i], before["offsets"][i + 1]) for i in range(3)}
    for i in (0, 2):
        np.testing.assert_array_equal(before["beta"][rows[i]], after["beta"][rows[i]])
        np.testing.assert_array_equal(before["ybar"][i], after["ybar"][i])
    assert not np.array_equal(before["ybar"][1], after["ybar"][1])


def test_a_damaged_chunk_is_refitted_alone_and_named(world, tmp_path):
    table, labels, parts = world
    train_head_teachers(SETTINGS, table, labels, parts, tmp_path, progress=False)
    files = sorted(tmp_path.glob("heads_*.npz"))
    assert len(files) == 3  # chunks of 2, 2 and 1 teachers
    votes, accuracy = head_votes(
        SETTINGS, tmp_path, table, parts, np.arange(42, 50), np.arange(50, 60), labels[50:], progress=False
    )
    mtimes = {f.name: f.stat().st_mtime_ns for f in files}
    raw = bytearray(files[1].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    files[1].write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match=files[1].name):
        train_head_teachers(SETTINGS, table, labels, parts, tmp_path, progress=False)
    after = {f.name: f.stat().st_mtime_ns for f in sorted(tmp_path.glob("heads_*.npz"))}
    assert [name for name in after if after[name] != mtimes[name]] == [files[1].name]
    again, accuracy_again = head_votes(
        SETTINGS, tmp_path, table, parts, np.arange(42, 50), np.arange(50, 60), labels[50:], progress=False
    )
    np.testing.assert_array_equal(votes, again)
    np.testing.assert_array_equal(accuracy, accuracy_again)


def test_votes_match_the_heads_scores(world, tmp_path):
    """A vote is on iff the head's score exceeds 1/2; recompute one teacher's scores by hand."""
    table, labels, parts = world
    train_head_teachers(SETTINGS, table, labels, parts, tmp_path, progress=False)
    queries = np.arange(42, 50)
    votes, _ = head_votes(SETTINGS, tmp_path, table, parts, queries, np.arange(50, 60), labels[50:], progress=False)
    fitted = fit_heads(table, labels, parts, [3], SETTINGS.lambdas)
    x = table.features[parts[3]].astype(np.float32)
    w = (x - x.mean(0)).T @ fitted["beta"]
    scores = (table.features[queries].astype(np.float32) - x.mean(0)) @ w + fitted["ybar"][0]
    np.testing.assert_array_equal(votes[:, 3], scores > 0.5)


def test_a_chunks_identity_is_the_one_before_the_settings_existed():
    """Chunks saved before the settings object existed stay usable: the identity is still the SHA-256 of the
    teacher node as sorted JSON, then each teacher's index and part."""
    parts = [np.arange(0, 3), np.arange(3, 7)]
    h = hashlib.sha256(json.dumps(OmegaConf.to_container(NODE, resolve=True), sort_keys=True).encode())
    for i in (0, 1):
        h.update(f"|{i}|".encode())
        h.update(parts[i].astype(np.int64).tobytes())
    assert _identity(SETTINGS, [0, 1], parts) == h.hexdigest()


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        (
            "lambdas",
            [0.1, -1.0],
            r"teacher.lambdas=\[0.1, -1.0\]; expected a non-empty list of finite L2 strengths > 0",
        ),
        ("lambdas", [], r"teacher.lambdas=\[\]; expected"),
        ("chunk_size", 0, "teacher.chunk_size must be an integer >= 1, got 0"),
        ("accuracy_images", 2.5, "teacher.accuracy_images must be an integer >= 1, got 2.5"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(key, value, match):
    with pytest.raises(ValueError, match=match):
        HeadTeacherSettings(**{"lambdas": [1.0], "chunk_size": 1, "accuracy_images": 1, "identity": {}, key: value})
