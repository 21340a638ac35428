"""The content-addressed artifact cache: keys, reuse, atomicity, resume, damage detection."""

import json

import pytest

from pate.artifacts import MANIFEST, ArtifactStore, Stage


class Counter:
    """A builder that records how often it ran and writes a file derived from its upstream."""

    def __init__(self, text="x"):
        self.calls = 0
        self.text = text

    def __call__(self, work, upstream):
        self.calls += 1
        parts = [self.text] + [up.file("out.txt").read_text() for _, up in sorted(upstream.items())]
        (work / "out.txt").write_text("+".join(parts))


def test_key_depends_on_config_and_upstream_only():
    a = Stage("a", {"x": 1}, Counter())
    assert a.key == Stage("a", {"x": 1}, Counter("other builder")).key
    assert a.key != Stage("a", {"x": 2}, Counter()).key
    assert a.key != Stage("b", {"x": 1}, Counter()).key
    b1 = Stage("b", {}, Counter(), {"a": a})
    b2 = Stage("b", {}, Counter(), {"a": Stage("a", {"x": 2}, Counter())})
    assert b1.key != b2.key
    # key order in the config does not matter
    assert Stage("a", {"x": 1, "y": 2}, Counter()).key == Stage("a", {"y": 2, "x": 1}, Counter()).key


def test_one_run_verifies_each_artifact_once(tmp_path, monkeypatch):
    store = ArtifactStore(tmp_path)
    stage = Stage("a", {}, Counter())
    store.get(stage)
    fresh = ArtifactStore(tmp_path)
    fresh.get(stage)
    monkeypatch.setattr("pate.artifacts._check_manifest", lambda path: pytest.fail("hashed twice"))
    fresh.get(stage)


def test_builds_once_then_reuses(tmp_path):
    store = ArtifactStore(tmp_path)
    build_a, build_b = Counter("a"), Counter("b")
    a = Stage("a", {"x": 1}, build_a)
    b = Stage("b", {}, build_b, {"a": a})
    art = store.get(b)
    assert art.file("out.txt").read_text() == "b+a"
    assert store.get(b).path == art.path
    assert (build_a.calls, build_b.calls) == (1, 1)
    manifest = json.loads((art.path / MANIFEST).read_text())
    assert manifest["upstream"] == {"a": a.key} and "out.txt" in manifest["files"]


def test_cached_downstream_does_not_touch_upstream(tmp_path):
    store = ArtifactStore(tmp_path)
    a = Stage("a", {}, Counter("a"))
    b = Stage("b", {}, Counter("b"), {"a": a})
    store.get(b)
    store.remove(a)  # upstream gone: b is still served from the cache without rebuilding a
    fail = Stage("a", {}, lambda work, up: pytest.fail("upstream rebuilt"))
    assert store.get(Stage("b", {}, Counter("b"), {"a": fail})).file("out.txt").read_text() == "b+a"


def test_damaged_artifact_is_moved_aside_and_rebuilt(tmp_path):
    store = ArtifactStore(tmp_path)
    build = Counter()
    stage = Stage("a", {}, build)
    art = store.get(stage)
    (art.path / "out.txt").write_text("tampered")
    art2 = ArtifactStore(tmp_path).get(stage)  # the next run verifies what it reuses
    assert build.calls == 2
    assert art2.file("out.txt").read_text() == "x"
    assert (tmp_path / "a" / f"{stage.key}.damaged-0" / "out.txt").read_text() == "tampered"


def test_missing_manifest_counts_as_damaged(tmp_path):
    store = ArtifactStore(tmp_path)
    build = Counter()
    stage = Stage("a", {}, build)
    (store.get(stage).path / MANIFEST).unlink()
    ArtifactStore(tmp_path).get(stage)
    assert build.calls == 2


def test_failed_build_leaves_no_artifact_and_resumes_from_partial(tmp_path):
    store = ArtifactStore(tmp_path)
    attempts = []

    def flaky(work, upstream):
        attempts.append(sorted(p.name for p in work.iterdir()))
        (work / "step1").write_text("done")  # progress saved before the crash
        if len(attempts) == 1:
            raise KeyboardInterrupt("killed")
        (work / "step2").write_text("done")

    stage = Stage("a", {}, flaky)
    with pytest.raises(KeyboardInterrupt):
        store.get(stage)
    assert not store.path(stage).exists()
    art = store.get(stage)
    assert attempts == [[], ["step1"]]  # the second attempt saw the first one's progress
    assert sorted(json.loads((art.path / MANIFEST).read_text())["files"]) == ["step1", "step2"]


def test_unserialisable_config_is_refused():
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        Stage("a", {"x": object()}, Counter()).key
