"""The student's own settings: typed, immutable, checked when built. The pipeline builds them from a conf/student
node (``pate.pipeline.settings``); nothing in ``student/`` reads a config.

* :class:`NetworkStudentSettings`: a network trained with Lightning on the public images
  (conf/student/small_cnn.yaml, resnet18.yaml);
* :class:`HeadStudentSettings`: a ridge head on the public features (conf/student/head.yaml).

Both hold the semi-supervised settings, :class:`student.semi.SemiSupervision` (``student.semi``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pate.features.ridge import check_lambdas
from pate.privacy.checks import set_fields
from student.semi import SemiSupervision
from teachers.training import Recipe


@dataclass(frozen=True)
class NetworkStudentSettings:
    """How a network student is built and trained: ``recipe`` (the network and optimizer factories,
    ``batch_size``, ``max_epochs``, ``augment``; its ``num_labels`` is ``student.model.num_labels``) and how it
    learns from the unlabeled pool (``semi``)."""

    recipe: Recipe
    semi: SemiSupervision = field(default_factory=SemiSupervision)


@dataclass(frozen=True)
class HeadStudentSettings:
    """How the ridge-head student is fitted: ``lambdas``, the L2 strengths each attribute picks from by
    leave-one-out (in units of the mean diagonal of the centred kernel; finite, > 0, at least one), and how it
    learns from the unlabeled pool (``semi``)."""

    lambdas: tuple[float, ...]
    semi: SemiSupervision = field(default_factory=SemiSupervision)

    def __post_init__(self) -> None:
        set_fields(self, lambdas=tuple(float(lam) for lam in check_lambdas(self.lambdas, "student.lambdas")))


__all__ = ["HeadStudentSettings", "NetworkStudentSettings"]
