"""Students as components, named by ``student.component._target_`` and constructed by :func:`student_component` with
their settings, built from the config here (``pate.pipeline.settings``) and checked before any data is read. Each
wires the student stage, which is handed public rows only (sliced here): the query images (or features), the
released labels, the unlabeled pool images (or features, and with views the features of their strong views), the
evaluation images (or features) and labels.

* ``HeadStudent`` (``student=head``): a ridge head on the public features; the consistency method reads the strong
  views of the pool (the views stage).
* ``NetworkStudent`` (the CNN configs): a Lightning fit.

A new kind of student is one class with these methods, its settings built in :func:`student_component`, and one
``conf/student`` file naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hydra
import numpy as np
from omegaconf import DictConfig

from pate.aggregate import read_aggregate
from pate.artifacts import Artifact, Stage
from pate.data.partition import read_queries
from pate.features import read_features
from pate.pipeline.checks import UserError, building
from pate.pipeline.graph import CODE, Dataset, plain
from pate.pipeline.settings import head_student_settings, network_student_settings, trainer_settings
from student.settings import HeadStudentSettings, NetworkStudentSettings
from student.stages import build_head_student, build_student
from teachers.training.trainer import TrainerSettings

__all__ = ["HeadStudent", "NetworkStudent", "student_component"]


def student_component(cfg: DictConfig) -> HeadStudent | NetworkStudent:
    """The student of ``student.component._target_`` (``HeadStudent``, ``NetworkStudent`` or a subclass),
    constructed with its settings from ``cfg.student`` (and ``cfg.trainer`` for networks), the student node as plain
    data (its identity in the student stage's key), ``cfg.seed`` and, for networks, ``cfg.progress``. Every setting
    is checked here, before any data is read: a bad one is a :class:`UserError` naming its key."""
    node = cfg.student
    with building("student.component", node.component):
        # _partial_: the settings are objects, which instantiate's keyword overrides would turn into config nodes
        construct = hydra.utils.instantiate(node.component, _partial_=True)
    kind = construct.func
    if isinstance(kind, type) and issubclass(kind, HeadStudent):
        with building("student", node):
            kwargs: dict[str, Any] = {"settings": head_student_settings(node)}
    elif isinstance(kind, type) and issubclass(kind, NetworkStudent):
        with building("student", node):
            network = network_student_settings(node)
        with building("student.model", node.model):
            network.recipe.make_net()  # a bad depth or width fails here, not after the data is decoded
        kwargs = {"settings": network, "trainer": trainer_settings(cfg, check=True), "progress": bool(cfg.progress)}
    else:
        raise UserError(f"student.component._target_={node.component._target_!r}; expected "
                        "pate.pipeline.students.HeadStudent or NetworkStudent (or a subclass)")
    with building("student.component", node.component):
        return construct(identity=plain(node), seed=int(cfg.seed), **kwargs)


class HeadStudent:
    """A ridge head on the public features (module docstring), fitted as ``settings`` say. ``identity`` (the student
    node as plain data) and ``seed`` (the run's) key the student stage."""

    reads_features = True

    def __init__(self, settings: HeadStudentSettings, identity: dict[str, Any], seed: int):
        self.settings, self.identity, self.seed = settings, identity, seed

    @property
    def needs_views(self) -> bool:
        """Whether the stage reads the strong views of the pool (the views stage): for the consistency method."""
        return self.settings.semi.method == "consistency"

    def stage(self, data: Dataset, labels: Stage, queries: Stage, features: Stage | None,
              views: Stage | None = None) -> Stage:
        arrays, settings = data.arrays, self.settings

        def build(work: Path, up: dict[str, Artifact]) -> None:
            released, public = read_aggregate(up["labels"]), read_queries(up["queries"])
            table, unlabeled = read_features(up["features"]), public.unlabeled(released["answered"])
            strong = read_features(up["views"]).take(unlabeled) if "views" in up else None
            build_head_student(work, settings, table.take(public.queries), released["labels"],
                               released["answered"], table.take(unlabeled), table.take(public.evaluation),
                               arrays.labels[public.evaluation], strong_features=strong, mask=released["released"])

        upstream = {"labels": labels, "queries": queries, "features": features, **({"views": views} if views else {})}
        return Stage("student", {"student": self.identity, "seed": self.seed}, build, upstream, code=CODE["student"])


class NetworkStudent:
    """A network trained with Lightning on the public images (module docstring), as ``settings`` say, with
    ``trainer``'s device and precision and seeded by ``seed``; ``progress`` shows bars. ``identity`` (the student
    node as plain data), the precision and ``seed`` key the student stage."""

    reads_features = False
    needs_views = False  # the CNN's consistency method augments the images itself

    def __init__(self, settings: NetworkStudentSettings, trainer: TrainerSettings, identity: dict[str, Any],
                 seed: int, progress: bool = True):
        self.settings, self.trainer, self.progress = settings, trainer, progress
        self.identity, self.seed = identity, seed

    def stage(self, data: Dataset, labels: Stage, queries: Stage, features: Stage | None,
              views: Stage | None = None) -> Stage:
        arrays, settings, trainer, seed, progress = data.arrays, self.settings, self.trainer, self.seed, self.progress

        def build(work: Path, up: dict[str, Artifact]) -> None:
            released, public = read_aggregate(up["labels"]), read_queries(up["queries"])
            unlabeled = public.unlabeled(released["answered"])
            build_student(work, settings, trainer, np.asarray(arrays.images[public.queries]),
                          released["labels"], released["answered"], np.asarray(arrays.images[unlabeled]),
                          np.asarray(arrays.images[public.evaluation]), arrays.labels[public.evaluation], seed,
                          work / "logs", progress=progress, mask=released["released"])

        return Stage("student", {"student": self.identity, "precision": str(trainer.precision), "seed": seed},
                     build, {"labels": labels, "queries": queries}, code=CODE["student"])
