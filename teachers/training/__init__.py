"""Shared training, the public API that ``teachers/`` and ``student/`` build on (the student imports nothing else
of ``teachers``, and only these names, by contract): datasets and loaders, the model zoo, the one LightningModule
and its prediction helper, the Trainer's settings and factory, and the ``Recipe`` (a network and an optimizer
factory, built from a conf/teacher or conf/student node by ``pate.pipeline.settings.build_recipe``).

The names are imported on first use (PEP 562), so that what needs no Lightning (the settings, the data, the model
zoo) can be used without importing it."""

from pate.lazy import lazy_names

_HOMES = {
    "IndexedImages": "teachers.training.data",
    "MultiLabelModule": "teachers.training.module",
    "Recipe": "teachers.training.recipe",
    "SmallCNN": "teachers.training.models",
    "TrainerSettings": "teachers.training.trainer",
    "build_trainer": "teachers.training.trainer",
    "check_images": "teachers.training.data",
    "check_labels": "teachers.training.data",
    "expected_warnings_hidden": "teachers.training.trainer",
    "fit": "teachers.training.trainer",
    "make_loader": "teachers.training.data",
    "predict_logits": "teachers.training.module",
    "quiet_lightning": "teachers.training.trainer",
    "random_hflip": "teachers.training.module",
    "resnet": "teachers.training.models",
    "to_float": "teachers.training.data",
}


__getattr__ = lazy_names(__name__, _HOMES)


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
