"""Shared training, the public API that ``teachers/`` and ``student/`` build on (the student imports nothing else
of ``teachers``, and only these names, by contract): datasets and loaders, the model zoo, the one LightningModule
and its prediction helper, the Trainer's settings and factory, and the ``Recipe`` (a network and an optimizer
factory, built from a conf/teacher or conf/student node by ``pate.pipeline.settings.build_recipe``)."""

from teachers.training.data import IndexedImages, check_images, check_labels, make_loader, to_float
from teachers.training.models import SmallCNN, resnet
from teachers.training.module import MultiLabelModule, predict_logits, random_hflip
from teachers.training.recipe import Recipe
from teachers.training.trainer import TrainerSettings, build_trainer, expected_warnings_hidden, fit, quiet_lightning

__all__ = [
    "IndexedImages",
    "MultiLabelModule",
    "Recipe",
    "SmallCNN",
    "TrainerSettings",
    "build_trainer",
    "check_images",
    "check_labels",
    "expected_warnings_hidden",
    "fit",
    "make_loader",
    "predict_logits",
    "quiet_lightning",
    "random_hflip",
    "resnet",
    "to_float",
]
