"""The model zoo: every configured teacher and student network maps [B, 3, S, S] to [B, 40] logits."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from pate.pipeline.settings import build_recipe
from teachers.training.models import SmallCNN, resnet
from tests.conftest import compose_config

MODEL_CONFIGS = [
    ("teacher", "small_cnn"),
    ("teacher", "resnet18"),
    ("teacher", "resnet50"),
    ("student", "small_cnn"),
    ("student", "resnet18"),
]


@pytest.mark.parametrize(("group", "name"), MODEL_CONFIGS)
@pytest.mark.parametrize("size", [32, 64])
def test_configured_models_give_one_logit_per_label(group, name, size):
    cfg = compose_config(["~aggregator", f"{group}={name}"])
    torch.manual_seed(0)
    net = build_recipe(cfg[group], group).make_net().eval()
    with torch.inference_mode():
        logits = net(torch.randn(2, 3, size, size))
    assert logits.shape == (2, 40)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("stem", ["small", "imagenet"])
def test_resnet_stems(stem):
    net = resnet(18, num_labels=7, stem=stem).eval()
    with torch.inference_mode():
        assert net(torch.randn(1, 3, 32, 32)).shape == (1, 7)
    # The small stem keeps full resolution into layer1 (no stride, no max-pool); ImageNet's divides it by 4.
    features = net.maxpool(net.relu(net.bn1(net.conv1(torch.randn(1, 3, 32, 32)))))
    assert features.shape[-1] == (32 if stem == "small" else 8)


def test_small_cnn_accepts_any_size_and_width():
    net = SmallCNN(num_labels=5, width=4).eval()
    with torch.inference_mode():
        assert net(torch.randn(3, 3, 16, 16)).shape == (3, 5)
        assert net(torch.randn(3, 3, 48, 48)).shape == (3, 5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"depth": 34}, "depth.*34"),
        ({"depth": 18, "width": 32}, "width.*32"),
        ({"depth": 18, "stem": "tiny"}, "stem.*tiny"),
        ({"depth": 50, "num_labels": 0}, "num_labels.*0"),
    ],
)
def test_resnet_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        resnet(**kwargs)


@pytest.mark.parametrize(("kwargs", "match"), [({"num_labels": 0}, "num_labels"), ({"width": 0}, "width")])
def test_small_cnn_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SmallCNN(**kwargs)


def test_a_recipe_instantiates_the_optimizer_as_a_factory():
    cfg = compose_config(["~aggregator", "teacher=small_cnn"])
    recipe = build_recipe(cfg.teacher)
    module = recipe.module()
    optimizer = recipe.make_optimizer(module.net.parameters())
    assert isinstance(optimizer, torch.optim.AdamW)
    assert optimizer.defaults["lr"] == cfg.teacher.optimizer.lr
    assert optimizer.defaults["weight_decay"] == cfg.teacher.optimizer.weight_decay
    assert recipe.make_net() is not recipe.make_net()  # a fresh network per teacher


def test_an_optimizer_node_without_partial_is_refused():
    cfg = compose_config(["~aggregator", "teacher=small_cnn", "teacher.optimizer._partial_=false"])
    with pytest.raises(ValueError, match="teacher.optimizer"):
        build_recipe(cfg.teacher)


@pytest.mark.parametrize("norm", ["batch", "frozen"])
def test_pretrained_resnet_reads_the_cached_imagenet_weights(fake_imagenet_resnet18, norm):
    """Every layer but fc, BatchNorm statistics included, comes from the weights file in torch's hub cache; fc
    is new, sized to the labels."""
    net = resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet", norm=norm)
    state = net.state_dict()
    for name, value in fake_imagenet_resnet18.items():
        if not name.startswith("fc."):
            assert torch.equal(state[name], value), name
    assert state["fc.weight"].shape == (5, 512)


def test_frozen_statistics_are_eval_mode_batchnorm_in_training_too(fake_imagenet_resnet18):
    """norm=frozen computes exactly what torchvision's BatchNorm computes in eval mode, in train mode as well,
    and a training pass leaves the statistics where the weights file put them."""
    frozen = resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet", norm="frozen")
    plain = resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet", norm="batch").eval()
    plain.fc.load_state_dict(frozen.fc.state_dict())
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = plain(x)
        torch.testing.assert_close(frozen.train()(x), expected, atol=1e-5, rtol=1e-5)
    for name, value in fake_imagenet_resnet18.items():
        if "running" in name:
            assert torch.equal(frozen.state_dict()[name], value), name


def test_group_norm_resnet_has_no_batch_statistics():
    """norm=group (from scratch): GroupNorm with 32 groups everywhere, no buffers at all."""
    net = resnet(18, num_labels=5, norm="group")
    norms = [m for m in net.modules() if isinstance(m, (torch.nn.GroupNorm, torch.nn.BatchNorm2d))]
    assert norms and all(isinstance(m, torch.nn.GroupNorm) and m.num_groups == 32 for m in norms)
    assert not list(net.buffers())


@pytest.mark.parametrize(
    ("stages", "frozen"),
    [
        (0, set()),
        (1, {"conv1", "bn1"}),
        (3, {"conv1", "bn1", "layer1", "layer2"}),
        (5, {"conv1", "bn1", "layer1", "layer2", "layer3", "layer4"}),
    ],
)
def test_frozen_stages_freeze_the_stem_then_the_layers_in_order(stages, frozen):
    net = resnet(18, num_labels=5, norm="group", frozen_stages=stages)
    for name, p in net.named_parameters():
        assert p.requires_grad == (name.split(".")[0] not in frozen), name
    assert net.fc.weight.requires_grad


def test_frozen_stages_stay_at_their_initial_weights_in_a_lightning_fit(tiny_data):
    """The loop's optimiser sees only the trainable parameters: a frozen stage neither moves nor decays."""
    import pytorch_lightning as pl

    from teachers.training.data import IndexedImages, make_loader
    from teachers.training.module import MultiLabelModule
    from teachers.training.trainer import fit

    images, labels = tiny_data
    torch.manual_seed(0)
    net = resnet(18, num_labels=40, norm="group", frozen_stages=2)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    optimizer = functools.partial(torch.optim.AdamW, lr=1e-2, weight_decay=0.5)
    loader = make_loader(IndexedImages(images, np.arange(16), labels[:16]), 8, shuffle=True, seed=0, num_workers=0)
    trainer = pl.Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    fit(trainer, MultiLabelModule(net, 40, optimizer), loader)
    for name, value in net.state_dict().items():
        moved = not torch.equal(value, before[name])
        assert moved == (name.split(".")[0] not in {"conv1", "bn1", "layer1"}), name


