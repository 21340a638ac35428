"""Teacher ensembles as components of the PATE method, named by ``teacher.component._target_`` and constructed by
:func:`teacher_component` with their settings, built from the config here (``pate.pipeline.settings``) and checked
before any data is read. Each wires its teachers and votes stages and trains a cluster shard if it can.

* ``HeadTeachers`` (``teacher=heads``): ridge heads on the public features, fitted in batched chunks in one
  process (seconds per hundred teachers); no shards.
* ``NetworkTeachers`` (the CNN configs): one Lightning fit per teacher, or ``teacher.ensemble_size`` stacked in
  the batched engine (teachers/batched.py); shards for cluster array jobs.

A new kind of teacher is one subclass of :class:`TeacherEnsemble` (its ``from_config`` builds its settings) and one
``conf/teacher`` file naming it.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import DictConfig

from pate.artifacts import Artifact, ArtifactStore, Stage
from pate.data.partition import read_queries, read_teacher_parts
from pate.features import read_features
from pate.pipeline.checks import UserError, building, component_class
from pate.pipeline.graph import CODE, Dataset
from pate.pipeline.settings import head_teacher_settings, network_teacher_settings, trainer_settings
from teachers.settings import HeadTeacherSettings, NetworkTeacherSettings
from teachers.stages import build_head_teachers, build_head_votes, build_teachers, build_votes
from teachers.training.trainer import TrainerSettings

log = logging.getLogger("train")

__all__ = ["HeadTeachers", "NetworkTeachers", "TeacherEnsemble", "parse_shard", "teacher_component"]


def teacher_component(cfg: DictConfig) -> TeacherEnsemble:
    """The teacher ensemble of ``teacher.component._target_`` (a :class:`TeacherEnsemble`), from its ``from_config``:
    every setting checked before any data is read, a bad one a :class:`UserError` naming its key."""
    kind = component_class(cfg.teacher.component, "teacher.component", TeacherEnsemble, only_target=True)
    return kind.from_config(cfg)


class TeacherEnsemble(ABC):
    """The base of the teacher ensembles (module docstring): ``from_config`` builds one with its settings, ``stages``
    wires its teachers and votes; ``train_shard`` trains a cluster shard where the kind has shards."""

    reads_features: ClassVar[bool]  # whether the teachers read the public features rather than the images
    # (records each teacher's part must hold, why): pate.data.partition.check_partition_config
    records_per_teacher: ClassVar[tuple[int, str]] = (1, "")

    @classmethod
    @abstractmethod
    def from_config(cls, cfg: DictConfig) -> TeacherEnsemble:
        """The ensemble with its settings built from ``cfg.teacher`` (and the trainer, for networks) and checked."""

    @abstractmethod
    def stages(self, data: Dataset, partition: Stage, features: Stage | None, queries: Stage) -> tuple[Stage, Stage]:
        """Its teachers stage and its votes stage."""

    def train_shard(
        self, store: ArtifactStore, teachers: Stage, partition: Stage, data: Dataset, shard: str
    ) -> dict[str, Any]:
        """Train one cluster shard of the teachers: refused by a kind without shards."""
        raise UserError(f"teacher_shard={shard}: {type(self).__name__} trains its teachers in one process")


class HeadTeachers(TeacherEnsemble):
    """Ridge heads on the public features (module docstring), fitted and scored as ``settings`` say; ``progress``
    shows bars."""

    reads_features = True
    records_per_teacher = (2, "teacher=heads picks each head's L2 strength by leave-one-out")

    def __init__(self, settings: HeadTeacherSettings, progress: bool = True):
        self.settings, self.progress = settings, progress

    @classmethod
    def from_config(cls, cfg: DictConfig) -> HeadTeachers:
        """``teacher.lambdas``, ``chunk_size`` and ``accuracy_images``; ``teacher_shard`` refused (no shards)."""
        if cfg.get("teacher_shard"):
            raise UserError(
                f"teacher_shard is for CNN teachers (got teacher_shard={cfg.teacher_shard!r}); "
                "teacher=heads fits all teachers in one process (seconds per hundred teachers): run "
                "without it"
            )
        with building("teacher", cfg.teacher):
            return cls(head_teacher_settings(cfg.teacher), progress=bool(cfg.progress))

    def stages(self, data: Dataset, partition: Stage, features: Stage | None, queries: Stage) -> tuple[Stage, Stage]:
        """The teachers (keyed by the teacher config, the partition and the features) and their votes."""
        settings, progress, labels = self.settings, self.progress, data.arrays.labels
        teachers = Stage(
            "teachers",
            {"teacher": settings.identity},
            lambda work, up: build_head_teachers(
                work,
                settings,
                read_features(up["features"]),
                labels,
                read_teacher_parts(up["partition"]),
                progress=progress,
            ),
            {"partition": partition, "features": features},
            code=CODE["teachers"],
        )

        def build_votes_(work: Path, up: dict[str, Artifact]) -> None:
            public = read_queries(up["queries"])
            build_head_votes(
                work,
                up["teachers"],
                settings,
                read_features(up["features"]),
                read_teacher_parts(up["partition"]),
                labels,
                public.queries,
                public.evaluation,
                progress=progress,
            )

        votes = Stage(
            "votes",
            {"accuracy_images": settings.accuracy_images},
            build_votes_,
            {"teachers": teachers, "queries": queries, "features": features, "partition": partition},
            code=CODE["votes"],
        )
        return teachers, votes


class NetworkTeachers(TeacherEnsemble):
    """One network per teacher, the Lightning loop or the batched engine (module docstring), trained as
    ``settings`` say with ``trainer``'s device and precision; ``progress`` shows bars."""

    reads_features = False
    records_per_teacher = (1, "")

    def __init__(self, settings: NetworkTeacherSettings, trainer: TrainerSettings, progress: bool = True):
        self.settings, self.trainer, self.progress = settings, trainer, progress

    @classmethod
    def from_config(cls, cfg: DictConfig) -> NetworkTeachers:
        """The recipe, seed and ensemble size of ``cfg.teacher``, a network built once (a bad depth or width fails
        here, not after the data is decoded) and the trainer's settings, checked."""
        with building("teacher", cfg.teacher):
            settings = network_teacher_settings(cfg.teacher)
        with building("teacher.model", cfg.teacher.model):
            settings.recipe.make_net()
        return cls(settings, trainer_settings(cfg, check=True), progress=bool(cfg.progress))

    def stages(self, data: Dataset, partition: Stage, features: Stage | None, queries: Stage) -> tuple[Stage, Stage]:
        """The teachers (keyed by the teacher config, the precision and the partition) and their votes."""
        settings, trainer, progress, arrays = self.settings, self.trainer, self.progress, data.arrays
        teachers = Stage(
            "teachers",
            {"teacher": settings.identity, "precision": str(trainer.precision)},
            lambda work, up: build_teachers(
                work,
                settings,
                trainer,
                arrays.images,
                arrays.labels,
                read_teacher_parts(up["partition"]),
                progress=progress,
            ),
            {"partition": partition},
            code=CODE["teachers"],
        )

        def build_votes_(work: Path, up: dict[str, Artifact]) -> None:
            public = read_queries(up["queries"])
            num_teachers = len(read_teacher_parts(up["partition"]))
            build_votes(
                work,
                up["teachers"],
                num_teachers,
                settings,
                trainer,
                arrays.images,
                arrays.labels,
                public.queries,
                public.evaluation,
                progress=progress,
            )

        votes = Stage(
            "votes",
            {},
            build_votes_,
            {"teachers": teachers, "queries": queries, "partition": partition},
            code=CODE["votes"],
        )
        return teachers, votes

    def train_shard(
        self, store: ArtifactStore, teachers: Stage, partition: Stage, data: Dataset, shard: str
    ) -> dict[str, Any]:
        """Train shard ``shard`` (``teacher_shard``, "i/n") of the teachers into the teachers stage's resumable build
        directory and stop.

        A cluster array job runs ``teacher_shard=0/n ... n-1/n`` in parallel (the cache directory on a shared
        file system); the next ordinary run finds every teacher there, skips their training and seals the
        artifact. Teachers are saved atomically one by one, so shards never see each other's partial files.
        """
        parts = read_teacher_parts(store.get(partition))
        ids = parse_shard(shard, len(parts))
        if store.path(teachers).exists():
            log.info("teachers %s already complete; nothing to train for shard %s", teachers.key, shard)
        else:
            work = store.work_path(teachers)
            work.mkdir(parents=True, exist_ok=True)
            from teachers.ensemble import train_teachers  # Lightning: imported where networks are trained

            train_teachers(
                self.settings,
                self.trainer,
                data.arrays.images,
                data.arrays.labels,
                parts,
                work,
                teacher_ids=list(ids),
                progress=self.progress,
            )
        return {"teacher_shard": shard, "teachers": teachers.key, "trained": len(ids)}


def parse_shard(shard: str, num_teachers: int) -> range:
    """``"i/n"`` -> the teacher ids of shard i of n (every n-th teacher from i)."""
    try:
        index, count = (int(x) for x in str(shard).split("/"))
    except ValueError:
        index, count = -1, 0
    if not (count >= 1 and 0 <= index < count):
        raise ValueError(f"teacher_shard={shard!r}; expected 'i/n' with 0 <= i < n, e.g. teacher_shard=3/16")
    return range(index, num_teachers, count)
