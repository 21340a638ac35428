"""The stage graph's shared functions: from the config and upstream stages to a ``pate.artifacts.Stage``, for the
partition, queries, features, views, aggregate and reference stages (the teachers, votes and student stages are
wired by their components, below; docs/architecture.md, section 2b, lists every stage and what wires it).

    data -> features -> partition -> teachers -> votes -> aggregate -> student -> evaluate
    features, queries -> views -> student   (strong views of the pool: the head student's consistency method)

Each builder reads what it needs from its upstream *artifacts* (the partition's parts, the queries' indices,
the features, the teachers' files, the votes, the released labels), so what a stage declares upstream is what
it depends on. The dataset itself is the graph's source, identified by its content fingerprint. A stage's key
covers its own config, its upstream keys and the code in ``CODE[stage]``.

Privacy boundaries, by construction of the calls below:
* the features stage fits its extractor on public (validation) images only;
* only the teachers and votes stages touch the private training split;
* the student stage is handed the public query images (or features), the released labels and the
  evaluation images and labels -- sliced by the student components (pate/pipeline/students.py), so the student
  functions never receive the dataset.

The teachers' and the student's stages are wired by their components (pate/pipeline/teachers.py,
pate/pipeline/students.py); the method (pate/pipeline/methods/) decides which stages a run has.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pate.aggregate import build_aggregate, build_majority_labels, build_true_labels
from pate.artifacts import Artifact, Stage
from pate.code_closure import module_file
from pate.data import LabelledImages
from pate.data.partition import build_partition, build_queries, read_queries
from pate.features import FeatureTable, build_features, choose_fit_rows, fit_extractor, read_features
from pate.features.views import build_views
from pate.pipeline.noise import NoiseSource
from pate.privacy import DEFAULT_ORDERS
from pate.votes import read_votes

# The modules whose builders compute each stage. The code behind a stage's key is what they import, transitively,
# within the project's packages (pate.code_closure), plus the module of every object a config instantiates (the
# extractor, the aggregator, a user's own): a change to what runs rebuilds the stage and everything below it.
CODE: dict[str, tuple[str, ...]] = {
    "partition": ("pate.data.partition",),
    "queries": ("pate.data.partition",),
    "features": ("pate.features.stage",),
    "views": ("pate.features.views",),
    "teachers": ("teachers.stages",),
    "votes": ("teachers.stages", "pate.votes"),
    "aggregate": ("pate.aggregate", "pate.pipeline.noise"),
    "student": ("student.stages",),
}


def code_of(stage: str, *instances) -> tuple[str, ...]:
    """``CODE[stage]`` and the modules of the configured objects the stage runs (the project's or a user's own; a
    class from an installed library or the standard library is covered by its settings in the key)."""
    modules = [type(instance).__module__ for instance in instances]
    return tuple(sorted({*CODE[stage], *(module for module in modules if module_file(module) is not None)}))


def plain(node) -> Any:
    """A config node as plain Python (for stage keys)."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


@dataclass(frozen=True)
class Dataset:
    """The graph's source: the decoded arrays and their identity in stage keys (``pate.data.readers.data_identity``)."""

    arrays: LabelledImages
    identity: dict[str, Any]


def partition_stage(data: Dataset, num_teachers: int, seed: int, by: str = "record") -> Stage:
    """Who sees what of the private training split: ``num_teachers`` disjoint parts, shuffled by ``seed``; ``by``
    person, each person's records in one part (the key names ``by`` only then: a record partition keeps its key)."""
    config = {"data": data.identity, "num_teachers": num_teachers, "seed": seed}
    if by != "record":
        config["by"] = by
    return Stage(
        "partition",
        config,
        lambda work, _: build_partition(work, data.arrays, num_teachers, seed, by),
        code=CODE["partition"],
    )


def queries_stage(cfg: DictConfig, data: Dataset) -> Stage:
    """The public side: the student's pool, the queries in it, the evaluation records."""
    pool_fraction, num_queries = float(cfg.data.pool_fraction), int(cfg.data.num_queries)
    seed = int(cfg.data.query_seed)
    return Stage(
        "queries",
        {"data": data.identity, "pool_fraction": pool_fraction, "num_queries": num_queries, "seed": seed},
        lambda work, _: build_queries(work, data.arrays, pool_fraction, num_queries, seed),
        code=CODE["queries"],
    )


def _fit_rows(cfg: DictConfig, arrays: LabelledImages) -> np.ndarray:
    fit = cfg.features
    return choose_fit_rows(arrays.indices(str(fit.fit_split)), fit.num_fit_images, int(fit.fit_seed))


def _encoded_rows(arrays: LabelledImages) -> np.ndarray:
    """The image rows the features stage encodes: the training and test splits."""
    return np.concatenate([arrays.indices("train"), arrays.indices("test")])


def check_features(cfg: DictConfig, data: Dataset, extractor) -> None:
    """The extractor's own check of what the features stage will fit on and encode (``Extractor.check_encoding``),
    run by ``prepare`` so that embeddings the stored features cannot hold are refused before any stage is built."""
    extractor.check_encoding(_fit_rows(cfg, data.arrays), _encoded_rows(data.arrays))


