"""The batched teacher engine (teachers/batched.py) against the per-teacher Lightning loop: the same weights
from the same initialisation and data order, its AdamW against torch.optim.AdamW, and the fallback."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from teachers.batched import AdamW, adamw_step, cosine_lr
from teachers.ensemble import train_teachers

TRAINER = OmegaConf.create({"accelerator": "cpu", "devices": 1, "precision": "32-true", "deterministic": True,
                            "num_workers": 0, "logger": "csv"})


def _teacher_cfg(ensemble_size: int, norm: str = "group", augment: bool = False):
    return OmegaConf.create({
        "kind": "network", "seed": 3, "batch_size": 4, "max_epochs": 2, "augment": augment,
        "ensemble_size": ensemble_size,
        "model": {"_target_": "training.models.SmallCNN", "num_labels": 5, "width": 4, "norm": norm},
        "optimizer": {"_target_": "torch.optim.AdamW", "_partial_": True, "lr": 5e-3, "weight_decay": 1e-4},
    })


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (40, 3, 16, 16), dtype=np.uint8)
    labels = rng.integers(0, 2, (40, 5), dtype=np.uint8)
    parts = [np.arange(0, 10), np.arange(10, 23), np.arange(23, 30)]  # 3, 4 and 2 steps per epoch
    return images, labels, parts


def _weights(paths):
    return [torch.load(p, weights_only=True) for p in paths]


def test_batched_training_gives_the_loops_weights(problem, tmp_path):
    """GroupNorm SmallCNN, parts of 10, 13 and 7 images (so padded, masked batches and idle steps), 2 epochs,
    no augmentation: every parameter of every teacher agrees with the Lightning loop's to 1e-5."""
    images, labels, parts = problem
    loop = _weights(train_teachers(_teacher_cfg(1), TRAINER, images, labels, parts, tmp_path / "loop", progress=False))
    batched = _weights(train_teachers(_teacher_cfg(3), TRAINER, images, labels, parts, tmp_path / "batched",
                                      progress=False))
    for a, b in zip(loop, batched, strict=True):
        assert a["meta"]["engine"] == "loop" and b["meta"]["engine"] == "batched"
        assert a["state_dict"].keys() == b["state_dict"].keys()
        for name in a["state_dict"]:
            torch.testing.assert_close(b["state_dict"][name], a["state_dict"][name], atol=1e-5, rtol=1e-4)
        assert b["meta"]["train_loss"] == pytest.approx(a["meta"]["train_loss"], rel=1e-4)
    moved = loop[0]["state_dict"]["head.weight"] - _initial_head(parts)
    assert moved.abs().max() > 1e-3  # the comparison is not between two untrained models


def _initial_head(parts):
    import pytorch_lightning as pl

    from teachers.ensemble import teacher_seed
    from training.models import SmallCNN

    pl.seed_everything(teacher_seed(3, 0), workers=True, verbose=False)
    return SmallCNN(num_labels=5, width=4, norm="group").head.weight.detach()


def test_teachers_are_independent_of_their_group(problem, tmp_path):
    """A teacher trained with two others equals the same teacher trained alone by the engine (G = 2 vs 3):
    nothing couples the members of a group."""
    images, labels, parts = problem
    three = _weights(train_teachers(_teacher_cfg(3, augment=True), TRAINER, images, labels, parts, tmp_path / "a",
                                    progress=False))
    two = _weights(train_teachers(_teacher_cfg(2, augment=True), TRAINER, images, labels, parts, tmp_path / "b",
                                  progress=False))
    for a, b in zip(three, two, strict=True):
        for name in a["state_dict"]:
            torch.testing.assert_close(a["state_dict"][name], b["state_dict"][name], atol=1e-5, rtol=1e-4)


def test_batchnorm_models_fall_back_to_the_loop(problem, tmp_path, caplog):
    images, labels, parts = problem
    caplog.set_level(logging.WARNING)
    out = _weights(train_teachers(_teacher_cfg(3, norm="batch"), TRAINER, images, labels, parts[:1], tmp_path,
                                  progress=False))
    assert "BatchNorm" in caplog.text and "one teacher at a time" in caplog.text
    assert out[0]["meta"]["engine"] == "loop"


def test_adamw_step_is_torch_adamw_per_teacher():
    """Two stacked teachers, one idle at step 2: each follows its own torch.optim.AdamW with a cosine rate."""
    gen = torch.Generator().manual_seed(0)
    settings = AdamW(lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    init = torch.randn(2, 3, 4, generator=gen)
    grads = [torch.randn(2, 3, 4, generator=gen) for _ in range(4)]
    active = [torch.tensor([True, True]), torch.tensor([True, False]), torch.tensor([True, True]),
              torch.tensor([True, True])]
    total = torch.tensor([4.0, 3.0], dtype=torch.float64)
    params = {"w": init.clone()}
    state = {"w": (torch.zeros_like(init), torch.zeros_like(init))}
    steps = torch.zeros(2, dtype=torch.float64)
    for g, on in zip(grads, active):
        lr = cosine_lr(torch.full((2,), settings.lr, dtype=torch.float64), steps, total)
        steps += on
        adamw_step(params, {"w": g}, state, settings, lr.float(), steps.float(), on)
    for teacher in range(2):
        w = torch.nn.Parameter(init[teacher].clone())
        opt = torch.optim.AdamW([w], lr=settings.lr, betas=settings.betas, eps=settings.eps,
                                weight_decay=settings.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=int(total[teacher]))
        for g, on in zip(grads, active):
            if on[teacher]:
                w.grad = g[teacher].clone()
                opt.step()
                sched.step()
        torch.testing.assert_close(params["w"][teacher], w.detach(), atol=1e-6, rtol=1e-5)


def test_a_tiny_pipeline_run_with_batched_teachers(tiny_cnn_cfg, tmp_path):
    from pipeline import run

    cfg = tiny_cnn_cfg("teacher.model.norm=group", "teacher.ensemble_size=3", f"paths.cache_dir={tmp_path}")
    metrics = run(cfg, output_dir=tmp_path / "run")
    files = sorted((tmp_path / "teachers" / metrics["artifacts"]["teachers"]).glob("teacher_*.pt"))
    assert len(files) == 4 and metrics["student_accuracy"] is not None
    assert {torch.load(f, weights_only=True)["meta"]["engine"] for f in files} == {"batched"}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_batched_training_on_a_gpu_gives_the_loops_weights(problem, tmp_path):
    """The same equivalence on a CUDA device (run where a device is lent: pytest -m gpu); cuDNN's kernels
    differ between a grouped and a plain convolution, hence the looser tolerance."""
    images, labels, parts = problem
    gpu = OmegaConf.merge(TRAINER, {"accelerator": "gpu", "deterministic": False})
    loop = _weights(train_teachers(_teacher_cfg(1), gpu, images, labels, parts, tmp_path / "loop", progress=False))
    batched = _weights(train_teachers(_teacher_cfg(3), gpu, images, labels, parts, tmp_path / "batched",
                                      progress=False))
    for a, b in zip(loop, batched, strict=True):
        assert b["meta"]["accelerator"] == "gpu"
        for name in a["state_dict"]:
            torch.testing.assert_close(b["state_dict"][name], a["state_dict"][name], atol=1e-3, rtol=1e-2)
