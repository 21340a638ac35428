"""Content-addressed artifact cache for the pipeline stages (docs/architecture.md, section 2).

Every stage is a plain function of (its own config, upstream artifacts) that writes one directory. The
directory's name is a key derived from the stage name, the stage's own config, the keys of its upstream
artifacts and a fingerprint of the code that builds it (``Stage.code``: the modules of its builders, whose
imports are followed within the repository by ``pate.code_closure``; the syntax trees count, so editing a
comment or docstring keeps the cache, editing a line of code rebuilds). The data stage's config
holds a fingerprint of the data's content. All keys of a run are known before any work is done, and a sweep
that only changes the aggregator finds the teachers and votes it needs already built.

Guarantees:

* Atomic: a stage builds into ``<stage>/<key>.partial`` and the finished directory is renamed into place
  after its manifest (with a SHA-256 of every file) is written. A directory without a valid manifest is
  never used.
* Resumable: ``.partial`` survives a killed run, and its builder is handed the same directory again, so a
  stage that saves progress as it goes (the teacher ensemble saves each teacher) resumes where it stopped.
* Verified: an existing artifact is re-hashed before use. Its damaged files are moved aside (not deleted) to
  ``<key>.damaged-<n>/`` with a warning naming them; the intact files go back into the build directory, so a
  resumable stage redoes only what was damaged (one teacher, not the ensemble). A release drawn from secret noise
  (``draws_secret_noise``) is the exception: a damaged one is refused with an error, since rebuilding it would
  draw a second release of the same data.
* Trusted only as keyed: its manifest's stage, key, config and upstream keys must be those of the directory it
  sits in (``<stage>/<key>``) and of the Stage that asks for it. A directory copied over another key (in a shared
  cache, by mistake) is damage: moved aside whole and rebuilt, with one warning. A reader opens only the files its
  manifest lists (``Artifact.file``), each of them verified.
* Lazy: only the artifacts that a run actually reads are verified or built. If the votes of a run are
  cached, its teachers are not even looked at.
* Safe under concurrency: a build holds an exclusive lock file, so two sweep jobs needing the same teachers
  build them once; the second waits and then reuses.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pate.code_closure import code_fingerprint
from pate.errors import UserError
from pate.io import atomic_write_json as _atomic_write_json
from pate.io import exclusive_lock, sha256_file
from pate.locations import CHECKOUT

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
# Bump when the on-disk layout of manifests changes; part of every key.
CACHE_FORMAT = 1


@dataclass(frozen=True)
class Artifact:
    """A finished, verified artifact directory.

    ``files`` are the names its manifest lists, each verified by the store: a reader opens nothing else, so a file
    dropped into the directory afterwards is never read. None only for an Artifact made by hand around a directory
    that has no manifest (tests, tools); then every file that exists is served.
    """

    stage: str
    key: str
    path: Path
    files: frozenset[str] | None = None

    def has(self, name: str) -> bool:
        """Whether the stage wrote the output file ``name`` (its manifest lists it)."""
        if self.files is not None:
            return name in self.files
        return (self.path / name).is_file()

    def file(self, name: str) -> Path:
        """Path of one output file; raises if the stage did not write it (its manifest does not list it)."""
        p = self.path / name
        if self.files is not None and name not in self.files:
            raise FileNotFoundError(
                f"artifact {self.stage}/{self.key}: file {name!r} is not in its manifest "
                f"(expected one of the {len(self.files)} file(s) the stage wrote); a file the "
                f"manifest does not list is never read"
            )
        if not p.exists():
            raise FileNotFoundError(f"artifact {self.stage}/{self.key} has no file {name!r}")
        return p


Builder = Callable[[Path, Mapping[str, Artifact]], None]


@dataclass(frozen=True)
class Stage:
    """A node of the stage graph: what to build and from what.

    ``config`` is the stage's own config (plain JSON-able values); ``upstream`` maps a name to the stage it
    reads; ``build(work_dir, upstream_artifacts)`` writes the outputs into ``work_dir``.
    """

    name: str
    config: Mapping[str, Any]
    build: Builder = field(compare=False, repr=False)
    upstream: Mapping[str, Stage] = field(default_factory=dict)
    code: tuple[str, ...] = ()  # modules that build it; what they import counts too (pate.code_closure)

    @property
    def upstream_keys(self) -> dict[str, str]:
        """Upstream name -> its key, as the key hashes them and the manifest records them."""
        return {name: up.key for name, up in sorted(self.upstream.items())}

    @property
    def key(self) -> str:
        """SHA-256 (first 16 hex digits) of the canonical JSON of stage, config, upstream keys and the
        fingerprint of ``code``."""
        payload = {
            "format": CACHE_FORMAT,
            "stage": self.name,
            "config": self.config,
            "upstream": self.upstream_keys,
            **({"code": code_fingerprint(self.code)} if self.code else {}),
        }
        return hashlib.sha256(_canonical(payload).encode()).hexdigest()[:16]

    @property
    def definition(self) -> str:
        """What the stage computes, without the code: the key's hash over the stage, its config and its upstream
        stages' definitions, no code fingerprint. One definition is the same quantity of the same data by the same
        settings, whatever the code version (``pate.pipeline.budget`` tells a second release by it)."""
        payload = {
            "format": CACHE_FORMAT,
            "stage": self.name,
            "config": self.config,
            "upstream": {name: up.definition for name, up in sorted(self.upstream.items())},
        }
        return hashlib.sha256(_canonical(payload).encode()).hexdigest()[:16]


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"stage config value {value!r} of type {type(value).__name__} is not JSON-serialisable")


def code_version() -> dict[str, str]:
    """Package version and, when run from a git clone, the commit (with ``-dirty`` for local edits); an installed
    package says ``"installed"``, never the commit of a repository it happens to be installed under."""
    from pate import __version__

    version = {"pate": __version__}
    if CHECKOUT is None or not (CHECKOUT / ".git").exists():
        version["git"] = "installed" if CHECKOUT is None else "unknown"
        return version
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=CHECKOUT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        version["git"] = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        version["git"] = "unknown"
    return version


def atomic_write_json(path: Path, obj: Any) -> None:
    """``pate.io.atomic_write_json`` that also serialises numpy values and paths."""
    _atomic_write_json(path, obj, default=_json_default)


class ReleaseGuard(Protocol):
    """What the store asks before and after it draws a release from secret noise (``draws_secret_noise``): the
    privacy budget records the release before its noise is drawn and checks what was recorded after
    (``pate.pipeline.budget.BudgetGuard``)."""

    def before_draw(self, stage: Stage) -> None: ...
    def after_draw(self, stage: Stage, work: Path) -> None: ...


class ArtifactStore:
    """The cache directory: ``<root>/<stage>/<key>/`` holds one artifact. ``guard`` (optional) is told of every
    release about to be drawn from secret noise, and of what it wrote (:class:`ReleaseGuard`)."""

    def __init__(self, root: str | os.PathLike, guard: ReleaseGuard | None = None):
        self.root = Path(root)
        self.guard = guard
        # artifacts this store built or verified: a stage read twice in one run is hashed once
        self._seen: dict[Path, Artifact] = {}
        # those of them found finished rather than built (a secure release read back says it drew no new noise)
        self._reused: set[Path] = set()

    def path(self, stage: Stage) -> Path:
        return self.root / stage.name / stage.key

    def work_path(self, stage: Stage) -> Path:
        """The resumable build directory of ``stage`` (what a cluster shard writes into before the final build)."""
        return self.path(stage).with_name(stage.key + ".partial")

    def get(self, stage: Stage) -> Artifact:
        """The verified artifact of ``stage``, building it (and what it needs) first if necessary."""
        final = self.path(stage)
        if final in self._seen and final.exists():
            return self._seen[final]
        if final in self._seen and draws_secret_noise(stage):
            raise UserError(
                f"{stage.name}: the release {final} that this run read was deleted while the run went on (by "
                f"`pate-cache prune` or by hand); this run stops rather than draw a second release of the same data. "
                f"Nothing it printed or wrote came from another release; run the same command again to draw anew "
                f"(counted in the data's privacy budget)"
            )
        found = self._verified(stage, final)
        if found is not None:
            log.info("%s: reusing %s", stage.name, final)
            self._seen[final] = found
            self._reused.add(final)
            return found
        final.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(final.with_name(final.name + ".lock")):
            found = self._verified(stage, final)  # another process may have built it while we waited
            if found is not None:
                self._seen[final] = found
                self._reused.add(final)
                return found
            inputs = {name: self.get(up) for name, up in stage.upstream.items()}
            work = self.work_path(stage)
            work.mkdir(exist_ok=True)
            log.info("%s: building %s", stage.name, final)
            secret = draws_secret_noise(stage) and self.guard is not None
            if secret:
                self.guard.before_draw(stage)
            stage.build(work, inputs)
            if secret:
                self.guard.after_draw(stage, work)
            files = self._write_manifest(stage, work, inputs)
            os.replace(work, final)
        self._seen[final] = Artifact(stage.name, stage.key, final, frozenset(files))
        return self._seen[final]

    def reused(self, stage: Stage) -> bool:
        """Whether this store found ``stage``'s artifact already built (by an earlier run or another process)
        instead of building it."""
        return self.path(stage) in self._reused

    def _verified(self, stage: Stage, final: Path) -> Artifact | None:
        """The artifact if its manifest describes ``stage`` as keyed (``_not_as_keyed``) and every file checks out.
        Otherwise it is not used: when the manifest is ``stage``'s, only the damaged files are moved aside and the
        intact ones go back into the build directory, so a resumable builder (the teachers save one file per
        teacher) redoes only what was damaged; when it is unreadable or another stage's or config's, the whole
        directory is moved aside."""
        if not final.exists():
            return None
        manifest = _manifest(final)
        wrong = (
            "unreadable manifest, or one that lists a file outside its directory"
            if manifest is None
            else _not_as_keyed(manifest, stage)
        )
        damaged = None if wrong is not None else _damaged_files(final, manifest["files"])
        if damaged == {}:
            return Artifact(stage.name, stage.key, final, frozenset(manifest["files"]))
        if draws_secret_noise(stage):
            why = wrong or "; ".join(f"{name} ({what})" for name, what in sorted(damaged.items()))
            raise UserError(
                f"{stage.name}: the release {final} was drawn from secret noise and is damaged ({why}); it is left "
                f"as it is. Rebuilding it would draw a second release of the same data. Restore the directory from a "
                f"copy, or move it away yourself and run again: the new release is then counted in the data's "
                f"privacy budget beside the first (`pate-cache budget`)"
            )
        n = 0
        while (aside := final.with_name(f"{final.name}.damaged-{n}")).exists():
            n += 1
        work = self.work_path(stage)
        if damaged is None or work.exists():
            why = wrong if wrong is not None else "a build directory is already there"
            log.warning("%s: artifact %s is damaged (%s); moved to %s and rebuilding", stage.name, final, why, aside)
            os.replace(final, aside)
            return None
        aside.mkdir()
        for name in damaged:
            if (final / name).exists():
                (aside / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(final / name, aside / name)
        os.replace(final / MANIFEST, aside / MANIFEST)
        os.replace(final, work)
        kept = sum(1 for p in work.rglob("*") if p.is_file())
        log.warning(
            "%s: artifact %s has %d damaged file(s): %s; moved them to %s, kept the %d intact file(s) and "
            "rebuilding only what is missing",
            stage.name,
            final,
            len(damaged),
            "; ".join(f"{name} ({why})" for name, why in sorted(damaged.items())),
            aside,
            kept,
        )
        return None

    @staticmethod
    def _write_manifest(stage: Stage, work: Path, inputs: Mapping[str, Artifact]) -> dict[str, dict[str, Any]]:
        """Write ``work``'s manifest; returns its ``files`` (what the artifact's readers may open)."""
        files = {
            str(p.relative_to(work)): {"sha256": sha256_file(p), "bytes": p.stat().st_size}
            for p in sorted(work.rglob("*"))
            if p.is_file() and p.name != MANIFEST
        }
        manifest = {
            "stage": stage.name,
            "key": stage.key,
            "config": stage.config,
            "upstream": {name: art.key for name, art in sorted(inputs.items())},
            "code_version": code_version(),
            "files": files,
        }
        atomic_write_json(work / MANIFEST, manifest)
        return files

    def remove(self, stage: Stage) -> None:
        """Delete an artifact (for tests and for users forcing a rebuild)."""
        self._seen.pop(self.path(stage), None)
        shutil.rmtree(self.path(stage), ignore_errors=True)


def draws_secret_noise(stage: Stage) -> bool:
    """Whether ``stage`` draws secret noise (its config holds ``noise: secure``, as every release stage's does under
    ``privacy.noise=secure``: ``pate.pipeline.noise.NoiseSource.key``). Such an artifact is made once: a damaged one
    is refused, never silently rebuilt, since a rebuild is a second release that no ledger prices."""
    return stage.config.get("noise") == "secure"


def read_artifact(root: str | os.PathLike, stage: str, key: str) -> Artifact | None:
    """The finished artifact ``root/stage/key`` if its manifest names that stage and key and every file checks out,
    else None; read-only (a report verifying a sweep must not move a damaged artifact aside as a build would)."""
    path = Path(root) / stage / key
    manifest = _manifest(path) if path.is_dir() else None
    if manifest is None or _where_mismatch(manifest, stage, key) is not None or _damaged_files(path, manifest["files"]):
        return None
    return Artifact(stage, key, path, frozenset(manifest["files"]))


def _manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of the artifact directory ``path``; None when it cannot be read, or when it lists a file that
    is not a plain name inside the directory (a reader would open what lies outside)."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
        names = list(files)
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.debug("unreadable manifest in %s: %s", path, err)
        return None
    if not isinstance(files, dict) or any(
        Path(name).is_absolute() or ".." in Path(name).parts or name == MANIFEST for name in names
    ):
        log.debug("manifest in %s lists a file outside its directory", path)
        return None
    return manifest


def _where_mismatch(manifest: Mapping[str, Any], stage: str, key: str) -> str | None:
    """Why ``manifest`` is not that of the directory ``<stage>/<key>`` it sits in (None when it is)."""
    for name, expected in (("stage", stage), ("key", key)):
        if manifest.get(name) != expected:
            return (
                f"its manifest says {name}={manifest.get(name)!r}, expected {name}={expected!r} (the directory "
                f"{stage}/{key}): it was copied or moved from another artifact"
            )
    return None


def _not_as_keyed(manifest: Mapping[str, Any], stage: Stage) -> str | None:
    """Why ``manifest`` does not describe ``stage`` as its key was computed (stage name, key, config, upstream keys),
    None when it does. The key alone is the directory's name: a directory copied over another config's key keeps
    its own manifest, which tells."""
    wrong = _where_mismatch(manifest, stage.name, stage.key)
    if wrong is not None:
        return wrong
    for name, expected in (("config", stage.config), ("upstream", stage.upstream_keys)):
        found = manifest.get(name)
        if _canonical(found) != _canonical(expected):
            where, value, want = _first_difference(json.loads(_canonical(found)), json.loads(_canonical(expected)))
            return (
                f"its manifest's {name} has {where or name}={value!r}, the stage asks for {want!r}: it was "
                f"built for another config"
            )
    return None


def _canonical(value: Any) -> str:
    """``value`` as the key hashes it (sorted keys, numpy and paths as JSON): equal iff the key's input is equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_json_default)


