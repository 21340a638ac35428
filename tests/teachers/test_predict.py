"""The vote stage's predictions: shapes, agreement with a direct forward pass, determinism, one model at a time."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import numpy as np
import pytest
import torch

import teachers.predict as predict_module
from pate.pipeline.settings import build_recipe, network_teacher_settings, trainer_settings
from teachers.ensemble import train_teachers
from teachers.predict import load_teacher, predict_votes
from teachers.training.data import to_float

PARTITION = [np.arange(0, 10), np.arange(10, 20), np.arange(20, 30)]
QUERIES = np.arange(30, 43)
EVAL = np.arange(43, 60)


@pytest.fixture(scope="module")
def teacher_paths(cfg, tiny_data, tmp_path_factory):
    images, labels = tiny_data
    return train_teachers(
        network_teacher_settings(cfg.teacher),
        trainer_settings(cfg),
        images,
        labels,
        PARTITION,
        tmp_path_factory.mktemp("t"),
        progress=False,
    )


def run(cfg, tiny_data, paths, batch_size=512):
    images, labels = tiny_data
    return predict_votes(
        paths,
        build_recipe(cfg.teacher),
        trainer_settings(cfg),
        images,
        QUERIES,
        EVAL,
        labels[EVAL],
        batch_size=batch_size,
        progress=False,
    )


def test_shapes_dtypes_and_ranges(cfg, tiny_data, teacher_paths):
    votes, accuracy = run(cfg, tiny_data, teacher_paths)
    assert votes.shape == (13, 3, 40) and votes.dtype == np.bool_
    assert accuracy.shape == (3,) and accuracy.dtype == np.float64
    assert ((accuracy >= 0) & (accuracy <= 1)).all()


def test_votes_and_accuracy_match_a_direct_forward_pass(cfg, tiny_data, teacher_paths):
    """Small batches give the votes of one full-batch forward pass (eval-mode BatchNorm), and teacher_accuracy
    is the mean of (vote == label) over evaluation images and labels."""
    images, labels = tiny_data
    votes, accuracy = run(cfg, tiny_data, teacher_paths, batch_size=4)
    for t, path in enumerate(teacher_paths):
        net = load_teacher(path, build_recipe(cfg.teacher))
        assert not net.training
        with torch.inference_mode():
            logits = net(to_float(torch.from_numpy(images)))
        assert np.array_equal(votes[:, t], (logits[QUERIES] > 0).numpy())
        expected = ((logits[EVAL] > 0).numpy() == labels[EVAL].astype(bool)).mean()
        assert accuracy[t] == pytest.approx(expected, abs=1e-6)  # torchmetrics averages in float32


def test_deterministic_across_calls(cfg, tiny_data, teacher_paths):
    first, second = run(cfg, tiny_data, teacher_paths), run(cfg, tiny_data, teacher_paths)
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


@pytest.mark.slow
def test_at_most_one_teacher_in_memory(cfg, tiny_data, teacher_paths, monkeypatch):
    loaded = []

    def tracking_load(path, recipe):
        gc.collect()
        assert all(ref() is None for ref in loaded), "a previous teacher is still alive"
        net = load_teacher(path, recipe)
        loaded.append(weakref.ref(net))
        return net

    monkeypatch.setattr(predict_module, "load_teacher", tracking_load)
    run(cfg, tiny_data, teacher_paths)
    assert len(loaded) == 3


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"paths": []}, "at least one teacher"),
        (
            {"eval_indices": np.array([], dtype=np.int64), "eval_labels": np.zeros((0, 40), np.uint8)},
            "eval_indices must be non-empty",
        ),
        ({"eval_labels": np.zeros((3, 40), np.uint8)}, r"eval_labels must have shape \[17, num_labels\]"),
        ({"eval_labels": np.zeros((17, 39), np.uint8)}, "39 labels"),
        ({"query_indices": np.array([60])}, r"query_indices must lie in \[0, 60\)"),
    ],
)
def test_bad_input_is_rejected(cfg, tiny_data, teacher_paths, change, match):
    images, labels = tiny_data
    args = {
        "paths": teacher_paths,
        "query_indices": QUERIES,
        "eval_indices": EVAL,
        "eval_labels": labels[EVAL],
    } | change
    with pytest.raises(ValueError, match=match):
        predict_votes(
            args["paths"],
            build_recipe(cfg.teacher),
            trainer_settings(cfg),
            images,
            args["query_indices"],
            args["eval_indices"],
            args["eval_labels"],
            progress=False,
        )


def test_missing_teacher_file_is_reported_before_any_inference(cfg, tiny_data, teacher_paths, tmp_path, monkeypatch):
    images, labels = tiny_data
    monkeypatch.setattr(predict_module, "load_teacher", lambda *args: pytest.fail("inference started"))
    with pytest.raises(FileNotFoundError, match="1 teacher file"):
        predict_votes(
            [*teacher_paths, tmp_path / "teacher_0003.pt"],
            build_recipe(cfg.teacher),
            trainer_settings(cfg),
            images,
            QUERIES,
            EVAL,
            labels[EVAL],
            progress=False,
        )


def test_unknown_accelerator_is_rejected(cfg, tiny_data, teacher_paths):
    tpu = dataclasses.replace(trainer_settings(cfg), accelerator="tpu")
    images, labels = tiny_data
    with pytest.raises(ValueError, match="accelerator.*tpu"):
        predict_votes(
            teacher_paths, build_recipe(cfg.teacher), tpu, images, QUERIES, EVAL, labels[EVAL], progress=False
        )


@pytest.mark.gpu
def test_gpu_votes_match_cpu_votes(cfg, tiny_data, teacher_paths):
    """fp32 on the GPU gives the CPU's votes except where a logit is within float rounding of 0."""
    images, labels = tiny_data
    gpu = dataclasses.replace(trainer_settings(cfg), accelerator="gpu", precision="32-true")
    cpu_votes, cpu_acc = run(cfg, tiny_data, teacher_paths)
    gpu_votes, gpu_acc = predict_votes(
        teacher_paths, build_recipe(cfg.teacher), gpu, images, QUERIES, EVAL, labels[EVAL], progress=False
    )
    assert (cpu_votes != gpu_votes).mean() < 1e-3
    assert np.allclose(cpu_acc, gpu_acc, atol=1e-2)


