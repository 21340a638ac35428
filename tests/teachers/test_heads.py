"""Teacher heads: each teacher sees only its own part; resume after a kill or a damaged chunk file."""

import numpy as np
import pytest
from omegaconf import OmegaConf

from pate.features import FeatureTable
from teachers.heads import fit_heads, head_votes, train_head_teachers

CFG = OmegaConf.create({"kind": "heads", "lambdas": [0.1, 1.0, 10.0], "chunk_size": 2, "accuracy_images": 10})


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
    before = fit_heads(table, labels, parts, [0, 1, 2], CFG.lambdas)
    changed = labels.copy()
    changed[parts[1]] ^= 1  # every label of teacher 1's records flipped
    after = fit_heads(table, changed, parts, [0, 1, 2], CFG.lambdas)
    rows = {i: slice(before["offsets"][i], before["offsets"][i + 1]) for i in range(3)}
    for i in (0, 2):
        np.testing.assert_array_equal(before["beta"][rows[i]], after["beta"][rows[i]])
        np.testing.assert_array_equal(before["ybar"][i], after["ybar"][i])
    assert not np.array_equal(before["ybar"][1], after["ybar"][1])


def test_a_damaged_chunk_is_refitted_alone_and_named(world, tmp_path):
    table, labels, parts = world
    train_head_teachers(CFG, table, labels, parts, tmp_path, progress=False)
    files = sorted(tmp_path.glob("heads_*.npz"))
    assert len(files) == 3  # chunks of 2, 2 and 1 teachers
    votes, accuracy = head_votes(CFG, tmp_path, table, parts, np.arange(42, 50), np.arange(50, 60), labels[50:],
                                 progress=False)
    mtimes = {f.name: f.stat().st_mtime_ns for f in files}
    raw = bytearray(files[1].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    files[1].write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match=files[1].name):
        train_head_teachers(CFG, table, labels, parts, tmp_path, progress=False)
    after = {f.name: f.stat().st_mtime_ns for f in sorted(tmp_path.glob("heads_*.npz"))}
    assert [name for name in after if after[name] != mtimes[name]] == [files[1].name]
    again, accuracy_again = head_votes(CFG, tmp_path, table, parts, np.arange(42, 50), np.arange(50, 60),
                                       labels[50:], progress=False)
    np.testing.assert_array_equal(votes, again)
    np.testing.assert_array_equal(accuracy, accuracy_again)


def test_votes_match_the_heads_scores(world, tmp_path):
    """A vote is on iff the head's score exceeds 1/2; recompute one teacher's scores by hand."""
    table, labels, parts = world
    train_head_teachers(CFG, table, labels, parts, tmp_path, progress=False)
    queries = np.arange(42, 50)
    votes, _ = head_votes(CFG, tmp_path, table, parts, queries, np.arange(50, 60), labels[50:], progress=False)
    fitted = fit_heads(table, labels, parts, [3], CFG.lambdas)
    x = table.features[parts[3]].astype(np.float32)
    w = (x - x.mean(0)).T @ fitted["beta"]
    scores = (table.features[queries].astype(np.float32) - x.mean(0)) @ w + fitted["ybar"][0]
    np.testing.assert_array_equal(votes[:, 3], scores > 0.5)