_ABSENT = "<absent>"


def _first_difference(found: Any, expected: Any, prefix: str = "") -> tuple[str, Any, Any]:
    """(dotted key, found value, expected value) of the first place two JSON values differ, to name it in a log."""
    if isinstance(found, dict) and isinstance(expected, dict):
        for name in sorted(set(found) | set(expected)):
            a, b = found.get(name, _ABSENT), expected.get(name, _ABSENT)
            if _canonical(a) != _canonical(b):
                return _first_difference(a, b, f"{prefix}.{name}" if prefix else str(name))
    return prefix, found, expected


def _damaged_files(path: Path, files: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """{file: what is wrong} for every file of the manifest's ``files`` that is missing or fails its size or SHA-256,
    and every file in the directory that the manifest does not list (a manifest that lost an entry, or a file
    dropped in later: either way the manifest no longer describes the directory); {} when all are intact."""
    damaged = {
        str(p.relative_to(path)): "not in the manifest"
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != MANIFEST and str(p.relative_to(path)) not in files
    }
    for name, meta in files.items():
        p = path / name
        if not p.is_file():
            damaged[name] = "missing"
        elif p.stat().st_size != meta["bytes"] or sha256_file(p) != meta["sha256"]:
            damaged[name] = "checksum mismatch"
    return damaged