@pytest.mark.parametrize("norm", ["batch", "frozen"])
def test_a_loaded_teacher_is_the_saved_network(norm, fake_imagenet_resnet18, tmp_path):
    """load_teacher builds the network on the meta device and assigns the saved tensors: every parameter and
    buffer is the file's (none left on meta), and the outputs are the saved network's."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(
        {
            "model": {
                "_target_": "teachers.training.models.resnet",
                "depth": 18,
                "num_labels": 5,
                "stem": "imagenet",
                "pretrained": "imagenet",
                "norm": norm,
            },
            "optimizer": {"_target_": "torch.optim.AdamW", "_partial_": True},
            "augment": False,
            "batch_size": 4,
            "max_epochs": 1,
        }
    )
    recipe = build_recipe(cfg)
    torch.manual_seed(5)
    saved = recipe.make_net()
    for tensor in saved.state_dict().values():  # every tensor differs from the ImageNet file and a fresh fc
        if tensor.is_floating_point():
            tensor.add_(0.01 * torch.rand_like(tensor))
    torch.save({"state_dict": saved.state_dict()}, tmp_path / "teacher.pt")
    net = load_teacher(tmp_path / "teacher.pt", recipe)
    for name, tensor in [*net.named_parameters(), *net.named_buffers()]:
        assert not tensor.is_meta and torch.equal(tensor, saved.state_dict()[name]), name
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        torch.testing.assert_close(net(x), saved.eval()(x))
