"""The config turned into the components' own settings, here at the edge: nothing in ``teachers/``, ``student/``
or the privacy core reads a config node. Each builder checks its node and returns a typed, immutable object (an
error names the key and the value); the pipeline hands these to the components it constructs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate as hydra_instantiate
from omegaconf import DictConfig

from pate.pipeline.checks import building, instantiate
from pate.pipeline.graph import plain
from pate.pipeline.noise import noise_source
from student.semi import SemiSupervision
from student.settings import HeadStudentSettings, NetworkStudentSettings
from teachers.settings import AdamW, HeadTeacherSettings, NetworkTeacherSettings
from teachers.training.recipe import Recipe
from teachers.training.trainer import TrainerSettings

if TYPE_CHECKING:
    from pate.pipeline.methods.base import RunSettings


def trainer_settings(cfg: DictConfig, check: bool = False) -> TrainerSettings:
    """``cfg.trainer`` (a ``TrainerSettings`` node); with ``check``, a Trainer is built once so that a bad
    accelerator, device count or precision stops the run before any data is read."""
    settings = instantiate(cfg.trainer, "trainer")
    if check:
        with building(None):
            settings.check()
    return settings


def build_recipe(node: DictConfig, group: str = "teacher") -> Recipe:
    """A conf/teacher or conf/student node as a :class:`Recipe`: ``model`` instantiated once as a ``_partial_``
    (a network factory), ``optimizer`` once (a ``_partial_`` factory that takes the parameters); ``lr`` > 0,
    ``weight_decay`` >= 0, ``batch_size`` and ``max_epochs`` positive integers. ``group`` names the node in
    errors ("teacher.batch_size must be ...")."""
    try:
        make_net = hydra_instantiate(node.model, _partial_=True)
        make_optimizer = hydra_instantiate(node.optimizer)
    except InstantiationException as err:
        raise ValueError(f"cannot build {group}.model / {group}.optimizer: {err}") from err
    if not callable(make_optimizer) or isinstance(make_optimizer, torch.optim.Optimizer):
        raise ValueError(
            f"{group}.optimizer must be a `_partial_: true` node (a factory that takes the "
            f"parameters), got {type(make_optimizer).__name__}"
        )
    for key, low, strict in (("lr", 0.0, True), ("weight_decay", 0.0, False)):
        value = node.optimizer.get(key)
        if value is not None and not (value > low if strict else value >= low):
            raise ValueError(f"{group}.optimizer.{key} must be {'>' if strict else '>='} {low:g}, got {value!r}")
    for key in ("batch_size", "max_epochs"):
        if not isinstance(node[key], int) or node[key] < 1:
            raise ValueError(f"{group}.{key} must be a positive integer, got {node[key]!r}")
    return Recipe(
        make_net=make_net,
        make_optimizer=make_optimizer,
        num_labels=int(node.model.num_labels),
        augment=bool(node.augment),
        batch_size=int(node.batch_size),
        max_epochs=int(node.max_epochs),
    )


def network_teacher_settings(node: DictConfig) -> NetworkTeacherSettings:
    """A conf/teacher network node (small_cnn, the ResNets) as the teachers' settings: its recipe
    (:func:`build_recipe`), ``seed``, ``ensemble_size`` (1 where the node has none), the optimizer's settings for
    the batched engine where ``optimizer._target_`` is ``torch.optim.AdamW``, and the node as plain data (the
    teachers' identity, as the teachers stage's key holds it)."""
    keywords = plain(node.optimizer)
    target = keywords.pop("_target_", None)
    keywords.pop("_partial_", None)
    return NetworkTeacherSettings(
        recipe=build_recipe(node, "teacher"),
        seed=node.seed,
        identity=plain(node),
        ensemble_size=node.get("ensemble_size", 1),
        adamw=AdamW.from_keywords(keywords) if target == "torch.optim.AdamW" else None,
    )


def head_teacher_settings(node: DictConfig) -> HeadTeacherSettings:
    """A conf/teacher/heads.yaml node as the ridge-head teachers' settings: ``lambdas``, ``chunk_size``,
    ``accuracy_images`` and the node as plain data (the teachers' identity, as the teachers stage's key holds it)."""
    return HeadTeacherSettings(
        lambdas=plain(node.lambdas),
        chunk_size=node.chunk_size,
        accuracy_images=node.accuracy_images,
        identity=plain(node),
    )


def semi_supervision(node: DictConfig) -> SemiSupervision:
    """A conf/student node's ``semi`` as :class:`SemiSupervision` (checked there); supervised where the node has
    none. A key SemiSupervision does not know is refused rather than ignored."""
    semi = node.get("semi")
    if semi is None:
        return SemiSupervision()
    known = sorted(SemiSupervision.__dataclass_fields__)
    unknown = sorted(set(semi) - set(known))
    if unknown:
        raise ValueError(f"student.semi has unknown keys {unknown}; expected some of {known}")
    return SemiSupervision(**{key: semi[key] for key in semi})


def network_student_settings(node: DictConfig) -> NetworkStudentSettings:
    """A conf/student network node (small_cnn, resnet18) as the network student's settings: its recipe
    (:func:`build_recipe`) and ``semi`` (:func:`semi_supervision`)."""
    return NetworkStudentSettings(recipe=build_recipe(node, "student"), semi=semi_supervision(node))


def head_student_settings(node: DictConfig) -> HeadStudentSettings:
    """conf/student/head.yaml as the ridge-head student's settings: ``lambdas`` (checked and made a tuple there) and
    ``semi`` (:func:`semi_supervision`)."""
    return HeadStudentSettings(lambdas=plain(node.lambdas), semi=semi_supervision(node))


def run_settings(cfg: DictConfig) -> RunSettings:
    """What every method is asked under (:class:`RunSettings`), read once: ``privacy``'s relation, delta and
    epsilons and accountant, ``data.num_queries`` and ``data.num_labels`` (set from the data by then), ``seed``, the
    noise source, the student's semi-supervised method, ``progress`` and the trainer's settings."""
    privacy = cfg.privacy
    semi = cfg.student.get("semi")
    # here, not at the top: pate.pipeline.methods imports every method, whose teachers read the settings of this module
    from pate.pipeline.methods.base import RunSettings

    return RunSettings(
        neighbors=str(privacy.neighbors),
        delta=float(privacy.delta),
        target_epsilon=None if privacy.target_epsilon is None else float(privacy.target_epsilon),
        budget_epsilon=None if privacy.budget_epsilon is None else float(privacy.budget_epsilon),
        num_queries=int(cfg.data.num_queries),
        num_labels=int(cfg.data.num_labels),
        seed=int(cfg.seed),
        noise=noise_source(cfg),
        semi="supervised" if semi is None else str(semi.method),
        progress=bool(cfg.progress),
        trainer=trainer_settings(cfg),
        accountant=str(privacy.accountant),
    )


__all__ = [
    "build_recipe",
    "head_student_settings",
    "head_teacher_settings",
    "network_student_settings",
    "network_teacher_settings",
    "run_settings",
    "semi_supervision",
    "trainer_settings",
]
