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
    monkeypatch.setattr("pate.artifacts._damaged_files", lambda path: pytest.fail("hashed twice"))
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


class PerItem:
    """A resumable builder: one file per item, skipping items whose file exists (as the teachers do)."""

    def __init__(self, items=3):
        self.items, self.built = items, []

    def __call__(self, work, upstream):
        for i in range(self.items):
            if not (work / f"item_{i}.txt").exists():
                self.built.append(i)
                (work / f"item_{i}.txt").write_text(f"item {i}")


def test_a_damaged_file_costs_only_that_file(tmp_path, caplog):
    build = PerItem()
    stage = Stage("ensemble", {}, build)
    art = ArtifactStore(tmp_path).get(stage)
    (art.path / "item_1.txt").write_text("tampered")
    build.built.clear()
    again = ArtifactStore(tmp_path).get(stage)
    assert build.built == [1]
    assert [again.file(f"item_{i}.txt").read_text() for i in range(3)] == ["item 0", "item 1", "item 2"]
    aside = tmp_path / "ensemble" / f"{stage.key}.damaged-0"
    assert sorted(p.name for p in aside.iterdir()) == sorted([MANIFEST, "item_1.txt"])
    assert "item_1.txt (checksum mismatch)" in caplog.text and "kept the 2 intact" in caplog.text


def test_code_fingerprint_ignores_docstrings_and_comments_but_not_code(tmp_path, monkeypatch):
    import pate.artifacts as artifacts

    monkeypatch.setattr(artifacts, "REPO_ROOT", tmp_path)
    source = tmp_path / "mod.py"

    def fingerprint(text):
        source.write_text(text)
        artifacts.code_fingerprint.cache_clear()
        return artifacts.code_fingerprint(("mod.py",))

    base = fingerprint('"""Doc."""\n\ndef f(x):\n    """Doc."""\n    return 2 * x\n')
    assert fingerprint('"""Other doc."""\n\n# a comment\ndef f(x):\n    return 2 * x  # why\n') == base
    assert fingerprint('"""Doc."""\n\ndef f(x):\n    return 3 * x\n') != base
    artifacts.code_fingerprint.cache_clear()
    with pytest.raises(FileNotFoundError, match="nowhere.py"):
        artifacts.code_fingerprint(("nowhere.py",))


def test_a_stage_key_covers_its_code():
    a = Stage("a", {}, Counter(), code=("pate/privacy",))
    assert a.key != Stage("a", {}, Counter()).key
    assert a.key != Stage("a", {}, Counter(), code=("pate/privacy", "pate/mechanisms")).key
