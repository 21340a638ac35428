"""The LightningModule and the Trainer factory: metric names and values, augmentation, logger choice."""

from __future__ import annotations

import dataclasses
import functools
import sys

import numpy as np
import pytest
import torch

from pate.pipeline.settings import build_recipe, trainer_settings
from teachers.training.data import IndexedImages, make_loader, to_float
from teachers.training.models import SmallCNN
from teachers.training.module import MultiLabelModule, random_hflip
from teachers.training.trainer import build_trainer
from tests.conftest import compose_config


@pytest.fixture()
def module_and_loader(tiny_data):
    images, labels = tiny_data
    torch.manual_seed(0)
    module = MultiLabelModule(SmallCNN(num_labels=40, width=4), num_labels=40)
    loader = make_loader(
        IndexedImages(images, np.arange(60), labels), batch_size=16, shuffle=False, seed=0, num_workers=0
    )
    return module, loader


def test_test_metrics_match_their_definitions(cfg, module_and_loader, tiny_data):
    """test/acc is the mean over labels of the per-label accuracy, test/f1 the mean of per-label F1, both at
    logit > 0, computed here by hand in numpy from the network's own logits."""
    images, labels = tiny_data
    module, loader = module_and_loader
    scores = build_trainer(trainer_settings(cfg), max_epochs=1).test(module, loader, verbose=False)[0]
    with torch.inference_mode():
        predicted = (module.net.eval()(to_float(torch.from_numpy(images))) > 0).numpy()
    truth = labels.astype(bool)
    per_label = (predicted == truth).mean(axis=0)
    tp = (predicted & truth).sum(0)
    fp = (predicted & ~truth).sum(0)
    fn = (~predicted & truth).sum(0)
    f1 = np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros(40), where=(2 * tp + fp + fn) > 0)
    assert set(scores) == {"test/acc", "test/f1"}
    assert np.allclose(module.test_per_attribute_accuracy.numpy(), per_label, atol=1e-6)
    assert scores["test/acc"] == pytest.approx(per_label.mean(), abs=1e-6)
    assert scores["test/f1"] == pytest.approx(f1.mean(), abs=1e-6)


def test_validation_logs_val_metrics_and_training_logs_loss(cfg, module_and_loader, tmp_path):
    module, loader = module_and_loader
    trainer = build_trainer(trainer_settings(cfg), max_epochs=1, log_dir=tmp_path)
    assert set(trainer.validate(module, loader, verbose=False)[0]) == {"val/acc", "val/f1"}
    trainer.fit(module, loader, loader)
    assert "train/loss" in trainer.callback_metrics
    (metrics_csv,) = tmp_path.rglob("metrics.csv")
    assert "train/loss" in metrics_csv.read_text().splitlines()[0]


def test_random_hflip_flips_about_half_the_images_and_nothing_else():
    torch.manual_seed(0)
    x = torch.randn(400, 3, 4, 4)
    y = random_hflip(x)
    flipped = (y == x.flip(-1)).flatten(1).all(1)
    kept = (y == x).flatten(1).all(1)
    assert bool((flipped | kept).all())
    # Binomial(400, 1/2): 200 +- 5 standard deviations (10 each).
    assert 150 < int(flipped.sum()) < 250


@pytest.mark.parametrize(
    "override, match",
    [
        ("teacher.optimizer.lr=0.0", "teacher.optimizer.lr"),
        ("teacher.optimizer.weight_decay=-1.0", "teacher.optimizer.weight_decay"),
        ("teacher.max_epochs=0", "teacher.max_epochs"),
    ],
)
def test_a_recipe_rejects_bad_hyperparameters(override, match):
    cfg = compose_config(["~aggregator", "teacher=small_cnn", override])
    with pytest.raises(ValueError, match=match):
        build_recipe(cfg.teacher, "teacher")


def test_the_module_builds_its_optimizer_from_the_factory():
    module = MultiLabelModule(SmallCNN(4, 4), num_labels=4, optimizer=functools.partial(torch.optim.SGD, lr=0.5))
    assert isinstance(module.make_optimizer(module.net.parameters()), torch.optim.SGD)
    with pytest.raises(ValueError, match="optimizer must be a factory"):
        MultiLabelModule(SmallCNN(4, 4), num_labels=4, optimizer=0.1)


def test_tensorboard_logger_without_the_package_names_the_extra(cfg, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # makes `import tensorboard` raise ImportError
    tensorboard = dataclasses.replace(trainer_settings(cfg), logger="tensorboard")
    with pytest.raises(ImportError, match=r"pip install -e '\.\[tensorboard\]'"):
        build_trainer(tensorboard, max_epochs=1, log_dir=tmp_path)


@pytest.mark.parametrize(("logger", "epochs", "match"), [("wandb", 1, "logger.*wandb"), ("csv", 0, "max_epochs.*0")])
def test_build_trainer_rejects_bad_settings(cfg, tmp_path, logger, epochs, match):
    with pytest.raises(ValueError, match=match):
        build_trainer(dataclasses.replace(trainer_settings(cfg), logger=logger), max_epochs=epochs, log_dir=tmp_path)
