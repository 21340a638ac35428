"""A trained model kept to label new images (``pate-predict``): the files its stage writes, and the run's ``model/``.

The stage that trains the model a run releases -- the student stage, or DP-SGD's, whose model is itself the
release -- writes beside its scores (:func:`write_model`):

* ``model.pt``: the network's ``state_dict``;
* ``model.json``: how to rebuild and feed it. ``network`` is a ``_target_`` node with its arguments (the student's
  ``model`` node, :class:`pate.features.RidgeHead` for the head student, DP-SGD's probe or CNN). ``inputs`` is
  ``images`` (uint8 [B, 3, S, S], made float as in training) or ``features`` (the run's public extractor's, stored
  as float16 as the features stage stores them). ``input_transform`` is null or ``unit_norm`` (each feature vector
  scaled to unit L2 norm: DP-SGD's probe).

The network's output is one logit per label: a label is predicted present iff it is > 0 (sigmoid > 1/2), the rule
every student is scored by.

At the end of a run, :func:`keep_model` writes the run directory's ``model/``: those two files, what the public
extractor learned (``extractor.pt``, from the features stage; fitted on public images only) and ``model.json``
completed with the extractor's node, the image size, the label names and the guarantee that covers the model.
The model is trained on released labels and public images, or is DP-SGD's release itself: post-processing of what
the run's epsilon covers, so it may be published -- unlike the teachers, their votes and the cache.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pate.artifacts import Artifact, atomic_write_json
from pate.io import move_aside

MODEL_FILE = "model.pt"
SPEC_FILE = "model.json"
EXTRACTOR_FILE = "extractor.pt"  # the features stage's STATE_FILE (pate.features.stage)
INPUTS = ("images", "features")
TRANSFORMS = (None, "unit_norm")
FORMAT = 1


def write_model(
    work: Path,
    network: nn.Module,
    node: Mapping[str, Any],
    inputs: str,
    input_transform: str | None = None,
    batch_size: int | None = None,
) -> None:
    """Write ``network``'s weights and how to rebuild it (``node``: its ``_target_`` and arguments) and feed it
    (``inputs``, ``input_transform``: the module docstring) into a stage's ``work`` directory. ``batch_size`` is the
    size of the batches the run scored it in (None: all rows at once): a network's float result for an input can
    depend on its batch's size, so a kept model predicts in the same batches to give the run's own predictions."""
    if inputs not in INPUTS:
        raise ValueError(f"inputs={inputs!r}; expected one of {INPUTS}")
    if input_transform not in TRANSFORMS:
        raise ValueError(f"input_transform={input_transform!r}; expected one of {TRANSFORMS}")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size={batch_size!r}; expected a positive integer or None (all rows at once)")
    if "_target_" not in node:
        raise ValueError(f"node={dict(node)!r} has no _target_: the network could not be rebuilt")
    torch.save({key: value.detach().cpu() for key, value in network.state_dict().items()}, work / MODEL_FILE)
    atomic_write_json(
        work / SPEC_FILE,
        {
            "format": FORMAT,
            "network": dict(node),
            "inputs": inputs,
            "input_transform": input_transform,
            "batch_size": batch_size,
        },
    )


def has_model(artifact: Artifact) -> bool:
    """Whether the stage kept a model (a student stage with no answered query trains none)."""
    return SPEC_FILE in artifact.files


def keep_model(folder: Path, model: Artifact, features: Artifact | None, facts: Mapping[str, Any]) -> Path:
    """Write the run's ``folder`` (``<run>/model``) from the stage that trained the ``model`` and, when it reads
    the features of images, the ``features`` stage: the weights, the extractor's learned state and ``model.json``
    with ``facts`` (the extractor's node, or null for precomputed embeddings, which no new image has; the image
    size, the label names, the guarantee) added. Written whole or not at all: a
    folder of that name already there (a run directory used again) is kept as ``model.previous-<n>``."""
    spec = {**json.loads(model.file(SPEC_FILE).read_text()), **facts}
    if spec["inputs"] == "features" and features is None and spec.get("extractor") is not None:
        raise ValueError("the model reads features, but no features stage was given to keep the extractor from")
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    shutil.copyfile(model.file(MODEL_FILE), partial / MODEL_FILE)
    if features is not None:
        shutil.copyfile(features.file(EXTRACTOR_FILE), partial / EXTRACTOR_FILE)
    atomic_write_json(partial / SPEC_FILE, spec)
    if folder.exists():
        move_aside(folder)
    os.replace(partial, folder)
    return folder


__all__ = ["EXTRACTOR_FILE", "INPUTS", "MODEL_FILE", "SPEC_FILE", "has_model", "keep_model", "write_model"]
