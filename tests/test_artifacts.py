"""The content-addressed artifact cache: keys, reuse, atomicity, resume, damage detection."""

import json
import shutil
from pathlib import Path

import pytest

from pate.artifacts import MANIFEST, ArtifactStore, Stage, read_artifact
from pate.errors import UserError
from pate.code_closure import code_closure, code_fingerprint


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


def _copy_over(source, target) -> None:
    """What a member of a group-shared cache might do by mistake: one artifact directory copied over another key."""
    shutil.rmtree(target)
    shutil.copytree(source, target)


def test_a_directory_copied_over_another_configs_key_is_moved_aside_and_rebuilt(tmp_path, caplog):
    one, two = Stage("a", {"x": 1}, Counter("one")), Stage("a", {"x": 2}, Counter("two"))
    store = ArtifactStore(tmp_path)
    _copy_over(store.get(one).path, store.get(two).path)
    again = ArtifactStore(tmp_path).get(two)
    assert again.file("out.txt").read_text() == "two"
    aside = tmp_path / "a" / f"{two.key}.damaged-0"
    assert (aside / "out.txt").read_text() == "one"  # moved aside whole, not deleted
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and f"key={one.key!r}, expected key={two.key!r}" in warnings[0]


def test_a_manifest_relabelled_to_the_key_but_built_for_another_config_is_rebuilt(tmp_path, caplog):
    one, two = Stage("a", {"x": 1, "y": 0}, Counter("one")), Stage("a", {"x": 2, "y": 0}, Counter("two"))
    store = ArtifactStore(tmp_path)
    target = store.get(two).path
    _copy_over(store.get(one).path, target)
    manifest = json.loads((target / MANIFEST).read_text())
    (target / MANIFEST).write_text(json.dumps({**manifest, "key": two.key}))
    assert ArtifactStore(tmp_path).get(two).file("out.txt").read_text() == "two"
    assert "its manifest's config has x=1, the stage asks for 2" in caplog.text


def test_an_artifact_moved_to_another_stage_is_rebuilt(tmp_path, caplog):
    a, b = Stage("a", {}, Counter("a")), Stage("b", {}, Counter("b"))
    store = ArtifactStore(tmp_path)
    (tmp_path / "b").mkdir()
    shutil.copytree(store.get(a).path, tmp_path / "b" / b.key)  # same config: only the stage tells them apart
    assert ArtifactStore(tmp_path).get(b).file("out.txt").read_text() == "b"
    assert "stage='a', expected stage='b'" in caplog.text


def test_a_reader_opens_only_the_files_the_manifest_lists(tmp_path):
    """A file dropped into a finished artifact is never read; the next store that verifies the directory finds a
    file its manifest does not list, which is damage: moved aside, and the artifact rebuilt without it."""
    art = ArtifactStore(tmp_path).get(Stage("a", {}, Counter()))
    (art.path / "extra.txt").write_text("dropped in later")
    assert art.has("out.txt") and not art.has("extra.txt")
    with pytest.raises(FileNotFoundError, match="'extra.txt' is not in its manifest"):
        art.file("extra.txt")
    rebuilt = ArtifactStore(tmp_path).get(Stage("a", {}, Counter()))
    assert not (rebuilt.path / "extra.txt").exists() and rebuilt.file("out.txt").read_text() == "x"
    assert (tmp_path / "a" / f"{art.key}.damaged-0" / "extra.txt").read_text() == "dropped in later"


def test_a_manifest_listing_a_file_outside_its_directory_is_damage(tmp_path):
    stage = Stage("a", {}, Counter())
    art = ArtifactStore(tmp_path).get(stage)
    manifest = json.loads((art.path / MANIFEST).read_text())
    manifest["files"]["../outside.txt"] = manifest["files"]["out.txt"]
    (tmp_path / "a" / "outside.txt").write_text("x")
    (art.path / MANIFEST).write_text(json.dumps(manifest))
    assert read_artifact(tmp_path, "a", stage.key) is None
    ArtifactStore(tmp_path).get(stage)
    assert (tmp_path / "a" / f"{stage.key}.damaged-0").is_dir()


def test_the_read_only_reader_refuses_a_copy_under_another_key(tmp_path):
    store = ArtifactStore(tmp_path)
    one, two = Stage("a", {"x": 1}, Counter()), Stage("a", {"x": 2}, Counter())
    _copy_over(store.get(one).path, store.get(two).path)
    assert read_artifact(tmp_path, "a", one.key) is not None
    assert read_artifact(tmp_path, "a", two.key) is None


