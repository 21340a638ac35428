"""The model zoo: every configured teacher and student network maps [B, 3, S, S] to [B, 40] logits."""

from __future__ import annotations

import pytest
import torch

from training.models import SmallCNN, resnet
from training.recipe import Recipe

from .conftest import compose_config

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
    net = Recipe.from_config(cfg[group], group).make_net().eval()
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
    recipe = Recipe.from_config(cfg.teacher)
    module = recipe.module()
    optimizer = recipe.make_optimizer(module.net.parameters())
    assert isinstance(optimizer, torch.optim.AdamW)
    assert optimizer.defaults["lr"] == cfg.teacher.optimizer.lr
    assert optimizer.defaults["weight_decay"] == cfg.teacher.optimizer.weight_decay
    assert recipe.make_net() is not recipe.make_net()  # a fresh network per teacher


def test_an_optimizer_node_without_partial_is_refused():
    cfg = compose_config(["~aggregator", "teacher=small_cnn", "teacher.optimizer._partial_=false"])
    with pytest.raises(ValueError, match="teacher.optimizer"):
        Recipe.from_config(cfg.teacher)


def test_pretrained_resnet_reads_the_cached_imagenet_weights(tmp_path, monkeypatch):
    """Every layer but fc comes from the weights file in torch's hub cache; fc is new, sized to the labels."""
    import torchvision

    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    checkpoints = tmp_path / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    torch.manual_seed(0)
    imagenet = torchvision.models.resnet18(weights=None).state_dict()
    torch.save(imagenet, checkpoints / "resnet18-f37072fd.pth")
    net = resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet")
    state = net.state_dict()
    for name, value in imagenet.items():
        if not name.startswith("fc."):
            assert torch.equal(state[name], value), name
    assert state["fc.weight"].shape == (5, 512)


def test_pretrained_weights_are_never_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"runs never download.*teacher\.model\.weights_path"):
        resnet(18, num_labels=5, stem="imagenet", pretrained="imagenet")
    with pytest.raises(ValueError, match="needs stem='imagenet'"):
        resnet(18, num_labels=5, pretrained="imagenet")