def test_pretrained_weights_are_never_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"runs never download.*teacher\.model\.weights_path"):
        resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet")
    with pytest.raises(ValueError, match="needs stem='imagenet'"):
        resnet(18, num_labels=5, pretrained="imagenet")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"norm": "frozen"}, "norm='frozen' keeps the pretrained BatchNorm statistics, so it needs pretrained"),
        ({"norm": "group", "pretrained": "imagenet", "stem": "imagenet"}, "norm='group' has no pretrained weights"),
        ({"norm": "layer"}, "norm must be one of"),
        ({"frozen_stages": 6}, r"frozen_stages must be an integer in \[0, 5\].*got 6"),
        ({"frozen_stages": True}, "frozen_stages must be an integer"),
    ],
)
def test_resnet_refuses_norms_and_frozen_stages_that_do_not_fit(kwargs, match):
    with pytest.raises(ValueError, match=match):
        resnet(18, num_labels=5, **kwargs)


def test_small_cnn_refuses_frozen_statistics():
    with pytest.raises(ValueError, match="'frozen' needs pretrained statistics"):
        SmallCNN(num_labels=5, norm="frozen")


def test_the_imagenet_weights_are_read_once_per_process(fake_imagenet_resnet18, monkeypatch):
    """Teachers built one after another share one read of the weights file; a replaced file is read again."""
    from teachers.training import models

    models._read_weights.cache_clear()
    reads = []
    real = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    first = resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet")
    resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet", norm="frozen")
    assert len(reads) == 1
    path = Path(reads[0])
    changed = {k: v + 1 if v.is_floating_point() else v for k, v in fake_imagenet_resnet18.items()}
    torch.save(changed, path)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    second = resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet")
    assert len(reads) == 2
    torch.testing.assert_close(second.conv1.weight, first.conv1.weight + 1)
