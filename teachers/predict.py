"""The vote stage's predictions: every teacher's binary vote on every public query.

Teachers are loaded one at a time (memory stays that of one model plus the images), run batched under
``torch.inference_mode`` on the trainer's device and precision. Teacher t votes for label l on query q iff
sigmoid(logit) > 0.5, i.e. logit > 0 -- the rule :class:`teachers.training.module.MultiLabelModule` scores with.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from pate.progress import progress_bar
from teachers.training.data import check_images, check_indices, check_labels
from teachers.training.label_metrics import per_label_accuracy
from teachers.training.module import predict_logits
from teachers.training.recipe import Recipe
from teachers.training.trainer import TrainerSettings, autocast_for


def load_teacher(path: str | Path, recipe: Recipe) -> nn.Module:
    """The network saved by :func:`teachers.ensemble.train_teachers` at ``path``, in eval mode, on CPU.

    The network is built on PyTorch's "meta" device (shapes, no data) and the saved tensors are assigned to it:
    initialising weights that are about to be replaced is most of the cost of loading a ResNet-50 teacher."""
    with torch.device("meta"):
        net = recipe.make_net()
    payload = torch.load(path, map_location="cpu", weights_only=True)
    net.load_state_dict(payload["state_dict"], assign=True)  # strict: every tensor is replaced
    return net.eval()


def predict_votes(
    paths: Sequence[str | Path],
    recipe: Recipe,
    trainer: TrainerSettings,
    images: np.ndarray,
    query_indices: np.ndarray,
    eval_indices: np.ndarray,
    eval_labels: np.ndarray,
    batch_size: int = 512,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Votes of the teachers at ``paths`` (networks built by ``recipe``) on ``images[query_indices]`` and their
    accuracy on the evaluation set, computed on ``trainer``'s device in its precision.

    Returns ``votes``, bool [Q, T, L] (teacher t votes label l on query q), and ``teacher_accuracy``, float
    [T]: each teacher's mean over labels of its per-label accuracy on ``images[eval_indices]`` against
    ``eval_labels`` (aligned with ``eval_indices``, shape [E, L]).
    """
    check_images(images)
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("paths must name at least one teacher file, got none")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} teacher file(s) missing, e.g. {missing[:3]}: train them first")
    query_indices = check_indices(query_indices, images.shape[0], "query_indices")
    eval_indices = check_indices(eval_indices, images.shape[0], "eval_indices")
    if eval_indices.size == 0:
        raise ValueError("eval_indices must be non-empty: teacher accuracy is measured on them")
    eval_labels = check_labels(eval_labels, len(eval_indices), "eval_labels")
    num_labels = eval_labels.shape[1]
    if recipe.num_labels != num_labels:
        raise ValueError(f"eval_labels have {num_labels} labels but teacher.model.num_labels is {recipe.num_labels}")

    device = trainer.device
    num_queries = len(query_indices)
    rows = np.concatenate([query_indices, eval_indices])
    x = torch.from_numpy(np.ascontiguousarray(images[rows])).to(device)
    y = torch.from_numpy(eval_labels.astype(np.int64)).to(device)
    votes = np.empty((num_queries, len(paths), num_labels), dtype=bool)
    accuracy = np.empty(len(paths), dtype=np.float64)
    for t, path in enumerate(progress_bar(paths, desc="votes", unit="teacher", disable=not progress)):
        net = load_teacher(path, recipe).to(device)
        with autocast_for(device, trainer.precision):
            predicted = predict_logits(net, x, batch_size) > 0
        votes[:, t] = predicted[:num_queries].cpu().numpy()
        accuracy[t] = per_label_accuracy(predicted[num_queries:].long(), y).mean().item()
        del net  # before the next teacher is loaded: at most one model in memory
    return votes, accuracy
