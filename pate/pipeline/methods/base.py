"""The method protocol: how a run turns the private data into labels released for the public queries.

A method is named by ``conf/method/<name>.yaml``'s ``_target_`` and is one immutable object per run. Its
``from_config(cfg, run)`` is the one place it reads the config: its own node (``cfg.method``; PATE also its
aggregator, teacher and partition groups) and the run's shared settings (:class:`RunSettings`, read once by the
runner). There it checks every setting and calibrates its noise, before any data is read, and returns the method
with everything decided: the calibrated mechanism, the queries asked, its components. Nothing it does later reads
the config. The runner (``pate.pipeline.runner``) owns what every method shares -- the data, the public queries
and evaluation rows, the public features, the student, the evaluation and ``metrics.json`` -- and declares the
whole stage graph at once, before anything is built, from the method's answers:

1. ``reads_features``: whether it reads the public features (the runner builds them when it or the student does).
2. ``release(data, shared) -> Release``: its stages (``pate.artifacts.Stage``), ending in one stage that writes the
   aggregate artifact (``pate/aggregate.py``: ``aggregate.npz`` with the released labels and ``ledger.json`` with
   the cost events). Building nothing yet: the store builds what is read. A method that releases a model (DP-SGD)
   also names the stage that scores it (``Release.model``); what it decided once the data was known (DP-SGD's
   calibrated event: its sampling rate needs the number of private records) goes into ``Release.facts``.
3. ``references(data, release, shared)``: extra labels that are never released, for the report's reference lines
   (PATE: the teachers' non-private majority vote); the runner adds the true labels for every method. None by
   default.
4. ``metrics(store, release)``: its own keys of ``metrics.json`` (at least ``method``).
5. ``train_shard(store, release, data, shard)``: a cluster shard of its training (``teacher_shard=i/n``); by
   default a ``UserError``, for a method that has none.

A method also says by its ``contributor`` attribute who contributes one unit to what its mechanism takes as input:
``"teacher"`` (PATE: one teacher's vote) or ``"record"`` (DP-SGD, Private-kNN: one training record). The runner
names the unit of the run's epsilon from it and the relation (``pate.privacy.unit.privacy_unit``): under
``add_remove`` a teacher-level epsilon is not a record-level guarantee. Its ``records_per_teacher`` attribute,
(count, why), says how many records each part of the private split must hold for its training to fit, which the
runner checks against the split before any image is decoded; ``(1, "")``, the default, for a method that needs no
more than one.

The epsilon of a run is never the method's to state: the runner replays it from the cost events in the
released artifact's ``ledger.json``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from omegaconf import DictConfig, OmegaConf

from pate.artifacts import ArtifactStore, Stage
from pate.pipeline.checks import UserError
from pate.pipeline.noise import NoiseSource
from pate.privacy import Ledger
from teachers.training.trainer import TrainerSettings

__all__ = ["Method", "Release", "RunSettings", "SharedStages", "method_settings"]


@dataclass(frozen=True)
class RunSettings:
    """What every method is asked under, read from the config once by the runner (``run_settings``): the
    neighbouring relation, delta, the target and budget epsilons (None: not set), the number of public queries and
    of labels, the run's seed (for what no guarantee rests on), the noise source (``pate.pipeline.noise``), the
    student's semi-supervised method (``"supervised"`` when it has none), progress bars or not, the trainer's
    settings (the device), the accountant (``privacy.accountant``: what calibrates, budgets and reports) and the
    privacy unit (``privacy.unit`` as resolved for the data: PATE partitions by person where it is ``person``)."""

    neighbors: str
    delta: float
    target_epsilon: float | None
    budget_epsilon: float | None
    num_queries: int
    num_labels: int
    seed: int
    noise: NoiseSource
    semi: str = "supervised"
    progress: bool = True
    trainer: TrainerSettings = field(default_factory=TrainerSettings)
    accountant: str = "tightest"
    unit: str = "record"  # who one neighbour's change may touch: "record", or "person" (pate.privacy.unit)

    def named(self, name: str) -> str:
        """A method's name in reports, with ``+<student.semi.method>`` when the student learns from the unlabeled
        pool too: a report over both students shows them as separate methods."""
        return name if self.semi == "supervised" else f"{name}+{self.semi}"


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
    evaluation images: the runner reports those instead of training the configured student. ``facts`` holds what
    the method decided once the data was known, for its metrics. ``cost`` is the ledger that ``labels`` will write
    (``ledger.json``), known before anything is drawn: the data's privacy budget records it before the noise is
    drawn and checks the written one against it (``pate.pipeline.budget``); None only for labels never released."""

    labels: Stage
    stages: Mapping[str, Stage] = field(default_factory=dict)
    model: Stage | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    cost: Ledger | None = None


class Method(ABC):
    """The base of every method (see the module docstring): a subclass declares ``contributor`` and
    ``reads_features``, implements ``from_config``, ``release`` and ``metrics``, and inherits the defaults of the
    rest."""

    contributor: ClassVar[str]  # "teacher" or "record": who one neighbour adds, removes or replaces (pate.privacy.unit)
    reads_features: bool
    # whether the method can sample people instead of records (privacy.unit=person: pate.privacy.unit.resolve_unit)
    samples_people: ClassVar[bool] = False
    # (records each part of the private split must hold, why): pate.data.partition.check_partition_config
    records_per_teacher: tuple[int, str] = (1, "")

    @classmethod
    @abstractmethod
    def from_config(cls, cfg: DictConfig, run: RunSettings) -> Method:
        """The method with every setting checked and its noise calibrated, from ``cfg.method`` (and the groups the
        method owns) and ``run``; an error is a one-line ``UserError`` naming the key."""

    @abstractmethod
    def release(self, data, shared: SharedStages) -> Release:
        """Its stages, the last writing the aggregate artifact (module docstring)."""

    @abstractmethod
    def metrics(self, store: ArtifactStore, release: Release) -> dict[str, Any]:
        """Its own keys of ``metrics.json``: at least ``method``."""

    def references(self, data, release: Release, shared: SharedStages) -> dict[str, Stage | Release]:
        """What is never released, for the reports' reference lines: a stage of labels (a student is trained on
        them) or a ``Release`` whose ``model`` stands in for the student. ``noise_free`` is the method's
        privacy-free limit: the same release with its noise set to zero, all else equal. None by default."""
        return {}

    def train_shard(self, store: ArtifactStore, release: Release, data, shard: str) -> dict[str, Any]:
        """A cluster shard of its training: a method without one refuses ``teacher_shard``."""
        raise UserError(f"teacher_shard={shard}: {type(self).__name__} trains no teachers to shard")


def method_settings(node: DictConfig, **defaults: Any) -> dict[str, Any]:
    """A method's own keys (``cfg.method`` but ``_target_``) over ``defaults``, its settings and their defaults; a
    key the method does not have is refused naming it (``+method.kk=3`` must not be silently ignored)."""
    given = {key: value for key, value in OmegaConf.to_container(node, resolve=True).items() if key != "_target_"}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise UserError(
            f"method.{unknown[0]}={given[unknown[0]]!r}: {node._target_} has no such setting; its settings "
            f"are {', '.join(sorted(defaults)) or 'none'}"
        )
    return {**defaults, **given}