def features_stage(cfg: DictConfig, data: Dataset, extractor) -> Stage:
    """The public features, keyed by the data, the extractor's identity (settings, weights checksum) and the
    choice of its public fit images: another extractor gives other features and retrains the teachers."""
    fit = cfg.features
    arrays = data.arrays

    def build(work: Path, _) -> None:
        build_features(
            work,
            extractor,
            arrays.images,
            _fit_rows(cfg, arrays),
            _encoded_rows(arrays),
            arrays.indices("train"),
            int(fit.fit_seed),
            progress=bool(cfg.progress),
        )

    return Stage(
        "features",
        {
            "data": data.identity,
            "extractor": extractor.identity(),
            "fit_split": str(fit.fit_split),
            "num_fit_images": int(fit.num_fit_images),
            "fit_seed": int(fit.fit_seed),
        },
        build,
        code=code_of("features", extractor),
    )


def _features(up: dict[str, Artifact]) -> FeatureTable:
    return read_features(up["features"])


def views_stage(cfg: DictConfig, data: Dataset, extractor, features: Stage, queries: Stage) -> Stage:
    """Features of one strong view of each public pool image (``student.semi.method=consistency`` with
    ``student=head``), seeded by the run's seed; the extractor is refitted as the features stage fitted it and
    must reproduce its features (pate/features/views.py)."""
    semi, arrays, seed = cfg.student.semi, data.arrays, int(cfg.seed)

    def build(work: Path, up: dict[str, Artifact]) -> None:
        if not extractor.fitted:
            fit_extractor(
                extractor,
                arrays.images,
                _fit_rows(cfg, arrays),
                arrays.indices("train"),
                int(cfg.features.fit_seed),
                progress=bool(cfg.progress),
            )
        build_views(
            work,
            extractor,
            arrays.images,
            read_queries(up["queries"]).pool,
            _features(up),
            seed,
            float(semi.min_scale),
            float(semi.jitter),
            progress=bool(cfg.progress),
        )

    return Stage(
        "views",
        {"seed": seed, "min_scale": float(semi.min_scale), "jitter": float(semi.jitter)},
        build,
        {"features": features, "queries": queries},
        code=CODE["views"],
    )


def cost_fingerprint(aggregator) -> str:
    """SHA-256 (16 hex digits) of what one query of ``aggregator`` costs today: its RDP curve on the default
    orders and its delta_per_query. In the aggregate's key, so a changed sensitivity or accountant rebuilds it
    even when no source file changed (a monkeypatch, an edited dependency)."""
    curve = np.asarray(aggregator.rdp(DEFAULT_ORDERS), dtype=np.float64)
    blob = curve.tobytes() + json.dumps(float(aggregator.delta_per_query)).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def aggregate_stage(
    aggregator, settings: dict[str, Any], asked: int, votes: Stage, noise: NoiseSource, num_labels: int
) -> Stage:
    """The released labels of the first ``asked`` queries and their cost events (``ledger.json``), drawn from the
    run's noise source (``privacy.noise``, pate/pipeline/noise.py), which the key names: with its seed when seeded,
    without one when secure (a rerun reuses the release rather than drawing a second). ``settings`` is the
    aggregator's config node as plain data (``plain(cfg.aggregator)``), its ``_target_`` included."""
    config = {
        "aggregator": str(settings["_target_"]),
        "parameters": aggregator.noise_parameters(),
        "settings": settings,
        "neighbors": str(aggregator.neighbors),
        "asked": asked,
        **noise.key(),
        "cost": cost_fingerprint(aggregator),
    }
    return Stage(
        "aggregate",
        config,
        lambda work, up: build_aggregate(
            work, aggregator, read_votes(up["votes"]), num_labels, asked, noise.generator()
        ),
        {"votes": votes},
        code=code_of("aggregate", aggregator),
    )


REFERENCES = ("majority_vote", "true_labels")


def reference_stage(source: str, data: Dataset, votes: Stage, queries: Stage) -> Stage:
    """Labels that are never released, for the report's reference lines: the teachers' non-private majority
    (needs the votes) or the true labels of the public queries (needs the queries)."""
    if source == "majority_vote":
        return Stage(
            "aggregate",
            {"reference": source},
            lambda work, up: build_majority_labels(work, read_votes(up["votes"])),
            {"votes": votes},
            code=CODE["aggregate"],
        )
    if source != "true_labels":
        raise ValueError(f"reference source={source!r}; expected one of {REFERENCES}")
    return Stage(
        "aggregate",
        {"reference": source},
        lambda work, up: build_true_labels(work, data.arrays.labels[read_queries(up["queries"]).queries]),
        {"queries": queries},
        code=CODE["aggregate"],
    )


__all__ = [
    "CODE",
    "REFERENCES",
    "Dataset",
    "aggregate_stage",
    "check_features",
    "code_of",
    "cost_fingerprint",
    "features_stage",
    "partition_stage",
    "plain",
    "queries_stage",
    "reference_stage",
    "views_stage",
]
