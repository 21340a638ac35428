"""Content-addressed artifact cache for the pipeline stages (DESIGN.md section 3).

Every stage is a plain function of (its own config, upstream artifacts) that writes one directory. The
directory's name is a key derived from the stage name, the stage's own config and the keys of its upstream
artifacts -- never from the content of anything -- so all keys of a run are known before any work is done,
and a sweep that only changes the aggregator finds the teachers and votes it needs already built.

Guarantees:

* Atomic: a stage builds into ``<stage>/<key>.partial`` and the finished directory is renamed into place
  after its manifest (with a SHA-256 of every file) is written. A directory without a valid manifest is
  never used.
* Resumable: ``.partial`` survives a killed run, and its builder is handed the same directory again, so a
  stage that saves progress as it goes (the teacher ensemble saves each teacher) resumes where it stopped.
* Verified: an existing artifact is re-hashed before use. A damaged one is moved aside (not deleted) to
  ``<key>.damaged-<n>`` with a warning and rebuilt.
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
from typing import Any

from pate.io import atomic_write_json as _atomic_write_json
from pate.io import exclusive_lock, sha256_file

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
# Bump when the on-disk layout of manifests changes; part of every key.
CACHE_FORMAT = 1


@dataclass(frozen=True)
class Artifact:
    """A finished, verified artifact directory."""

    stage: str
    key: str
    path: Path

    def file(self, name: str) -> Path:
        """Path of one output file; raises if the stage did not write it."""
        p = self.path / name
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

    @property
    def key(self) -> str:
        """SHA-256 (first 16 hex digits) of the canonical JSON of stage, config and upstream keys."""
        payload = {
            "format": CACHE_FORMAT,
            "stage": self.name,
            "config": self.config,
            "upstream": {name: up.key for name, up in sorted(self.upstream.items())},
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=_json_default)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"stage config value {value!r} of type {type(value).__name__} is not JSON-serialisable")


def code_version() -> dict[str, str]:
    """Package version and, when run from a git checkout, the commit (with ``-dirty`` for local edits)."""
    from pate import __version__

    version = {"pate": __version__}
    try:
        repo = Path(__file__).resolve().parent.parent
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=repo, capture_output=True, text=True, timeout=10, check=True,
        )
        version["git"] = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        version["git"] = "unknown"
    return version


def atomic_write_json(path: Path, obj: Any) -> None:
    """``pate.io.atomic_write_json`` that also serialises numpy values and paths."""
    _atomic_write_json(path, obj, default=_json_default)


class ArtifactStore:
    """The cache directory: ``<root>/<stage>/<key>/`` holds one artifact."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        # artifacts this store built or verified: a stage read twice in one run is hashed once
        self._seen: dict[Path, Artifact] = {}

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
        found = self._verified(stage, final)
        if found is not None:
            log.info("%s: reusing %s", stage.name, final)
            self._seen[final] = found
            return found
        final.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(final.with_name(final.name + ".lock")):
            found = self._verified(stage, final)  # another process may have built it while we waited
            if found is not None:
                return found
            inputs = {name: self.get(up) for name, up in stage.upstream.items()}
            work = self.work_path(stage)
            work.mkdir(exist_ok=True)
            log.info("%s: building %s", stage.name, final)
            stage.build(work, inputs)
            self._write_manifest(stage, work, inputs)
            os.replace(work, final)
        self._seen[final] = Artifact(stage.name, stage.key, final)
        return self._seen[final]

    def _verified(self, stage: Stage, final: Path) -> Artifact | None:
        if not final.exists():
            return None
        problem = _check_manifest(final)
        if problem is None:
            return Artifact(stage.name, stage.key, final)
        n = 0
        while (aside := final.with_name(f"{final.name}.damaged-{n}")).exists():
            n += 1
        log.warning("%s: artifact %s is damaged (%s); moved to %s and rebuilding", stage.name, final, problem, aside)
        os.replace(final, aside)
        return None

    @staticmethod
    def _write_manifest(stage: Stage, work: Path, inputs: Mapping[str, Artifact]) -> None:
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

    def remove(self, stage: Stage) -> None:
        """Delete an artifact (for tests and for users forcing a rebuild)."""
        self._seen.pop(self.path(stage), None)
        shutil.rmtree(self.path(stage), ignore_errors=True)


def _check_manifest(path: Path) -> str | None:
    """None if every file listed in the manifest exists with its recorded SHA-256, else what is wrong."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError) as err:
        return f"unreadable manifest: {err}"
    for name, meta in files.items():
        p = path / name
        if not p.is_file():
            return f"missing file {name}"
        if p.stat().st_size != meta["bytes"] or sha256_file(p) != meta["sha256"]:
            return f"checksum mismatch in {name}"
    return None
