"""Shared training: datasets and loaders, the model zoo, the one LightningModule, the Trainer factory and the
recipe that instantiates a conf/teacher or conf/student node once. ``teachers/`` and ``student/`` build on it."""

from teachers.training.data import IndexedImages, make_loader, to_float
from teachers.training.models import SmallCNN, resnet
from teachers.training.module import MultiLabelModule
from teachers.training.recipe import Recipe
from teachers.training.trainer import TrainerSettings, build_trainer, fit

__all__ = ["IndexedImages", "MultiLabelModule", "Recipe", "SmallCNN", "TrainerSettings", "build_trainer", "fit", "make_loader", "resnet",
           "to_float"]
