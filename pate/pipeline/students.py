"""Students as components, built from ``student.component._target_``: each checks its settings before any data is
read and wires the student stage, which is handed public rows only (sliced here): the query images (or features),
the released labels, the unlabeled pool images (or features, and with views the features of their strong views),
the evaluation images (or features) and labels.

* ``HeadStudent`` (``student=head``): a ridge head on the public features; the consistency method reads the strong
  views of the pool (the views stage).
* ``NetworkStudent`` (the CNN configs): a Lightning fit.

A new kind of student is one class with these methods and one ``conf/student`` file naming it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from pate.aggregate import read_aggregate
from pate.artifacts import Artifact, Stage
from pate.data.partition import read_queries
from pate.features import read_features
from pate.pipeline.graph import CODE, Dataset, plain
from pate.pipeline.teachers import check_network
from student.stages import build_head_student, build_student

__all__ = ["HeadStudent", "NetworkStudent"]


class HeadStudent:
    """A ridge head on the public features (module docstring)."""

    reads_features = True

    def check(self, cfg: DictConfig) -> None:
        """Its settings are checked with the semi-supervised ones (student.semi) by the runner."""

    def needs_views(self, cfg: DictConfig) -> bool:
        semi = cfg.student.get("semi")
        return semi is not None and semi.method == "consistency"

    def stage(self, cfg: DictConfig, data: Dataset, labels: Stage, queries: Stage, features: Stage | None,
              views: Stage | None = None) -> Stage:
        arrays, seed = data.arrays, int(cfg.seed)

        def build(work: Path, up: dict[str, Artifact]) -> None:
            released, public = read_aggregate(up["labels"]), read_queries(up["queries"])
            table, unlabeled = read_features(up["features"]), public.unlabeled(released["answered"])
            strong = read_features(up["views"]).take(unlabeled) if "views" in up else None
            build_head_student(work, cfg.student, table.take(public.queries), released["labels"],
                               released["answered"], table.take(unlabeled), table.take(public.evaluation),
                               arrays.labels[public.evaluation], strong_features=strong, mask=released["released"])

        upstream = {"labels": labels, "queries": queries, "features": features, **({"views": views} if views else {})}
        return Stage("student", {"student": plain(cfg.student), "seed": seed}, build, upstream, code=CODE["student"])


class NetworkStudent:
    """A network trained with Lightning on the public images (module docstring)."""

    reads_features = False

    def check(self, cfg: DictConfig) -> None:
        check_network(cfg, "student")

    def needs_views(self, cfg: DictConfig) -> bool:
        return False  # the CNN's consistency method augments the images itself

    def stage(self, cfg: DictConfig, data: Dataset, labels: Stage, queries: Stage, features: Stage | None,
              views: Stage | None = None) -> Stage:
        arrays, seed = data.arrays, int(cfg.seed)

        def build(work: Path, up: dict[str, Artifact]) -> None:
            released, public = read_aggregate(up["labels"]), read_queries(up["queries"])
            unlabeled = public.unlabeled(released["answered"])
            build_student(work, cfg.student, cfg.trainer, np.asarray(arrays.images[public.queries]),
                          released["labels"], released["answered"], np.asarray(arrays.images[unlabeled]),
                          np.asarray(arrays.images[public.evaluation]), arrays.labels[public.evaluation], seed,
                          work / "logs", progress=bool(cfg.progress), mask=released["released"])

        return Stage("student", {"student": plain(cfg.student), "precision": str(cfg.trainer.precision), "seed": seed},
                     build, {"labels": labels, "queries": queries}, code=CODE["student"])
