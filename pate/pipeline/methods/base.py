"""The method protocol: how a run turns the private data into labels released for the public queries.

A method is built from ``conf/method/<name>.yaml`` by its ``_target_`` and is one object per run. The runner
(``pate.pipeline.runner``) owns what every method shares -- the data, the public queries and evaluation rows, the
public features, the student, the evaluation and ``metrics.json`` -- and asks the method, in this order:

1. ``check(cfg)``: everything that can fail before any data is read (its config, its noise calibration), as a
   one-line error naming the key. A method may keep what it built here (a calibrated mechanism) for later.
2. ``uses_features(cfg)``: whether it reads the public features (the runner builds them when it or the
   student does).
3. ``release(cfg, data, shared) -> Release``: its stages (``pate.artifacts.Stage``), ending in one stage that
   writes the aggregate artifact (``pate/aggregate.py``: ``aggregate.npz`` with the released labels and
   ``ledger.json`` with the cost events). Building nothing yet: the store builds what is read. A method that
   releases a model (DP-SGD) also names the stage that scores it (``Release.model``).
4. ``metrics(cfg, store, release)``: its own keys of ``metrics.json`` (what it released with, its diagnostics).
5. ``references(cfg, data, release, shared)``: extra labels that are never released, for the report's reference
   lines (PATE: the teachers' non-private majority vote); the runner adds the true labels for every method.
6. ``train_shard(cfg, store, release, data)``: a cluster shard of its training (``teacher_shard=i/n``), or a
   ``UserError`` when it has none.

A method also says by its ``contributor`` attribute who contributes one unit to what its mechanism takes as input:
``"teacher"`` (PATE: one teacher's vote) or ``"record"`` (DP-SGD, Private-kNN: one training record). The runner
names the unit of the run's epsilon from it and the relation (``pate.privacy.unit.privacy_unit``): under
``add_remove`` a teacher-level epsilon is not a record-level guarantee.

The epsilon of a run is never the method's to state: the runner replays it from the cost events in the
released artifact's ``ledger.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from omegaconf import DictConfig

from pate.artifacts import ArtifactStore, Stage

__all__ = ["Method", "Release", "SharedStages", "with_semi"]


@dataclass(frozen=True)
class SharedStages:
    """The stages every method may read: the public queries (pool, queries, evaluation rows) and, when a method
    or the student uses them, the public features."""

    queries: Stage
    features: Stage | None


@dataclass(frozen=True)
class Release:
    """A method's stage graph: ``labels`` writes the aggregate artifact; ``stages`` names every stage it built on
    (their keys go into ``metrics.json``). A method that releases a model rather than labels for a student to learn
    from (DP-SGD) names in ``model`` the stage that writes ``student.json``, the released model's scores on the
    evaluation images: the runner reports those instead of training the configured student."""

    labels: Stage
    stages: Mapping[str, Stage] = field(default_factory=dict)
    model: Stage | None = None


def with_semi(name: str, cfg: DictConfig) -> str:
    """A method's name in reports, with ``+<student.semi.method>`` when the student learns from the unlabeled pool
    too: a report over both students shows them as separate methods."""
    semi = cfg.student.get("semi")
    return name if semi is None or semi.method == "supervised" else f"{name}+{semi.method}"


@runtime_checkable
class Method(Protocol):
    """Structural type of the methods (see the module docstring)."""

    contributor: str  # "teacher" or "record": who one neighbour adds, removes or replaces (pate.privacy.unit)

    def check(self, cfg: DictConfig) -> None: ...

    def uses_features(self, cfg: DictConfig) -> bool: ...

    def release(self, cfg: DictConfig, data, shared: SharedStages) -> Release: ...

    def metrics(self, cfg: DictConfig, store: ArtifactStore, release: Release) -> dict[str, Any]: ...

    def references(self, cfg: DictConfig, data, release: Release, shared: SharedStages) -> dict[str, Stage]: ...

    def train_shard(self, cfg: DictConfig, store: ArtifactStore, release: Release, data) -> dict[str, Any]: ...
