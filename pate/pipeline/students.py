"""Students as components, named by ``student.component._target_`` and constructed by :func:`student_component` with
their settings, built from the config here (``pate.pipeline.settings``) and checked before any data is read. Each
wires the student stage, which is handed public rows only (sliced here): the query images (or features), the
released labels, the unlabeled pool images (or features, and with views the features of their strong views), the
evaluation images (or features) and labels.

* ``HeadStudent`` (``student=head``): a ridge head on the public features; the consistency method reads the strong
  views of the pool (the views stage).
* ``NetworkStudent`` (the CNN configs): a Lightning fit.

A new kind of student is one subclass of :class:`Student` (its ``from_config`` builds its settings) and one
``conf/student`` file naming it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from omegaconf import DictConfig

from pate.aggregate import read_aggregate
from pate.artifacts import Artifact, Stage
from pate.data.partition import read_queries
from pate.features import read_features
from pate.pipeline.checks import building, component_class
from pate.pipeline.graph import CODE, Dataset, plain
from pate.pipeline.settings import head_student_settings, network_student_settings, trainer_settings
from student.settings import HeadStudentSettings, NetworkStudentSettings
from student.stages import build_head_student, build_student
from teachers.training.trainer import TrainerSettings

__all__ = ["HeadStudent", "NetworkStudent", "Student", "student_component"]


def student_component(cfg: DictConfig) -> Student:
    """The student of ``student.component._target_`` (a :class:`Student`), from its ``from_config``: every setting
    checked before any data is read, a bad one a :class:`UserError` naming its key."""
    kind = component_class(cfg.student.component, "student.component", Student, only_target=True)
    return kind.from_config(cfg)


class Student(ABC):
    """The base of the students (module docstring): ``from_config`` builds one with its settings; ``stage`` wires the
    student stage on the labels it is given."""

    reads_features: ClassVar[bool]  # whether it learns from the public features rather than the images
    needs_views: bool = False  # whether the stage reads the strong views of the pool (the views stage)

    @classmethod
    @abstractmethod
    def from_config(cls, cfg: DictConfig) -> Student:
        """The student with its settings built from ``cfg.student`` (and the trainer, for networks) and checked; the
        student node as plain data and ``cfg.seed`` key its stage."""

    @abstractmethod
    def stage(
        self, data: Dataset, labels: Stage, queries: Stage, features: Stage | None, views: Stage | None = None
    ) -> Stage:
        """The student stage trained on ``labels`` (an aggregate artifact) for the public ``queries``."""


class HeadStudent(Student):
    """A ridge head on the public features (module docstring), fitted as ``settings`` say. ``identity`` (the student
    node as plain data) and ``seed`` (the run's) key the student stage."""

    reads_features = True

    def __init__(self, settings: HeadStudentSettings, identity: dict[str, Any], seed: int):
        self.settings, self.identity, self.seed = settings, identity, seed

    @classmethod
    def from_config(cls, cfg: DictConfig) -> HeadStudent:
        """``student.lambdas`` and its semi-supervised settings."""
        with building("student", cfg.student):
            return cls(head_student_settings(cfg.student), plain(cfg.student), int(cfg.seed))

    @property
    def needs_views(self) -> bool:
        """Whether the stage reads the strong views of the pool (the views stage): for the consistency method."""
        return self.settings.semi.method == "consistency"

    def stage(
        self, data: Dataset, labels: Stage, queries: Stage, features: Stage | None, views: Stage | None = None
    ) -> Stage:
        arrays, settings = data.arrays, self.settings

        def build(work: Path, up: dict[str, Artifact]) -> None:
            released, public = read_aggregate(up["labels"]), read_queries(up["queries"])
            table, unlabeled = read_features(up["features"]), public.unlabeled(released["answered"])
            strong = read_features(up["views"]).take(unlabeled) if "views" in up else None
            build_head_student(
                work,
                settings,
                table.take(public.queries),
                released["labels"],
                released["answered"],
                table.take(unlabeled),
                table.take(public.evaluation),
                arrays.labels[public.evaluation],
                strong_features=strong,
                mask=released["released"],
            )

        upstream = {"labels": labels, "queries": queries, "features": features, **({"views": views} if views else {})}
        return Stage("student", {"student": self.identity, "seed": self.seed}, build, upstream, code=CODE["student"])


class NetworkStudent(Student):
    """A network trained with Lightning on the public images (module docstring), as ``settings`` say, with
    ``trainer``'s device and precision and seeded by ``seed``; ``progress`` shows bars. ``identity`` (the student
    node as plain data), the precision and ``seed`` key the student stage."""

    reads_features = False
    needs_views = False  # the CNN's consistency method augments the images itself

    def __init__(
        self,
        settings: NetworkStudentSettings,
        trainer: TrainerSettings,
        identity: dict[str, Any],
        seed: int,
        progress: bool = True,
    ):
        self.settings, self.trainer, self.progress = settings, trainer, progress
        self.identity, self.seed = identity, seed

    @classmethod
    def from_config(cls, cfg: DictConfig) -> NetworkStudent:
        """The recipe and semi-supervised settings of ``cfg.student``, a network built once (a bad depth or width
        fails here, not after the data is decoded) and the trainer's settings, checked."""
        with building("student", cfg.student):
            settings = network_student_settings(cfg.student)
        with building("student.model", cfg.student.model):
            settings.recipe.make_net()
        return cls(
            settings, trainer_settings(cfg, check=True), plain(cfg.student), int(cfg.seed), progress=bool(cfg.progress)
        )

    def stage(
        self, data: Dataset, labels: Stage, queries: Stage, features: Stage | None, views: Stage | None = None
    ) -> Stage:
        arrays, settings, trainer, seed, progress = data.arrays, self.settings, self.trainer, self.seed, self.progress

        def build(work: Path, up: dict[str, Artifact]) -> None:
            released, public = read_aggregate(up["labels"]), read_queries(up["queries"])
            unlabeled = public.unlabeled(released["answered"])
            build_student(
                work,
                settings,
                trainer,
                np.asarray(arrays.images[public.queries]),
                released["labels"],
                released["answered"],
                np.asarray(arrays.images[unlabeled]),
                np.asarray(arrays.images[public.evaluation]),
                arrays.labels[public.evaluation],
                seed,
                work / "logs",
                progress=progress,
                mask=released["released"],
                network=self.identity["model"],
            )

        return Stage(
            "student",
            {"student": self.identity, "precision": str(trainer.precision), "seed": seed},
            build,
            {"labels": labels, "queries": queries},
            code=CODE["student"],
        )