def _project(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _fingerprint(entries, root):
    code_closure.cache_clear()
    code_fingerprint.cache_clear()
    return code_fingerprint(entries, root)


def test_code_fingerprint_ignores_docstrings_and_comments_but_not_code(tmp_path):
    _project(tmp_path, {"pkg/__init__.py": ""})

    def fingerprint(text):
        (tmp_path / "pkg" / "mod.py").write_text(text)
        return _fingerprint(("pkg.mod",), tmp_path)

    base = fingerprint('"""Doc."""\n\ndef f(x):\n    """Doc."""\n    return 2 * x\n')
    assert fingerprint('"""Other doc."""\n\n# a comment\ndef f(x):\n    return 2 * x  # why\n') == base
    assert fingerprint('"""Doc."""\n\ndef f(x):\n    return 3 * x\n') != base
    with pytest.raises(FileNotFoundError, match="'pkg.nowhere'"):
        _fingerprint(("pkg.nowhere",), tmp_path)


def test_a_relative_import_or_an_import_of_a_missing_module_is_refused_naming_the_line(tmp_path):
    """The fingerprint follows absolute imports only, and an import it cannot follow to a file is an error, not a
    module left out of the key; a file fixed in the same process is read again."""
    _project(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": "import os\n\nfrom . import other\n"})
    with pytest.raises(ValueError, match="pkg/mod.py line 3: relative import"):
        _fingerprint(("pkg.mod",), tmp_path)
    (tmp_path / "pkg" / "mod.py").write_text("import os\nimport pkg.gone\n")
    with pytest.raises(ValueError, match="pkg/mod.py line 2: imports 'pkg.gone', which has no file"):
        _fingerprint(("pkg.mod",), tmp_path)
    (tmp_path / "pkg" / "mod.py").write_text("import os\n")
    assert len(_fingerprint(("pkg.mod",), tmp_path)) == 16


def test_editing_an_imported_helper_changes_the_key_and_an_unrelated_module_does_not(tmp_path):
    """A builder's key follows what it imports, transitively (a helper two imports away, one imported inside a
    function), and the enclosing packages' __init__; a module it never imports does not count."""
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/build.py": "from pkg.util import scale\n\ndef build(x):\n    from pkg import late\n    return scale(x)\n",
            "pkg/util.py": "import pkg.deep.helper\n\ndef scale(x):\n    return pkg.deep.helper.twice(x)\n",
            "pkg/deep/__init__.py": "",
            "pkg/deep/helper.py": "def twice(x):\n    return 2 * x\n",
            "pkg/late.py": "VALUE = 1\n",
            "pkg/unrelated.py": "VALUE = 1\n",
        },
    )
    code_closure.cache_clear()
    assert code_closure(("pkg.build",), tmp_path) == (
        "pkg/__init__.py",
        "pkg/build.py",
        "pkg/deep/__init__.py",
        "pkg/deep/helper.py",
        "pkg/late.py",
        "pkg/util.py",
    )
    base = _fingerprint(("pkg.build",), tmp_path)
    (tmp_path / "pkg/unrelated.py").write_text("VALUE = 2\n")
    assert _fingerprint(("pkg.build",), tmp_path) == base
    (tmp_path / "pkg/deep/helper.py").write_text("def twice(x):\n    return x + x\n")
    edited = _fingerprint(("pkg.build",), tmp_path)
    assert edited != base
    (tmp_path / "pkg/late.py").write_text("VALUE = 2\n")
    assert _fingerprint(("pkg.build",), tmp_path) != edited
    code_closure.cache_clear()
    code_fingerprint.cache_clear()


def test_a_submodule_import_does_not_follow_the_package_re_exports(tmp_path):
    """``from pkg.sub import checks`` runs pkg/sub/__init__.py (it is hashed) but does not depend on what that
    __init__ re-exports; ``from pkg.sub import Name`` reads the package's namespace and follows it."""
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from pkg.sub.heavy import Name\n",
            "pkg/sub/checks.py": "",
            "pkg/sub/heavy.py": "Name = 1\n",
            "pkg/a.py": "from pkg.sub import checks\n",
            "pkg/b.py": "from pkg.sub import Name\n",
        },
    )
    code_closure.cache_clear()
    assert "pkg/sub/heavy.py" not in code_closure(("pkg.a",), tmp_path)
    assert "pkg/sub/__init__.py" in code_closure(("pkg.a",), tmp_path)
    assert "pkg/sub/heavy.py" in code_closure(("pkg.b",), tmp_path)
    code_closure.cache_clear()


