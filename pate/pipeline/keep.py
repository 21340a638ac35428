"""What a run keeps for its user at its end: the trained model (``<run>/model``, ``pate.model_files``) and the list of
its evaluation images with their labels (``<run>/evaluation.csv``), which ``pate-predict`` reads to score the kept
model as the run scored it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
from hydra.utils import get_class
from omegaconf import DictConfig

from pate.artifacts import ArtifactStore
from pate.data.partition import read_queries
from pate.io import atomic_write_text
from pate.model_files import SPEC_FILE, has_model, keep_model
from pate.pipeline.graph import Dataset, plain
from pate.pipeline.noise import noise_source
from pate.privacy.unit import PrivacyUnit

log = logging.getLogger("train")

EVALUATION_FILE = "evaluation.csv"
SEEDED = (
    "no: the run's noise was seeded (noise_source), so anyone with the seed can replay it and the model carries no "
    "guarantee; train it with privacy.noise=secure to publish it"
)
PRECOMPUTED = (
    "only if the precomputed embeddings are public (their encoder never saw a private image): the model reads them "
    "and cannot label a new image; the run's epsilon covers what it learned from the released labels"
)


def publishable(secret: bool, reads_images: bool, unit: str) -> str:
    """Whether the kept model may be published, and why: trained on the released labels and public images only (or,
    for DP-SGD, the release itself), it is covered by the run's epsilon, for its unit, where the noise was secret."""
    if not secret:
        return SEEDED
    if not reads_images:
        return PRECOMPUTED
    return (
        f"yes: trained on the released labels and public images only (or, for DP-SGD, the release itself), so "
        f"covered by the run's epsilon like the released labels, for one neighbour: {unit}; publish it with that "
        f"guarantee. The teachers, their votes and the cache are never published"
    )


def model_facts(
    cfg: DictConfig, data: Dataset, metrics: dict[str, Any], extractor: dict | None, secret: bool, reads_images: bool
) -> dict[str, Any]:
    """What ``model.json`` adds to the stage's own description: how images are read, the public extractor (its node
    and identity, when the model reads the features of images), the guarantee, whether it may be published
    (:func:`publishable`) and the scores of the run. An extractor of precomputed embeddings is left out: its identity
    hashes the embeddings file, private rows included."""
    unit = PrivacyUnit(metrics["privacy_unit"], metrics["record_level"]).text
    return {
        "image_size": int(cfg.data.image_size),
        "label_names": list(data.arrays.label_names),
        "extractor": plain(cfg.features.extractor) if extractor is not None else None,
        "extractor_identity": extractor,
        "data": str(cfg.data.name),
        "student_accuracy": metrics["student_accuracy"],
        "student_f1": metrics["student_f1"],
        "covered_by": {
            **{
                key: metrics[key]
                for key in ("epsilon", "delta", "neighbors", "privacy_unit", "record_level", "privacy", "noise_source")
            },
            "secret_noise": secret,  # False: the epsilon is what secret noise would guarantee, not a guarantee
        },
        "publishable": publishable(secret, reads_images, unit),
    }


def write_evaluation_list(path: Path, data: Dataset, rows: np.ndarray) -> bool:
    """``path``: the evaluation images (absolute paths) with their labels, ``file,<label>,...`` with 0/1 values;
    False (nothing written) where the data came from no files."""
    arrays = data.arrays
    if not arrays.paths:
        return False
    lines = [",".join(["file", *arrays.label_names])]
    lines += [",".join([arrays.paths[row], *map(str, arrays.labels[row].tolist())]) for row in rows]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return True


def keep_run_model(
    cfg: DictConfig, store: ArtifactStore, graph, data: Dataset, output_dir: Path, metrics: dict
) -> None:
    """Write ``<output_dir>/model`` from the stage that trained the run's model (the student, or DP-SGD's release),
    and ``<output_dir>/evaluation.csv``; say where, or why no model was kept (no query answered: no student)."""
    model = store.get(graph.student)
    if not has_model(model):
        log.info("no model kept: %s", metrics.get("note") or "the run trained none (no public query was answered)")
        return
    spec = json.loads(model.file(SPEC_FILE).read_text())
    features, extractor, reads_images = None, None, True
    if spec["inputs"] == "features":
        built_on = graph.student.upstream_keys.get("features")
        if built_on != graph.shared.features.key:  # a reused release (privacy.reuse_release) of another extractor
            log.warning(
                "no model kept: the release reused was trained on the features artifact %s, not on this run's %s, "
                "whose extractor would not feed it as it was trained",
                built_on,
                graph.shared.features.key,
            )
            return
        features = store.get(graph.shared.features)
        reads_images = get_class(cfg.features.extractor._target_).reads_images
        if reads_images:
            extractor = json.loads(features.file("extractor.json").read_text())
            extractor = {key: value for key, value in extractor.items() if key not in ("dim", "fit_rows")}
    secret = noise_source(cfg).mode == "secure"
    facts = model_facts(cfg, data, metrics, extractor, secret, reads_images)
    folder = keep_model(output_dir / "model", model, features if reads_images else None, facts)
    evaluation = read_queries(store.get(graph.shared.queries)).evaluation
    listed = write_evaluation_list(output_dir / EVALUATION_FILE, data, evaluation)
    log.info(
        "model kept in %s (%s); label images: pate-predict %s IMAGES...%s",
        folder,
        (
            "not private: the noise was seeded"
            if not secret
            else "publishable: covered by the run's epsilon"
            if reads_images
            else "publishable only if the precomputed embeddings are public"
        ),
        output_dir,
        f"; its evaluation images: {output_dir / EVALUATION_FILE}" if listed else "",
    )


__all__ = ["EVALUATION_FILE", "keep_run_model", "model_facts", "publishable", "write_evaluation_list"]
