"""Teacher ensembles as components of the PATE method, built from ``teacher.component._target_``: each checks its
settings before any data is read, wires its teachers and votes stages, and trains a cluster shard if it can.

* ``HeadTeachers`` (``teacher=heads``): ridge heads on the public features, fitted in batched chunks in one
  process (seconds per hundred teachers); no shards.
* ``NetworkTeachers`` (the CNN configs): one Lightning fit per teacher, or ``teacher.ensemble_size`` stacked in
  the batched engine (teachers/batched.py); shards for cluster array jobs.

A new kind of teacher is one class with these methods and one ``conf/teacher`` file naming it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from pate.artifacts import Artifact, ArtifactStore, Stage
from pate.data.partition import read_queries, read_teacher_parts
from pate.features import read_features
from pate.pipeline.checks import UserError, building
from pate.pipeline.graph import CODE, Dataset, plain
from teachers.ensemble import train_teachers
from teachers.heads import check_heads_config
from teachers.stages import build_head_teachers, build_head_votes, build_teachers, build_votes
from teachers.training.recipe import Recipe
from teachers.training.trainer import check_trainer_config

log = logging.getLogger("train")

__all__ = ["HeadTeachers", "NetworkTeachers", "check_network", "parse_shard"]


def check_network(cfg: DictConfig, group: str) -> None:
    """A network config (``teacher`` or ``student``): its recipe, a network built once (a bad depth or width fails
    here, not after the data is decoded) and the Lightning trainer's settings."""
    with building(group, cfg[group]):
        recipe = Recipe.from_config(cfg[group], group)
    with building(f"{group}.model", cfg[group].model):
        recipe.make_net()
    with building(None):
        check_trainer_config(cfg.trainer)


class HeadTeachers:
    """Ridge heads on the public features (module docstring)."""

    reads_features = True
    records_per_teacher = (2, "teacher=heads picks each head's L2 strength by leave-one-out")

    def check(self, cfg: DictConfig) -> None:
        with building("teacher", cfg.teacher):
            check_heads_config(cfg.teacher)
        if cfg.get("teacher_shard"):
            raise UserError(f"teacher_shard is for CNN teachers (got teacher_shard={cfg.teacher_shard!r}); "
                            "teacher=heads fits all teachers in one process (seconds per hundred teachers): run "
                            "without it")

    def stages(self, cfg: DictConfig, data: Dataset, partition: Stage, features: Stage | None,
               queries: Stage) -> tuple[Stage, Stage]:
        """The teachers (keyed by the teacher config, the partition and the features) and their votes."""
        progress, labels = bool(cfg.progress), data.arrays.labels
        teachers = Stage("teachers", {"teacher": plain(cfg.teacher)},
                         lambda work, up: build_head_teachers(work, cfg.teacher, read_features(up["features"]), labels,
                                                              read_teacher_parts(up["partition"]), progress=progress),
                         {"partition": partition, "features": features}, code=CODE["teachers"])

        def build_votes_(work: Path, up: dict[str, Artifact]) -> None:
            public = read_queries(up["queries"])
            build_head_votes(work, up["teachers"], cfg.teacher, read_features(up["features"]),
                             read_teacher_parts(up["partition"]), labels, public.queries, public.evaluation,
                             progress=progress)

        votes = Stage("votes", {"accuracy_images": int(cfg.teacher.accuracy_images)}, build_votes_,
                      {"teachers": teachers, "queries": queries, "features": features, "partition": partition},
                      code=CODE["votes"])
        return teachers, votes

    def train_shard(self, cfg: DictConfig, store: ArtifactStore, teachers: Stage, partition: Stage,
                    data: Dataset) -> dict[str, Any]:
        raise UserError("teacher_shard is for CNN teachers")  # refused by check already


class NetworkTeachers:
    """One network per teacher, the Lightning loop or the batched engine (module docstring)."""

    reads_features = False
    records_per_teacher = (1, "")

    def check(self, cfg: DictConfig) -> None:
        check_network(cfg, "teacher")

    def stages(self, cfg: DictConfig, data: Dataset, partition: Stage, features: Stage | None,
               queries: Stage) -> tuple[Stage, Stage]:
        """The teachers (keyed by the teacher config, the precision and the partition) and their votes."""
        progress, arrays = bool(cfg.progress), data.arrays
        teachers = Stage("teachers", {"teacher": plain(cfg.teacher), "precision": str(cfg.trainer.precision)},
                         lambda work, up: build_teachers(work, cfg.teacher, cfg.trainer, arrays.images, arrays.labels,
                                                         read_teacher_parts(up["partition"]), progress=progress),
                         {"partition": partition}, code=CODE["teachers"])

        def build_votes_(work: Path, up: dict[str, Artifact]) -> None:
            public = read_queries(up["queries"])
            num_teachers = len(read_teacher_parts(up["partition"]))
            build_votes(work, up["teachers"], num_teachers, cfg.teacher, cfg.trainer, arrays.images,
                        arrays.labels, public.queries, public.evaluation, progress=progress)

        votes = Stage("votes", {}, build_votes_, {"teachers": teachers, "queries": queries, "partition": partition},
                      code=CODE["votes"])
        return teachers, votes

    def train_shard(self, cfg: DictConfig, store: ArtifactStore, teachers: Stage, partition: Stage,
                    data: Dataset) -> dict[str, Any]:
        """Train one shard of the teachers into the teachers stage's resumable build directory and stop.

        A cluster array job runs ``teacher_shard=0/n ... n-1/n`` in parallel (the cache directory on a shared
        file system); the next ordinary run finds every teacher there, skips their training and seals the
        artifact. Teachers are saved atomically one by one, so shards never see each other's partial files.
        """
        parts = read_teacher_parts(store.get(partition))
        ids = parse_shard(cfg.teacher_shard, len(parts))
        if store.path(teachers).exists():
            log.info("teachers %s already complete; nothing to train for shard %s", teachers.key, cfg.teacher_shard)
        else:
            work = store.work_path(teachers)
            work.mkdir(parents=True, exist_ok=True)
            train_teachers(cfg.teacher, cfg.trainer, data.arrays.images, data.arrays.labels, parts, work,
                           teacher_ids=list(ids), progress=bool(cfg.progress))
        return {"teacher_shard": str(cfg.teacher_shard), "teachers": teachers.key, "trained": len(ids)}


def parse_shard(shard: str, num_teachers: int) -> range:
    """``"i/n"`` -> the teacher ids of shard i of n (every n-th teacher from i)."""
    try:
        index, count = (int(x) for x in str(shard).split("/"))
    except ValueError:
        index, count = -1, 0
    if not (count >= 1 and 0 <= index < count):
        raise ValueError(f"teacher_shard={shard!r}; expected 'i/n' with 0 <= i < n, e.g. teacher_shard=3/16")
    return range(index, num_teachers, count)