def test_the_real_stages_cover_the_helpers_they_import():
    """The drift a hand-kept list had: the teacher heads use pate.privacy.checks and pate.progress."""
    from pate.pipeline.graph import CODE

    teachers = code_closure(CODE["teachers"])
    assert {"teachers/heads.py", "pate/privacy/checks.py", "pate/progress.py", "teachers/training/trainer.py"} <= set(
        teachers
    )
    assert "pate/privacy/ledger.py" not in teachers  # the accountant does not retrain teachers
    assert "pate/privacy/ledger.py" in code_closure(CODE["aggregate"])
    assert not any(path.startswith(("teachers/", "teachers/training/")) for path in code_closure(CODE["partition"]))


def test_a_users_own_package_outside_the_installation_is_fingerprinted_and_site_packages_are_not(tmp_path, monkeypatch):
    """An installed package has no clone around it: a user's method in a package beside their configs is found
    where Python finds it, so editing it changes the key; the same package under site-packages is a library,
    keyed by its settings."""
    from pate.code_closure import _package_root, module_file

    _project(
        tmp_path / "work",
        {"mylab/__init__.py": "", "mylab/method.py": "import mylab.util\n", "mylab/util.py": "SCALE = 1\n"},
    )
    _project(tmp_path / "env" / "site-packages", {"theirlib/__init__.py": "", "theirlib/model.py": ""})
    monkeypatch.syspath_prepend(str(tmp_path / "work"))
    monkeypatch.syspath_prepend(str(tmp_path / "env" / "site-packages"))
    _package_root.cache_clear()
    assert code_closure(("mylab.method",)) == ("mylab/__init__.py", "mylab/method.py", "mylab/util.py")
    base = _fingerprint(("mylab.method",), None)
    (tmp_path / "work" / "mylab" / "util.py").write_text("SCALE = 2\n")
    assert _fingerprint(("mylab.method",), None) != base
    assert module_file("theirlib.model") is None and module_file("numpy.linalg") is None
    assert module_file("pate.votes") is not None
    _package_root.cache_clear()
    code_closure.cache_clear()
    code_fingerprint.cache_clear()


def test_a_stage_key_covers_its_code():
    a = Stage("a", {}, Counter(), code=("pate.privacy",))
    assert a.key != Stage("a", {}, Counter()).key
    assert a.key != Stage("a", {}, Counter(), code=("pate.privacy", "pate.mechanisms")).key


@pytest.mark.parametrize("damage", ["checksum", "copied over", "manifest entry lost"])
def test_a_damaged_secret_noise_release_is_refused_not_drawn_again(tmp_path, damage):
    """A release drawn from secret noise is made once: rebuilding a damaged one would draw a second release of the
    same data (fresh secret noise: other labels). It is refused as a UserError (train.py: one line, exit 2) naming
    the directory and what to do, and left as it is; a seeded stage's damaged artifact is rebuilt as before (its
    redraw is the same draw). A manifest that lost the entry of a file in its directory is damage like any other."""
    secure, other = (
        Stage("aggregate", {"noise": "secure", "x": 1}, Counter("one")),
        Stage("aggregate", {"x": 2}, Counter("two")),
    )
    store = ArtifactStore(tmp_path)
    path = store.get(secure).path
    if damage == "checksum":
        (path / "out.txt").write_text("tampered")
    elif damage == "copied over":
        _copy_over(store.get(other).path, path)
    else:
        _drop_manifest_entry(path, "out.txt")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(
        UserError,
        match=rf"the release {path} was drawn from secret noise and is damaged .* "
        r"Rebuilding it would draw a second release of the same data. Restore",
    ):
        ArtifactStore(tmp_path).get(secure)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing moved or rebuilt
    seeded = Stage("aggregate", {"noise": "seeded", "seed": 0}, Counter("three"))
    if damage == "manifest entry lost":
        _drop_manifest_entry(store.get(seeded).path, "out.txt")
    else:
        (store.get(seeded).path / "out.txt").write_text("tampered")
    assert ArtifactStore(tmp_path).get(seeded).file("out.txt").read_text() == "three"


def _drop_manifest_entry(path: Path, name: str) -> None:
    """Remove ``name``'s entry from the manifest of the artifact ``path``, leaving the file in place."""
    manifest = json.loads((path / MANIFEST).read_text())
    del manifest["files"][name]
    (path / MANIFEST).write_text(json.dumps(manifest))
